"""Reproduction of "Signed Laplacians for Constrained Graph Clustering" at laptop scale.

Four experiments, each seed drawing fresh instances
(:mod:`icml25.constrained_clustering.experiments`; the claims in
:mod:`icml25.constrained_clustering.claims`):

1. Small random graphs (brute force): the spectral lower bound, the sweep's quality against the
   exact optimum, and the Cheeger-type inequality of the signed graph.
2. The 4-block SBM on which spectral clustering of G alone cuts the wrong way.
3. A real data set (scikit-learn digits, offline): kNN graph of digits {1, 7, 4, 9}, cannot-links
   drawn from the super-groups {1, 7} vs {4, 9}.
4. Time of the signed eigenproblem against the CC generalized eigenproblem on a sparse graph.

Each part draws its instances from ``default_rng(seed)`` in that order; the null arms (a random
vector in place of the eigenvector, a permuted H, CC given a better solver) draw from their own
stream ``default_rng([seed, 48])``. Theorems checked on instances get exact fractions, the
sweep ratio a bootstrap over instances, the rest a t interval over seeds.

The claims and their rules were fixed before the first run.
"""

from __future__ import annotations

import numpy as np

from icml25.constrained_clustering import figures
from icml25.constrained_clustering.claims import CLAIMS
from icml25.constrained_clustering.experiments import (
    BUDGETS,
    brute_force_instances,
    digits_arms,
    eigensolve_times,
    measurement_lists,
    measurements,
    notes,
    sbm_arms,
    signed_cheeger,
    timing_note,
)
from icml25.core.runner import RunContext

__all__ = ["CLAIMS", "claim_sizes", "reproduce"]


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them."""
    cfg = BUDGETS[budget]
    return {
        "small_n": cfg.small_n,
        "small_count": cfg.small_count,
        "cheeger_n": cfg.cheeger_n,
        "sbm_n": 4 * cfg.sbm_block,
        "digits_links": cfg.digits_links,
        "speed_n": cfg.speed_n,
        "speed_repeats": cfg.speed_repeats,
    }


def reproduce(ctx: RunContext) -> dict[str, object]:
    cfg = BUDGETS[ctx.budget]
    out = measurement_lists(CLAIMS)
    rel_by_seed: list[list[float]] = []
    rel_null_by_seed: list[list[float]] = []
    small_rows: list[tuple[float, float, float, float]] = []
    upper_tightness: list[float] = []
    ari_rows: list[dict[str, float]] = []
    for seed in ctx.seeds:
        rng = np.random.default_rng(seed)
        # The null arms draw from their own stream, so the method's arms see the instances they
        # saw before the null arms existed.
        null_rng = np.random.default_rng([seed, 48])
        ctx.progress(f"seed {seed}: {cfg.small_count} brute-force instances (n={cfg.small_n})")
        rel, rel0 = brute_force_instances(cfg, rng, null_rng, out, small_rows, upper_tightness)
        rel_by_seed.append(rel)
        rel_null_by_seed.append(rel0)
        ctx.progress(f"seed {seed}: signed Cheeger inequality (n={cfg.cheeger_n})")
        signed_cheeger(cfg, rng, null_rng, out)
        ctx.progress(f"seed {seed}: 4-block SBM ({4 * cfg.sbm_block} vertices)")
        sbm = sbm_arms(cfg, rng, null_rng, seed, out)
        ctx.progress(f"seed {seed}: digits kNN graph with {cfg.digits_links} cannot-links")
        digits = digits_arms(cfg, rng, null_rng, seed, out)
        ari_rows.append({"seed": seed, **sbm, **digits})
        ctx.progress(f"seed {seed}: timing eigensolvers on {cfg.speed_n} vertices")
        ctx.note(timing_note(seed, cfg, *eigensolve_times(cfg, rng, out)))

    for line in notes(small_rows, upper_tightness, ari_rows, rel_null_by_seed):
        ctx.note(line)
    ctx.save_figure(figures.bound_vs_optimum(small_rows), "bound_vs_optimum")
    ctx.save_figure(figures.ari(ari_rows), "ari")
    return measurements(out, rel_by_seed, rel_null_by_seed)
