"""The class-incremental learner: per-task LoRA, cosine heads, and the semantic drift
calibration (mean-shift compensation, covariance calibration, self-distillation, classifier
alignment from Gaussian class statistics).

Long by design: one class holds the whole per-task protocol (training with divergence checks,
the three calibrations and the alignment), which reads top to bottom as the paper's Algorithm 1;
split, its steps would have to pass the learner's state between modules."""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from icml25.core import validate as V
from icml25.drift_calibration.calibration import (
    cosine_logits,
    feature_distillation_loss,
    mahalanobis_pair_loss,
    mean_shift,
    precision_from_features,
)
from icml25.drift_calibration.lora import active_adapters, add_lora, add_task_adapters

DEFAULT_LR = {"adam": 1e-3, "sgd": 0.01}
"""Learning rate of each ``optimizer`` when ``lr=None``: Adam 1e-3 (robust to the feature
scale, see the class docstring), SGD 0.01 (the paper's, tuned for a ViT-B/16)."""

DIVERGENCE_FACTOR = 3.0
"""A task's training warns (:class:`DivergenceWarning`) when an epoch's mean cross-entropy
exceeds ``DIVERGENCE_FACTOR * max(ln k, CE_0)``: ``k`` is the task's number of classes, ``ln k``
what a uniform guess scores, and ``CE_0`` the cross-entropy of the task's first batch before
any step (a random cosine head can start above ``ln k``). Above it the loss has grown to three
times its start and the head is confidently wrong (geometric-mean probability of the true
class below ``k ** -3``)."""


class DivergenceWarning(RuntimeWarning):
    """A task's training cross-entropy grew far above its start and a uniform guess's (see
    :data:`DIVERGENCE_FACTOR`): the learning rate is likely too large for the backbone."""


def _is_loader(X: Any) -> bool:
    """A ``torch.utils.data.DataLoader`` (or any other iterable of batches that is not an
    array or a tensor)."""
    from torch.utils.data import DataLoader

    return isinstance(X, DataLoader)


def read_loader(name: str, loader: Any) -> tuple[torch.Tensor, np.ndarray]:
    """Inputs and labels of every batch of ``loader``, in its order (read once, on the CPU).

    A batch is ``(x, y)`` or, as LAMDA-PILOT's loaders (the official code's) yield,
    ``(index, x, y)``; ``x`` and ``y`` are tensors or arrays."""
    xs, ys = [], []
    for i, batch in enumerate(loader):
        if not isinstance(batch, (tuple, list)) or len(batch) not in (2, 3):
            raise ValueError(
                f"{name}: each batch must be (x, y) or (index, x, y), batch {i} is "
                f"{type(batch).__name__}"
                + (f" of length {len(batch)}" if isinstance(batch, (tuple, list)) else "")
            )
        x, y = batch[-2], batch[-1]
        xs.append(torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x))
        ys.append(np.asarray(y.cpu() if isinstance(y, torch.Tensor) else y).reshape(-1))
    if not xs:
        raise ValueError(f"{name} yielded no batch")
    return torch.cat([x.cpu() for x in xs]), np.concatenate(ys)


def _as_input(name: str, X: Any) -> torch.Tensor:
    if isinstance(X, np.ndarray):
        if X.dtype.kind == "f":
            X = X.astype(np.float32, copy=False)
        elif X.dtype.kind not in "iub":
            raise ValueError(f"{name} must be a numeric array, got dtype {X.dtype}")
        X = torch.as_tensor(X)
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or numpy array, got {type(X).__name__}")
    if X.ndim < 2:
        raise ValueError(
            f"{name} must have a batch dimension and features, got shape {tuple(X.shape)}"
        )
    if X.shape[0] == 0:
        raise ValueError(f"{name} must have at least 1 row, got shape {tuple(X.shape)}")
    if X.is_floating_point() and not bool(torch.isfinite(X).all()):
        raise ValueError(f"{name} must be finite, got {int((~torch.isfinite(X)).sum())} NaN/inf")
    return X


