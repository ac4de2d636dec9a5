"""Confidence metrics: failure prediction (misclassification detection) and calibration.

Shared by every method that scores a classifier's confidence (pointwise information, FedGVI);
``icml25.pointwise_info`` re-exports them.

Failure prediction treats a confidence score as a detector of *correct* predictions:

- :func:`auroc` -- area under the ROC curve, correct predictions positive (ties count 1/2).
- :func:`aupr_error` -- average precision with *errors* positive and ``-confidence`` as score.
- :func:`fpr_at_95tpr` -- the fraction of errors accepted at the highest threshold that keeps
  95% of the correct predictions.
- :func:`risk_coverage` / :func:`aurc` / :func:`eaurc` -- selective risk as the least confident
  predictions are rejected (Geifman et al., 2019): AURC is the mean risk over the ``n``
  coverages ``1/n ... n/n``; E-AURC subtracts the AURC of a perfect ranking with the same
  error rate ``r``, whose continuous form is ``r + (1 - r) ln(1 - r)``.

Calibration compares a probability with the frequency of what it predicts:

- :func:`ece` -- expected calibration error of the top-label confidence, 15 equal-width bins
  (Guo et al., 2017), in the unit of the input (multiply by 100 for percent).
- :func:`sce`, :func:`adaptive_sce`, :func:`rms_sce` -- static (class-wise) calibration errors
  (Nixon et al., 2019): every class's probability column is binned, the gap between mean
  probability and frequency of that class is weighted by bin size, and classes are averaged;
  adaptive bins hold equal numbers of samples; RMS takes the root of the weighted squared gaps.
- :func:`cc_sce` -- a class-conditional variant: the top-label calibration error computed
  separately among the samples predicted as each class, averaged over the predicted classes
  (our reading of the "CC-SCE" of Wongso et al.'s calibration table, which is not defined in
  anything available to us; it follows the class-conditional top-label calibration of Gupta &
  Ramdas, 2022).

Every function validates its input and says which argument is wrong.

References
----------
Wongso, Ghosh & Motani, "Pointwise Information Measures as Confidence Estimators in Deep Neural
Networks: A Comparative Study", ICML 2025. Nixon et al., "Measuring Calibration in Deep
Learning", CVPR-W 2019. Geifman, Uziel & El-Yaniv, "Bias-Reduced Uncertainty Estimation for
Deep Neural Classifiers", ICLR 2019.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from scipy.stats import rankdata


def _numbers(value: Any, name: str) -> np.ndarray:
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of numbers, got {type(value).__name__}") from exc


def _vector(value: Any, name: str) -> np.ndarray:
    arr = _numbers(value, name)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {int(np.sum(~np.isfinite(arr)))} NaN/inf")
    return arr


def _correct(value: Any, n: int) -> np.ndarray:
    arr = np.asarray(value)
    if arr.shape != (n,):
        raise ValueError(f"correct must have shape ({n},) like confidence, got {arr.shape}")
    if arr.dtype != bool:
        if not np.all(np.isin(arr, (0, 1))):
            raise ValueError("correct must be booleans or 0/1 (1 = the prediction is right)")
        arr = arr.astype(bool)
    return arr


def _pair(confidence: Any, correct: Any) -> tuple[np.ndarray, np.ndarray]:
    conf = _vector(confidence, "confidence")
    return conf, _correct(correct, len(conf))


def _both_kinds(correct: np.ndarray, what: str) -> None:
    if correct.all() or not correct.any():
        raise ValueError(
            f"{what} needs both correct and wrong predictions, got "
            f"{int(correct.sum())} correct of {len(correct)}"
        )


def check_probabilities(probs: Any, name: str = "probs", atol: float = 1e-6) -> np.ndarray:
    """``probs`` as a float64 ``(n, K)`` array whose rows are probability vectors, or an error."""
    arr = _numbers(probs, name)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] < 2:
        raise ValueError(f"{name} must be a (n_samples, n_classes>=2) array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {int(np.sum(~np.isfinite(arr)))} NaN/inf")
    if arr.min() < 0:
        raise ValueError(f"{name} must be non-negative, got minimum {arr.min():.3g}")
    worst = float(np.max(np.abs(arr.sum(axis=1) - 1.0)))
    if worst > atol:
        raise ValueError(
            f"{name} rows must sum to 1 (probabilities, not logits or scores), got a row "
            f"off by {worst:.3g}"
        )
    return arr


def check_labels(y: Any, n: int, num_classes: int, name: str = "y") -> np.ndarray:
    """``y`` as int64 class indices in ``[0, num_classes)`` of length ``n``, or an error."""
    arr = np.asarray(y)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    if arr.dtype.kind == "f" and not np.all(arr == np.round(arr)):
        raise ValueError(f"{name} must hold integer class indices, got non-integer values")
    if arr.dtype.kind not in "iuf" and arr.dtype != bool:
        raise ValueError(f"{name} must hold integer class indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() >= num_classes:
        raise ValueError(
            f"{name} must be class indices in [0, {num_classes}), got values in "
            f"[{arr.min()}, {arr.max()}]"
        )
    return arr


# ---------------------------------------------------------------------------- failure prediction


def auroc(confidence: Any, correct: Any) -> float:
    """Area under the ROC curve for detecting correct predictions (Mann-Whitney U, ties 1/2)."""
    conf, ok = _pair(confidence, correct)
    _both_kinds(ok, "auroc")
    ranks = rankdata(conf)  # average ranks handle ties
    n_pos, n_neg = int(ok.sum()), int((~ok).sum())
    u = ranks[ok].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def aupr_error(confidence: Any, correct: Any) -> float:
    """Average precision of finding the *errors* when ranking by ``-confidence``.

    ``AP = sum_t (R_t - R_{t-1}) P_t`` over the distinct thresholds ``t`` (as scikit-learn's
    ``average_precision_score``; no interpolation).
    """
    conf, ok = _pair(confidence, correct)
    _both_kinds(ok, "aupr_error")
    score, err = -conf, ~ok
    order = np.argsort(-score, kind="mergesort")
    score, err = score[order], err[order]
    last = np.r_[np.flatnonzero(np.diff(score)), len(score) - 1]  # last index of each tie group
    tp = np.cumsum(err)[last]
    pp = last + 1
    precision = tp / pp
    recall = tp / err.sum()
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def fpr_at_95tpr(confidence: Any, correct: Any, tpr: float = 0.95) -> float:
    """FPR at the threshold where the true-positive rate first reaches ``tpr``.

    Positives are the correct predictions: the threshold is lowered until ``tpr`` of them are
    accepted, and the result is the fraction of errors accepted with them (ties accepted
    together).
    """
    if isinstance(tpr, bool) or not isinstance(tpr, numbers.Real) or not 0.0 < tpr <= 1.0:
        raise ValueError(f"tpr must be a number in (0, 1], got {tpr!r}")
    conf, ok = _pair(confidence, correct)
    _both_kinds(ok, "fpr_at_95tpr")
    thresholds = np.unique(conf)[::-1]
    pos, neg = np.sort(conf[ok]), np.sort(conf[~ok])
    tp = len(pos) - np.searchsorted(pos, thresholds, side="left")
    fp = len(neg) - np.searchsorted(neg, thresholds, side="left")
    i = int(np.argmax(tp / len(pos) >= tpr - 1e-12))
    return float(fp[i] / len(neg))


def risk_coverage(confidence: Any, correct: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(coverage, risk)``: keep the ``i`` most confident predictions, ``i = 1..n``.

    Ties are broken by input order (a stable sort), so tied scores make the curve depend on it.
    """
    conf, ok = _pair(confidence, correct)
    order = np.argsort(-conf, kind="mergesort")
    errors = np.cumsum(~ok[order])
    kept = np.arange(1, len(conf) + 1)
    return kept / len(conf), errors / kept


