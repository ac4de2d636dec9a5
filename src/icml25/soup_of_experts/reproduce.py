"""Reproduction of "Soup-of-Experts" at laptop scale.

Ten kinds of text that ship offline and differ a lot (Python code, docstrings, English
fortunes, a computing dictionary, manual pages in groff, fortunes in five other languages; see
``corpora.py``). A byte-level GPT small enough that one model cannot fit every domain well is
trained on the spot, five ways, with the same instantiated size ``P`` and the same number of
training sequences:

- **generic**: one model on the natural mixture (domains in proportion to their size);
- **soup**: ``S`` + ``k`` experts + an MLP router, ``h ~ pi`` (sparse Dirichlet) per step;
- **router-less soup**: the same bank with ``alpha = h`` (one expert per domain);
- **S only** (null arm): the soup's network without experts and router, trained on the soup's
  own stream (``h ~ pi`` per batch);
- **specialist**: a model trained from scratch on the target's mixture (the costly ceiling),
  for some of the targets.

**Every arm is tuned the same way**: trained at each learning rate of a grid fixed before the
runs, and kept at the rate with the lowest loss on **validation** windows (held-out entries
apart from the test entries) of the targets it serves; claims read only the test windows.

Targets are fresh mixtures drawn from ``pi`` and single domains. The loss of a model on target
``h`` is ``sum_i h_i loss_i`` with ``loss_i`` its mean next-byte loss (nats/byte) on test
windows of domain ``i``. The soup is instantiated with the true ``h``, with ``h`` estimated
from held-out target samples (sentence embeddings, nearest domain centroid histogram: Alg. 3),
with the uniform ``h`` (no knowledge of the target) and with an ``h`` drawn from ``pi`` apart
from the target (the estimate's null arm).

The claims, their null arms, gates and rules were fixed in code before the runs that judge
them (``claims.py``; see ``NOTES.md`` for the commit).

Every seed is checkpointed in the run folder (``seed<S>-<budget>.json``), so an interrupted
run resumes and seeds can run in parallel processes: ``icml25 seed soup_of_experts S --budget
full --out DIR`` for each seed, then ``icml25 reproduce soup_of_experts --budget full --out
DIR`` reuses them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import torch

from icml25.core.claims import Measurement
from icml25.core.claims import gate_key as gk
from icml25.core.claims import null_key as nk
from icml25.core.runner import RunContext
from icml25.soup_of_experts.claims import CLAIMS
from icml25.soup_of_experts.experiments import (
    BUDGETS,
    Budget,
    Pools,
    Setup,
    instantiation_timing,
    load_setup,
    make_pools,
    measure,
    measure_seed,
    median_ratio,
    ratio_of_means,
    report_notes,
)
from icml25.soup_of_experts.figures import per_target_loss

__all__ = ["CLAIMS", "claim_sizes", "one_seed", "reproduce"]


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them."""
    b = BUDGETS[budget]
    return {
        "mix_targets": b.mix_targets,
        "single_targets": b.single_targets,
        "target_samples": b.target_samples,
        "encoder": "all-MiniLM-L6-v2 embeddings, TF-IDF where that encoder is not installed"
        if b.encoder == "minilm"
        else "TF-IDF vectors",
        "timing_repeats": b.speed[3],
    }


def _seed(ctx: RunContext, b: Budget, setup: Setup, pools: Pools, seed: int) -> dict[str, Any]:
    """One seed's run, checkpointed under the output folder (a saved seed is reused only for
    the same budget, data and encoder; the budget's seed count does not enter a seed's run,
    so it is left out of the key). JSON keys are strings: the validation losses' learning
    rates are read back as floats."""

    def decode(run: dict[str, Any]) -> dict[str, Any]:
        run["val"] = {a: {float(lr): v for lr, v in d.items()} for a, d in run["val"].items()}
        return run

    return ctx.checkpoint(
        f"seed{seed}-{ctx.budget}",
        f"{replace(b, seeds=0)!r} | {setup.domains.source} | {pools.encoder}",
        lambda: measure_seed(ctx, b, setup, pools, seed),
        decode=decode,
    )


