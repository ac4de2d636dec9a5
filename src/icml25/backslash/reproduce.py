"""Reproduction of BackSlash (rate-constrained training) at laptop scale, two model families.

1. **Image classifier**: an MLP 784-256-128-10 on Fashion-MNIST (Debian's package; MNIST-5k
   when it is absent). Quick: 10,000 training, 2,000 validation, 5,000 test images, 6 epochs
   (full: 20,000 and 8 epochs).
2. **Text classifier**: a small transformer (2 pre-norm blocks, d = 64, 4 heads, word
   embeddings of a 4,000-word vocabulary, 32 tokens, mean pooling; GPT-2's N(0, 0.02)
   initialisation) trained on the spot on six
   categories of Debian's ``fortunes`` (people, computers, songs-poems, politics, work, science;
   4,980 texts, split 60/20/20). Without Debian's ``fortunes`` package, the docstrings of six
   standard-library packages stand in (616 texts, labelled by package).

3. **Language model** (issue 39): SmolLM2-135M-Instruct fine-tuned on standard-library
   source with and without the rate step (:func:`icml25.backslash.experiments_lm.lm_block`,
   :mod:`icml25.backslash.lm`); it runs when the ``[llm]`` extra and the model are present
   and says plainly when not. The ``tiny`` budget runs it on the tiny random Llama.

Quick runs the image and text families on the first seed only (full: all seeds).

Every model is trained with Adam (lr 1e-3, batch 64/128). BackSlash models attach the rate
step to the optimizer for the whole training (no fine-tuning epochs after it). Every accuracy
is that of the *decoded* model. Weights of all Linear and Embedding layers are quantised with
the family's fixed step ``delta`` and Exp-Golomb coded. Sizes are in bits per coded weight,
counted by the real encoder (``save_compressed`` writes and re-reads the selected models).

Runs per seed and family:
- normal training;
- BackSlash over a fixed lambda grid with the estimated ``nu``;
- for the image family, the same grid with ``nu = 2`` (Gaussian prior) and ``nu = 1``
  (Laplace prior).

The BackSlash model of a claim is chosen by a rule fixed in code, on *validation* accuracy: the
largest lambda whose decoded validation difference to normal training, averaged over the run's
seeds, has its 90% lower bound (mean - 1.645 paired standard errors of the validation items) at
-1 point or above (one lambda for all seeds; the margin is issue 54's, see
:func:`icml25.backslash.experiments_arms.select`).
"Matched bits" comparisons bring a model above the target size down to it. Post-training
quantisation does this with a coarser step (bisection on ``delta``); magnitude pruning does it
by a fraction pruned from every tensor at the same ``delta``. The 80% pruning claims prune each
tensor by its own threshold (controls: one global threshold), per family. The claims and rules
were fixed before the first run.

Where things are: the claims in :mod:`icml25.backslash.claims`; the budgets, tasks and
per-family steps in :mod:`icml25.backslash.experiments` (building blocks in
:mod:`icml25.backslash.experiments_arms`); the LM block in
:mod:`icml25.backslash.experiments_lm`; the figure in :mod:`icml25.backslash.figures`.
"""

from __future__ import annotations

from typing import Any

from icml25.backslash import figures
from icml25.backslash.claims import CLAIMS, FAMILIES, LABEL
from icml25.backslash.experiments import (
    BUDGETS,
    curve_means,
    evaluate_selected,
    family_measurements,
    family_notes,
    normal_point,
    small_lambda_measurements,
    train_family,
)
from icml25.backslash.experiments_lm import lm_block
from icml25.core.runner import RunContext

__all__ = ["CLAIMS", "claim_sizes", "reproduce"]


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them: the LM block's model (tiny runs
    the tiny random Llama of :func:`icml25.backslash.experiments_lm._load_lm`), steps and
    test tokens."""
    lm = BUDGETS[budget].lm
    assert lm is not None
    tiny = budget == "tiny"
    return {
        "lm": (
            "the tiny random Llama (random weights, the tests' model) fine-tuned on "
            "standard-library source"
            if tiny
            else "SmolLM2-135M-Instruct fine-tuned on standard-library source"
        ),
        "lm_tensors": "the tiny model's weight tensors" if tiny else "the 211 weight tensors",
        "lm_steps": lm.steps,
        "lm_length": lm.length,
        "lm_test_tokens": lm.test_tokens,
    }


def reproduce(ctx: RunContext) -> dict[str, Any]:
    """The two families on the run's seeds, then the language-model block (module docstring)."""
    b = BUDGETS[ctx.budget]
    seeds = ctx.seeds_run(at_most=b.seeds)
    out: dict[str, Any] = {}
    runs: dict[str, list[dict[str, Any]]] = {}
    for f in FAMILIES:
        # per seed: normal training twice, the BackSlash grids, the rate after training
        rs = runs[f] = [train_family(f, b, seed, ctx) for seed in seeds]
        # one lambda for all seeds, chosen on validation; its model measured on test
        evaluate_selected(rs)
        out.update(family_measurements(f, rs))
    out.update(small_lambda_measurements(runs))
    for f in FAMILIES:
        for line in family_notes(f, runs[f], seeds):
            ctx.note(line)
    panels = [(LABEL[f], curve_means(runs[f]), normal_point(runs[f])) for f in FAMILIES]
    ctx.save_figure(figures.rate_accuracy(panels), "rate_accuracy")
    if b.lm is not None:
        out.update(lm_block(ctx, b.lm))
    return out
