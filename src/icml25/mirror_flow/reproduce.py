"""Reproduction of "Mirror, Mirror of the Flow" at laptop scale.

Five settings, as in the paper, each trained by plain gradient descent with weight decay that
is never on, always on, or switched off after T steps (every seed runs all five;
:mod:`icml25.mirror_flow.experiments` and ``experiments_lora`` hold them,
:mod:`icml25.mirror_flow.claims` the claims):

1. Sparse regression with ``x = u * v`` (batched NumPy GD): the Legendre parameter ``c_T``
   against its prediction, the GD limit against ``argmin_{Ax=y} R_{c_T}``, the type of bias
   (l1 norm falling as T grows), the positional bias (``x0 != 0``), and recovery errors.
2. Matrix sensing ``X = U U^T`` (symmetric, batched NumPy GD).
3. Single-layer attention logits ``s(q, k) = q^T W_Q W_K^T k`` on generated token pairs: the
   balancedness ``W_Q^T W_Q - W_K^T W_K`` against its predicted decay, and recovery errors.
4. LoRA fine-tuning of a small tanh MLP (batched NumPy GD, weight decay switched off at T).
5. Range shrinking with the power parametrization ``x = u^p - v^p``.

Settings 1-3 draw from ``default_rng(seed)`` in that order; 4 and 5 have their own streams.
Each null arm is the same measurement without the mechanism (no reparameterisation, no weight
decay, or the prediction without the term the theory adds). The report's notes hold the
per-seed numbers; the figures are the sparse error against the switch time, the c trajectory,
the dual-interval width and the share of frozen coordinates.

Claims and rules were fixed before the first run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.core.runner import RunContext
from icml25.mirror_flow import figures
from icml25.mirror_flow.balancedness import balancedness_switch_step
from icml25.mirror_flow.claims import CLAIMS
from icml25.mirror_flow.experiments import (
    BUDGETS,
    POWER,
    attention_logits,
    c_trajectory,
    frozen_shares,
    matrix_sensing,
    measurement_lists,
    notes,
    range_shrinking,
    sparse_curves,
    sparse_regression,
    width_runs,
)
from icml25.mirror_flow.experiments_lora import LORA, lora_finetuning

__all__ = ["CLAIMS", "claim_sizes", "reproduce"]


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them."""
    cfg = BUDGETS[budget]
    lora_T = balancedness_switch_step(LORA["lr"], LORA["alpha"], LORA["balancedness_target"])
    lora_grid = np.arange(0, min(lora_T, cfg.lora_steps) + 1, LORA["grid"])  # as lora's grid
    return {
        "sparse_switch": "/".join(f"{t:,}" for t in cfg.sparse_switch),
        "sparse_T2": cfg.sparse_switch[1],
        "sparse_T3": cfg.sparse_switch[2],
        "sparse_T4": cfg.sparse_switch[3],
        "sparse_steps": cfg.sparse_steps,
        "sensing_T2": cfg.sensing_switch[1],
        "sensing_steps": cfg.sensing_steps,
        "attention_switch": cfg.attention_switch,
        "attention_steps": cfg.attention_steps,
        "balancedness_steps": cfg.balancedness_steps,
        "lora_steps": cfg.lora_steps,
        "lora_T": lora_T,
        "lora_grid_last": int(lora_grid[-1]),
        "power_steps": cfg.power_steps,
        "power_record_every": POWER["record_every"],
    }


def reproduce(ctx: RunContext) -> dict[str, list[float]]:
    cfg = BUDGETS[ctx.budget]
    out = measurement_lists(CLAIMS)
    logs: dict[int, list[Any]] = {}
    power_runs: dict[int, dict[float, Any]] = {}
    for seed in ctx.seeds:
        rng = np.random.default_rng(seed)
        log: list[Any] = []
        ctx.progress(f"seed {seed}: sparse regression u*v ({cfg.sparse_steps} GD steps x 7 runs)")
        sparse_regression(cfg, rng, out, log)
        ctx.progress(f"seed {seed}: matrix sensing ({cfg.sensing_steps} steps x 4 runs)")
        matrix_sensing(cfg, rng, out, log)
        ctx.progress(f"seed {seed}: attention logits ({cfg.attention_steps} steps x 3 runs)")
        attention_logits(cfg, rng, out, log)
        ctx.progress(f"seed {seed}: LoRA fine-tuning ({cfg.lora_steps} steps x 3 runs)")
        lora_finetuning(cfg, seed, out, log)
        ctx.progress(f"seed {seed}: power parametrization ({cfg.power_steps} steps x 10 runs)")
        power_runs[seed] = range_shrinking(cfg, seed, out, log)
        logs[seed] = log

    for line in notes(cfg, logs):
        ctx.note(line)
    first = next(iter(logs))  # the c trajectory and the range width: the first seed's runs
    ctx.save_figure(figures.error_vs_switch(sparse_curves(logs)), "error_vs_switch")
    ctx.save_figure(figures.c_trajectory(*c_trajectory(cfg, first)), "c_trajectory")
    width = figures.range_width(
        width_runs(power_runs[first]), POWER["lr"], POWER["alpha"], POWER["claim_A_max"]
    )
    ctx.save_figure(width, "range_width")
    frozen = figures.frozen_share(1.5, *frozen_shares(power_runs, 1.5), cfg.power_steps)
    ctx.save_figure(frozen, "frozen_share")
    return out
