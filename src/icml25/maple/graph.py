"""The relevance graph and the influence scores of MAPLE, on SciPy sparse matrices.

- :func:`knn_graph`: node ``i`` is linked to the items ranked 2..k+1 by dot-product relevance to
  ``i`` (rank 1 is dropped as "self", as the official code does), made undirected and unweighted.
- :func:`connect_components`: disconnected components chained with single edges.
- :func:`shortest_path_counts`: distances and numbers of shortest paths from a set of sources,
  by breadth-first dynamic programming (one sparse product per BFS level, all sources at once),
  never by enumerating paths.
- :func:`influence_scores`: the surrogate of Theorem 3.2,
  ``s(u) = mean_l ln N_sp(u, l) - ln(d) * mean_l dist(u, l)`` over the labeled nodes ``l``,
  ``d = 2|E|/|V|``.
- :func:`exact_influence`: ``mean_l ln [(D^-1 A)^K]_{l,u}``, the quantity the surrogate bounds.

References
----------
Chen, Wang, Tan, Li, Shen. "MAPLE: Many-Shot Adaptive Pseudo-Labeling for In-Context
Learning", ICML 2025 (arXiv:2505.16225), Section 3 and Theorem 3.2.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import scipy.sparse as sp

from icml25.core import validate as V


def _adjacency(name: str, adj: Any) -> sp.csr_matrix:
    if not sp.issparse(adj):
        raise TypeError(f"{name} must be a scipy sparse matrix, got {type(adj).__name__}")
    if adj.ndim != 2 or adj.shape[0] != adj.shape[1] or adj.shape[0] < 1:
        raise ValueError(f"{name} must be a square non-empty adjacency matrix, got {adj.shape}")
    a = sp.csr_matrix(adj, dtype=np.float64)
    if (abs(a - a.T) > 0).nnz:
        raise ValueError(f"{name} must be symmetric (an undirected graph)")
    return a


def _nodes(name: str, nodes: Any, n: int) -> np.ndarray:
    arr = np.asarray(nodes)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D list of node indices, got {arr!r}")
    idx = V.class_labels(name, arr)
    if idx.max() >= n:
        raise ValueError(f"{name} must hold node indices < {n}, got {int(idx.max())}")
    if len(np.unique(idx)) != len(idx):
        raise ValueError(f"{name} must not repeat a node, got {idx.tolist()}")
    return idx


def knn_graph(embeddings: Any, *, k: int, chunk: int = 2048) -> sp.csr_matrix:
    """The undirected, unweighted relevance graph of MAPLE.

    Relevance is the dot product ``e_i . e_j``; node ``i`` links to the items ranked 2..k+1 by
    relevance to ``i`` (rank 1 is taken to be ``i`` itself and dropped, as in the official code;
    with normalised embeddings it is). The directed links are symmetrised (``A = B | B^T``).

    Parameters
    ----------
    embeddings : array (n, d)
    k : int
        Out-degree before symmetrisation, ``1 <= k <= n - 2`` (rank 1 is dropped).
    chunk : int
        Rows of the similarity matrix computed at a time (memory ``chunk * n``).
    """
    e = V.finite_array("embeddings", embeddings, ndim=2, min_len=1)
    n = e.shape[0]
    k = V.integer("k", k, low=1)
    if k > n - 2:
        raise ValueError(
            f"k must be at most n - 2 = {n - 2} (ranks 2..k+1 of {n} items), got {k}: "
            "the pool is too small for this degree"
        )
    chunk = V.integer("chunk", chunk, low=1)
    rows, cols = [], []
    for start in range(0, n, chunk):
        s = e[start : start + chunk] @ e.T
        top = np.argpartition(-s, k, axis=1)[:, : k + 1]  # the k+1 most relevant, unordered
        order = np.argsort(-np.take_along_axis(s, top, axis=1), axis=1, kind="stable")
        ranked = np.take_along_axis(top, order, axis=1)[:, 1:]  # drop rank 1
        rows.append(np.repeat(np.arange(start, start + len(s)), k))
        cols.append(ranked.ravel())
    r, c = np.concatenate(rows), np.concatenate(cols)
    b = sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(n, n))
    a = ((b + b.T) > 0).astype(np.float64)
    a.setdiag(0)
    a.eliminate_zeros()
    return sp.csr_matrix(a)


def connect_components(adj: Any) -> sp.csr_matrix:
    """Chain the connected components with single edges: the lowest-index node of component
    ``c`` is linked to the lowest-index node of component ``c + 1`` (components ordered by their
    lowest node). A connected graph is returned unchanged."""
    a = _adjacency("adj", adj)
    count, comp = sp.csgraph.connected_components(a, directed=False)
    if count == 1:
        return a
    heads = np.array([np.flatnonzero(comp == c)[0] for c in range(count)])
    heads.sort()
    a = sp.lil_matrix(a)
    for u, v in itertools.pairwise(heads):
        a[u, v] = a[v, u] = 1.0
    return sp.csr_matrix(a)


def average_degree(adj: Any) -> float:
    """``2|E| / |V|`` of an undirected graph."""
    a = _adjacency("adj", adj)
    return float(a.nnz) / a.shape[0]


def _bfs_counts(a: sp.csr_matrix, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, m = a.shape[0], len(sources)
    dist = np.full((n, m), -1, dtype=np.int64)
    counts = np.zeros((n, m), dtype=np.float64)
    cols = np.arange(m)
    dist[sources, cols] = 0
    counts[sources, cols] = 1.0
    frontier = np.zeros((n, m), dtype=np.float64)
    frontier[sources, cols] = 1.0
    level = 0
    while frontier.any():
        level += 1
        rows = np.flatnonzero(frontier.any(axis=1))  # nodes on some source's frontier
        # paths into each node through the previous level (A symmetric: A[:, F] = A[F, :]^T)
        reach = a[rows].T @ frontier[rows]
        new = (reach > 0) & (dist < 0)
        if not new.any():
            break
        dist[new] = level
        counts[new] = reach[new]
        frontier = np.where(new, reach, 0.0)
    return dist, counts


def shortest_path_counts(adj: Any, sources: Any) -> tuple[np.ndarray, np.ndarray]:
    """Distances and numbers of shortest paths from each source to every node.

    Breadth-first dynamic programming: ``N(s) = 1`` and, for a node ``v`` first reached at
    level ``t``, ``N(v) = sum of N(u)`` over neighbours ``u`` at level ``t - 1``: one sparse
    product per level for all sources together, restricted to the rows on some frontier (so
    the total work is about one pass over the edges per source, however many levels).

    Returns
    -------
    dist : int array (n, len(sources))
        ``-1`` where a node is unreachable.
    counts : float array (n, len(sources))
        ``0`` where unreachable (float: counts grow exponentially with distance).
    """
    a = _adjacency("adj", adj)
    return _bfs_counts(a, _nodes("sources", sources, a.shape[0]))


def influence_scores(adj: Any, labeled: Any) -> np.ndarray:
    """MAPLE's influence surrogate of every node on the labeled set (Theorem 3.2).

    .. math::
        s(u) = \\frac{1}{|V_L|}\\sum_{l \\in V_L} \\ln N_{sp}(u, l)
               - \\ln(\\bar d)\\, \\frac{1}{|V_L|}\\sum_{l \\in V_L} \\mathrm{dist}(u, l),
        \\qquad \\bar d = 2|E|/|V|.

    The graph must be connected (see :func:`connect_components`). Labeled nodes get scores too
    (their distance to themselves is 0); callers select among the others.
    """
    a = _adjacency("adj", adj)
    lab = _nodes("labeled", labeled, a.shape[0])
    dist, counts = _bfs_counts(a, lab)
    if (dist < 0).any():
        raise ValueError(
            "adj must be connected (some node cannot reach a labeled node): "
            "call connect_components first"
        )
    dbar = float(a.nnz) / a.shape[0]
    return np.log(counts).mean(axis=1) - np.log(dbar) * dist.mean(axis=1)


def exact_influence(adj: Any, labeled: Any, *, steps: int | None = None) -> np.ndarray:
    """``mean_l ln [(D^-1 A)^K]_{l,u}`` for every node ``u``: the log geometric-mean ``K``-step
    random-walk influence of ``u`` on the labeled nodes (``-inf`` where a walk of exactly ``K``
    steps cannot reach ``u``). ``steps=None`` takes ``K`` = the largest distance from a node to
    a labeled node, so that every node is within reach."""
    a = _adjacency("adj", adj)
    lab = _nodes("labeled", labeled, a.shape[0])
    deg = np.asarray(a.sum(axis=1)).ravel()
    if (deg == 0).any():
        raise ValueError("adj must have no isolated node (D^-1 A is undefined there)")
    if steps is None:
        dist, _ = _bfs_counts(a, lab)
        if (dist < 0).any():
            raise ValueError("adj must be connected when steps is None")
        steps = int(dist.max())
    steps = V.integer("steps", steps, low=0)
    pt = sp.csr_matrix(sp.diags(1.0 / deg) @ a).T.tocsr()  # (D^-1 A)^T
    walk = np.zeros((a.shape[0], len(lab)))
    walk[lab, np.arange(len(lab))] = 1.0  # column l: row l of (D^-1 A)^0
    for _ in range(steps):
        walk = pt @ walk
    with np.errstate(divide="ignore"):
        return np.log(walk).mean(axis=1)