def aurc(confidence: Any, correct: Any) -> float:
    """Area under the risk-coverage curve: the mean selective risk over the ``n`` coverages."""
    _, risk = risk_coverage(confidence, correct)
    return float(risk.mean())


def eaurc(confidence: Any, correct: Any) -> float:
    """Excess AURC: ``aurc - (r + (1 - r) ln(1 - r))`` with ``r`` the error rate."""
    conf, ok = _pair(confidence, correct)
    r = float(np.mean(~ok))
    optimal = r + (1.0 - r) * math.log(1.0 - r) if r < 1.0 else 1.0
    return aurc(conf, ok) - optimal


# --------------------------------------------------------------------------------- calibration


def _bin_index(values: np.ndarray, n_bins: int) -> np.ndarray:
    """Equal-width bins on [0, 1], right-closed: (0, 1/B], (1/B, 2/B], ..., 0 in the first."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.clip(np.searchsorted(edges, values, side="left") - 1, 0, n_bins - 1)


def _check_bins(n_bins: int) -> None:
    if not isinstance(n_bins, int) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")


def reliability_diagram(confidence: Any, correct: Any, n_bins: int = 15) -> dict[str, np.ndarray]:
    """Per-bin ``count``, mean ``confidence`` and ``accuracy`` (zeros in empty bins)."""
    _check_bins(n_bins)
    conf, ok = _pair(confidence, correct)
    if conf.min() < 0 or conf.max() > 1:
        raise ValueError(
            f"confidence must be probabilities in [0, 1] for calibration, got values in "
            f"[{conf.min():.3g}, {conf.max():.3g}] (turn scores into probabilities first)"
        )
    idx = _bin_index(conf, n_bins)
    count = np.bincount(idx, minlength=n_bins).astype(np.float64)
    safe = np.maximum(count, 1)
    return {
        "edges": np.linspace(0.0, 1.0, n_bins + 1),
        "count": count,
        "confidence": np.bincount(idx, conf, n_bins) / safe,
        "accuracy": np.bincount(idx, ok.astype(np.float64), n_bins) / safe,
    }


def ece(confidence: Any, correct: Any, n_bins: int = 15) -> float:
    """Expected calibration error: ``sum_b (n_b / n) |acc_b - conf_b|`` over equal-width bins."""
    d = reliability_diagram(confidence, correct, n_bins)
    return float(np.sum(d["count"] * np.abs(d["accuracy"] - d["confidence"])) / d["count"].sum())


def _classwise_gaps(
    probs: Any, y: Any, n_bins: int, adaptive: bool
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per class: (bin weights n_bk / n, gaps mean p_k - freq(y = k)) over its bins."""
    _check_bins(n_bins)
    p = check_probabilities(probs)
    n, k = p.shape
    labels = check_labels(y, n, k)
    out = []
    for c in range(k):
        col, hit = p[:, c], (labels == c).astype(np.float64)
        if adaptive:  # equal-mass bins: ranks split into n_bins nearly equal groups
            order = np.argsort(col, kind="mergesort")
            idx = np.empty(n, dtype=np.int64)
            idx[order] = (np.arange(n) * n_bins) // n
        else:
            idx = _bin_index(col, n_bins)
        count = np.bincount(idx, minlength=n_bins).astype(np.float64)
        safe = np.maximum(count, 1)
        gap = np.bincount(idx, col, n_bins) / safe - np.bincount(idx, hit, n_bins) / safe
        out.append((count / n, gap))
    return out


