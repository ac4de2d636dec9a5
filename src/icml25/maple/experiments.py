"""The arms of MAPLE's reproduction: the task (short texts, renamed labels, the per-seed
split), the models, one seed's five to seven arms, the theory check on random graphs and the
statistics the claims read. :mod:`icml25.maple.reproduce` holds the protocol (its docstring)
and puts these together.

- **Budget**: :class:`Budget` and ``BUDGETS``.
- **Task**: :func:`load_task` (Debian ``fortunes`` topics renamed to colours, or stdlib
  docstrings), :func:`split` (class-balanced test set and pool, a uniform labeled draw).
- **Arms**: :func:`models` (the in-context learner and the embedder), :func:`run_seed` (every
  method on one seed's pool and queries, and the influence-vs-correctness data), collected in
  :class:`Arms`; :func:`surrogate_check` (the surrogate against the exact influence).
- **Statistics**: :func:`spearman` (of a bootstrap resample), :func:`wins` (seed-level win
  fraction with a Clopper-Pearson interval).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import beta, spearmanr

from icml25.core.claims import Measurement
from icml25.core.runner import RunContext
from icml25.maple.graph import (
    connect_components,
    exact_influence,
    influence_scores,
    knn_graph,
    shortest_path_counts,
)
from icml25.maple.learners import HashingEmbedder, LabelScorer, SentenceEncoder
from icml25.maple.pipeline import MAPLE
from icml25.maple.prompts import MultiTurnLM

TOPICS = ("computers", "politics", "food", "love")
LABELS = ("green", "red", "blue", "yellow")
"""The topics renamed (pilot on seed 1000: colour words, multi-turn chat)."""
STDLIB_LABELS = ("email", "http", "xml", "logging")


@dataclass(frozen=True, kw_only=True)
class Budget:
    seeds: int
    """Consecutive seeds from the first (full: the seeds asked for, where more)."""
    pool_per_class: int
    """Pool items a class (labeled and unlabeled)."""
    n_labeled: int
    """``|D_L|``: labeled demos, drawn uniformly from the pool."""
    n_pseudo: int
    """``|D*_U|``: pool items pseudo-labeled."""
    degree: int
    """Degree of the relevance graph G."""
    adapt: int
    """``adapt_degree`` and ``query_links`` (the official 10 of 40 demos, scaled)."""
    test_per_class: int
    """Test queries a class."""
    methods: tuple[str, ...]
    """The arms (strategies of :class:`~icml25.maple.MAPLE`); a second random draw is added."""
    real_model: bool
    """SmolLM2-135M-Instruct and all-MiniLM-L6-v2 (else a tiny Llama and a hashing embedder)."""
    graphs: int
    """Random graphs of the theory check."""
    max_words: int = 16
    """Longest text kept (words)."""


BASE = ("zero_shot", "few_shot", "random", "maple")
BUDGETS = {
    "tiny": Budget(
        seeds=1, pool_per_class=6, n_labeled=4, n_pseudo=3, degree=4, adapt=2,
        test_per_class=2, methods=BASE, real_model=False, graphs=3,
    ),
    # quick cut for the main job's time (issue 57: 399 CPU-s at 8 labelled + 8 pseudo demos and
    # 64 queries, every claim out of scale on its gate): 4 + 4 demos, 24 queries; full unchanged
    "quick": Budget(
        seeds=1, pool_per_class=12, n_labeled=4, n_pseudo=4, degree=4, adapt=2,
        test_per_class=6, methods=BASE, real_model=True, graphs=5,
    ),
    "full": Budget(
        seeds=5, pool_per_class=24, n_labeled=8, n_pseudo=8, degree=8, adapt=4,
        test_per_class=16, methods=(*BASE, "rag", "rag_adapt"), real_model=True, graphs=10,
    ),
}  # fmt: skip


def load_task(b: Budget) -> tuple[list[str], np.ndarray, tuple[str, ...], str]:
    """Short texts, integer labels, label names and a description of the source."""
    from icml25.core.data import load_fortunes, load_stdlib_docstrings

    if b.real_model:
        try:
            texts, y = load_fortunes(TOPICS)
            labels, source = LABELS, "Debian fortunes, topics renamed to colours"
        except FileNotFoundError:
            texts, y = load_stdlib_docstrings(STDLIB_LABELS)
            labels, source = LABELS, "stdlib docstrings (fortunes absent), renamed to colours"
    else:
        texts, y = load_stdlib_docstrings(STDLIB_LABELS)
        labels, source = STDLIB_LABELS, "stdlib docstrings"
        texts = [t.splitlines()[0] for t in texts]
    clean = [" ".join(t.split()) for t in texts]
    keep = [i for i, t in enumerate(clean) if 3 <= len(t.split()) <= b.max_words]
    out = [clean[i] for i in keep]
    if not b.real_model:
        out = [t[:40] for t in out]
    return out, y[keep], labels, source


def split(
    y: np.ndarray, b: Budget, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Class-balanced test set and pool (disjoint), then a uniform labeled draw from the pool."""
    test: list[int] = []
    pool: list[int] = []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        need = b.test_per_class + b.pool_per_class
        if len(idx) < need:
            raise ValueError(f"class {c} has {len(idx)} short texts, the budget needs {need}")
        test.extend(idx[: b.test_per_class])
        pool.extend(idx[b.test_per_class : need])
    pool_arr = rng.permutation(np.array(pool))
    labeled = rng.choice(len(pool_arr), size=b.n_labeled, replace=False)
    return rng.permutation(np.array(test)), pool_arr, labeled


