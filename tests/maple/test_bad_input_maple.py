"""Bad input to MAPLE's public entry points gives a clear error."""

# not entry points: STRATEGIES, Template

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from icml25.maple import (
    MAPLE,
    HashingEmbedder,
    LabelScorer,
    MultiTurnLM,
    SentenceEncoder,
    adaptive_scores,
    average_degree,
    connect_components,
    exact_influence,
    influence_scores,
    knn_graph,
    shortest_path_counts,
)

PATH = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
TWO = sp.csr_matrix(np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]], float))


def _multi_turn() -> MultiTurnLM:
    from icml25.core.llm import tiny_llama

    return MultiTurnLM(*tiny_llama(layers=1, hidden=16, seed=0))


def test_multi_turn_lm_template_type() -> None:
    from icml25.core.llm import tiny_llama

    with pytest.raises(TypeError, match="template must be a Template"):
        MultiTurnLM(*tiny_llama(layers=1, hidden=16, seed=0), template="x")  # type: ignore[arg-type]


def learner(prompts: list[str]) -> list[str]:
    return ["a"] * len(prompts)


def fitted(**kw: object) -> MAPLE:
    params: dict[str, object] = {"n_pseudo": 2, "degree": 3} | kw
    return MAPLE(learner, HashingEmbedder(16), labels=("a", "b"), **params)  # type: ignore[arg-type]


POOL = [f"pool item {i}" for i in range(10)]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: knn_graph(np.ones((5, 2)), k=4), "k must be at most"),
        (lambda: knn_graph(np.ones((5, 2)), k=0), "k must be an integer >= 1"),
        (lambda: knn_graph([[np.nan, 1.0]] * 4, k=1), "embeddings must be finite"),
        (lambda: connect_components(np.eye(3)), "adj must be a scipy sparse matrix"),
        (lambda: average_degree(sp.csr_matrix(np.triu(np.ones((3, 3))))), "symmetric"),
        (lambda: shortest_path_counts(PATH, [3]), "sources must hold node indices < 3"),
        (lambda: shortest_path_counts(PATH, []), "sources must be a non-empty"),
        (lambda: influence_scores(TWO, [0]), "adj must be connected"),
        (lambda: influence_scores(PATH, [0, 0]), "labeled must not repeat"),
        (lambda: exact_influence(PATH, [0], steps=-1), "steps must be an integer >= 0"),
        (
            lambda: adaptive_scores(np.ones((2, 3)), np.ones((2, 3)), np.ones(3)),
            "demo_label_emb must have at least 3 rows",
        ),
        (
            lambda: adaptive_scores(np.ones((4, 3)), np.ones((4, 2)), np.ones(3)),
            "demo_input_emb must have one row per demo",
        ),
        (lambda: LabelScorer(object(), ("a", "b")), "lm must be a language model"),
        (lambda: SentenceEncoder("/nonexistent/encoder"), "folder must be a local encoder"),
        (lambda: SentenceEncoder(max_length=0), "max_length must be an integer >= 1"),
        (lambda: HashingEmbedder(1), "dim must be an integer >= 2"),
        (lambda: _multi_turn().text("no demos here"), r"written by Template\.prompt"),
        (lambda: HashingEmbedder()([]), "texts must be a non-empty list"),
        (lambda: fitted().fit(["x"], ["a"], []), "pool_texts must not be empty"),
        (lambda: fitted(n_pseudo=11).fit(["x"], ["a"], POOL), "n_pseudo must be at most"),
        (lambda: fitted(degree=30).fit(["x"], ["a"], POOL), "degree must be at most"),
        (lambda: fitted().fit(["x"], ["c"], POOL), "labeled_labels must belong to labels"),
        (lambda: fitted().fit(["x", "y"], ["a"], POOL), "one label per labeled text"),
        (lambda: fitted(strategy="magic").fit(["x"], ["a"], POOL), "strategy must be one of"),
        (lambda: fitted(strategy="rag").fit(["x"], ["a"], POOL), "needs the test inputs"),
        (lambda: fitted(percentile=100).fit(["x"], ["a"], POOL), "percentile must be"),
        (
            lambda: MAPLE(learner, HashingEmbedder(), labels=("a",)).fit(["x"], ["a"], POOL),
            "labels must be at least two",
        ),
        (lambda: fitted().predict(["q"]), "call fit before"),
    ],
)
def test_bad_input_says_what_is_wrong(call, match) -> None:
    with pytest.raises((ValueError, TypeError, FileNotFoundError, RuntimeError), match=match):
        call()


def test_learner_returning_the_wrong_number_of_answers() -> None:
    m = MAPLE(lambda p: ["a"], HashingEmbedder(16), labels=("a", "b"), n_pseudo=3, degree=2)
    with pytest.raises(ValueError, match="learner must return one string per prompt"):
        m.fit(["x"], ["a"], POOL)
