"""Reproduction of "Impossible Videos" (IPV-Bench) at laptop scale.

The official benchmark (902 generated videos, Video-LLMs, GPT-4o judge) cannot run offline.
What runs here is the benchmark *harness* (the official task formats, parsers and metrics) on a
procedurally rendered stand-in: clips of one small physics world, plausible or breaking one
law (seven temporal violations, three spatial ones; :mod:`icml25.ipv_bench.generator`), every
label confirmed by a physics check. Three small video models are trained on the spot
(single-frame, frame-average, temporal) and answer the judgement, multiple-choice and
open-ended tasks; the random baseline answers as the released scripts' random test.

Claims and rules were fixed before the first run. Budgets: ``tiny`` (smoke test), ``quick``
(models trained once, on the first seed), ``full`` (larger sets, models trained on five
seeds; fewer given on the command line are extended by the next integers).

Per seed (:func:`icml25.ipv_bench.experiments.run_seed`): fresh test clips, the physics check
of their labels and the random baseline; on the first ``train_seeds`` seeds also the three
models, the frame-shuffled test and the colour-histogram control, and a table in the notes.
Then the two figures and the measurements: the model claims get a bootstrap over the test
items with fewer than three trained seeds, else t over seeds; their null arms are the temporal
model (for the two gaps) and the order-blind frame-average model (for the temporal model's
accuracy). Claims: :mod:`icml25.ipv_bench.claims`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.core.claims import Measurement
from icml25.core.runner import RunContext
from icml25.ipv_bench import experiments as E
from icml25.ipv_bench import figures
from icml25.ipv_bench.bench import BenchScores
from icml25.ipv_bench.claims import CLAIMS
from icml25.ipv_bench.experiments import BUDGETS

__all__ = ["CLAIMS", "claim_sizes", "reproduce"]


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them."""
    cfg = BUDGETS[budget]
    n = cfg.train_seeds  # the first train_seeds of the run's seeds (extended to as many)
    return {"n_test": cfg.n_test, "trained_seeds": f"{n} seed{'s' if n != 1 else ''}"}


def reproduce(ctx: RunContext) -> dict[str, Any]:
    """Run the protocol of the module docstring; claim id or null arm -> measurement."""
    cfg = BUDGETS[ctx.budget]
    seeds = ctx.seeds_run(at_least=cfg.train_seeds)
    random_j, random_m, physics = [], [], []
    trained: list[dict[str, Any]] = []
    first_scores: dict[str, BenchScores] | None = None
    for i, seed in enumerate(seeds):
        res = E.run_seed(ctx, cfg, seed, train=i < cfg.train_seeds)
        random_j.append(abs(res["random_j"] - 50.0))
        random_m.append(abs(res["random_m"] - 20.0))
        physics.append(res["physics"])
        if "scores" not in res:
            continue
        E.note_table(ctx, seed, res)
        first_scores = first_scores or res["scores"]
        trained.append(res)
    ctx.save_figure(figures.example_frames(E.example_clips()), "example_frames")
    if first_scores is not None:
        ctx.save_figure(figures.accuracy_by_category(first_scores), "accuracy_by_category")

    out: dict[str, Any] = {
        "random_judgement": random_j,
        "random_mcqa": random_m,
        "physics_check_agreement": Measurement.exact(float(np.mean(physics))),
    }
    if trained:
        out |= E.model_measurements(trained)
    ctx.note(
        f"Budget {ctx.budget}: {cfg.n_train} training clips (10/11 impossible), {cfg.n_test} "
        f"test clips (half impossible), epochs {cfg.epochs}, encoder width {cfg.width}; models "
        f"trained on seeds {list(seeds[: cfg.train_seeds])}, random baseline and physics check "
        f"on seeds {list(seeds)}. Intervals: t over seeds with >= 3 trained seeds, else a "
        "bootstrap over the test items."
    )
    return out