class DriftCalibratedLearner:
    """Task-agnostic class-incremental learning with semantic drift calibration.

    Each call of :meth:`fit_task` learns one task (a set of new classes) with a new LoRA adapter
    on the backbone's ``target_modules`` (adapters of all tasks summed, only the newest trained)
    and a new cosine head; :meth:`predict` needs no task id (argmax over all heads).

    For task ``t > 0`` the loss is

    .. math:: L = \\mathrm{CE}(s \\cos(z, W_t), y) + \\lambda_M L_{maha} + \\lambda_D L_{distill},

    then the stored means of old classes are moved by mean-shift compensation, the new classes'
    Gaussian statistics (mean, covariance + 1e-3 I) are stored, and all heads are re-trained on
    features sampled from the class Gaussians (classifier alignment).

    Parameters
    ----------
    backbone
        An ``nn.Module`` mapping a batch to features: a ``(B, D)`` tensor, or ``(B, T, D)``
        tokens (token 0 is the CLS feature, the rest are patches for the distillation), or a
        Hugging Face output with ``last_hidden_state``. It is deep-copied at the first task;
        the copy's parameters are frozen.
    target_modules
        Linear layers that get LoRA adapters, PEFT style (see :func:`add_lora`).
    rank
        LoRA rank (32 in the paper).
    lora
        ``False`` freezes the backbone entirely (only heads train: the "alignment only" ablation).
    epochs_first, epochs
        Epochs on task 0 and on later tasks (20 and 10 in the paper).
    optimizer, lr
        ``"adam"`` (default) or ``"sgd"`` (momentum 0.9, the paper's), both with a cosine
        schedule over the task's epochs; ``lr=None`` takes :data:`DEFAULT_LR` (Adam 1e-3, SGD
        0.01 as in the paper). SGD through a cosine head steps the head by up to
        ``lr * s / |w|^2`` of its norm, and ``|w| = 0.02 sqrt(D)`` at initialisation: the
        paper's 0.01 suits its ViT-B/16 (``D = 768``), but at ``D = 64`` it is 12 times larger
        and diverges even with a frozen backbone; Adam's step (about ``lr / 0.02`` of the head's
        norm) does not depend on ``D``, ``s`` or the backbone's feature scale (NOTES.md, issue
        69: MLP, small CNN, TinyViT).
    batch_size, scale
        Batch size and cosine-logit scale ``s``.
    mean_shift, covariance_calibration, distillation, alignment
        Switch each part (the official ``msc``; ``cc`` = covariance calibration and
        distillation together; ``ca``).
    maha_weight, distill_weight
        ``λ_M`` (1.0) and ``λ_D`` (0.4).
    shrink
        ``α1 = α2`` of the covariance shrinkage (10).
    sigma
        Kernel width of the mean-shift weights (1.0).
    align_epochs, align_samples, align_lr, align_temperature
        Classifier alignment: epochs (5), samples per class per epoch (256), SGD lr (0.01),
        logit temperature (0.1).
    pooling
        ``"cls"`` (token 0) or ``"mean"`` (mean over tokens) when the backbone returns tokens.
    oracle_means
        Recompute old class means from old data (``fit_task(..., reference=...)``) instead of
        estimating their shift: the upper-bound ablation.
    random_state
        Seed of adapter initialisation, batch order and Gaussian sampling.
    device
        Where the backbone's copy, the adapters and the heads live and the forward passes run
        (``"cuda"``, ``torch.device("cuda:1")``...); ``None``: the backbone's own device. Inputs
        stay where they are given and are moved batch by batch; class statistics, features
        returned by :meth:`embed` and predictions are on the CPU. Random draws are made on the
        CPU, so a seed gives the same initial adapters and samples on every device.

    Training checks itself: a loss that is not finite raises ``FloatingPointError`` naming the
    task and the step; an epoch whose mean cross-entropy exceeds ``3 max(ln k, CE_0)`` (``k``
    classes in the task, ``ln k`` a uniform guess's score, ``CE_0`` the task's loss before its
    first step; :data:`DIVERGENCE_FACTOR`) warns with a :class:`DivergenceWarning` naming the
    task, the epoch and its steps (once per task).

    Data can be arrays or tensors ``(X, y)``, or a ``torch.utils.data.DataLoader`` whose batches
    are ``(x, y)`` or ``(index, x, y)`` (the official code's loaders), read once in its order
    (augmentation it applies is drawn once); the learner batches and shuffles itself.

    Attributes
    ----------
    classes_ : ndarray
        Labels seen so far, in head order.
    task_classes_ : list of ndarray
        Labels of each task.
    class_means_, class_covs_ : Tensor
        ``(C, D)`` current (shift-compensated) means and ``(C, D, D)`` covariances.
    stale_means_ : Tensor
        ``(C, D)`` means as stored when each class was learned.
    shift_weights_ : Tensor or None
        ``(C_old, N)`` mean-shift weights of the last task.

    References
    ----------
    Wu et al., "Navigating Semantic Drift in Task-Agnostic Class-Incremental Learning",
    ICML 2025 (arXiv:2502.07560).
    """

    def __init__(
        self,
        backbone: nn.Module,
        *,
        target_modules: str | Sequence[str] = ("k", "v"),
        rank: int = 32,
        lora: bool = True,
        epochs_first: int = 20,
        epochs: int = 10,
        optimizer: str = "adam",
        lr: float | None = None,
        batch_size: int = 48,
        scale: float = 20.0,
        mean_shift: bool = True,
        covariance_calibration: bool = True,
        distillation: bool = True,
        alignment: bool = True,
        maha_weight: float = 1.0,
        distill_weight: float = 0.4,
        shrink: float = 10.0,
        sigma: float = 1.0,
        align_epochs: int = 5,
        align_samples: int = 256,
        align_lr: float = 0.01,
        align_temperature: float = 0.1,
        pooling: str = "cls",
        oracle_means: bool = False,
        random_state: int = 0,
        device: str | torch.device | None = None,
    ) -> None:
        if not isinstance(backbone, nn.Module):
            raise TypeError(f"backbone must be a torch.nn.Module, got {type(backbone).__name__}")
        self.backbone = backbone
        self.target_modules = target_modules
        self.rank = V.integer("rank", rank, low=1)
        for name, flag in (
            ("lora", lora),
            ("mean_shift", mean_shift),
            ("covariance_calibration", covariance_calibration),
            ("distillation", distillation),
            ("alignment", alignment),
            ("oracle_means", oracle_means),
        ):
            if not isinstance(flag, bool):
                raise ValueError(f"{name} must be True or False, got {flag!r}")
        self.lora = lora
        self.epochs_first = V.integer("epochs_first", epochs_first, low=0)
        self.epochs = V.integer("epochs", epochs, low=0)
        self.optimizer = V.choice("optimizer", optimizer, ("adam", "sgd"))
        self.lr = None if lr is None else V.positive("lr", lr)
        self.batch_size = V.integer("batch_size", batch_size, low=2)
        self.scale = V.positive("scale", scale)
        self.mean_shift = mean_shift
        self.covariance_calibration = covariance_calibration
        self.distillation = distillation
        self.alignment = alignment
        self.maha_weight = V.number("maha_weight", maha_weight, low=0.0)
        self.distill_weight = V.number("distill_weight", distill_weight, low=0.0)
        self.shrink = V.number("shrink", shrink, low=0.0)
        self.sigma = V.positive("sigma", sigma)
        self.align_epochs = V.integer("align_epochs", align_epochs, low=0)
        self.align_samples = V.integer("align_samples", align_samples, low=1)
        self.align_lr = V.positive("align_lr", align_lr)
        self.align_temperature = V.positive("align_temperature", align_temperature)
        self.pooling = V.choice("pooling", pooling, ("cls", "mean"))
        if oracle_means and mean_shift:
            raise ValueError("oracle_means=True replaces mean_shift: set mean_shift=False")
        self.oracle_means = oracle_means
        self.random_state = V.integer("random_state", random_state, low=0)
        if device is not None:
            if not isinstance(device, (str, torch.device)):
                raise TypeError(
                    f"device must be a str, a torch.device or None, got {type(device).__name__}"
                )
            try:
                torch.device(device)
            except RuntimeError as exc:
                raise ValueError(f"device must name a torch device, got {device!r}") from exc
        self.device = device
        self.classes_ = np.zeros(0, dtype=np.int64)
        self.task_classes_: list[np.ndarray] = []
        self.heads_ = nn.ParameterList()
        self.shift_weights_: torch.Tensor | None = None
        self.class_means_ = torch.zeros(0)
        self.class_covs_ = torch.zeros(0)
        self.stale_means_ = torch.zeros(0)
        self.class_task_: list[int] = []
        self.lora_modules_: list[str] = []
        self.history_: list[dict[str, float]] = []

    # ------------------------------------------------------------------ features
    @property
    def n_tasks(self) -> int:
        return len(self.task_classes_)

    def _tokens(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        out = self.backbone_(X.to(self.device_, non_blocking=True))
        if hasattr(out, "last_hidden_state"):
            out = out.last_hidden_state
        elif isinstance(out, (tuple, list)):
            out = out[0]
        if not isinstance(out, torch.Tensor) or out.ndim not in (2, 3):
            raise ValueError(
                "backbone must return a (B, D) or (B, T, D) tensor (or an output with "
                f"last_hidden_state), got {getattr(out, 'shape', type(out).__name__)}"
            )
        if out.ndim == 2:
            return out, None
        if self.pooling == "mean":
            return out.mean(dim=1), None
        return out[:, 0], (out[:, 1:] if out.shape[1] > 1 else None)

    @torch.no_grad()
    def embed(self, X: Any, *, upto_task: int | None = None, batch_size: int = 512) -> torch.Tensor:
        """Features ``(N, D)`` of ``X`` under the network with the adapters of tasks
        ``0 .. upto_task`` (default: all tasks learned so far)."""
        self._check_fitted()
        X = self._check_X("X", X)
        n = (
            self.n_tasks
            if upto_task is None
            else V.integer("upto_task", upto_task, low=0, high=self.n_tasks - 1) + 1
        )
        with active_adapters(self.backbone_, n):
            return torch.cat(
                [
                    self._tokens(X[i : i + batch_size])[0].float().cpu()
                    for i in range(0, len(X), batch_size)
                ]
            )

    def _embed_n(self, X: torch.Tensor, n: int) -> torch.Tensor:
        """Features on the CPU under adapters ``0 .. n - 1``."""
        with torch.no_grad(), active_adapters(self.backbone_, n):
            return torch.cat(
                [self._tokens(X[i : i + 512])[0].float().cpu() for i in range(0, len(X), 512)]
            )

    # ------------------------------------------------------------------ checks
    def _check_fitted(self) -> None:
        if not self.task_classes_:
            raise RuntimeError(
                "this DriftCalibratedLearner has learned no task yet: call fit_task first"
            )

    def _check_X(self, name: str, X: Any) -> torch.Tensor:
        if _is_loader(X):
            X = read_loader(name, X)[0]
        X = _as_input(name, X)
        shape = getattr(self, "input_shape_", None)
        if shape is not None and tuple(X.shape[1:]) != shape:
            raise ValueError(
                f"{name} must have rows of shape {shape} (as in the first task), "
                f"got {tuple(X.shape[1:])}"
            )
        return X

    # ------------------------------------------------------------------ fit
    def fit_task(self, X: Any, y: Any = None, *, reference: Any = None) -> DriftCalibratedLearner:
        """Learn one task: the classes in ``y``, none of which may have been seen before.

        ``X`` may be a ``DataLoader`` of ``(x, y)`` or ``(index, x, y)`` batches (then ``y`` is
        None). ``reference = (X_old, y_old)`` (or a loader) is old-class data, used only with
        ``oracle_means=True``. Returns ``self``.
        """
        X, y = self._xy("X", X, y)
        new = np.unique(y)
        seen = np.intersect1d(new, self.classes_)
        if seen.size:
            raise ValueError(
                f"y must hold only classes not seen in an earlier task, got {seen.tolist()} again"
            )
        counts = np.bincount(np.searchsorted(new, y))
        if counts.min() < 2:
            raise ValueError(
                f"y must have at least 2 samples of each class (for its covariance), "
                f"got {counts.min()}"
            )
        if self.oracle_means and self.task_classes_:
            if reference is None:
                raise ValueError("reference=(X_old, y_old) is required with oracle_means=True")
            if _is_loader(reference):
                reference = read_loader("reference", reference)
            if not isinstance(reference, (tuple, list)) or len(reference) != 2:
                raise ValueError("reference must be (X_old, y_old) or a DataLoader")
            Xr = self._check_X("reference X", reference[0])
            yr = V.class_labels("reference y", reference[1], n=len(Xr))
            reference = (Xr, yr)
            missing = np.setdiff1d(self.classes_, yr)
            if missing.size:
                raise ValueError(f"reference must hold every old class; missing {missing.tolist()}")
        self._finish_task(self._learn_task(X, y), reference)
        return self

    def _xy(self, name: str, X: Any, y: Any) -> tuple[torch.Tensor, np.ndarray]:
        """``(X, y)`` checked, from arrays or from a DataLoader (then ``y`` must be None)."""
        if _is_loader(X):
            if y is not None:
                raise ValueError(f"{name} is a DataLoader, which carries the labels: pass y=None")
            X, y = read_loader(name, X)
        elif y is None:
            raise ValueError(f"y is required when {name} is not a DataLoader")
        X = self._check_X(name, X)
        return X, V.class_labels("y", y, n=len(X))

    def _learn_task(self, X: torch.Tensor, y: np.ndarray) -> dict[str, Any]:
        """Steps (1)-(2): the old network's features, training of the new adapter and head,
        and the new network's features. Touches the backbone and appends the new head; the
        class statistics are left to :meth:`_finish_task` (which the reproduction runs for
        several calibration variants on one trained backbone)."""
        new = np.unique(y)
        t = self.n_tasks
        gen = torch.Generator().manual_seed(self.random_state * 1000 + t)
        if t == 0:
            self.input_shape_ = tuple(X.shape[1:])
            if self.device is not None:
                self.device_ = torch.device(self.device)
            else:
                first = next(self.backbone.parameters(), None)
                self.device_ = first.device if first is not None else torch.device("cpu")
            self.backbone_ = copy.deepcopy(self.backbone).to(self.device_)
            for p in self.backbone_.parameters():
                p.requires_grad_(False)
            self.backbone_.eval()
            if self.lora:
                self.lora_modules_ = add_lora(
                    self.backbone_, target_modules=self.target_modules, rank=self.rank
                )
        params: list[nn.Parameter] = []
        if self.lora:
            params += add_task_adapters(self.backbone_, gen)
        local = torch.as_tensor(np.searchsorted(new, y))
        # (1) the old network's view of the new task, before training
        e_old = self._embed_n(X, t) if t > 0 else None
        precisions = None
        if t > 0 and self.lora and self.covariance_calibration:
            assert e_old is not None
            precisions = torch.stack(
                [
                    precision_from_features(
                        e_old[local == k], alpha1=self.shrink, alpha2=self.shrink
                    )
                    for k in range(len(new))
                ]
            )
        d = self._embed_n(X[:2], t + 1).shape[1] if t == 0 else self.class_means_.shape[1]
        w = torch.empty(len(new), d)
        nn.init.trunc_normal_(w, std=0.02, generator=gen)
        head = nn.Parameter(w.to(self.device_))
        self.heads_.append(head)
        params.append(head)
        # (2) train the current adapter and head
        self._train(X, local, params, t, precisions, gen)
        e_new = self._embed_n(X, t + 1)
        return {"t": t, "new": new, "local": local, "e_old": e_old, "e_new": e_new}

    def _finish_task(self, state: dict[str, Any], reference: tuple[Any, Any] | None) -> None:
        """Steps (3)-(5): update old class means (mean shift or oracle), store the new
        classes' Gaussians, align the classifier. Needs ``heads_`` to end with the new head."""
        t, new, local = state["t"], state["new"], state["local"]
        e_old, e_new = state["e_old"], state["e_new"]
        d = e_new.shape[1]
        # (3) mean-shift compensation of the old class means
        if t > 0 and self.mean_shift:
            assert e_old is not None
            self._shift_means(e_old, e_new)
        if t > 0 and self.oracle_means:
            assert reference is not None
            Xr = _as_input("reference X", reference[0])
            yr = np.asarray(V.class_labels("reference y", reference[1]))
            er = self._embed_n(Xr, t + 1)
            self.class_means_ = torch.stack(
                [er[torch.as_tensor(yr == c)].mean(0) for c in self.classes_]
            )
        # (4) Gaussian statistics of the new classes under the trained network
        means, covs = [], []
        for k in range(len(new)):
            f = e_new[local == k].double()
            means.append(f.mean(0))
            covs.append(torch.cov(f.T).reshape(d, d) + 1e-3 * torch.eye(d, dtype=torch.float64))
        m_new = torch.stack(means).float()
        self.class_means_ = torch.cat([self.class_means_.reshape(-1, d), m_new])
        self.stale_means_ = torch.cat([self.stale_means_.reshape(-1, d), m_new])
        self.class_covs_ = torch.cat([self.class_covs_.reshape(-1, d, d), torch.stack(covs)])
        self.classes_ = np.concatenate([self.classes_, new])
        self.task_classes_ = [*self.task_classes_, new]
        self.class_task_ = [*self.class_task_, *([t] * len(new))]
        # (5) classifier alignment on all heads
        if t > 0 and self.alignment:
            self._align(t, torch.Generator().manual_seed(self.random_state * 1000 + t + 500))

    def _shift_means(self, e_old: torch.Tensor, e_new: torch.Tensor) -> None:
        """Mean-shift compensation of the stored old means (:func:`mean_shift`)."""
        self.class_means_, self.shift_weights_ = mean_shift(
            self.class_means_, e_old, e_new, sigma=self.sigma
        )

    def _train(
        self,
        X: torch.Tensor,
        local: torch.Tensor,
        params: list[nn.Parameter],
        t: int,
        precisions: torch.Tensor | None,
        gen: torch.Generator,
    ) -> None:
        epochs = self.epochs_first if t == 0 else self.epochs
        if epochs == 0:
            return
        lr = self.lr if self.lr is not None else DEFAULT_LR[self.optimizer]
        opt: torch.optim.Optimizer
        if self.optimizer == "sgd":
            opt = torch.optim.SGD(params, lr=lr, momentum=0.9)
        else:
            opt = torch.optim.Adam(params, lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
        head = self.heads_[t]
        use_old = t > 0 and self.lora and (precisions is not None or self.distillation)
        if precisions is not None:
            precisions = precisions.to(self.device_)
        n_cls = head.shape[0]
        start = math.log(n_cls)  # raised to the first batch's cross-entropy below
        steps = math.ceil(len(X) / self.batch_size)
        step, warned = 0, False
        for epoch in range(epochs):
            order = torch.randperm(len(X), generator=gen)
            sums = {"ce": 0.0, "maha": 0.0, "distill": 0.0}
            for i in range(0, len(X), self.batch_size):
                idx = order[i : i + self.batch_size]
                xb, yb = X[idx], local[idx].to(self.device_)
                if use_old:
                    with torch.no_grad(), active_adapters(self.backbone_, t):
                        cls_old, p_old = self._tokens(xb)
                cls_new, p_new = self._tokens(xb)
                loss = F.cross_entropy(self.scale * cosine_logits(cls_new, head), yb)
                sums["ce"] += float(loss.detach())
                if step == 0:
                    start = max(start, float(loss.detach()))
                if use_old and precisions is not None and self.maha_weight > 0:
                    lm = mahalanobis_pair_loss(cls_old, cls_new, yb, precisions)
                    loss = loss + self.maha_weight * lm
                    sums["maha"] += float(lm.detach())
                if (
                    use_old
                    and self.distillation
                    and p_new is not None
                    and p_old is not None
                    and self.distill_weight > 0
                ):
                    ld = feature_distillation_loss(cls_new, p_new, p_old)
                    loss = loss + self.distill_weight * ld
                    sums["distill"] += float(ld.detach())
                value = float(loss.detach())
                if not math.isfinite(value):
                    raise FloatingPointError(
                        f"task {t}: the training loss is {value} at step {step} (epoch {epoch}, "
                        f"batch {i // self.batch_size}); {self._lr_hint(lr)}"
                    )
                opt.zero_grad()
                loss.backward()
                opt.step()
                step += 1
            sched.step()
            ce = sums["ce"] / steps
            if not warned and ce > DIVERGENCE_FACTOR * start:
                warnings.warn(
                    f"task {t}: training diverges: the mean cross-entropy of epoch {epoch} "
                    f"(steps {step - steps}-{step - 1}) is {ce:.3g}, above {DIVERGENCE_FACTOR:g} "
                    f"x {start:.3g}, the larger of ln({n_cls}) (a uniform guess) and the "
                    f"loss at step 0; {self._lr_hint(lr)}",
                    DivergenceWarning,
                    stacklevel=4,
                )
                warned = True
        self.history_.append({k: v / steps for k, v in sums.items()} | {"task": float(t)})

    def _lr_hint(self, lr: float) -> str:
        return (
            f"lower lr (now {lr:g} with optimizer={self.optimizer!r}"
            + (", the paper's setting for a ViT-B/16" if self.optimizer == "sgd" else "")
            + ") or check the backbone's features"
        )

    def _align(self, t: int, gen: torch.Generator) -> None:
        """Classifier alignment: re-train all heads on features drawn from the class Gaussians."""
        if self.align_epochs == 0:
            return
        C, d = self.class_means_.shape
        chol = torch.linalg.cholesky(self.class_covs_)
        task_of = torch.tensor(self.class_task_)
        factor = torch.where(
            task_of == t, torch.ones(C), 0.9 + 0.1 * (task_of.float() + 1) / (t + 1)
        )
        means = self.class_means_.double() * factor.double()[:, None]
        opt = torch.optim.SGD(list(self.heads_), lr=self.align_lr, momentum=0.9, weight_decay=5e-4)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.align_epochs)
        sizes = [len(c) for c in self.task_classes_]
        n = self.align_samples
        labels = torch.arange(C).repeat_interleave(n).to(self.device_)
        step = 0
        for epoch in range(self.align_epochs):
            z = torch.randn(C, n, d, generator=gen, dtype=torch.float64)
            feats = (means[:, None, :] + z @ chol.transpose(1, 2)).reshape(C * n, d).float()
            feats = feats.to(self.device_)
            order = torch.randperm(C * n, generator=gen).to(self.device_)
            for s in range(C):
                idx = order[s * n : (s + 1) * n]
                logits = self._all_logits(feats[idx])
                norms = torch.stack(
                    [blk.norm(dim=1) + 1e-7 for blk in logits.split(sizes, dim=1)], 1
                )
                loss = F.cross_entropy(
                    logits / norms.mean(1, keepdim=True) / self.align_temperature, labels[idx]
                )
                value = float(loss.detach())
                if not math.isfinite(value):
                    raise FloatingPointError(
                        f"task {t}: the classifier-alignment loss is {value} at step {step} "
                        f"(epoch {epoch}, batch {s}); lower align_lr (now {self.align_lr:g})"
                    )
                step += 1
                opt.zero_grad()
                loss.backward()
                opt.step()
            sched.step()

    def _all_logits(self, feats: torch.Tensor) -> torch.Tensor:
        return torch.cat([cosine_logits(feats, h) for h in self.heads_], dim=1)

    # ------------------------------------------------------------------ predict
    @torch.no_grad()
    def decision_function(self, X: Any) -> torch.Tensor:
        """Cosine logits ``(N, C)`` over all classes seen so far (columns in ``classes_`` order),
        on the CPU."""
        return self._all_logits(self.embed(X).to(self.device_)).cpu()

    def predict(self, X: Any) -> np.ndarray:
        """Labels by argmax over every head's cosine logits (no task id)."""
        return self.classes_[self.decision_function(X).argmax(1).numpy()]

    def score(self, X: Any, y: Any = None) -> float:
        """Top-1 accuracy over all classes seen so far (``X`` may be a DataLoader of
        ``(x, y)`` batches, then ``y`` is None)."""
        X, y = self._xy("X", X, y)
        return float(np.mean(self.predict(X) == y))

    def memory_bytes(self) -> int:
        """Bytes of the stored class statistics (means and covariances, float32 means,
        float64 covariances as kept)."""
        return int(
            self.class_means_.numel() * self.class_means_.element_size()
            + self.class_covs_.numel() * self.class_covs_.element_size()
        )
