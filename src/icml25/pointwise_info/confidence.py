"""Score-to-probability tools and the established confidence scores PVI can be plugged into.

- :func:`softmax` turns per-class scores (logits, or pointwise information in bits) into
  probabilities, optionally at a temperature.
- :func:`fit_temperature` is temperature scaling (Guo et al., 2017): the ``T > 0`` that
  minimises the validation negative log-likelihood of ``softmax(scores / T)``.
- :func:`msp`, :func:`doctor`, :func:`neg_entropy`, :func:`margin` are confidence scores computed
  from a probability vector. Each is an "existing confidence method" that normally reads the
  softmax; the paper's last claim is that feeding it ``softmax(PVI)`` instead helps.
  ``doctor`` is DOCTOR's ``g(x) = sum_k p_k^2`` (Granese et al., NeurIPS 2021; its rejection
  rule ``(1 - g) / g > gamma`` ranks like ``g``), without the input perturbation.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax
from scipy.special import softmax as _softmax

from icml25.core import validate as V
from icml25.core.metrics import check_labels, check_probabilities

T_BOUNDS = (0.01, 100.0)
"""Temperatures searched by :func:`fit_temperature`."""


def _scores(scores: Any, name: str = "scores") -> np.ndarray:
    try:
        arr = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be an array of numbers, got {type(scores).__name__}"
        ) from exc
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] < 2:
        raise ValueError(f"{name} must be a (n_samples, n_classes>=2) array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {int(np.sum(~np.isfinite(arr)))} NaN/inf")
    return arr


def softmax(scores: Any, temperature: float = 1.0, *, base: float = math.e) -> np.ndarray:
    """``base ** (s_k / T) / sum_j base ** (s_j / T)`` over the last axis: the usual
    ``softmax(scores / temperature)`` for the default ``base=e``; ``base=2`` for scores in
    bits read as log2-probabilities."""
    temperature = V.positive("temperature", temperature)
    base = V.number("base", base, low=1.0, low_open=True)
    return np.asarray(_softmax(_scores(scores) * math.log(base) / temperature, axis=1))


def nll(scores: Any, y: Any, temperature: float = 1.0) -> float:
    """Mean negative log-likelihood (nats) of ``softmax(scores / temperature)`` at ``y``."""
    temperature = V.positive("temperature", temperature)
    s = _scores(scores)
    labels = check_labels(y, len(s), s.shape[1])
    logp = log_softmax(s / temperature, axis=1)
    return float(-np.mean(logp[np.arange(len(s)), labels]))


def fit_temperature(scores: Any, y: Any) -> float:
    """Temperature scaling: ``argmin_T nll(scores, y, T)`` over ``T`` in :data:`T_BOUNDS`.

    A bounded 1-D search in ``log T`` (the NLL is smooth and, for fixed scores, unimodal in
    ``1/T``). Fit on held-out data, never on the test set.
    """
    s = _scores(scores)
    labels = check_labels(y, len(s), s.shape[1])
    lo, hi = np.log(T_BOUNDS[0]), np.log(T_BOUNDS[1])
    res = minimize_scalar(
        lambda logt: nll(s, labels, float(np.exp(logt))),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-6},
    )
    return float(np.exp(res.x))


def msp(probs: Any) -> np.ndarray:
    """Maximum probability ``max_k p_k``."""
    return check_probabilities(probs).max(axis=1)


def doctor(probs: Any) -> np.ndarray:
    """DOCTOR's ``g(x) = sum_k p_k^2`` (higher = more confident)."""
    p = check_probabilities(probs)
    return np.sum(p**2, axis=1)


def neg_entropy(probs: Any) -> np.ndarray:
    """``-H(p) = sum_k p_k ln p_k`` (higher = more confident)."""
    p = check_probabilities(probs)
    return np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=1)


def margin(probs: Any) -> np.ndarray:
    """Gap between the two largest probabilities."""
    p = np.sort(check_probabilities(probs), axis=1)
    return p[:, -1] - p[:, -2]


CONFIDENCE_SCORES = {"msp": msp, "doctor": doctor, "neg_entropy": neg_entropy, "margin": margin}
"""The score functions by name."""
