"""One ``register(...)`` call per method; the CLI and the shared tests read this registry.

A method registers light metadata from its package ``__init__``; its experiment module (named
by ``Method.module``) is imported only when a reproduction runs, so importing the library never
imports experiment code. That module must define

``CLAIMS``
    a tuple of :class:`~icml25.core.claims.Claim`, fixed before anything runs, and
``reproduce(ctx: RunContext) -> dict[str, float | Sequence[float] | Measurement]``
    which measures one value (or one per seed) for each claim id,

and, where a claim's texts name a budget's sizes as ``{{name}}``,

``claim_sizes(budget: str) -> Mapping[str, object]``
    those sizes for ``"tiny"``, ``"quick"`` and ``"full"``,

and, where its seeds are checkpointed (:meth:`~icml25.core.runner.RunContext.checkpoint`)
and worth running in parallel processes,

``one_seed(ctx: RunContext, seed: int) -> None``
    which computes and checkpoints that one seed of ``ctx.budget`` (``icml25 seed NAME SEED``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, cast

from icml25.core.claims import Claim, Measurement

Measured = Mapping[str, "float | Sequence[float] | Measurement"]
DEVICE_TYPES = ("cpu", "cuda", "mps")
"""The torch device types a reproduction may declare (:attr:`Method.devices`)."""


@dataclass(frozen=True)
class Method:
    slug: str
    title: str
    authors: str
    venue: str
    url: str
    summary: str
    quick_seconds: float
    module: str
    cpus: int = 2
    """CPU cores one reproduction is sized for (what a Ray task asks for)."""
    devices: tuple[str, ...] = ("cpu",)
    """The torch device types (``"cpu"``, ``"cuda"``, ``"mps"``) its reproduction can run its
    torch work on (``RunContext.device``); asked for another, it runs on the CPU."""

    def __post_init__(self) -> None:
        devices = self.devices
        if (
            not isinstance(devices, tuple)
            or "cpu" not in devices
            or any(d not in DEVICE_TYPES for d in devices)
        ):
            raise ValueError(
                f"devices of {self.slug!r} must be a tuple of {DEVICE_TYPES} holding 'cpu', "
                f"got {devices!r}"
            )

    def load(self) -> ModuleType:
        mod = importlib.import_module(self.module)
        for attr in ("CLAIMS", "reproduce"):
            if not hasattr(mod, attr):
                raise TypeError(f"{self.module} must define {attr} (see icml25.core.registry)")
        claims = mod.CLAIMS
        ids = [c.id for c in claims]
        if len(set(ids)) != len(ids) or not all(isinstance(c, Claim) for c in claims):
            raise TypeError(f"{self.module}.CLAIMS must be Claims with unique ids, got {ids}")
        return mod

    def claims(self, budget: str = "quick") -> tuple[Claim, ...]:
        """The claims as the ``budget`` runs them: ``{{name}}`` sizes in their texts filled by
        the module's ``claim_sizes(budget)`` (a mapping; only where a text names a size)."""
        mod = self.load()
        claims = cast(tuple[Claim, ...], tuple(mod.CLAIMS))
        if not any(c.size_names() for c in claims):
            return claims
        if not hasattr(mod, "claim_sizes"):
            raise TypeError(
                f"{self.module}: claim texts name sizes ({{{{name}}}}) but the module defines "
                "no claim_sizes(budget)"
            )
        sizes = mod.claim_sizes(budget)
        return tuple(c.sized(sizes) for c in claims)

    def reproducer(self) -> Callable[[Any], Measured]:
        return cast(Callable[[Any], Measured], self.load().reproduce)


_REGISTRY: dict[str, Method] = {}


def register(
    *,
    slug: str,
    title: str,
    authors: str,
    venue: str,
    url: str,
    summary: str,
    quick_seconds: float,
    module: str,
    devices: Sequence[str] = ("cpu",),
) -> Method:
    """Register a method under ``slug`` (idempotent for the same metadata); ``devices``: the
    device types its reproduction runs on (:attr:`Method.devices`)."""
    method = Method(
        slug, title, authors, venue, url, summary, quick_seconds, module, devices=tuple(devices)
    )
    existing = _REGISTRY.get(slug)
    if existing is not None and existing != method:
        raise ValueError(f"method slug {slug!r} is already registered with other metadata")
    _REGISTRY[slug] = method
    return method


def registered() -> dict[str, Method]:
    """The methods registered so far, by slug (``icml25.methods.load_all`` imports them all)."""
    return dict(sorted(_REGISTRY.items()))
