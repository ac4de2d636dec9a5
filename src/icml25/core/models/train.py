"""A plain training loop: seeded, shows progress, checkpoints and resumes.

``train`` runs ``epochs`` passes of ``optimizer`` over ``(X, y)`` minibatches (``X`` one tensor,
or a tuple of tensors indexed together, e.g. node features and adjacency). With a
``checkpoint`` path it saves model, optimizer, generator state and epoch after every epoch
(atomically) and, when the file exists, resumes from it: an interrupted run continued this way
gives the same final weights as an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn


@dataclass
class TrainConfig:
    """Arguments of :func:`train`."""

    epochs: int = 10
    """Passes over the data."""
    batch_size: int = 128
    """Minibatch size."""
    seed: int = 0
    """Seeds the shuffling generator."""
    checkpoint: Path | None = None
    """Save after every epoch here; resume from it if it exists."""

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"TrainConfig.{name} must be a positive integer, got {value!r}")


Objective = Callable[[nn.Module, tuple[torch.Tensor, ...], torch.Tensor], torch.Tensor]


def train(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    X: torch.Tensor | tuple[torch.Tensor, ...],
    y: torch.Tensor,
    config: TrainConfig,
    *,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = nn.functional.cross_entropy,
    objective: Objective | None = None,
    after_step: Callable[[nn.Module], None] | None = None,
    progress: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Train and return the mean training loss of each epoch run in this call.

    The minibatch loss is ``loss_fn(model(*xb), yb)``, or ``objective(model, xb, yb)`` when
    given (a loss that calls the model more than once); ``xb`` is the tuple of input batches.
    ``after_step(model)`` runs after every optimizer step (a proximal step, a projection).
    ``progress(epoch, mean_loss)`` is called after each epoch.
    """
    inputs = X if isinstance(X, tuple) else (X,)
    if not inputs or any(len(t) != len(y) for t in inputs):
        raise ValueError(
            f"X and y must have the same length, got {[len(t) for t in inputs]} and {len(y)}"
        )
    gen = torch.Generator().manual_seed(config.seed)
    start = 0
    ckpt = config.checkpoint
    if ckpt is not None and Path(ckpt).exists():
        state = torch.load(ckpt, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        gen.set_state(state["generator"])
        start = int(state["epoch"])
    losses = []
    for epoch in range(start, config.epochs):
        model.train()
        order = torch.randperm(len(y), generator=gen)
        total, count = 0.0, 0
        for i in range(0, len(y), config.batch_size):
            idx = order[i : i + config.batch_size]
            optimizer.zero_grad(set_to_none=True)
            xb = tuple(t[idx] for t in inputs)
            if objective is not None:
                loss = objective(model, xb, y[idx])
            else:
                loss = loss_fn(model(*xb), y[idx])
            if not torch.isfinite(loss):
                raise FloatingPointError(f"training loss became {loss.item()} at epoch {epoch}")
            loss.backward()
            optimizer.step()
            if after_step is not None:
                after_step(model)
            total += loss.item() * len(idx)
            count += len(idx)
        losses.append(total / count)
        if ckpt is not None:
            Path(ckpt).parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(str(ckpt) + ".tmp")
            torch.save(
                {
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "generator": gen.get_state(),
                    "epoch": epoch + 1,
                },
                tmp,
            )
            tmp.replace(ckpt)
        if progress is not None:
            progress(epoch + 1, losses[-1])
    return losses
