"""``SignSGD``: a ``torch.optim.Optimizer`` stepping by the sign of the gradient.

``p -= lr * sign(g)``; with ``momentum = beta > 0`` the sign of the exponential moving average
``m = beta m + (1 - beta) g`` is used instead (Signum, Bernstein et al. 2018). ``weight_decay``
adds ``wd * p`` to the gradient before the sign (like ``torch.optim.SGD``); with
``decoupled_weight_decay=True`` it shrinks ``p *= 1 - lr * wd`` separately (like AdamW / Lion).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.optim import Optimizer


class SignSGD(Optimizer):
    """signSGD, and Signum with ``momentum > 0``.

    Parameters
    ----------
    params : iterable
        Parameters or parameter groups, as for any ``torch.optim.Optimizer``.
    lr : float
        Step size: each coordinate moves by exactly ``lr`` per step.
    momentum : float in [0, 1)
        ``beta`` of the moving average ``m_t = beta m_{t-1} + (1 - beta) g_t`` whose sign is
        taken. The buffer starts at the first gradient, ``m_1 = g_1``, as ``torch.optim.SGD``
        starts its momentum buffer; MXNet's Signum starts from ``m_0 = 0`` (so ``m_1 = (1 -
        beta) g_1``). The first step is the same either way (a positive factor does not change
        a sign); later steps differ by how much weight ``g_1`` keeps, which fades as
        ``beta^t``.
    weight_decay : float
        Added to the gradient before the sign (``g + wd p``), or, with
        ``decoupled_weight_decay=True``, applied as ``p *= 1 - lr wd`` (AdamW / Lion style).
    maximize : bool
        Ascend instead of descend.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        *,
        decoupled_weight_decay: bool = False,
        maximize: bool = False,
    ) -> None:
        if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
            raise ValueError(f"Invalid learning rate: {lr} (must be a positive finite number)")
        if not (isinstance(momentum, (int, float)) and 0.0 <= momentum < 1.0):
            raise ValueError(f"Invalid momentum value: {momentum} (must be in [0, 1))")
        if not (isinstance(weight_decay, (int, float)) and math.isfinite(weight_decay)) or (
            weight_decay < 0
        ):
            raise ValueError(f"Invalid weight_decay value: {weight_decay} (must be >= 0)")
        defaults = dict(
            lr=float(lr),
            momentum=float(momentum),
            weight_decay=float(weight_decay),
            decoupled_weight_decay=bool(decoupled_weight_decay),
            maximize=bool(maximize),
        )
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, beta, wd = group["lr"], group["momentum"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("SignSGD does not support sparse gradients")
                g = -p.grad if group["maximize"] else p.grad
                if wd and not group["decoupled_weight_decay"]:
                    g = g.add(p, alpha=wd)
                if beta:
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = g.detach().clone()
                    else:
                        state["momentum_buffer"].mul_(beta).add_(g, alpha=1 - beta)
                    g = state["momentum_buffer"]
                if wd and group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * wd)
                p.add_(torch.sign(g), alpha=-lr)
        return loss
