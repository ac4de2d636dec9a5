"""Reproduction of CCA-Attention's central claims at laptop scale.

**(a) Long-range modelling** (the brief's needle task). Sequences of 256 tokens (quick: 128): random
filler, a ``MARK v`` pair at a uniform position at least 94 tokens before the final
``QUERY``, and the target ``v``, one of 8 values (chance 12.5%). Five tiny causal LMs
(2 layers, width 64, 4 heads, learned positions) are trained on the spot with the same
seed, data and Adam (lr 3e-3, batch 32). They differ only in attention: full (SDPA), local
window ``s = 32``, sink (4) + window, CCA (``g = 8, s = 32``) and CCA with mean pooling.
The metric is accuracy on 1,000 held-out sequences (quick: 500), the same sequences for
every model of a seed, with a bootstrap over them. The pooling claim rests on two trained
models, so it is measured on three training seeds (``Budget.pooling_seeds``; the first is
the needle seed, the two others train only CCA and CCA with mean pooling): a t interval over
seeds of the per-seed difference, whose null arm pairs each seed's mean-pooling model with
another seed's (quick trains no mean-pooling model since issue 57: the pooling claim is out
of scale there, see the README).

**(b) Plug-and-play.** The full-attention model from (a) gets CCA in place of its attention
(same weights). It is evaluated, fine-tuned briefly with CCA, and evaluated again.
Recovery = accuracy after / full attention's. The null arm swaps in the local window instead
and gets the same fine-tune.

**(c) A real pretrained LM.** SmolLM2-135M-Instruct (the embedded default of
:func:`icml25.core.llm.load_causal_lm`, float32) with CCA (``g = 16, s = 128``) swapped into
every layer by :func:`icml25.cca_attention.hf.use_cca`. Text: the source files of Python
standard-library modules, long real documents that every Python ships. Evaluation on the
first tokens of ``EVAL_MODULES`` (quick: 2 files x 512 tokens; full: 3 x 2,048), cut into
chunks of each context length L; the perplexity counts the tokens at positions >= s in each
chunk (before s, CCA and full attention see the same keys). Fine-tune on the disjoint
``FINETUNE_MODULES`` by :class:`~icml25.cca_attention.experiments.Recipe`, the official
recipe's shape (AdamW without weight decay, linear warm-up then a constant rate, gradient
clipping at 2.0) at lr 1e-4, batch 1, windows at random offsets (quick: 2 steps of 256
tokens; full: training at the evaluation length, 2,048 tokens). The same windows fine-tune a
full-attention copy, the control for what fine-tuning on this text does anyway, and a copy
with CCA's window but no core tokens (:func:`~icml25.cca_attention.experiments.use_local`),
the null arm. Intervals: a bootstrap over blocks of 64 evaluated tokens (paired across
arms). The ``tiny`` budget runs the same pipeline on :func:`icml25.core.llm.tiny_llama`
(numbers meaningless).

**(d) Efficiency.** One (1, 8, L, 64) float32 causal forward pass, CCA (``g = 16,
s = 256``) against PyTorch's fused SDPA on one thread: CPU time (the claims; on a shared
machine the wall time moves with the load, and is reported beside it) and peak-memory
growth, each (method, L) in a fresh subprocess, three timed runs after a warm-up (the
interval is over the runs). The null arm is CCA's kernel with a window over the whole
sequence (no compression). And the decoding memory of (c)'s model after a prefill of L
tokens: the model's own KV cache under full attention against
:class:`~icml25.cca_attention.hf.CCACache` plus the core tokens (the null arm: CCA with the
model's own cache, which evicts nothing).

The claims, their rules, null arms and gates are in :mod:`icml25.cca_attention.claims`; the
arms and statistics in :mod:`icml25.cca_attention.experiments` and
:mod:`icml25.cca_attention.experiments_cost`; the figure in
:mod:`icml25.cca_attention.figures`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from icml25.cca_attention import figures
from icml25.cca_attention.claims import CLAIMS
from icml25.cca_attention.experiments import (
    BUDGETS,
    needle_arms,
    needle_measures,
    needle_min_distance,
    notes,
    pooling_arms,
)
from icml25.cca_attention.experiments_cost import speed_costs, speed_measures
from icml25.cca_attention.experiments_lm import lm_measures, pretrained_lm
from icml25.core.runner import RunContext

__all__ = ["CLAIMS", "claim_sizes", "reproduce"]


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them (issue 56): the claims read the
    last of each length list (``v[-1]``, ``cost[...][-1]``, ``memory[...][-1]``)."""
    b = BUDGETS[budget]
    return {
        # tiny runs (c) on core.llm.tiny_llama (pretrained_lm's load_lm(tiny))
        "lm_model": "tiny_llama (random weights; tiny budget)"
        if budget == "tiny"
        else "SmolLM2-135M",
        "length": b.length,
        "distance": needle_min_distance(b.length),
        "test_items": b.test_items,
        "finetune_steps": b.finetune_steps,
        "lm_steps": b.lm_steps,
        "lm_tokens": b.lm_window
        if b.recipe.accumulate == 1
        else f"{b.recipe.accumulate} x {b.lm_window:,}",
        "lm_length": b.lm_lengths[-1],
        "speed_length": b.speed_lengths[-1],
        "speed_lengths": "/".join(f"{n:,}" for n in b.speed_lengths),
        "timed_runs": b.speed_repeats - 1,
        "kv_length": b.kv_lengths[-1],
        "pooling_seeds": b.pooling_seeds,
    }