def sce(probs: Any, y: Any, n_bins: int = 15) -> float:
    """Static calibration error: ``(1/K) sum_k sum_b (n_bk / n) |conf_bk - acc_bk|``."""
    gaps = _classwise_gaps(probs, y, n_bins, adaptive=False)
    return float(np.mean([np.sum(w * np.abs(g)) for w, g in gaps]))


def adaptive_sce(probs: Any, y: Any, n_bins: int = 15) -> float:
    """SCE with equal-mass bins per class (the adaptive calibration error of Nixon et al.)."""
    gaps = _classwise_gaps(probs, y, n_bins, adaptive=True)
    return float(np.mean([np.sum(w * np.abs(g)) for w, g in gaps]))


def rms_sce(probs: Any, y: Any, n_bins: int = 15) -> float:
    """Root-mean-square SCE: ``sqrt((1/K) sum_k sum_b (n_bk / n) (conf_bk - acc_bk)^2)``."""
    gaps = _classwise_gaps(probs, y, n_bins, adaptive=False)
    return float(math.sqrt(np.mean([np.sum(w * g**2) for w, g in gaps])))


def cc_sce(probs: Any, y: Any, n_bins: int = 15) -> float:
    """Class-conditional calibration error of the predicted class (our reading of CC-SCE).

    For every class ``k`` predicted at least once, the samples predicted as ``k`` are binned by
    ``p_k`` (equal-width bins) and ``sum_b (n_bk / n_k) |mean p_k - freq(y = k)|`` is taken;
    the result is the mean over those classes. Unlike :func:`sce`, a class's term is not diluted
    by the samples predicted as other classes, where ``p_k`` is small.
    """
    _check_bins(n_bins)
    p = check_probabilities(probs)
    n, k = p.shape
    labels = check_labels(y, n, k)
    pred = p.argmax(axis=1)
    terms = []
    for c in np.unique(pred):
        sel = pred == c
        col, hit = p[sel, c], (labels[sel] == c).astype(np.float64)
        idx = _bin_index(col, n_bins)
        # per bin n_bk |mean p_k - freq| = |sum p_k - sum hits|
        gap = np.bincount(idx, col, n_bins) - np.bincount(idx, hit, n_bins)
        terms.append(float(np.sum(np.abs(gap)) / sel.sum()))
    return float(np.mean(terms))


def failure_metrics(confidence: Any, correct: Any) -> dict[str, float]:
    """AUROC, AUPR-Error, FPR@95TPR, AURC and E-AURC in one dictionary (fractions)."""
    return {
        "auroc": auroc(confidence, correct),
        "aupr_error": aupr_error(confidence, correct),
        "fpr95": fpr_at_95tpr(confidence, correct),
        "aurc": aurc(confidence, correct),
        "eaurc": eaurc(confidence, correct),
    }
