r"""Balancedness of a factorised matrix :math:`W = P Q^\top` under gradient descent with weight
decay (attention :math:`W_Q W_K^\top`, LoRA :math:`BA = B (A^\top)^\top`, matrix sensing).

With :math:`G = \nabla_W f` and weight decay :math:`\alpha` on both factors (GD on
:math:`f(PQ^\top) + \tfrac\alpha2(\|P\|^2 + \|Q\|^2)`), the balancedness
:math:`B = P^\top P - Q^\top Q` obeys :math:`\dot B = -2\alpha B` in the flow, and one GD step of
size :math:`\eta` gives exactly

.. math::
    B' = (1 - \eta\alpha)^2 B + \eta^2 (Q^\top G^\top G Q - P^\top G G^\top P).

The :math:`\eta^2` term is additive (for :math:`u \odot v` it is multiplicative), so over a fixed
time :math:`t = \eta k` the deviation from :math:`(1-\eta\alpha)^{2k} B_0` is of order
:math:`\eta t`: halving :math:`\eta` halves it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from icml25.core.validate import number, real_array


def _check_pair(P: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    P = real_array("P", P)
    Q = real_array("Q", Q)
    if P.ndim != 2 or Q.ndim != 2 or P.shape[1] != Q.shape[1]:
        raise ValueError(
            f"P (m, r) and Q (n, r) must be matrices with the same number of columns "
            f"(W = P Q^T), got {P.shape} and {Q.shape}"
        )
    return P, Q


def _check_lr_alpha(lr: float, alpha: float) -> tuple[float, float]:
    return number("lr", lr, low=0.0, low_open=True), number("alpha", alpha, low=0.0)


def balancedness(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    r""":math:`B = P^\top P - Q^\top Q` for :math:`W = P Q^\top` (for LoRA :math:`W = BA`, pass
    ``P = B, Q = A.T``; the norm equals that of :math:`AA^\top - B^\top B`)."""
    P, Q = _check_pair(P, Q)
    return P.T @ P - Q.T @ Q


def balancedness_gd_step(
    P: np.ndarray, Q: np.ndarray, G: np.ndarray, lr: float, alpha: float
) -> np.ndarray:
    r"""The balancedness after one GD step with weight decay, from the closed form
    :math:`(1-\eta\alpha)^2 B + \eta^2(Q^\top G^\top G Q - P^\top G G^\top P)`;
    ``G`` is :math:`\nabla_W f` at :math:`W = PQ^\top` (shape ``(m, n)``)."""
    P, Q = _check_pair(P, Q)
    G = real_array("G", G)
    if G.shape != (P.shape[0], Q.shape[0]):
        raise ValueError(
            f"G must have the shape of W = P Q^T, {(P.shape[0], Q.shape[0])}, got {G.shape}"
        )
    lr, alpha = _check_lr_alpha(lr, alpha)
    B = P.T @ P - Q.T @ Q
    GQ, GtP = G @ Q, G.T @ P
    return (1 - lr * alpha) ** 2 * B + lr**2 * (GQ.T @ GQ - GtP.T @ GtP)


def balancedness_prediction(
    B0: np.ndarray, lr: float, alpha: float, steps: int | np.ndarray
) -> np.ndarray:
    r""":math:`(1-\eta\alpha)^{2k} B_0` for each ``k`` in ``steps`` (stacked on a leading axis
    when ``steps`` is an array)."""
    lr, alpha = _check_lr_alpha(lr, alpha)
    k = real_array("steps", steps, low=0.0, integer=True)
    factor = (1 - lr * alpha) ** (2 * k)
    return np.multiply.outer(factor, real_array("B0", B0))


def balancedness_error(
    Bs: Sequence[np.ndarray] | np.ndarray,
    B0: np.ndarray,
    lr: float,
    alpha: float,
    steps: Sequence[int] | np.ndarray,
) -> float:
    r""":math:`\max_k \|B_k - (1-\eta\alpha)^{2k}B_0\|_F / \|B_0\|_F` over the recorded steps
    (weight decay on throughout them)."""
    Bs = real_array("Bs", Bs)
    B0 = real_array("B0", B0)
    k = real_array("steps", steps, low=0.0, integer=True)
    if k.ndim != 1 or Bs.ndim != 3 or Bs.shape[1:] != B0.shape or len(k) != len(Bs):
        raise ValueError(
            f"Bs must be (K, r, r) matching B0 {B0.shape} and one step per entry, got "
            f"{Bs.shape} and {len(k)} steps"
        )
    norm0 = np.linalg.norm(B0)
    if norm0 == 0:
        raise ValueError("B0 is zero (a balanced start): the relative error is undefined")
    pred = balancedness_prediction(B0, lr, alpha, k)
    return float(np.max(np.linalg.norm(Bs - pred, axis=(1, 2))) / norm0)


def balancedness_switch_step(lr: float, alpha: float, target: float) -> int:
    r"""The first GD step :math:`k` at which weight decay has brought the predicted balancedness
    down to ``target`` times its start: the least :math:`k` with :math:`(1-\eta\alpha)^{2k}
    \le` ``target`` (in the flow, :math:`t = \ln(1/\text{target}) / (2\alpha)`).

    Switching weight decay off there (:class:`~icml25.mirror_flow.WeightDecaySwitch` with
    ``at_step=k``) fixes the switch from the theory's balancedness target rather than from a
    validation score: ``target = 0.05`` is three time constants (:math:`e^{-3} \approx 0.050`).
    """
    lr, alpha = _check_lr_alpha(lr, alpha)
    target = number("target", target, low=0.0, low_open=True)
    if target >= 1:
        raise ValueError(f"target must be < 1 (a fraction of the start balancedness), got {target}")
    if alpha == 0:
        raise ValueError("alpha must be > 0: without weight decay the balancedness does not decay")
    if lr * alpha >= 1:
        raise ValueError(f"lr * alpha must be < 1 for a decaying GD factor, got {lr * alpha:g}")
    k = math.ceil(math.log(target) / (2 * math.log1p(-lr * alpha)) - 1e-9)
    return max(int(k), 0)
