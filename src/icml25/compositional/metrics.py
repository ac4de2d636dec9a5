"""Linear-factorisation metrics of any encoder's embeddings.

Given embeddings ``X`` (``N x d``) of inputs labelled with ``K`` concepts (``labels``, ``N x K``),
the additive model

.. math:: \\hat x_i = \\mu + \\sum_{h=1}^{K} u_h[y_{ih}]

is fitted and scored by

.. math:: R^2 = 1 - \\frac{\\lVert X - \\hat X\\rVert_F^2}{\\lVert X - \\bar x\\rVert_F^2}.

``fit="means"`` is the authors' estimator (``u_h[v]`` = mean of the centred embeddings with
``y_h = v``), exact on a balanced full grid; ``fit="lstsq"`` (the default) is the least-squares
fit of the additive model, which stays unbiased on unbalanced or incomplete grids. The whitened
:math:`R^2` is the same ratio after mapping both residual and data through
:math:`\\Sigma^{-1/2}` (the covariance of ``X``), so that every direction of the embedding counts
equally. Orthogonality is the mean ``|cos|`` between the value-means of different concepts (and
of the same concept); the rank of a concept is the number of principal directions of its
value-means that explain 95% of their variance.

References
----------
A. Uselis, A. Dittadi, S. J. Oh. Does Data Scaling Lead to Visual Compositional
Generalization? ICML 2025 (arXiv 2507.07102). Metrics as in the authors' follow-up code,
``oshapio/necessary-compositionality``, ``src/complinearity/analyse_embeddings_probes.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from icml25.compositional.designs import _as_labels, check_design
from icml25.core import validate as V

FITS = ("lstsq", "means")


@dataclass(frozen=True)
class Factorization:
    """The additive fit of embeddings and its scores.

    Attributes
    ----------
    r2
        Linear-factorisation :math:`R^2` (1 for exactly additive embeddings).
    r2_whitened
        The same after whitening by the embeddings' covariance (``nan`` when not asked for).
    mean
        ``(d,)`` the intercept :math:`\\mu`.
    components
        One ``(n_h, d)`` array per concept, :math:`u_h`, centred so that its observed values
        sum to zero.
    value_means
        One ``(n_h, d)`` array per concept: the mean of the centred embeddings for each value
        (zero rows for values that never occur).
    counts
        One ``(n_h,)`` array per concept: how many rows take each value.
    cross_abs_cos
        Mean ``|cos|`` between value-means of different concepts (0: orthogonal).
    within_abs_cos
        Mean ``|cos|`` between distinct value-means of the same concept.
    ranks
        Per concept, the number of principal directions that explain 95% of the variance of
        its value-means.
    """

    r2: float
    r2_whitened: float
    mean: np.ndarray
    components: tuple[np.ndarray, ...]
    value_means: tuple[np.ndarray, ...]
    counts: tuple[np.ndarray, ...]
    cross_abs_cos: float
    within_abs_cos: float
    ranks: tuple[int, ...]


def _check_inputs(X: Any, labels: Any) -> tuple[np.ndarray, np.ndarray, list[int]]:
    Xa = V.finite_array("X", X, ndim=2, min_len=2)
    lab = _as_labels("labels", labels)
    if len(lab) != len(Xa):
        raise ValueError(f"labels must have one row per row of X ({len(Xa)}), got {len(lab)}")
    ns = [int(lab[:, h].max()) + 1 for h in range(lab.shape[1])]
    for h in range(lab.shape[1]):
        if len(np.unique(lab[:, h])) < 2:
            raise ValueError(
                f"labels[:, {h}] must take at least 2 values (a concept with one value has "
                f"nothing to factor), got only {int(lab[0, h])}"
            )
    return Xa, lab, ns


def _onehot(y: np.ndarray, n: int) -> sp.csr_matrix:
    N = len(y)
    return sp.csr_matrix((np.ones(N), (np.arange(N), y)), shape=(N, n))


def concept_value_means(
    X: Any, labels: Any
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """Per concept, the mean of the centred embeddings for each value, and the counts.

    Returns ``(means, counts)``: ``means[h]`` is ``(n_h, d)`` (zero rows for absent values),
    ``counts[h]`` is ``(n_h,)``.
    """
    Xa, lab, ns = _check_inputs(X, labels)
    return _value_means(Xa - Xa.mean(axis=0), lab, ns)


def _value_means(
    Xc: np.ndarray, lab: np.ndarray, ns: Sequence[int]
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    means, counts = [], []
    for h, n in enumerate(ns):
        oh = _onehot(lab[:, h], n)
        c = np.asarray(oh.sum(axis=0)).ravel()
        s = np.asarray(oh.T @ Xc)
        means.append(s / np.maximum(c, 1)[:, None])
        counts.append(c.astype(np.int64))
    return tuple(means), tuple(counts)


def _lstsq_fit(
    Xc: np.ndarray, lab: np.ndarray, ns: Sequence[int]
) -> tuple[np.ndarray, tuple[np.ndarray, ...], np.ndarray, np.ndarray]:
    """Least-squares additive fit of centred ``Xc`` via the normal equations of the
    treatment-coded design ``A``, assembled from counts and group sums (``O(N d)``).

    Returns the intercept, the components (each centred over its observed values), and the
    coefficients ``beta`` and right-hand side ``B = A^T Xc`` (so that the residual's Gram
    matrix is ``Xc^T Xc - beta^T B``)."""
    N = len(Xc)
    blocks = [_onehot(lab[:, h], n)[:, 1:] for h, n in enumerate(ns)]
    A = sp.hstack([sp.csr_matrix(np.ones((N, 1))), *blocks], format="csr")
    G = np.asarray((A.T @ A).todense())
    B = np.asarray(A.T @ Xc)
    beta = scipy.linalg.solve(G, B, assume_a="pos")
    mean = beta[0]
    comps = []
    start = 1
    for n in ns:
        u = np.vstack([np.zeros((1, Xc.shape[1])), beta[start : start + n - 1]])
        start += n - 1
        comps.append(u)
    # Sum-to-zero over observed values, moving the shift into the intercept.
    out = []
    for h, u in enumerate(comps):
        seen = np.bincount(lab[:, h], minlength=ns[h]) > 0
        shift = u[seen].mean(axis=0)
        u = np.where(seen[:, None], u - shift, 0.0)
        mean = mean + shift
        out.append(u)
    return mean, tuple(out), beta, B


def linear_factorization(
    X: Any, labels: Any, *, fit: str = "lstsq", whiten: bool = True, rank_threshold: float = 0.95
) -> Factorization:
    """Fit the additive model to embeddings and score it.

    Parameters
    ----------
    X
        ``(N, d)`` embeddings (NumPy array or tensor; use :func:`embed` for an encoder).
    labels
        ``(N, K)`` integer concept values, ``K >= 2``, each concept with >= 2 values.
    fit
        ``"lstsq"`` (least squares; needs a connected, identifiable set of combinations) or
        ``"means"`` (the authors' sum of value-means; equal to least squares on a balanced
        full grid, biased otherwise).
    whiten
        Also compute the whitened :math:`R^2` (costs a ``d x d`` eigendecomposition).
    rank_threshold
        Fraction of the value-means' variance the per-concept rank must explain.

    Returns
    -------
    Factorization
    """
    Xa, lab, ns = _check_inputs(X, labels)
    V.choice("fit", fit, FITS)
    if not isinstance(whiten, bool):
        raise ValueError(f"whiten must be True or False, got {whiten!r}")
    thr = V.number("rank_threshold", rank_threshold, low=0.0, high=1.0, low_open=True)
    mu = Xa.mean(axis=0)
    Xc = Xa - mu
    means, counts = _value_means(Xc, lab, ns)
    if fit == "means":
        mean = mu
        comps = means
        R = Xc - sum(m[lab[:, h]] for h, m in enumerate(means))
        sse = float(np.vdot(R, R))
    else:
        # Fit on the values that occur (compact codes), then scatter back to n_h rows.
        compact = [np.unique(lab[:, h], return_inverse=True) for h in range(lab.shape[1])]
        lab_c = np.stack([inv.ravel() for _, inv in compact], axis=1)
        ns_c = [len(vals) for vals, _ in compact]
        check_design(lab_c, ns_c, name="labels")
        mean_c, comps_c, beta, B = _lstsq_fit(Xc, lab_c, ns_c)
        mean = mu + mean_c
        comps_list = []
        for h, u in enumerate(comps_c):
            full = np.zeros((ns[h], Xc.shape[1]))
            full[compact[h][0]] = u
            comps_list.append(full)
        comps = tuple(comps_list)
    sst = float(np.vdot(Xc, Xc))
    if fit == "lstsq":
        # The least-squares residual is orthogonal to the design A, so
        # ||R||^2 = ||Xc||^2 - ||A beta||^2 = ||Xc||^2 - <beta, A^T Xc>: no N x d residual.
        sse = max(sst - float(np.vdot(beta, B)), 0.0)
    r2 = 1.0 - sse / sst if sst > 0 else float("nan")
    r2w = float("nan")
    if whiten:
        gram = Xc.T @ Xc
        # Likewise R^T R = Xc^T Xc - beta^T B for least squares; the value-means fit has no
        # such identity.
        rgram = gram - beta.T @ B if fit == "lstsq" else R.T @ R
        r2w = _whitened_r2(gram, rgram, len(Xc))
    cross, within = _orthogonality(means, counts)
    ranks = tuple(_rank(m[c > 0], thr) for m, c in zip(means, counts, strict=True))
    return Factorization(
        r2=r2,
        r2_whitened=r2w,
        mean=mean,
        components=tuple(comps),
        value_means=means,
        counts=counts,
        cross_abs_cos=cross,
        within_abs_cos=within,
        ranks=ranks,
    )


def _whitened_r2(gram: np.ndarray, rgram: np.ndarray, N: int) -> float:
    """``1 - ||R W||^2 / ||Xc W||^2`` with ``W = Sigma^{-1/2}`` on the covariance's range
    (eigenvalues below ``1e-10`` of the largest are dropped), from the Gram matrices
    ``Xc^T Xc`` and ``R^T R``: ``||M W||^2 = tr(M^T M Sigma^+)``."""
    lam, vecs = np.linalg.eigh(gram / max(N - 1, 1))
    keep = lam > 1e-10 * max(float(lam.max()), 1e-300)
    if not np.any(keep):
        return float("nan")
    P = vecs[:, keep] / np.sqrt(lam[keep])
    sst = float(np.sum((gram @ P) * P))
    return 1.0 - float(np.sum((rgram @ P) * P)) / sst


def _unit_rows(M: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(M, axis=1, keepdims=True)
    return M / np.maximum(n, 1e-12)


def _orthogonality(
    means: Sequence[np.ndarray], counts: Sequence[np.ndarray]
) -> tuple[float, float]:
    units = [_unit_rows(m[c > 0]) for m, c in zip(means, counts, strict=True)]
    cross, within = [], []
    for a, ua in enumerate(units):
        s = np.abs(ua @ ua.T)
        within.append(s[~np.eye(len(ua), dtype=bool)])
        for ub in units[a + 1 :]:
            cross.append(np.abs(ua @ ub.T).ravel())
    return float(np.mean(np.concatenate(cross))), float(np.mean(np.concatenate(within)))


def _rank(M: np.ndarray, threshold: float) -> int:
    s = np.linalg.svd(M, compute_uv=False)
    var = s**2
    if var.sum() <= 0:
        return 0
    frac = np.cumsum(var) / var.sum()
    return min(int(np.searchsorted(frac, threshold - 1e-12)) + 1, len(var))


def factorization_r2(X: Any, labels: Any, *, fit: str = "lstsq") -> float:
    """Linear-factorisation :math:`R^2` of embeddings (see :func:`linear_factorization`)."""
    return linear_factorization(X, labels, fit=fit, whiten=False).r2


def whitened_r2(X: Any, labels: Any, *, fit: str = "lstsq") -> float:
    """Whitened linear-factorisation :math:`R^2` (see :func:`linear_factorization`)."""
    return linear_factorization(X, labels, fit=fit, whiten=True).r2_whitened


def orthogonality(X: Any, labels: Any) -> tuple[float, float]:
    """``(cross, within)``: mean ``|cos|`` between value-means of different concepts and of the
    same concept (the authors' orthogonality statistics)."""
    Xa, lab, ns = _check_inputs(X, labels)
    means, counts = _value_means(Xa - Xa.mean(axis=0), lab, ns)
    return _orthogonality(means, counts)


def concept_ranks(X: Any, labels: Any, *, threshold: float = 0.95) -> tuple[int, ...]:
    """Per concept, the number of principal directions of its value-means explaining
    ``threshold`` of their variance (the authors' ``k95``)."""
    thr = V.number("threshold", threshold, low=0.0, high=1.0, low_open=True)
    Xa, lab, ns = _check_inputs(X, labels)
    means, counts = _value_means(Xa - Xa.mean(axis=0), lab, ns)
    return tuple(_rank(m[c > 0], thr) for m, c in zip(means, counts, strict=True))


def combination_means(X: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    """The mean embedding of each combination that occurs: ``(means, combinations)``, one row
    per distinct row of ``labels`` (sorted).

    ``factorization_r2(*combination_means(X, labels))`` is the linear-factorisation
    :math:`R^2` of the combinations' representations, without the variation *within* a
    combination (other images of the same item and colour). On a balanced full grid the
    per-image :math:`R^2` is this one times the between-combination share of the variance,
    ``R2_image = R2_means * SS_between / SS_total``.
    """
    Xa, lab, _ = _check_inputs(X, labels)
    combos, inverse = np.unique(lab, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    sums = np.zeros((len(combos), Xa.shape[1]))
    np.add.at(sums, inverse, Xa)
    counts = np.bincount(inverse, minlength=len(combos))
    return sums / counts[:, None], combos
