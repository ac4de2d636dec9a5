"""The method's parts as functions: mean-shift compensation, covariance shrinkage, the
Mahalanobis pairwise loss, feature-level self-distillation, cosine logits, classifier alignment
data, and the incremental-learning metrics.

References
----------
Wu, Cheng, Tang, Zhu, Fang, Zhang, Wang, "Navigating Semantic Drift in Task-Agnostic
Class-Incremental Learning", ICML 2025 (arXiv:2502.07560); official code fwu11/MACIL.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from icml25.core import validate as V


def _tensor2(name: str, x: Any) -> torch.Tensor:
    t = V.finite_tensor(name, x)
    if t.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D tensor (samples, features), got shape {tuple(t.shape)}"
        )
    return t


def mean_shift(
    means: torch.Tensor, e_old: torch.Tensor, e_new: torch.Tensor, *, sigma: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean-shift compensation of old class means (the paper's MSC).

    .. math::
        W_{ci} = \\frac{\\exp(-\\lVert e^{old}_i - \\mu_c\\rVert^2 / 2\\sigma^2) + 10^{-5}}
        {\\sum_j \\exp(-\\lVert e^{old}_j - \\mu_c\\rVert^2 / 2\\sigma^2) + 10^{-5}},\\qquad
        \\mu_c \\leftarrow \\mu_c + \\sum_i W_{ci}\\,(e^{new}_i - e^{old}_i)

    Parameters
    ----------
    means
        ``(C, D)`` old class means.
    e_old, e_new
        ``(N, D)`` embeddings of the same current-task samples (row ``i`` is one image) under
        the network before and after training the task.
    sigma
        Kernel width (1.0 in the official code).

    Returns
    -------
    (new_means, weights)
        ``(C, D)`` shifted means and the ``(C, N)`` normalised weights ``W``.
    """
    means = _tensor2("means", means)
    e_old = _tensor2("e_old", e_old)
    e_new = _tensor2("e_new", e_new)
    sigma = V.positive("sigma", sigma)
    if e_old.shape != e_new.shape:
        raise ValueError(
            f"e_old and e_new must have the same shape (matched rows), got {tuple(e_old.shape)} "
            f"and {tuple(e_new.shape)}"
        )
    if e_old.shape[0] == 0:
        raise ValueError("e_old must have at least 1 row, got 0")
    if means.shape[1] != e_old.shape[1]:
        raise ValueError(
            f"means must have {e_old.shape[1]} columns (the embedding size), got {means.shape[1]}"
        )
    d2 = torch.cdist(means.double(), e_old.double()).square()  # (C, N)
    w = torch.exp(-d2 / (2 * sigma**2)) + 1e-5
    w = w / w.sum(dim=1, keepdim=True)
    shift = w @ (e_new.double() - e_old.double())
    return (means.double() + shift).to(means.dtype), w.to(means.dtype)


def shrink_covariance(
    cov: torch.Tensor, *, alpha1: float = 10.0, alpha2: float = 10.0
) -> torch.Tensor:
    """Shrunk covariance used by the Mahalanobis loss (official ``shrink_cov``).

    .. math::
        \\Sigma + \\alpha_1 \\bar d\\, I
        + \\alpha_2 \\bar o\\, (\\mathbf 1\\mathbf 1^\\top - I)

    with ``d̄`` the mean of the diagonal and ``ō`` the mean of the non-zero off-diagonal
    entries (0 when there are none).
    """
    cov = _tensor2("cov", cov)
    if cov.shape[0] != cov.shape[1]:
        raise ValueError(f"cov must be square, got shape {tuple(cov.shape)}")
    alpha1 = V.number("alpha1", alpha1, low=0.0)
    alpha2 = V.number("alpha2", alpha2, low=0.0)
    n = cov.shape[0]
    eye = torch.eye(n, dtype=cov.dtype, device=cov.device)
    diag_mean = torch.diagonal(cov).mean()
    off = cov[~eye.bool()]
    off = off[off != 0]
    off_mean = off.mean() if off.numel() else torch.zeros((), dtype=cov.dtype)
    return cov + alpha1 * diag_mean * eye + alpha2 * off_mean * (1 - eye)


