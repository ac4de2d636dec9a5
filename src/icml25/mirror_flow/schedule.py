"""A weight-decay schedule for any torch optimizer: switch weight decay off (or change it).

The paper's practical recommendation: weight decay early in training shrinks the Legendre
parameter (for ``u * v``, ``c = u**2 - v**2`` decays like ``exp(-2 * alpha * t)``), which leaves
a lasting, sparser implicit bias; switching it off afterwards lets the model still interpolate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch


class WeightDecaySwitch:
    """Set every param group's ``weight_decay`` to ``after`` once a step count or criterion is hit.

    Call :meth:`step` once per optimizer step, after ``optimizer.step()``, like an LR scheduler.

    Parameters
    ----------
    optimizer
        Any ``torch.optim.Optimizer`` whose param groups have a ``weight_decay`` entry (SGD,
        Adam, AdamW, ...). Note that the theory is for gradient descent, where
        ``weight_decay=alpha`` is GD on ``f + alpha/2 * ||w||^2``.
    at_step
        Switch after this many calls to :meth:`step` (``None``: only by ``criterion``).
    criterion
        ``criterion(metric) -> bool`` evaluated on the ``metric`` passed to :meth:`step`
        (e.g. ``lambda loss: loss < 1e-3``); the switch happens the first time it is true.
    after
        The weight decay from then on (default 0: off).

    Examples
    --------
    >>> model = torch.nn.Linear(3, 1)
    >>> opt = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=0.01)
    >>> sched = WeightDecaySwitch(opt, at_step=2)
    >>> for _ in range(3):
    ...     opt.step(); sched.step()
    >>> opt.param_groups[0]["weight_decay"], sched.switched_at
    (0.0, 2)
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        *,
        at_step: int | None = None,
        criterion: Callable[[float], bool] | None = None,
        after: float = 0.0,
    ) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer)}")
        missing = [i for i, g in enumerate(optimizer.param_groups) if "weight_decay" not in g]
        if missing:
            raise ValueError(f"param groups {missing} have no 'weight_decay' to switch")
        if at_step is None and criterion is None:
            raise ValueError("give at_step, criterion, or both")
        if at_step is not None and (
            isinstance(at_step, bool) or not isinstance(at_step, int) or at_step < 0
        ):
            raise ValueError(f"Invalid at_step: {at_step!r} (must be an integer >= 0)")
        if criterion is not None and not callable(criterion):
            raise TypeError(
                f"criterion must be a callable criterion(metric) -> bool, got "
                f"{type(criterion).__name__} {criterion!r}"
            )
        if (
            isinstance(after, bool)
            or not isinstance(after, (int, float))
            or not math.isfinite(after)
            or after < 0
        ):
            raise ValueError(
                f"Invalid weight decay after the switch: {after!r} (must be a finite number >= 0)"
            )
        self.optimizer = optimizer
        self.at_step = at_step
        self.criterion = criterion
        self.after = float(after)
        self.steps = 0
        self.switched_at: int | None = None
        if at_step == 0:
            self._switch()

    def _switch(self) -> None:
        for group in self.optimizer.param_groups:
            group["weight_decay"] = self.after
        self.switched_at = self.steps

    def step(self, metric: float | None = None) -> None:
        """Count one optimizer step; switch if ``at_step`` is reached or ``criterion(metric)``."""
        if metric is not None and (
            isinstance(metric, bool)
            or not isinstance(metric, (int, float, torch.Tensor))
            or (isinstance(metric, torch.Tensor) and metric.numel() != 1)
        ):
            raise ValueError(f"metric must be a number (e.g. the loss), got {metric!r}")
        self.steps += 1
        if self.switched_at is not None:
            return
        if self.at_step is not None and self.steps >= self.at_step:
            self._switch()
        elif self.criterion is not None and metric is not None and self.criterion(float(metric)):
            self._switch()

    def state_dict(self) -> dict[str, Any]:
        """Counters, for checkpoint/resume (the criterion itself is not saved)."""
        return {"steps": self.steps, "switched_at": self.switched_at, "after": self.after}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        missing = {"steps", "switched_at", "after"} - set(state)
        if missing:
            raise ValueError(f"state must come from state_dict(); it lacks {sorted(missing)}")
        steps, switched, after = state["steps"], state["switched_at"], state["after"]
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise ValueError(f"state['steps'] must be an integer >= 0, got {steps!r}")
        if switched is not None and (isinstance(switched, bool) or not isinstance(switched, int)):
            raise ValueError(f"state['switched_at'] must be None or an integer, got {switched!r}")
        if isinstance(after, bool) or not isinstance(after, (int, float)) or not after >= 0:
            raise ValueError(f"state['after'] must be a number >= 0, got {after!r}")
        self.steps = steps
        self.switched_at = switched
        self.after = float(after)
        if self.switched_at is not None:
            for group in self.optimizer.param_groups:
                group["weight_decay"] = self.after
