"""Per-task LoRA adapters on linear layers, summed over tasks (PEFT-style ``target_modules``).

A :class:`LoRALinear` wraps a frozen ``nn.Linear`` ``W`` and keeps one low-rank pair
``(A_s, B_s)`` per task ``s``:

.. math:: h = W x + b + \\sum_{s < n_{\\text{active}}} B_s A_s x,

with ``A_s`` Kaiming-uniform (``a = sqrt(5)``), ``B_s = 0`` at creation and no ``alpha / r``
scaling (as in the official MACIL ``Attention_LoRA``). Adding task ``t``'s adapter freezes
those of tasks ``< t``: only the newest one trains. Setting the number of active adapters to
``t`` gives back the network as it was after task ``t - 1`` (the "old network") without a copy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import nn
from torch.nn import functional as F

from icml25.core import validate as V


class LoRALinear(nn.Module):
    """A frozen ``nn.Linear`` plus a growing list of task adapters, summed.

    Parameters
    ----------
    base
        The linear layer to adapt; its parameters are frozen.
    rank
        Rank ``r`` of each task's adapter.

    References
    ----------
    Wu et al., "Navigating Semantic Drift in Task-Agnostic Class-Incremental Learning",
    ICML 2025 (arXiv:2502.07560); Hu et al., "LoRA", ICLR 2022.
    """

    def __init__(self, base: nn.Linear, *, rank: int) -> None:
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise TypeError(f"base must be a torch.nn.Linear, got {type(base).__name__}")
        self.rank = V.integer("rank", rank, low=1)
        self.base = base
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.lora_A = nn.ParameterList()
        self.lora_B = nn.ParameterList()
        self.active = 0
        """How many adapters (tasks ``0 .. active - 1``) the forward pass sums."""

    @property
    def in_features(self) -> int:
        return self.base.in_features

    @property
    def out_features(self) -> int:
        return self.base.out_features

    @property
    def num_adapters(self) -> int:
        return len(self.lora_A)

    def add_adapter(self, generator: torch.Generator | None = None) -> None:
        """Append a new task adapter (trainable) and freeze every earlier one; all are active."""
        for p in list(self.lora_A) + list(self.lora_B):
            p.requires_grad_(False)
        w = self.base.weight
        # drawn on the CPU (where a seeded generator lives), then moved: the same adapter on
        # every device
        a = torch.empty(self.rank, self.in_features, dtype=w.dtype)
        nn.init.kaiming_uniform_(a, a=math.sqrt(5), generator=generator)
        a = a.to(w.device)
        b = torch.zeros(self.out_features, self.rank, dtype=w.dtype, device=w.device)
        self.lora_A.append(nn.Parameter(a))
        self.lora_B.append(nn.Parameter(b))
        self.active = self.num_adapters

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = min(self.active, self.num_adapters)
        if n == 0:
            return self.base(x)
        # W + sum_s B_s A_s, merged once per call (one matmul over the tokens)
        delta = sum(self.lora_B[s] @ self.lora_A[s] for s in range(n))
        return F.linear(x, self.base.weight + delta, self.base.bias)

    def extra_repr(self) -> str:
        return f"rank={self.rank}, adapters={self.num_adapters}, active={self.active}"


def _matches(name: str, target_modules: str | Sequence[str]) -> bool:
    if isinstance(target_modules, str):
        return re.fullmatch(target_modules, name) is not None
    return any(name == t or name.endswith("." + t) for t in target_modules)


def add_lora(model: nn.Module, *, target_modules: str | Sequence[str], rank: int) -> list[str]:
    """Replace the ``nn.Linear`` layers of ``model`` named by ``target_modules`` with
    :class:`LoRALinear` (in place) and return their qualified names.

    ``target_modules`` follows PEFT: a sequence of names matches a module whose qualified name
    equals one of them or ends with ``"." + name`` (``("key", "value")`` for a Hugging Face
    ViT or BERT, ``("k_proj", "v_proj")`` for Llama); a string is a regular expression that
    must match the whole qualified name. The layers start with no adapter; call
    :func:`add_task_adapters` once per task.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(target_modules, str):
        if not target_modules:
            raise ValueError("target_modules must be a non-empty regex or sequence of names")
    elif not (
        isinstance(target_modules, Sequence)
        and target_modules
        and all(isinstance(t, str) and t for t in target_modules)
    ):
        raise ValueError(
            f"target_modules must be a non-empty sequence of module names or a regex string, "
            f"got {target_modules!r}"
        )
    V.integer("rank", rank, low=1)
    chosen = [
        name
        for name, m in model.named_modules()
        if isinstance(m, nn.Linear) and not isinstance(m, LoRALinear) and name
        if _matches(name, target_modules)
    ]
    if not chosen:
        linear = [n for n, m in model.named_modules() if isinstance(m, nn.Linear)]
        raise ValueError(
            f"target_modules {target_modules!r} matched no nn.Linear layer of the model; "
            f"its linear layers are {linear[:12]}{' ...' if len(linear) > 12 else ''}"
        )
    for name in chosen:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, LoRALinear(getattr(parent, child), rank=rank))
    return chosen


def lora_layers(model: nn.Module) -> list[LoRALinear]:
    """The :class:`LoRALinear` layers of ``model``, in module order."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return [m for m in model.modules() if isinstance(m, LoRALinear)]


def add_task_adapters(
    model: nn.Module, generator: torch.Generator | None = None
) -> list[nn.Parameter]:
    """Add one adapter to every :class:`LoRALinear` of ``model`` (freezing the earlier ones)
    and return the new, trainable parameters."""
    layers = lora_layers(model)
    if not layers:
        raise ValueError("model has no LoRALinear layer; call add_lora(model, ...) first")
    params: list[nn.Parameter] = []
    for layer in layers:
        layer.add_adapter(generator)
        params += [layer.lora_A[-1], layer.lora_B[-1]]
    return params


@contextmanager
def active_adapters(model: nn.Module, n: int) -> Iterator[None]:
    """Within the block, every :class:`LoRALinear` sums only adapters ``0 .. n - 1`` (``n = t``
    is the network as it was after task ``t - 1``)."""
    layers = lora_layers(model)
    n = V.integer("n", n, low=0)
    before = [layer.active for layer in layers]
    try:
        for layer in layers:
            layer.active = n
        yield
    finally:
        for layer, a in zip(layers, before, strict=True):
            layer.active = a
