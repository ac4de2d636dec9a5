r"""The power parametrization :math:`x = u^p - v^p` and its range shrinking.

With the compatible regularizer :math:`h(u, v) = \sum_i (u_i^p + v_i^p)` (not plain weight
decay), gradient flow on :math:`f(u^p - v^p) + \alpha_t h(u, v)`, :math:`u, v > 0`, gives

.. math::
    \dot u = -p u^{p-1}(g + \alpha), \qquad \dot v = p v^{p-1}(g - \alpha), \qquad
    g = \nabla f(x),

so that, per coordinate,

.. math::
    \frac{d}{dt} u^{2-p} = -p(2-p)(g + \alpha), \qquad
    \frac{d}{dt} v^{2-p} = p(2-p)(g - \alpha).

Hence the **invariant** :math:`S_t = u^{2-p} + v^{2-p} = S_0 - 2p(2-p)A_t` with
:math:`A_t = \int_0^t \alpha_s\,ds`, independent of the loss, and the dual variable
:math:`\mu = (u^{2-p} - v^{2-p}) / (2p(2-p))` follows the mirror flow :math:`\dot\mu = -g`.
For fixed :math:`S` and :math:`u, v \ge 0`, :math:`\mu` ranges over an interval of width
:math:`S / (p|2-p|)`: the range of :math:`\nabla R_{a_t}`.

- :math:`p < 2`: the width shrinks linearly in :math:`A` and collapses at
  :math:`A = S_0 / (2p(2-p))`. A factor reaches 0 in finite time (:math:`u^{2-p}` moves at a
  finite rate) and, since :math:`\partial x/\partial u = p u^{p-1} = 0` there, stays at 0: the
  coordinate's sign is frozen.
- :math:`p > 2`: :math:`2 - p < 0`, so :math:`S` grows and the dual interval widens; the
  reachable :math:`x` for a bounded dual excursion shrinks instead.
- :math:`p = 2` (:math:`u^2 - v^2`) and :math:`u \odot v` are not covered: their mirror map
  :math:`\tfrac12\operatorname{arcsinh}(2x/c)` covers all of :math:`\mathbb R` for every c, so
  there is no range shrinking.

The definitions (the power parametrization with :math:`h = \sum u^p + v^p`, the dual domain)
come from secondary sources: the public reviews of the authors' ICLR 2025 submission
"Time-Dependent Mirror Flows and Where to Find Them" (OpenReview EreKmSOw7K); the invariant is
derived here and checked numerically (tests and the reproduction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml25.core.validate import number, real_array


def _check_p(p: float) -> float:
    if not isinstance(p, (int, float)) or not np.isfinite(p) or p <= 1 or p == 2:
        raise ValueError(
            f"p must be a finite number > 1 and != 2 (p = 2 has no range "
            f"shrinking; see the module docstring), got {p!r}"
        )
    return float(p)


def _check_factors(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u = real_array("u", u)
    v = real_array("v", v)
    if u.shape != v.shape:
        raise ValueError(f"u and v must have the same shape, got {u.shape} and {v.shape}")
    if not (np.all(np.isfinite(u)) and np.all(np.isfinite(v))):
        raise ValueError("u and v must be finite")
    if np.any(u < 0) or np.any(v < 0):
        raise ValueError("u and v must be >= 0 (the power parametrization is for u, v >= 0)")
    return u, v


def power_x(u: np.ndarray, v: np.ndarray, p: float) -> np.ndarray:
    r""":math:`x = u^p - v^p`."""
    p = _check_p(p)
    u, v = _check_factors(u, v)
    return u**p - v**p


def power_regularizer(u: np.ndarray, v: np.ndarray, p: float) -> float:
    r"""The compatible regularizer :math:`h = \sum_i (u_i^p + v_i^p)`."""
    p = _check_p(p)
    u, v = _check_factors(u, v)
    return float(np.sum(u**p + v**p))


def power_invariant(u: np.ndarray, v: np.ndarray, p: float) -> np.ndarray:
    r""":math:`S = u^{2-p} + v^{2-p}` per coordinate (``nan`` where a factor is 0: the invariant
    only holds while :math:`u, v > 0`)."""
    p = _check_p(p)
    u, v = _check_factors(u, v)
    alive = (u > 0) & (v > 0)
    with np.errstate(divide="ignore"):
        S = np.where(
            alive, np.where(alive, u, 1.0) ** (2 - p) + np.where(alive, v, 1.0) ** (2 - p), np.nan
        )
    return np.asarray(S)


def power_dual(u: np.ndarray, v: np.ndarray, p: float) -> np.ndarray:
    r"""The dual variable :math:`\mu = (u^{2-p} - v^{2-p}) / (2p(2-p))`, with
    :math:`\dot\mu = -\nabla f(x)` under gradient flow (``nan`` where a factor is 0)."""
    p = _check_p(p)
    u, v = _check_factors(u, v)
    alive = (u > 0) & (v > 0)
    uu, vv = np.where(alive, u, 1.0), np.where(alive, v, 1.0)
    return np.where(alive, (uu ** (2 - p) - vv ** (2 - p)) / (2 * p * (2 - p)), np.nan)


def predicted_invariant(S0: np.ndarray | float, p: float, A: np.ndarray | float) -> np.ndarray:
    r""":math:`S_t = S_0 - 2p(2-p)A_t`, :math:`A_t = \int_0^t\alpha_s ds` (for GD with step
    :math:`\eta`, :math:`A_k = \eta\sum_{j<k}\alpha_j`)."""
    p = _check_p(p)
    S0 = real_array("S0", S0, low=0.0, low_open=True)
    A = real_array("A (the integrated regularization strength)", A, low=0.0)
    return S0 - 2 * p * (2 - p) * A


def dual_interval_width(S: np.ndarray | float, p: float) -> np.ndarray:
    r"""Width of the range of :math:`\nabla R_{a_t}`: :math:`S / (p|2-p|)`; 0 where
    :math:`S \le 0` (the interval has collapsed), NaN where ``S`` is NaN (a factor at 0)."""
    p = _check_p(p)
    S = real_array("S", S, allow_nan=True)
    return np.maximum(S, 0.0) / (p * abs(2 - p))


def collapse_time(S0: float, p: float) -> float:
    r"""For :math:`p < 2`, the integrated strength :math:`A = S_0 / (2p(2-p))` at which the dual
    interval collapses (``inf`` for :math:`p > 2`, where it widens)."""
    p = _check_p(p)
    S0 = number("S0", S0, low=0.0, low_open=True)
    return float(S0 / (2 * p * (2 - p))) if p < 2 else float("inf")


@dataclass(frozen=True)
class PowerTrajectory:
    """What :func:`power_gd` records; ``R`` runs, ``K`` recorded steps, ``d`` coordinates."""

    steps: np.ndarray
    """(K,) recorded step counts (after that many GD steps)."""
    A: np.ndarray
    """(R, K) integrated strength :math:`A_k = \\eta\\sum_{j<k}\\alpha_j` of each run."""
    S: np.ndarray
    """(R, K, d) measured invariant; ``nan`` once a factor of the coordinate is 0."""
    x: np.ndarray
    """(R, d) final :math:`x`."""
    frozen: np.ndarray
    """(R, d) bool: a factor hit 0 (and stayed there) during the run."""
    frozen_at: np.ndarray
    """(R, d) the step at which it did (``-1`` if never)."""


def power_gd(
    A: np.ndarray,
    y: np.ndarray,
    *,
    p: float,
    lr: float,
    alpha: float,
    off: Sequence[int],
    steps: int,
    u0: float | np.ndarray = 1.0,
    v0: float | np.ndarray = 1.0,
    record: Sequence[int] = (),
) -> PowerTrajectory:
    r"""Batched GD on :math:`\tfrac12\|A(u^p - v^p) - y\|^2 + \alpha\sum(u^p + v^p)`; run ``r``
    regularizes for its first ``off[r]`` steps. A factor that a step would push below 0 is set
    to 0, where its gradient :math:`p u^{p-1}` vanishes: it stays there (frozen)."""
    p = _check_p(p)
    A = real_array("A", A)
    y = real_array("y", y)
    if A.ndim != 2 or y.shape != (A.shape[0],):
        raise ValueError(f"A must be (n, d) and y (n,), got {A.shape} and {y.shape}")
    lr = number("lr", lr, low=0.0, low_open=True)
    alpha = number("alpha", alpha, low=0.0)
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    if isinstance(off, str) or np.ndim(off) != 1 or len(off) == 0:
        raise ValueError(f"off must be a non-empty sequence of step counts >= 0, got {off!r}")
    off_arr = real_array("off (step counts)", off, low=0.0, integer=True).astype(np.int64)
    if isinstance(record, str):
        raise ValueError(f"record must be a sequence of step counts, got {record!r}")
    rec_arr = real_array("record (step counts)", list(record), integer=True).astype(np.int64)
    rec = sorted({int(k) for k in rec_arr})
    if rec and (rec[0] < 0 or rec[-1] > steps):
        raise ValueError(f"record steps must lie in [0, {steps}], got {list(record)!r}")
    d = A.shape[1]
    u0 = real_array("u0", u0, shape=(d,))
    v0 = real_array("v0", v0, shape=(d,))
    u, v = _check_factors(np.broadcast_to(u0, (d,)), np.broadcast_to(v0, (d,)))
    R = off_arr.size
    U, V = np.tile(u, (R, 1)), np.tile(v, (R, 1))
    G, b = A.T @ A, A.T @ y
    a_of = off_arr[:, None]
    frozen_at = np.where((U > 0) & (V > 0), -1, 0)
    S_rec = np.full((R, len(rec), d), np.nan)
    A_rec = np.zeros((R, len(rec)))

    def store(j: int, k: int) -> None:
        alive = frozen_at < 0
        with np.errstate(divide="ignore", invalid="ignore"):
            S_rec[:, j] = np.where(alive, U ** (2 - p) + V ** (2 - p), np.nan)
        A_rec[:, j] = lr * alpha * np.minimum(k, off_arr)

    j = 0
    for k in range(steps + 1):
        while j < len(rec) and rec[j] == k:
            store(j, k)
            j += 1
        if k == steps:
            break
        g = (U**p - V**p) @ G - b
        a = np.where(k < a_of, alpha, 0.0)
        U = np.maximum(U - lr * p * U ** (p - 1) * (g + a), 0.0)
        V = np.maximum(V - lr * p * V ** (p - 1) * (a - g), 0.0)
        hit = (frozen_at < 0) & ((U == 0) | (V == 0))
        frozen_at[hit] = k + 1
    return PowerTrajectory(
        steps=np.asarray(rec, dtype=int),
        A=A_rec,
        S=S_rec,
        x=U**p - V**p,
        frozen=frozen_at >= 0,
        frozen_at=frozen_at,
    )