def precision_from_features(
    features: torch.Tensor, *, alpha1: float = 10.0, alpha2: float = 10.0
) -> torch.Tensor:
    """``pinv(shrink(cov(features)) + 1e-3 I)``: the per-class metric of the Mahalanobis loss,
    from one class's ``(N, D)`` features under the old network (float64)."""
    features = _tensor2("features", features).double()
    if features.shape[0] < 2:
        raise ValueError(
            f"features must have at least 2 rows for a covariance, got {features.shape[0]}"
        )
    cov = torch.cov(features.T).reshape(features.shape[1], features.shape[1])
    s = shrink_covariance(cov, alpha1=alpha1, alpha2=alpha2)
    return torch.linalg.pinv(s + 1e-3 * torch.eye(s.shape[0], dtype=s.dtype))


def mahalanobis_pair_loss(
    f_old: torch.Tensor,
    f_new: torch.Tensor,
    labels: torch.Tensor,
    precisions: torch.Tensor,
) -> torch.Tensor:
    """Covariance calibration: keep Mahalanobis distances between same-class pairs.

    .. math::
        L = \\frac1B \\sum_{c} \\sum_{i<j,\\ y_i = y_j = c}
        \\bigl| d_c(\\hat f^{old}_i, \\hat f^{old}_j)
        - d_c(\\hat f^{new}_i, \\hat f^{new}_j) \\bigr|,
        \\quad d_c(a, b) = \\sqrt{(a-b)^\\top (P_c + 10^{-6} I)(a-b) + 10^{-8}}

    with ``f̂`` the L2-normalised features and ``P_c`` the class's precision
    (:func:`precision_from_features`). Vectorised per class with Gram matrices.

    Parameters
    ----------
    f_old, f_new
        ``(B, D)`` features of one batch under the old network (no gradient) and the new one.
    labels
        ``(B,)`` integer labels indexing ``precisions``.
    precisions
        ``(K, D, D)`` one matrix per label.
    """
    f_old, f_new = V.finite_tensor("f_old", f_old), V.finite_tensor("f_new", f_new)
    if f_old.ndim != 2 or f_old.shape != f_new.shape:
        raise ValueError(
            f"f_old and f_new must be 2-D tensors of the same shape, got {tuple(f_old.shape)} "
            f"and {tuple(f_new.shape)}"
        )
    if not isinstance(labels, torch.Tensor) or labels.shape != (f_old.shape[0],):
        raise ValueError(
            f"labels must be a tensor of shape ({f_old.shape[0]},), got "
            f"{getattr(labels, 'shape', type(labels).__name__)}"
        )
    d = f_old.shape[1]
    if precisions.ndim != 3 or precisions.shape[1:] != (d, d):
        raise ValueError(f"precisions must have shape (K, {d}, {d}), got {tuple(precisions.shape)}")
    if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= precisions.shape[0]):
        raise ValueError(
            f"labels must index precisions (0 .. {precisions.shape[0] - 1}), got "
            f"{int(labels.min())} .. {int(labels.max())}"
        )
    a, b = F.normalize(f_old, dim=1), F.normalize(f_new, dim=1)
    eye = 1e-6 * torch.eye(d, dtype=precisions.dtype, device=precisions.device)
    total = f_new.new_zeros(())
    for c in torch.unique(labels).tolist():
        idx = (labels == c).nonzero().squeeze(1)
        m = idx.numel()
        if m < 2:
            continue
        P = (precisions[c] + eye).to(f_new.dtype)
        iu = torch.triu_indices(m, m, offset=1, device=f_new.device)
        dists = []
        for feats in (a[idx], b[idx]):
            g = feats @ P @ feats.T
            q = torch.diagonal(g)[:, None] + torch.diagonal(g)[None, :] - 2 * g
            dists.append(torch.sqrt(q[iu[0], iu[1]].clamp_min(0) + 1e-8))
        total = total + (dists[0] - dists[1]).abs().sum()
    return total / max(f_new.shape[0], 1)


