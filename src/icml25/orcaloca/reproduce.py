"""Reproduction of OrcaLoca's component claims on an offline localization benchmark.

Bugs are injected into pure-Python standard-library modules copied into a work folder
(:mod:`icml25.orcaloca.bench`); each issue comes from a reproducer's real output or traceback
and carries the reproducer's real ``sys.settrace`` trace. Every arm runs the same agent with the
same judge and the same fixed budget of executed searches; only the three components are
switched: FIFO baseline (none), + priority queue, + decomposition, full (+ distance-aware
pruning), and the leave-one-out ablations (:mod:`icml25.orcaloca.experiments`; the claims in
:mod:`icml25.orcaloca.claims`).

The judge is :class:`ReadingPolicy`, whose belief about a function changes when it reads the
code (issue 51). Each component claim is a paired difference over bugs with a bootstrap
interval, judged beside its null arm (the same difference with a content-free judge,
``ReadingPolicy(blind=True)``) and its gate (the same difference with an oracle judge that
recognises the gold once it has read it: the search can show the effect at all). Measures that
do not depend on the judge -- the gold in the final context, its position there, the gold
searched -- are reported beside function match, with a search-budget sweep (10, 20, 40
searches) for FIFO and the full agent.

The protocol: one benchmark from the run's first seed; every arm of ``PLAN`` with each judge;
the budget sweep; the judge's AUC before and after reading on every bug; the full agent's gain
over FIFO with noisy judges (noise sd 2 and the budget's levels, on the budget's noise seeds).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.core.runner import RunContext
from icml25.orcaloca import figures
from icml25.orcaloca.bench import make_benchmark
from icml25.orcaloca.claims import CLAIMS
from icml25.orcaloca.experiments import (
    BUDGETS,
    budget_sweep,
    judges,
    measure,
    noise_gains,
    notes,
    reading_aucs,
    run_plan,
)

__all__ = ["CLAIMS", "claim_sizes", "reproduce"]


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them (issue 56). The bugs are those
    asked for: :func:`make_benchmark` may keep fewer (the count is ``bugs_kept``)."""
    cfg = BUDGETS[budget]
    return {
        "n_bugs": cfg.n_bugs,
        "max_steps": cfg.max_steps,
        "noise_seeds": "one noise seed"
        if cfg.noise_seeds == 1
        else f"up to {cfg.noise_seeds} noise seeds (the run's first)",
        "modules": "every module of the benchmark"
        if cfg.modules is None
        else f"{len(cfg.modules)} modules only: " + ", ".join(cfg.modules),
    }


def reproduce(ctx: RunContext) -> dict[str, Any]:
    cfg = BUDGETS[ctx.budget]
    seed0 = ctx.seeds_run(at_most=1)[0]  # the benchmark's seed (and the judges')
    ctx.progress(f"generating {cfg.n_bugs} bugs")
    bench = make_benchmark(cfg.n_bugs, seed=seed0, modules=cfg.modules)
    judge = judges(seed0)
    res = run_plan(bench, judge, cfg, ctx.progress)
    sweep = budget_sweep(bench, judge["reading"], cfg, res, ctx.progress)
    ctx.progress("judge AUC before and after reading")
    aucs = np.array([reading_aucs(b, bench.graph_for(b)) for b in bench.bugs])
    noisy = noise_gains(bench, cfg, ctx.seeds_run(at_most=cfg.noise_seeds), ctx.progress)
    out = measure(res, aucs, noisy, len(bench.bugs))

    for line in notes(bench, res, sweep, aucs, noisy):
        ctx.note(line)
    ctx.save_figure(figures.arms(res["reading"], len(bench.bugs)), "arms")
    ctx.save_figure(figures.budget_sweep(sweep), "budget_sweep")
    return out
