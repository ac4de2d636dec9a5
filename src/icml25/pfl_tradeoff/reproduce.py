"""Reproduction of the personalization trade-off (FedCLUP) at laptop scale.

**(A) Synthetic linear regression with known optima** (the brief's setting).
- Setup: ``m = 20`` clients, ``n = 50`` samples each, ``d = 10``, noise ``sigma = 1``,
  ``x ~ N(0, I)``, ``w_i* = w_g* + R N(0, I/d)`` with ``w_g* ~ N(0, I)``, and heterogeneity
  ``R`` in {0.1, 0.5, 2}.
- Statistical error: individual ``mean_i ||w_i - w_i*||^2`` (the claims) and global
  ``||w_g - w_g*||^2`` (reported), at the *exact* PFL optimum (closed form,
  :func:`~icml25.pfl_tradeoff.fedclup.pfl_optimum`), over a lambda grid from 0 (local) to
  1000 (close to FedAvg), averaged over repetitions.
- Communication: FedCLUP rounds (``E = 50`` local steps) until ``||w_g - w_g^opt|| <= 1e-4``,
  for lambda in {0.01, 0.1, 1, 10, 100}, at ``R = 0.5``.

**(B) The class-heterogeneity sweep on images**, as the official MNIST experiment runs it
(``src/data_processing/mnist_niid.py``, ``notebooks/mnist_main.sh``): Fashion-MNIST (MNIST-5k
without it), ``K = 10`` clients with ``c`` classes each, ``c`` swept from 2 to 10, 180 training
images per client (raw ``[0, 1]`` pixels), each client's model scored on 100 test images of its
own classes.
- Arms: local training, FedAvg, FedCLUP at a lambda grid on the problem's scale
  (1e-4 ... 2.5) and the adaptive lambda (:mod:`icml25.pfl_tradeoff.images`).
- Training: minibatch SGD, ``B = 32``, ``E`` epochs a round, 20 rounds (full), plain averaging
  on the server (the official ``global_lr = 1/mu``); one fixed local lr for every arm: 0.01
  for logistic regression (official), 0.05 for the CNN (issue 37's pilot on split seed 100).
- Models: logistic regression and a one-layer 16-channel CNN (the non-convex check).
- The claim, restated before the run: the best lambda moves from local training toward FedAvg
  as ``c`` grows.

Claims and rules were fixed before the first run (:mod:`icml25.pfl_tradeoff.claims`); the
experiments are in :mod:`icml25.pfl_tradeoff.experiments`.

Protocol (:func:`reproduce`): at least the budget's seeds (``SEEDS``); each seed runs (A) then
(B); each claim is one value a seed (a t interval over seeds); the report gets the error
tables, the rounds, every image arm's accuracy by ``c`` and the four-panel figure.
"""

from __future__ import annotations

from typing import Any

from icml25.core.claims import Measurement
from icml25.core.runner import RunContext
from icml25.pfl_tradeoff import figures
from icml25.pfl_tradeoff.claims import CLAIMS
from icml25.pfl_tradeoff.experiments import (
    BUDGETS,
    IMAGE_MODELS,
    LAMBDAS,
    R_VALUES,
    ROUND_LAMBDAS,
    SEEDS,
    arm_names,
    image_measurements,
    image_table,
    mean_rounds,
    report_notes,
    run_images,
    run_synthetic,
    synthetic_curves,
    synthetic_measurements,
)

__all__ = ["CLAIMS", "claim_sizes", "reproduce"]


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them (issue 56)."""
    b = BUDGETS[budget]

    def values(cs: tuple[int, ...]) -> str:
        if len(cs) > 3 and list(cs) == list(range(cs[0], cs[-1] + 1)):
            return f"{cs[0]} ... {cs[-1]}"
        return ", ".join(str(c) for c in cs)

    return {
        "lr_classes": values(b.lr_classes),
        "cnn_classes": values(b.cnn_classes),
        "c_min": min(b.lr_classes),
        "c_max": max(b.lr_classes),
    }


def reproduce(ctx: RunContext) -> dict[str, Any]:
    b = BUDGETS[ctx.budget]
    out: dict[str, list[float]] = {}

    def add(values: dict[str, float]) -> None:
        for key, value in values.items():
            out.setdefault(key, []).append(float(value))

    syn, img = [], []
    seeds = ctx.seeds_run(at_least=SEEDS[ctx.budget])
    for seed in seeds:
        ctx.progress(
            f"synthetic seed {seed}: {b.reps} repetitions x {len(R_VALUES)} R values x "
            f"{len(LAMBDAS)} lambdas (FedCLUP's optimum and ridge toward the origin)"
        )
        s = run_synthetic(b, seed)
        syn.append(s)
        add(synthetic_measurements(s))
        ctx.progress(f"images seed {seed}: class sweep, 10 clients, logistic regression and CNN")
        im = run_images(b, seed, ctx)
        img.append(im)
        add(image_measurements(im))
    ctx.note(f"Seeds used: {seeds}.")
    for text in report_notes(syn, img):
        ctx.note(text)
    panels = []
    for key, label in IMAGE_MODELS:
        cs, acc, _, _ = image_table(img, key)
        panels.append((label, cs, arm_names(key), acc.mean(0)))
    errors = {R: curve["errors"] for R, curve in synthetic_curves(syn).items()}
    fig = figures.tradeoff(LAMBDAS, errors, ROUND_LAMBDAS, mean_rounds(syn), panels)
    ctx.save_figure(fig, "tradeoff")
    return {k: Measurement.of(v) for k, v in out.items()}