def reproduce(ctx: RunContext) -> dict[str, Any]:
    b = BUDGETS[ctx.budget]
    # (a) long-range modelling and (b) plug-and-play: the needle models of every seed
    ok: dict[str, list[np.ndarray]] = {}
    for seed in ctx.seeds_run(at_most=b.seeds):
        for k, v in needle_arms(b, seed, ctx.progress).items():
            ok.setdefault(k, []).append(v)
    pool = None
    if b.pooling:  # the pooling claim's arms on further training seeds (issue 66)
        seeds = ctx.seeds_run(at_least=b.pooling_seeds, at_most=b.pooling_seeds)
        pool = {k: list(ok[k][: b.seeds]) for k in ("cca", "cca_mean")}
        for seed in seeds[b.seeds :]:
            for k, v in pooling_arms(b, seed, ctx.progress).items():
                pool[k].append(v)
        accs = {k: ", ".join(f"{x.mean():.3f}" for x in v) for k, v in pool.items()}
        ctx.note(
            f"attention_pooling_beats_mean, per training seed {list(seeds)}: cca {accs['cca']}; "
            f"cca_mean {accs['cca_mean']}."
        )
    out = needle_measures(ok, pool)
    if not b.pooling:
        ctx.note(
            f"attention_pooling_beats_mean: not measured at the {ctx.budget} budget, hence out "
            f"of scale (issue 57, see the README): in {b.steps} training steps no CCA model "
            "learns to use its core tokens (cca_long_range: the CCA model at the local "
            "window's accuracy), so no difference between two poolings can show. The full "
            "budget measures it."
        )
    # (c) a pretrained LM with CCA swapped in, and (d) its decoding memory after a prefill
    lm = pretrained_lm(ctx, b, ctx.seeds[0])
    nll, memory = lm["nll"], lm["memory"]
    out.update(lm_measures(nll, memory))
    # (d) one forward pass: each (method, length) in a process of its own (issue 57)
    ctx.progress(f"(d) speed and memory of one forward pass: lengths {b.speed_lengths}")
    cost = speed_costs(b.speed_lengths, b.speed_repeats)
    out.update(speed_measures(cost))
    ppl = {k: [math.exp(float(x.mean())) for x in v] for k, v in nll.items()}
    notes(ctx, b, ok, ppl, memory, cost)
    table = {k: [float(x.mean()) for x in v] for k, v in ok.items()}
    fig = figures.cca_summary(
        table,
        ppl,
        memory,
        cost,
        speed_lengths=b.speed_lengths,
        lm_lengths=b.lm_lengths,
        kv_lengths=b.kv_lengths,
    )
    ctx.save_figure(fig, "cca_summary")
    return out
