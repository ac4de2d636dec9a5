"""MAPLE's two costs: influence scores on large kNN graphs, and label scoring by the LLM.

1. Influence scores (20 labeled nodes) on 20-NN graphs of n = 10^3 .. 10^5 random unit
   vectors (built with a k-d tree; the library's dense ``knn_graph`` is O(n^2)), by BFS dynamic
   programming: time per n and the growth exponent (log-log slope), against
   enumerating the shortest paths with networkx's ``all_shortest_paths`` (what the official
   code does) on the smallest graph, for a sample of nodes, scaled to all nodes.
2. Label scoring of 32 short prompts: batched (8 per forward pass, the library default)
   against one prompt per forward pass; ratio measured in the same run. SmolLM2-135M-Instruct
   when installed, else the tiny random Llama (``--model tiny``).

Run: ``python benchmarks/maple_costs.py [--max-n 100000] [--model auto|tiny|smollm2]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _timing import mean_seconds
from icml25.core.llm import HFLanguageModel, smollm2_gguf, tiny_llama
from icml25.maple import LabelScorer, Template, connect_components, influence_scores, knn_graph


def embeddings(n: int, dim: int, seed: int = 0) -> np.ndarray:
    e = np.random.default_rng(seed).normal(size=(n, dim))
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def tree_graph(e: np.ndarray, k: int = 20):
    """The same graph as ``knn_graph`` (for unit vectors, the largest dot products are the
    nearest points), found with a k-d tree in O(n log n) instead of the O(n^2) similarity."""
    import scipy.sparse as sp
    from scipy.spatial import cKDTree

    _, idx = cKDTree(e).query(e, k=k + 1)
    n = len(e)
    b = sp.csr_matrix((np.ones(n * k), (np.repeat(np.arange(n), k), idx[:, 1:].ravel())), (n, n))
    a = ((b + b.T) > 0).astype(float)
    a.setdiag(0)
    a.eliminate_zeros()
    return connect_components(a)


def influence_part(max_n: int) -> None:
    import networkx as nx

    sizes = [n for n in (1_000, 3_000, 10_000, 30_000, 100_000) if n <= max_n]
    lab = np.arange(20)
    times = []
    print("influence scores, 20 labeled nodes, 20-NN graphs (unit vectors in 4-D)")
    for n in sizes:
        e = embeddings(n, 4)
        t0 = time.perf_counter()
        adj = tree_graph(e)
        t_graph = time.perf_counter() - t0
        if n <= 3_000:  # the library's exact dense kNN gives the same graph
            assert (knn_graph(e, k=20) != adj).nnz <= 2 * n  # chaining edges may differ
        t = mean_seconds(lambda adj=adj: influence_scores(adj, lab), repeats=2)
        times.append(t)
        print(f"  n = {n:>7}: graph (k-d tree) {t_graph:6.2f} s, influence (BFS DP) {t:7.3f} s")
    if len(sizes) > 1:
        slope = np.polyfit(np.log(sizes), np.log(times), 1)[0]
        print(f"  growth: time ~ n^{slope:.2f}")
    adj = tree_graph(embeddings(sizes[0], 4))
    g = nx.from_scipy_sparse_array(adj)
    sample = np.random.default_rng(1).choice(np.arange(20, sizes[0]), size=20, replace=False)
    t0 = time.perf_counter()
    for u in sample:
        for v in lab:
            sum(1 for _ in nx.all_shortest_paths(g, int(u), int(v)))
    t_enum = (time.perf_counter() - t0) / len(sample) * sizes[0]
    print(
        f"  n = {sizes[0]}: path enumeration (networkx, extrapolated from 20 nodes) "
        f"{t_enum:.2f} s; enumeration / BFS DP = {t_enum / times[0]:.0f}"
    )


def llm_part(model: str) -> None:
    use_real = model == "smollm2"
    if model == "auto":
        try:
            smollm2_gguf()
            use_real = True
        except FileNotFoundError:
            use_real = False
    if use_real:
        lm, name = HFLanguageModel.load(), "SmolLM2-135M-Instruct"
    else:
        lm, name = HFLanguageModel(*tiny_llama(layers=4, hidden=64)), "tiny random Llama"
    labels = ("computers", "politics", "food", "love")
    demos = [("My computer crashed again.", "computers"), ("Vote early, vote often.", "politics")]
    queries = [f"Quote number {i}: a short text about item {i}." for i in range(32)]
    prompts = [Template().prompt(demos, q, labels) for q in queries]
    batched = LabelScorer(lm, labels, batch_size=8)
    single = LabelScorer(lm, labels, batch_size=1)
    t_b = mean_seconds(lambda: batched.log_probs(prompts), repeats=1)
    t_s = mean_seconds(lambda: single.log_probs(prompts), repeats=1)
    print(f"label scoring, {len(prompts)} prompts, {name}")
    print(f"  batched (8 per pass): {len(prompts) / t_b:7.1f} prompts/s")
    print(f"  one by one:           {len(prompts) / t_s:7.1f} prompts/s")
    print(f"  batched / one-by-one throughput: {t_s / t_b:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--max-n", type=int, default=100_000)
    ap.add_argument("--model", choices=("auto", "tiny", "smollm2"), default="auto")
    args = ap.parse_args()
    influence_part(args.max_n)
    llm_part(args.model)


if __name__ == "__main__":
    main()
