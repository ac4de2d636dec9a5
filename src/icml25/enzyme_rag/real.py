"""The reproduction on real enzymes (issue 52): placeholder until the pipeline lands."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from icml25.core.claims import Measurement, gate_key, null_key
from icml25.core.runner import RunContext
from icml25.enzyme_rag.real_claims import REAL_CLAIMS


@dataclass(frozen=True)
class RealConfig:
    max_length: int
    n_train: int
    n_test: int
    d: int
    dim: int
    layers: int
    gen_steps: int
    clf_steps: int
    batch: int
    samples: int
    positions_per_step: int


REAL_CONFIGS = {
    "tiny": RealConfig(200, 40, 4, 3, 16, 1, 20, 20, 4, 2, 8),
    "quick": RealConfig(300, 300, 20, 3, 32, 1, 300, 200, 8, 3, 8),
    "full": RealConfig(400, 0, 60, 3, 32, 2, 2000, 600, 8, 10, 4),
}


def unavailable(ctx: RunContext, reason: str) -> dict[str, Any]:
    """NaN for every real-data claim, null arm and gate (out of scale by its gate), and a note."""
    ctx.note(f"real data: not run ({reason}); the real-data claims are out of scale")
    nan = Measurement.exact(float("nan"))
    out: dict[str, Any] = {}
    for c in REAL_CLAIMS:
        if c.rule is None:
            continue
        out[c.id] = nan
        if c.null is not None and c.null.arm is not None:
            out[null_key(c.id)] = nan
        if c.gate is not None:
            out[gate_key(c.id)] = nan
    return out


def real_measurements(ctx: RunContext, cfg: RealConfig) -> dict[str, Any]:
    return unavailable(ctx, "the real-data pipeline is not implemented yet")
