"""Reproduction of MAPLE at laptop scale, with a real language model.

Task: topic classification of short Debian ``fortunes`` quotes (categories computers, politics,
food, love; 3-16 words each) by SmolLM2-135M-Instruct in context, with the topics **renamed**
to colour words (computers -> green, politics -> red, food -> blue, love -> yellow) so that the
model cannot guess the labels zero-shot and must learn them from the demonstrations; labels
are scored by the next-token probability of their first token (batched forward passes, shared
prefixes); the prompt is a multi-turn chat (instruction as the system turn, each demonstration
a user turn answered by an assistant turn). The format and the label names were chosen by a
pilot on seed 1000, which no claim uses (``benchmarks/maple_pilot.py``; NOTES.md). Embeddings from
the offline all-MiniLM-L6-v2. Where ``fortunes`` is absent the first lines of Python
standard-library docstrings stand in.

Per seed (paired, as in the official code): a class-balanced pool, a uniform draw of ``|D_L|``
labeled items from it, and a class-balanced test set (``test_per_class`` queries a class: 24
queries in quick, 64 in full); every method sees the same pool, labeled set and test set.
Methods: zero-shot, few-shot, random pseudo-labels, MAPLE (and RAG, RAG-adapt in the full
budget). The random arm keeps, per query, a random subset of its demos as large as the set
MAPLE keeps for that query (matched demo count); a second random arm with another draw is the
null arm of the claims against random. Every unlabeled pool item is pseudo-labeled with the
few-shot prompt to correlate the influence score with pseudo-label correctness; learners that
ignore their input (the majority label of the labeled demos) are its null arm. The theory check
compares the surrogate with exact ``(D^-1 A)^K`` influence on random kNN graphs (no language
model), against the distance term alone as null arm.

Gate of every claim that needs the language model: the model learns in context at all
(few-shot accuracy minus zero-shot accuracy >= 0.10). Intervals: a bootstrap over the paired
test queries (or unlabeled items), stratified by seed; seed-level win fractions get a
Clopper-Pearson interval; the theory check a t interval over random graphs.

The ``tiny`` budget (tests) runs the same pipeline on :func:`icml25.core.llm.tiny_llama` and a
hashing embedder over stdlib docstrings: a pipeline check whose numbers mean nothing.

Claims and rules were fixed before the first run; null arms and gates before the runs that
judge them (NOTES.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.core.claims import Measurement, gate_key, null_key
from icml25.core.runner import RunContext
from icml25.maple.claims import CLAIMS, ICL_MARGIN
from icml25.maple.experiments import (
    BUDGETS,
    LABELS,
    STDLIB_LABELS,
    Arms,
    load_task,
    models,
    run_seed,
    spearman,
    surrogate_check,
    wins,
)
from icml25.maple.figures import maple_accuracy


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them."""
    b = BUDGETS[budget]
    n_classes = len(LABELS if b.real_model else STDLIB_LABELS)  # the label set load_task gives
    return {
        "n_test": n_classes * b.test_per_class,
        "n_unlabeled": n_classes * b.pool_per_class - b.n_labeled,
        "graphs": b.graphs,
    }


def reproduce(ctx: RunContext) -> dict[str, Any]:
    b = BUDGETS[ctx.budget]
    texts, y, labels, source = load_task(b)
    seeds = [ctx.seeds[0] + i for i in range(b.seeds)]
    if ctx.budget == "full" and len(ctx.seeds) > b.seeds:
        seeds = list(ctx.seeds)
    ctx.ran_seeds.update(seeds)  # consecutive from the first: what results.json records
    learner, embedder = models(b, labels, seeds[0])
    arms = Arms((*b.methods, "random2"))
    for seed in seeds:
        run_seed(ctx, b, seed, (texts, y, labels), learner, embedder, arms)
    hit, corr, paired = arms.hit, arms.corr, arms.paired

    theory = np.array([surrogate_check(s) for s in range(b.graphs)])
    icl = paired("few_shot", "zero_shot")
    out: dict[str, Any] = {
        "maple_minus_few_shot": paired("maple", "few_shot"),
        null_key("maple_minus_few_shot"): paired("random", "few_shot"),
        "maple_wins_vs_few_shot": wins(hit["maple"], hit["few_shot"]),
        null_key("maple_wins_vs_few_shot"): wins(hit["random"], hit["few_shot"]),
        "maple_minus_random": paired("maple", "random"),
        null_key("maple_minus_random"): paired("random2", "random"),
        "maple_wins_vs_random": wins(hit["maple"], hit["random"]),
        null_key("maple_wins_vs_random"): wins(hit["random2"], hit["random"]),
        "influence_vs_correctness": Measurement.bootstrap(corr["llm"], spearman, n_boot=500),
        null_key("influence_vs_correctness"): Measurement.bootstrap(
            corr["majority"], spearman, n_boot=500
        ),
        "surrogate_vs_exact": Measurement.of(theory[:, 0].tolist()),
        null_key("surrogate_vs_exact"): Measurement.of(theory[:, 1].tolist()),
        "few_shot_minus_zero_shot": icl,
        "surrogate_minus_distance": Measurement.of((theory[:, 0] - theory[:, 1]).tolist()),
    }
    for c in CLAIMS:
        if c.gate is not None:
            out[gate_key(c.id)] = icl
    n_test = len(labels) * b.test_per_class
    ctx.note(
        f"Task: {source}, labels {', '.join(labels)}; {len(seeds)} seeds x {n_test} test "
        f"queries, pool {len(labels) * b.pool_per_class}, |D_L| = {b.n_labeled}, "
        f"|D*_U| = {b.n_pseudo}, degree {b.degree}, G' degree and query links {b.adapt}; "
        "multi-turn chat prompts; gate: few-shot - zero-shot >= "
        f"{ICL_MARGIN} (measured {icl.mean:+.3f})."
    )
    for m in arms.methods:
        a = np.array([h.mean() for h in hit[m]])
        p = float(np.mean(np.concatenate(hit[m])))
        se = np.sqrt(p * (1 - p) / (len(a) * n_test))
        ctx.note(f"accuracy {m}: {p:.3f} (binomial s.e. {se:.3f}); per seed {a.round(3)}")
    ctx.note(
        "pseudo-label accuracy: "
        + ", ".join(f"{k} {np.mean(v):.3f}" for k, v in arms.pseudo_acc.items() if v)
        + f"; MAPLE prompts keep {np.mean(arms.kept):.0%} of the demos (the random arms as many, "
        "RAG all)."
    )
    ctx.save_figure(maple_accuracy(hit, n_test, corr["llm"]), "maple_accuracy")
    return out
