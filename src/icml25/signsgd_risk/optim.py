"""``SignSGD``: a ``torch.optim.Optimizer`` stepping by the sign of the gradient.

``p -= lr * sign(g)``; with ``momentum = beta > 0`` the sign of the exponential moving average
``m = beta m + (1 - beta) g`` is used instead (Signum, Bernstein et al. 2018). ``weight_decay``
adds ``wd * p`` to the gradient before the sign (like ``torch.optim.SGD``); with
``decoupled_weight_decay=True`` it shrinks ``p *= 1 - lr * wd`` separately (like AdamW / Lion).
"""

from __future__ import annotations

import math
import numbers
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
        lr = _hyper(lr, "learning rate", "a positive finite number", lambda v: v > 0)
        momentum = _hyper(momentum, "momentum value", "in [0, 1)", lambda v: 0.0 <= v < 1.0)
        weight_decay = _hyper(weight_decay, "weight_decay value", ">= 0", lambda v: v >= 0)
        defaults = dict(
            lr=lr,
            momentum=momentum,
            weight_decay=weight_decay,
            decoupled_weight_decay=bool(decoupled_weight_decay),
            maximize=bool(maximize),
        )
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None and not callable(closure):
            raise TypeError(
                f"closure must be a callable that re-evaluates the model and returns the loss "
                f"(or None), got {closure!r}"
            )
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


def _hyper(value: Any, what: str, must: str, ok: Callable[[float], bool]) -> float:
    """A hyper-parameter as a float: a real number (not a bool or a string), finite, with
    ``ok(value)``; else ``ValueError("Invalid <what>: ...")`` as ``torch.optim`` words it."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.is_floating_point():
        value = value.item()
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not (real and math.isfinite(float(value)) and ok(float(value))):
        raise ValueError(f"Invalid {what}: {value!r} (must be {must})")
    return float(value)
