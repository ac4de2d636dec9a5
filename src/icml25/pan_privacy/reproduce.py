"""Reproduction of "Local Pan-privacy for Federated Analytics" at laptop scale.

1. COUNTNONZERO over ``n`` devices with real secp256k1 ElGamal, horizons T = 10 and 100: every
   decrypted report against the device's randomized-response bit (audit tap), the estimate
   against the truth in standard errors, the error's dependence on T (20 groups of devices per
   run), and the empirical randomized-response ratio against ``e^eps``. The T ratio's
   sensitivity arms, scored the same way on their own devices: the noisy switch (an
   information-theoretic pan-private counter, error growing with T) and the per-step-budget
   counter (error shrinking with T).
2. The intruder game: the adversary reads the device state at two unannounced times
   ``t1 < t2`` and guesses whether an event happened in between (world 1: one event in
   ``(t1, t2]``; world 0: none). Three simple adversaries (state changed; some byte position
   unchanged; last bit changed); a method's advantage is the best of them. Methods: the
   protocol, and the controls that rerandomize only on events, keep a plaintext bit, or keep a
   one-shot pan-private bit.

Claims and rules were fixed before the first run. Randomness is a seeded ``random.Random`` so
that a seed gives the same numbers: fine for an experiment, not for deployment.

Where things are: the claims in :mod:`icml25.pan_privacy.claims`; the budgets, both parts and
their statistics in :mod:`icml25.pan_privacy.experiments`; the figure in
:mod:`icml25.pan_privacy.figures`.
"""

from __future__ import annotations

from typing import Any

from icml25.core.runner import RunContext
from icml25.pan_privacy import figures
from icml25.pan_privacy.claims import CLAIMS
from icml25.pan_privacy.experiments import (
    BUDGETS,
    EPSILON,
    GROUPS,
    figure_data,
    measurements,
    report_lines,
    run_seeds,
)

__all__ = ["CLAIMS", "claim_sizes", "reproduce"]


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them."""
    cfg = BUDGETS[budget]
    return {
        "n": cfg.n,
        "horizons": " and ".join(f"{T:,}" for T in cfg.horizons),
        "T_short": cfg.horizons[0],
        "T_long": cfg.horizons[-1],
        "groups": GROUPS,
        "game_T": cfg.game_T,
        "trials": cfg.trials,
    }


def reproduce(ctx: RunContext) -> dict[str, Any]:
    """Both parts on every seed, the report's tables and figure, then the measurements."""
    cfg = BUDGETS[ctx.budget]
    # per seed: counting at each horizon, the event-blind null arm, the intruder game
    runs = run_seeds(ctx, cfg)
    for line in report_lines(cfg, ctx.seeds, runs):
        ctx.note(line)
    errors, rms, advantages = figure_data(cfg, ctx.seeds, runs)
    fig = figures.pan_privacy(errors, rms, advantages, n=cfg.n, epsilon=EPSILON)
    ctx.save_figure(fig, "pan_privacy")
    return measurements(cfg, ctx.seeds, runs)