def surrogate_check(seed: int) -> tuple[float, float]:
    """Spearman with the exact influence on one random 10-NN graph: of the surrogate, and of
    its distance term alone."""
    rng = np.random.default_rng(10_000 + seed)
    e = rng.normal(size=(300, 16))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    adj = connect_components(knn_graph(e, k=10))
    lab = rng.choice(300, size=20, replace=False)
    exact, surrogate = exact_influence(adj, lab), influence_scores(adj, lab)
    dist = shortest_path_counts(adj, lab)[0].mean(axis=1)
    ok = np.isfinite(exact)
    return (
        float(spearmanr(surrogate[ok], exact[ok])[0]),
        float(spearmanr(-dist[ok], exact[ok])[0]),
    )


def models(b: Budget, labels: tuple[str, ...], seed: int) -> tuple[Any, Any]:
    """The in-context learner (SmolLM2, or a tiny random Llama) and the embedder."""
    from icml25.core.llm import load_causal_lm, tiny_llama

    if b.real_model:
        lm = MultiTurnLM(*load_causal_lm(quiet=True))
        return LabelScorer(lm, labels, batch_size=8), SentenceEncoder()
    lm = MultiTurnLM(*tiny_llama(layers=2, hidden=32, seed=seed))
    return LabelScorer(lm, labels, batch_size=8), HashingEmbedder(128)


def spearman(rows: np.ndarray) -> float:
    """Spearman of column 0 (score) with column 1 (correct); 0 where column 1 is constant."""
    if rows[:, 1].min() == rows[:, 1].max() or rows[:, 0].min() == rows[:, 0].max():
        return 0.0
    return float(spearmanr(rows[:, 0], rows[:, 1])[0])