def feature_distillation_loss(
    cls_new: torch.Tensor, patches_new: torch.Tensor, patches_old: torch.Tensor
) -> torch.Tensor:
    """Angle-weighted patch-token self-distillation (the paper's feature-level distillation).

    .. math::
        \\alpha_i = 1 - \\arccos(\\cos(z^{new}_{cls}, p^{new}_i)) / \\pi,\\qquad
        L = \\operatorname{mean}_{b,i}\\; (1 - \\alpha_i)_{\\text{detached}}
        \\lVert \\hat p^{new}_i - \\hat p^{old}_i \\rVert_2

    Parameters
    ----------
    cls_new
        ``(B, D)`` CLS features of the new network.
    patches_new, patches_old
        ``(B, P, D)`` patch tokens of the new network and of the old one (no gradient).
    """
    cls_new = V.finite_tensor("cls_new", cls_new)
    patches_new = V.finite_tensor("patches_new", patches_new)
    patches_old = V.finite_tensor("patches_old", patches_old)
    if patches_new.ndim != 3 or patches_new.shape != patches_old.shape:
        raise ValueError(
            f"patches_new and patches_old must be 3-D tensors of the same shape, got "
            f"{tuple(patches_new.shape)} and {tuple(patches_old.shape)}"
        )
    if cls_new.shape != (patches_new.shape[0], patches_new.shape[2]):
        raise ValueError(
            f"cls_new must have shape {(patches_new.shape[0], patches_new.shape[2])}, got "
            f"{tuple(cls_new.shape)}"
        )
    cos = F.cosine_similarity(cls_new[:, None, :], patches_new, dim=-1).clamp(-1 + 1e-7, 1 - 1e-7)
    weight = (torch.arccos(cos) / torch.pi).detach()
    dist = (F.normalize(patches_new, dim=-1) - F.normalize(patches_old, dim=-1)).norm(dim=-1)
    return (weight * dist).mean()


def cosine_logits(features: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``cos(features_b, weights_k)``: ``(B, D) x (K, D) -> (B, K)`` (unscaled)."""
    if not isinstance(features, torch.Tensor) or not isinstance(weights, torch.Tensor):
        raise TypeError(
            f"features and weights must be torch.Tensors, got {type(features).__name__} and "
            f"{type(weights).__name__}"
        )
    if features.ndim != 2 or weights.ndim != 2 or features.shape[1] != weights.shape[1]:
        raise ValueError(
            f"features (B, D) and weights (K, D) must be 2-D with the same D, got "
            f"{tuple(features.shape)} and {tuple(weights.shape)}"
        )
    return F.normalize(features, dim=-1) @ F.normalize(weights, dim=-1).T


def task_accuracies(
    y_true: Any, y_pred: Any, task_classes: list[list[int]] | list[np.ndarray]
) -> np.ndarray:
    """Accuracy on each task's classes (NaN for a task with no test sample)."""
    y_true = V.class_labels("y_true", y_true)
    y_pred = V.class_labels("y_pred", y_pred, n=len(y_true))
    if not task_classes:
        raise ValueError("task_classes must list at least one task's classes, got none")
    out = np.full(len(task_classes), np.nan)
    for i, cls in enumerate(task_classes):
        m = np.isin(y_true, np.asarray(cls))
        if m.any():
            out[i] = float(np.mean(y_pred[m] == y_true[m]))
    return out


def forgetting(acc_matrix: Any) -> float:
    """Forgetting after the last task, as in the official ``trainer.py``.

    ``acc_matrix[i, t]`` is the accuracy on task ``i``'s classes after task ``t`` (0 for
    ``t < i``). With ``T`` the last column: mean over ``i < T`` of ``max_t acc[i, t] -
    acc[i, T]`` (the max runs over all columns, so each term is ``>= 0``). 0 for one task.
    """
    a = V.finite_array("acc_matrix", acc_matrix, ndim=2)
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"acc_matrix must be square (tasks x tasks), got shape {a.shape}")
    last = a.shape[1] - 1
    if last == 0:
        return 0.0
    return float(np.mean(a[:last].max(axis=1) - a[:last, last]))
