"""MAPLE and its baselines behind one estimator, :class:`MAPLE`.

``fit(labeled_texts, labeled_labels, pool_texts)``

1. builds the relevance graph ``G`` over the pool (labeled items are pool nodes too) from
   input-only embeddings, ``degree``-NN with the rank-1 drop, components chained;
2. picks ``n_pseudo`` unlabeled pool items: by the influence surrogate (``"maple"``), at random
   (``"random"``) or by relevance to the mean test input (``"rag"``, ``"rag_adapt"``, which need
   the test inputs: ``fit(..., queries=...)``);
3. pseudo-labels them with the learner, prompted exactly like few-shot ICL (all labeled demos,
   then the item).

``prompts(queries)`` / ``predict(queries)`` then assemble one prompt per query:

- ``"maple"``: graph ``G'`` over labeled + pseudo-labeled items embedded with their labels,
  ``adapt_degree``-NN; the query attached to the ``query_links`` demos with the most similar
  input-only embedding; demo ``j`` scores ``t(j) = N_sp(j, q) - dist(j, q) ln(d')`` (raw count,
  as the official code, ``d'`` the average degree of ``G'`` without the query) and is kept iff
  ``t(j) > percentile(t, 25)``;
- ``"rag_adapt"``: the same filter on plain query-demo similarity;
- ``"random"``, ``"rag"``: every demo; ``"few_shot"``: labeled demos; ``"zero_shot"``: none.

Order in a prompt: kept labeled demos (their given order), kept pseudo-labeled demos (selection
order: ascending score, the most influential last), then the query.

References
----------
Chen, Wang, Tan, Li, Shen. "MAPLE: Many-Shot Adaptive Pseudo-Labeling for In-Context
Learning", ICML 2025 (arXiv:2505.16225); official code Chen-1031/MAPLE_ICL.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from icml25.core import validate as V
from icml25.maple.graph import _bfs_counts, connect_components, influence_scores, knn_graph
from icml25.maple.learners import check_labels
from icml25.maple.prompts import Template

STRATEGIES = ("maple", "random", "rag", "rag_adapt", "few_shot", "zero_shot")
"""``strategy`` values of :class:`MAPLE`: the method and the paper's baselines."""


def _texts(name: str, value: Any, *, allow_empty: bool = False) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list of strings, got {type(value).__name__}")
    out = list(value)
    if not out and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    for i, t in enumerate(out):
        if not isinstance(t, str) or not t.strip():
            raise ValueError(f"{name}[{i}] must be a non-empty string, got {t!r}")
    return out


def adaptive_scores(
    demo_label_emb: np.ndarray,
    demo_input_emb: np.ndarray,
    query_emb: np.ndarray,
    *,
    degree: int = 10,
    query_links: int = 10,
) -> np.ndarray:
    """Step-4 score of every demo for one query:
    ``t(j) = N_sp(j, q) - dist(j, q) * ln(d')`` on ``G'`` (``degree``-NN over the demos'
    labelled embeddings, components chained) plus the query linked to the ``query_links`` demos
    with the largest input-only dot product; ``d'`` is ``G'``'s average degree before the query
    is added."""
    lab = V.finite_array("demo_label_emb", demo_label_emb, ndim=2, min_len=3)
    inp = V.finite_array("demo_input_emb", demo_input_emb, ndim=2, min_len=3)
    q = V.finite_array("query_emb", query_emb, ndim=1)
    if inp.shape[0] != lab.shape[0] or inp.shape[1] != q.shape[0]:
        raise ValueError(
            f"demo_input_emb must have one row per demo ({lab.shape[0]}) and query_emb's "
            f"dimension ({q.shape[0]}), got shape {inp.shape}"
        )
    degree = V.integer("degree", degree, low=1)
    query_links = V.integer("query_links", query_links, low=1)
    return _adaptive_scores(lab, inp, q, degree, query_links)


def _adaptive_scores(
    demo_label_emb: np.ndarray,
    demo_input_emb: np.ndarray,
    query_emb: np.ndarray,
    degree: int,
    query_links: int,
) -> np.ndarray:
    n = demo_label_emb.shape[0]
    g = connect_components(knn_graph(demo_label_emb, k=min(degree, n - 2)))
    dbar = float(g.nnz) / n
    links = np.argsort(-(demo_input_emb @ query_emb), kind="stable")[: min(query_links, n)]
    col = sp.csr_matrix((np.ones(len(links)), (links, np.zeros(len(links), int))), shape=(n, 1))
    aug = sp.bmat([[g, col], [col.T, None]], format="csr")
    dist, counts = _bfs_counts(aug, np.array([n]))
    return counts[:n, 0] - dist[:n, 0] * np.log(dbar)


