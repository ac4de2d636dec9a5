"""Reproduction of "Navigating Semantic Drift in Task-Agnostic Class-Incremental Learning" at
laptop scale.

A :class:`~icml25.drift_calibration.TinyViT` is pretrained on the spot (all parameters, Adam) on
the first four classes of Fashion-MNIST (MNIST-5k when Fashion-MNIST is not installed), in a
class order drawn from the seed as in the official code. Class-incremental learning then runs
four tasks: task 0 = those four classes, tasks 1-3 add two classes each; LoRA on ``k`` and ``v``
of every block, one adapter per task, summed. Ablations (the brief's list), all from the same
pretrained backbone and the same task-0 learner:

- ``frozen``: no LoRA, classifier alignment only;
- ``stale``: LoRA + alignment with stale means;
- ``msc``: + mean-shift compensation;
- ``cc``: stale means + covariance calibration + distillation (the official ``cc`` flag);
- ``full``: mean shift + covariance calibration + distillation;
- ``oracle``: ``cc`` with old class means recomputed from old training data.

Null arms and a gate (issues 48 and 54), on the same backbones:

- ``msc_random``: the ``stale`` backbone with each old mean moved as far as MSC moves it, in a
  random direction (content-free shift: the null arm of the MSC claims);
- ``oracle_stale``: the ``stale`` backbone with exact old means (the gate of ``msc_last_gain``:
  a ceiling that the gain can reach at all);
- ``stale_b`` and its view ``msc_b``: the ``stale`` learner trained again from another seed
  (adapters, batch order, alignment samples): A/A arms for the calibration claims, the same
  comparison with the calibration removed from the treated arm.

Accuracy is task-agnostic top-1 over the classes seen so far on held-out test images.
Diagnostics on old classes after the last task: the error of the stored means against the
old classes' true mean under the final network (their training images), and the relative
Frobenius change of each old class's feature covariance (test images) between the network
that learned it and the final one. Claims and rules were fixed in code before the first run;
the null arms and the gate were committed before the runs that judge them. The full budget
runs at least five seeds (fewer given on the command line are extended by the next integers);
intervals are t over seeds.
"""

from __future__ import annotations

import numpy as np

from icml25.core.runner import RunContext, one_thread
from icml25.drift_calibration import figures
from icml25.drift_calibration.claims import CLAIMS
from icml25.drift_calibration.experiments import (
    ABLATIONS,
    BUDGETS,
    FIRST,
    STEP,
    TASKS,
    _run_seed,
    measurements,
    notes,
)

__all__ = ["CLAIMS", "reproduce"]


@one_thread()  # its torch training depends on the thread count (issue 57, NOTES.md)
def reproduce(ctx: RunContext) -> dict[str, list[float]]:
    cfg = BUDGETS[ctx.budget]
    seeds = ctx.seeds_run(at_least=cfg.seeds)
    # every arm of a seed: pretraining, task 0, then tasks 1-3 with every ablation and null arm
    runs = [_run_seed(cfg, seed, ctx) for seed in seeds]
    out = measurements(runs)
    for line in notes(cfg, runs, seeds):
        ctx.note(line)
    fig = figures.drift_calibration(
        {ab: np.array([r[ab]["curve"] for r in runs]) for ab in ABLATIONS},
        np.mean([r["full"]["matrix"] for r in runs], axis=0),
        [FIRST + STEP * t for t in range(TASKS)],
    )
    ctx.save_figure(fig, "drift_calibration")
    return out