def one_seed(ctx: RunContext, seed: int) -> None:
    """Compute and checkpoint one seed of ``ctx.budget`` into ``ctx.out_dir``
    (``icml25 seed soup_of_experts SEED --budget B --out DIR``); ``icml25 reproduce
    soup_of_experts --budget B --out DIR`` then reuses it."""
    b = BUDGETS[ctx.budget]
    torch.set_num_threads(1)
    setup = load_setup(b)
    _seed(ctx, b, setup, make_pools(setup, b), seed)


def reproduce(ctx: RunContext) -> dict[str, Any]:
    b = BUDGETS[ctx.budget]
    torch.set_num_threads(1)  # tiny models: one thread is as fast, and leaves a core free
    setup = load_setup(b)
    ctx.progress("embedding the pools for the domain-weight estimate")
    pools = make_pools(setup, b)
    runs = {
        seed: _seed(ctx, b, setup, pools, seed)
        for seed in ctx.seeds_run(at_least=b.seeds, at_most=b.seeds)
    }

    def col(key: str, spec_only: bool = False) -> np.ndarray:
        """``(seeds, targets)`` test losses of one arm (only the specialist targets)."""
        return np.array(
            [
                [r[key] for r in run["rows"] if not spec_only or r["specialist"] is not None]
                for run in runs.values()
            ],
            dtype=float,
        )

    gen, soup, so, rl = col("generic"), col("soup"), col("s_only"), col("routerless")
    hat, null_hat, uni = col("soup_hat"), col("soup_null_hat"), col("soup_uniform")
    g_s, s_s, o_s, p_s = (col(key, True) for key in ("generic", "soup", "s_only", "specialist"))
    headroom = float((g_s - p_s).mean())
    out: dict[str, Any] = {
        "soup_beats_generic": measure(list((soup < gen).astype(float))),
        nk("soup_beats_generic"): measure(list((so < gen).astype(float))),
        gk("soup_beats_generic"): headroom,
        "gap_closed": measure(list((g_s - s_s) - 0.5 * (g_s - p_s))),
        nk("gap_closed"): measure(list((g_s - o_s) - 0.5 * (g_s - p_s))),
        gk("gap_closed"): headroom,
        "estimated_h_keeps_gain": measure(
            list(np.stack([uni - hat, uni - soup], -1)), ratio_of_means
        ),
        nk("estimated_h_keeps_gain"): measure(
            list(np.stack([uni - null_hat, uni - soup], -1)), ratio_of_means
        ),
        gk("estimated_h_keeps_gain"): float((uni - soup).mean()),
        "specialist_beats_generic": measure(list(g_s - p_s)),
        "mean_gain": measure(list(gen - soup)),
        nk("mean_gain"): measure(list(gen - so)),
        "router_vs_routerless": measure(list(rl - soup)),
    }
    dim, layers, experts, reps = b.speed
    ctx.progress(f"instantiation timing (dim {dim}, {layers} layers, {experts} experts)")
    timing = instantiation_timing(
        dim=dim, layers=layers, n_experts=experts, n_domains=8, reps=reps, seed=0
    )
    t = timing["times"]
    out["instantiate_speed_ratio"] = Measurement.bootstrap(
        [np.stack([t["copy"], t["instantiate"]], 1)], median_ratio
    )
    out[nk("instantiate_speed_ratio")] = Measurement.bootstrap(
        [np.stack([t["copy"], t["naive"]], 1)], median_ratio
    )
    out[gk("instantiate_speed_ratio")] = Measurement.exact(timing["error"])
    for line in report_notes(b, setup, pools, runs, timing):
        ctx.note(line)
    seed0 = next(iter(runs))
    ctx.save_figure(per_target_loss(runs[seed0]["rows"], seed0), "per_target_loss")
    return out