class MAPLE:
    """Many-shot adaptive pseudo-labelling for in-context learning (and its baselines).

    Parameters
    ----------
    learner
        ``prompts -> labels``: e.g. :class:`~icml25.maple.LabelScorer` over a language model,
        or any function.
    embedder
        ``texts -> array (n, d)``: e.g. :class:`~icml25.maple.SentenceEncoder`.
    labels
        The label set; labeled labels must belong to it.
    strategy
        One of :data:`STRATEGIES`.
    n_pseudo
        ``|D*_U|``, unlabeled items to pseudo-label (paper: 20).
    degree
        Neighbours per node of ``G`` (paper: 20).
    adapt_degree, query_links
        Neighbours per node of ``G'`` and demos the query links to (official code: 10, 10).
    percentile
        Demos scoring at or below this percentile of a query's scores are dropped (25).
    template
        Prompt and embedding-text format.
    random_state
        Seed of the ``"random"`` selection.

    Attributes
    ----------
    graph_ : scipy.sparse.csr_matrix
        ``G`` over the pool.
    influence_ : ndarray
        Influence surrogate of every pool item (``"maple"``; ``nan`` for other strategies).
    selected_ : ndarray
        Pool indices pseudo-labeled, in prompt order.
    pseudo_labels_ : list of str
        The learner's labels for them.
    """

    def __init__(
        self,
        learner: Callable[[list[str]], list[str]],
        embedder: Callable[[list[str]], Any],
        *,
        labels: Sequence[str],
        strategy: str = "maple",
        n_pseudo: int = 20,
        degree: int = 20,
        adapt_degree: int = 10,
        query_links: int = 10,
        percentile: float = 25.0,
        template: Template | None = None,
        random_state: int | None = None,
    ) -> None:
        self.learner, self.embedder, self.labels = learner, embedder, labels
        self.strategy, self.n_pseudo, self.degree = strategy, n_pseudo, degree
        self.adapt_degree, self.query_links, self.percentile = (
            adapt_degree,
            query_links,
            percentile,
        )
        self.template, self.random_state = template, random_state

    # -- checks ------------------------------------------------------------------------------
    def _check_params(self) -> None:
        if not callable(self.learner):
            raise TypeError(f"learner must be callable, got {type(self.learner).__name__}")
        if not callable(self.embedder):
            raise TypeError(f"embedder must be callable, got {type(self.embedder).__name__}")
        self.labels_ = check_labels(self.labels)
        V.choice("strategy", self.strategy, STRATEGIES)
        V.integer("n_pseudo", self.n_pseudo, low=1)
        V.integer("degree", self.degree, low=1)
        V.integer("adapt_degree", self.adapt_degree, low=1)
        V.integer("query_links", self.query_links, low=1)
        V.number("percentile", self.percentile, low=0.0, high=100.0, high_open=True)
        if self.template is not None and not isinstance(self.template, Template):
            raise TypeError(f"template must be a Template, got {type(self.template).__name__}")
        self.template_ = self.template or Template()

    def _embed(self, texts: list[str]) -> np.ndarray:
        e = V.finite_array("embedder output", self.embedder(texts), ndim=2)
        if e.shape[0] != len(texts):
            raise ValueError(
                f"embedder must return one row per text: {len(texts)} texts, {e.shape[0]} rows"
            )
        return e

    def _ask(self, prompts: list[str]) -> list[str]:
        if not prompts:
            return []
        answers = list(self.learner(prompts))
        if len(answers) != len(prompts) or not all(isinstance(a, str) for a in answers):
            raise ValueError(
                f"learner must return one string per prompt: {len(prompts)} prompts, "
                f"got {answers!r:.200}"
            )
        return answers

    # -- step 1-3 ----------------------------------------------------------------------------
    def fit(
        self,
        labeled_texts: Sequence[str],
        labeled_labels: Sequence[str],
        pool_texts: Sequence[str],
        *,
        queries: Sequence[str] | None = None,
    ) -> MAPLE:
        """Select and pseudo-label ``n_pseudo`` items of the unlabeled pool.

        ``pool_texts`` are the unlabeled items; the labeled items join them as nodes of ``G``.
        ``queries`` (the test inputs) are read only by the RAG baselines (transductive)."""
        self._check_params()
        lab_x = _texts("labeled_texts", labeled_texts)
        lab_y = list(labeled_labels) if isinstance(labeled_labels, Sequence) else None
        if lab_y is None or len(lab_y) != len(lab_x):
            raise ValueError(
                f"labeled_labels must be a list with one label per labeled text ({len(lab_x)})"
            )
        bad = [y for y in lab_y if y not in self.labels_]
        if bad:
            raise ValueError(
                f"labeled_labels must belong to labels {list(self.labels_)}, got {bad[:5]}"
            )
        pool = _texts("pool_texts", pool_texts)
        s = self.strategy
        k = V.integer("n_pseudo", self.n_pseudo, low=1)
        if s not in ("few_shot", "zero_shot") and k > len(pool):
            raise ValueError(f"n_pseudo must be at most the pool size {len(pool)}, got {k}")
        if s in ("rag", "rag_adapt"):
            if queries is None:
                raise ValueError(f"strategy {s!r} needs the test inputs: fit(..., queries=...)")
            self.queries_ = _texts("queries", queries)
        self.labeled_ = list(zip(lab_x, lab_y, strict=True))
        self.pool_ = pool
        self.influence_ = np.full(len(pool), np.nan)
        self.selected_ = np.zeros(0, dtype=np.int64)
        self.pseudo_labels_: list[str] = []
        tpl = self.template_
        if s in ("few_shot", "zero_shot"):
            return self
        if s == "maple":
            nodes = lab_x + pool  # labeled nodes first
            if self.degree > len(nodes) - 2:
                raise ValueError(
                    f"degree must be at most {len(nodes) - 2} (labeled + pool items - 2), "
                    f"got {self.degree}"
                )
            emb = self._embed([tpl.item(x) for x in nodes])
            self.graph_ = connect_components(knn_graph(emb, k=self.degree))
            score = influence_scores(self.graph_, np.arange(len(lab_x)))[len(lab_x) :]
            self.influence_ = score
            order = np.argsort(score, kind="stable")  # ascending: most influential last
            self.selected_ = order[-k:]
        elif s == "random":
            rng = np.random.default_rng(self.random_state)
            self.selected_ = rng.choice(len(pool), size=k, replace=False)
        else:
            e_pool = self._embed([tpl.item(x) for x in pool])
            e_q = self._embed([tpl.item(q) for q in self.queries_]).mean(axis=0)
            order = np.argsort(e_pool @ e_q, kind="stable")
            self.selected_ = order[-k:]
        few = [tpl.prompt(self.labeled_, pool[i], self.labels_) for i in self.selected_]
        self.pseudo_labels_ = self._ask(few)
        return self

    # -- step 4 ------------------------------------------------------------------------------
    def demonstrations(self, query: str, *, n_demos: int | None = None) -> list[tuple[str, str]]:
        """The demos, in prompt order, that this query gets.

        ``n_demos`` (strategies that keep every demo: ``few_shot``, ``random``, ``rag``) keeps a
        random subset of that many demos in their prompt order, the same subset for the same
        query and ``random_state``: a baseline matched on demo count to a filtering strategy
        (MAPLE keeps about three quarters of its demos, the official baselines all of theirs).
        """
        if not hasattr(self, "labeled_"):
            raise RuntimeError("call fit before demonstrations/prompts/predict")
        if not isinstance(query, str) or not query.strip():
            raise ValueError(f"query must be a non-empty string, got {query!r}")
        s, tpl = self.strategy, self.template_
        if n_demos is not None and s in ("maple", "rag_adapt", "zero_shot"):
            raise ValueError(
                f"n_demos must be None for strategy {s!r} (it decides its own demos), "
                f"got {n_demos!r}"
            )
        if s == "zero_shot":
            return []
        pseudo = [
            (self.pool_[i], y) for i, y in zip(self.selected_, self.pseudo_labels_, strict=True)
        ]
        demos = list(self.labeled_) if s == "few_shot" else self.labeled_ + pseudo
        if s in ("few_shot", "random", "rag"):
            if n_demos is None:
                return demos
            n = V.integer("n_demos", n_demos, low=0, high=len(demos))
            seed = 0 if self.random_state is None else int(self.random_state)
            rng = np.random.default_rng([seed, zlib.crc32(query.encode())])
            keep = np.sort(rng.choice(len(demos), size=n, replace=False))
            return [demos[int(i)] for i in keep]
        e_in = self._embed([tpl.item(x) for x, _ in demos])
        e_q = self._embed([tpl.item(query)])[0]
        if s == "maple":
            if len(demos) < 3:
                return demos
            e_lab = self._embed([tpl.item(x, y) for x, y in demos])
            t = _adaptive_scores(e_lab, e_in, e_q, self.adapt_degree, self.query_links)
        else:  # rag_adapt
            t = e_in @ e_q
        keep_mask = t > np.percentile(t, self.percentile)
        return [d for d, k in zip(demos, keep_mask, strict=True) if k]

    def prompts(self, queries: Sequence[str], *, n_demos: Sequence[int] | None = None) -> list[str]:
        """One assembled prompt per query (``n_demos``: a demo count per query, see
        :meth:`demonstrations`)."""
        qs = _texts("queries", queries)
        if not hasattr(self, "labeled_"):
            raise RuntimeError("call fit before demonstrations/prompts/predict")
        counts: list[int | None] = [None] * len(qs)
        if n_demos is not None:
            if isinstance(n_demos, (str, bytes)) or not isinstance(n_demos, Sequence):
                raise TypeError(f"n_demos must be a list of ints, got {type(n_demos).__name__}")
            if len(n_demos) != len(qs):
                raise ValueError(
                    f"n_demos must have one count per query ({len(qs)}), got {len(n_demos)}"
                )
            counts = list(n_demos)
        return [
            self.template_.prompt(self.demonstrations(q, n_demos=c), q, self.labels_)
            for q, c in zip(qs, counts, strict=True)
        ]

    def predict(self, queries: Sequence[str], *, n_demos: Sequence[int] | None = None) -> list[str]:
        """The learner's label for each query."""
        return self._ask(self.prompts(queries, n_demos=n_demos))
