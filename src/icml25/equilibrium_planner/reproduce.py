"""Reproduction of "Closed-Loop Long-Horizon Robotic Planning via Equilibrium Sequence
Modeling" at laptop scale.

Setting: the symbolic household of :mod:`icml25.equilibrium_planner.env` (VirtualHome's action
vocabulary and preconditions; task names shuffled, 40% held out; scene 6 held out; object ids
drawn afresh for every item, so that a held-out scene can be planned in at all), and a small
plan transformer instead of Llama-3-8B with QLoRA.

The official round 0 starts from a pretrained LLM that already writes plausible plans and
tends to keep a good draft. Here every arm starts from the same **base**: a transformer
pre-trained by supervised learning on plans of the training scenes, to write the plan of a task
from ``Null`` and to copy a given draft (:func:`pretrain_base`). From it, with the same number
of gradient steps:

* supervised: ``(c, Null, Null) -> y``; scored one-shot (one sampled draft), and run as the
  SELF-REFINE baseline (one generation per feedback round, greedy after the first, as
  ``--self_refine_only``);
* equilibrium: the official outer loop (on-policy fixed points each round, failure re-runs
  with feedback at depths 0-2, one example per item and depth file, replay), trained on
  ``(c, feedback on x*, x*) -> y``.

A world model (a separate transformer that sees object states) is trained on every (fixed
point, environment feedback) pair met while training the equilibrium planner. Test: open loop,
closed loop with at most 4 checked solves (environment), world-model rounds, or both
alternating.

Each claim has a null arm (the same measurement without the mechanism the claim credits:
the supervised planner in the equilibrium planner's loop, or feedback reduced to its success
bit), its paired contrast (method minus null arm on the same items) and a gate (the base plans
above a floor). Intervals are a bootstrap over the paired test items, stratified by seed. The
claims, their rules, null arms and gates are in
:mod:`icml25.equilibrium_planner.claims`; the arms and statistics in
:mod:`icml25.equilibrium_planner.experiments`; the figure in
:mod:`icml25.equilibrium_planner.figures`.
"""

from __future__ import annotations

from typing import Any

import torch

from icml25.core.runner import RunContext
from icml25.equilibrium_planner import figures
from icml25.equilibrium_planner.claims import CLAIMS
from icml25.equilibrium_planner.experiments import (
    BUDGETS,
    FIXED_POINT_STEPS,
    measures,
    notes,
    open_loop_cap,
    run_seed,
)

__all__ = ["CLAIMS", "claim_sizes", "reproduce"]


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them."""
    return {"fp_steps": min(FIXED_POINT_STEPS, open_loop_cap(BUDGETS[budget]))}


def reproduce(ctx: RunContext) -> dict[str, Any]:
    cfg = BUDGETS[ctx.budget]
    # quick and tiny: the first seed (items bootstrapped); full: every seed given, at least
    # cfg.seeds of them (the CLI's default 0,1,2 is extended to 0..4)
    seeds = ctx.seeds_run(
        at_least=cfg.seeds if ctx.budget == "full" else 0,
        at_most=None if ctx.budget == "full" else cfg.seeds,
    )
    torch.set_num_threads(1)
    # per seed: the base, both planners from it, the world model, every evaluation arm
    runs = [run_seed(cfg, s, ctx.progress) for s in seeds]
    out = measures(runs)
    notes(ctx, runs, seeds)
    ctx.save_figure(figures.sr_vs_iterations([r["curves"] for r in runs]), "sr_vs_iterations")
    return out
