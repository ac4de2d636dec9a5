r"""Test-time baselines IT3 is compared with, for any classifier ``nn.Module``.

- :func:`bn_adapt`: BatchNorm layers normalise with the test batch's statistics; no update.
- :func:`tent`: entropy minimisation (Wang et al., "Tent", ICLR 2021): ``steps`` optimizer
  steps on the mean softmax entropy of the batch, reset per call. As in Tent, BatchNorm layers
  use the batch statistics and only their affine parameters are updated; a model without
  BatchNorm has all its parameters updated instead (a documented generalisation).

Both work on a copy; the model passed in is never modified. A :class:`~icml25.it3.ZigZag`
is called with its neutral auxiliary input.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
from torch import nn

from icml25.it3.zigzag import check_input

_BN = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)


def _batch_statistics_copy(model: nn.Module) -> tuple[nn.Module, list[nn.Parameter]]:
    """An eval-mode copy whose BatchNorm layers use batch statistics, and their parameters."""
    f = copy.deepcopy(model).eval()
    bn_params: list[nn.Parameter] = []
    for m in f.modules():
        if isinstance(m, _BN):
            m.train()
            m.track_running_stats = False
            m.running_mean = None
            m.running_var = None
            bn_params += [p for p in (m.weight, m.bias) if p is not None]
    return f, bn_params


@torch.no_grad()
def bn_adapt(model: nn.Module, x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """Outputs with every BatchNorm layer normalising by ``x``'s own statistics."""
    if not any(isinstance(m, _BN) for m in model.modules()):
        raise ValueError("bn_adapt needs a model with BatchNorm layers; this one has none")
    check_input(x)
    f, _ = _batch_statistics_copy(model)
    out: torch.Tensor = f(x, *args, **kwargs)
    return out


def tent(
    model: nn.Module,
    x: torch.Tensor,
    *args: Any,
    steps: int = 1,
    lr: float = 1e-3,
    **kwargs: Any,
) -> torch.Tensor:
    r"""Logits after ``steps`` Adam steps on :math:`-\frac1B\sum_i\sum_c p_{ic}\log p_{ic}`."""
    if not (isinstance(steps, int) and steps >= 0):
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    check_input(x)
    if getattr(model, "task", "classification") != "classification":
        raise ValueError("tent needs a classification model (entropy of a softmax)")
    f, bn_params = _batch_statistics_copy(model)
    params = bn_params or list(f.parameters())
    f.requires_grad_(False)
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.Adam(params, lr=lr)
    with torch.enable_grad():
        for _ in range(steps):
            logp = f(x, *args, **kwargs).log_softmax(dim=-1)
            loss = -(logp.exp() * logp).sum(dim=-1).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    with torch.no_grad():
        out: torch.Tensor = f(x, *args, **kwargs)
        return out