def wins(a: list[np.ndarray], b: list[np.ndarray]) -> Measurement:
    """Fraction of seeds where arm a's accuracy beats arm b's, with a Clopper-Pearson 90%
    interval for the probability of a win."""
    w = [float(x.mean() > y.mean()) for x, y in zip(a, b, strict=True)]
    n, k = len(w), int(sum(w))
    low = 0.0 if k == 0 else float(beta.ppf(0.05, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(0.95, k + 1, n - k))
    return Measurement.with_interval(w, low, high, f"Clopper-Pearson ({k} of {n} seeds)")


@dataclass
class Arms:
    """What the claims read, one entry a seed: each method's per-query hits, the
    (influence, correct) rows of the LLM and of the majority-label learner, pseudo-label
    accuracies and the share of demos MAPLE keeps."""

    methods: tuple[str, ...]
    hit: dict[str, list[np.ndarray]] = field(init=False)
    corr: dict[str, list[np.ndarray]] = field(default_factory=lambda: {"llm": [], "majority": []})
    pseudo_acc: dict[str, list[float]] = field(
        default_factory=lambda: {"random": [], "maple": [], "pool": []}
    )
    kept: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.hit = {m: [] for m in self.methods}

    def paired(self, a: str, c: str) -> Measurement:
        """Arm ``a`` minus arm ``c``, paired per query, bootstrapped over queries and seeds."""
        return Measurement.bootstrap([x - z for x, z in zip(self.hit[a], self.hit[c], strict=True)])


def run_seed(
    ctx: RunContext, b: Budget, seed: int, task: tuple[list[str], np.ndarray, tuple[str, ...]],
    learner: Any, embedder: Any, arms: Arms,
) -> None:  # fmt: skip
    """One seed: its split, every method fitted and scored on the same pool, labeled set and
    test queries (MAPLE first: the random arms keep as many demos per query as it does), and
    every unlabeled pool item pseudo-labeled few-shot for the correlation claim."""
    texts, y, labels = task
    methods, hit, corr, pseudo_acc = arms.methods, arms.hit, arms.corr, arms.pseudo_acc
    rng = np.random.default_rng(seed)
    test, pool, lab = split(y, b, rng)
    lab_x = [texts[pool[i]] for i in lab]
    lab_y = [labels[y[pool[i]]] for i in lab]
    unl = np.setdiff1d(np.arange(len(pool)), lab)  # keeps pool order
    unl_x = [texts[pool[i]] for i in unl]
    unl_y = [labels[y[pool[i]]] for i in unl]
    q_x = [texts[i] for i in test]
    q_y = np.array([labels[y[i]] for i in test])
    ctx.progress(f"seed {seed}: {len(pool)} pool items, {len(test)} test queries")
    fitted: dict[str, MAPLE] = {}
    for m in ("maple", *(x for x in methods if x != "maple")):  # MAPLE first: its counts
        est = MAPLE(
            learner,
            embedder,
            labels=labels,
            strategy="random" if m == "random2" else m,
            n_pseudo=b.n_pseudo,
            degree=b.degree,
            adapt_degree=b.adapt,
            query_links=b.adapt,
            random_state=seed + (10_000 if m == "random2" else 0),
        )
        est.fit(lab_x, lab_y, unl_x, queries=q_x)
        fitted[m] = est
        counts = None
        if m in ("random", "random2"):  # matched: as many demos as MAPLE keeps per query
            counts = [len(fitted["maple"].demonstrations(q)) for q in q_x]
        if m in ("random", "maple"):
            truth = [unl_y[i] for i in est.selected_]
            ok = np.mean(np.array(est.pseudo_labels_) == np.array(truth))
            pseudo_acc[m].append(float(ok))
        if m == "maple":
            arms.kept.append(
                float(np.mean([len(est.demonstrations(q)) for q in q_x]))
                / (b.n_labeled + b.n_pseudo)
            )
        hit[m].append((np.array(est.predict(q_x, n_demos=counts)) == q_y).astype(float))
    # influence vs correctness: every unlabeled pool item, pseudo-labeled few-shot
    influence = fitted["maple"].influence_
    tpl = fitted["few_shot"].template_
    prompts = [tpl.prompt(fitted["few_shot"].labeled_, x, labels) for x in unl_x]
    gold = np.array(unl_y)
    correct = (np.array(learner(prompts)) == gold).astype(float)
    values, counts_l = np.unique(lab_y, return_counts=True)
    majority = min(
        (v for v, c in zip(values, counts_l, strict=True) if c == counts_l.max()),
        key=labels.index,
    )
    pseudo_acc["pool"].append(float(correct.mean()))
    corr["llm"].append(np.stack([influence, correct], axis=1))
    corr["majority"].append(np.stack([influence, (gold == majority).astype(float)], axis=1))
    ctx.progress(f"seed {seed}: " + ", ".join(f"{m} {hit[m][-1].mean():.2f}" for m in methods))
