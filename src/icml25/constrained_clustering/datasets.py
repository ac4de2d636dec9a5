"""Generated constrained-clustering instances, and G/H graphs built from a labelled data set."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

from icml25.core.validate import integer, positive


def _symmetric_bernoulli(P: np.ndarray, rng: np.random.Generator) -> sp.csr_matrix:
    upper = np.triu(rng.random(P.shape) < P, k=1)
    A = upper | upper.T
    return sp.csr_matrix(A.astype(np.float64))


def random_instance(n: int, rng: np.random.Generator, p_g: float = 0.4, p_h: float = 0.3):  # type: ignore[no-untyped-def]
    """A small random instance for brute-force checks: Erdős–Rényi G and H with weights in
    (0.5, 1.5]; G is redrawn until connected, H until it has an edge."""
    from scipy.sparse.csgraph import connected_components

    while True:
        G = _symmetric_bernoulli(np.full((n, n), p_g), rng)
        H = _symmetric_bernoulli(np.full((n, n), p_h), rng)
        if connected_components(G, directed=False)[0] == 1 and H.nnz:
            break
    for M in (G, H):
        W = np.triu(rng.uniform(0.5, 1.5, (n, n)), 1)
        M.data *= (W + W.T)[M.nonzero()]
    return G, H


def four_block_sbm(
    rng: np.random.Generator,
    block: int = 60,
    p_in: float = 0.3,
    p_pair: float = 0.03,
    p_side: float = 0.02,
    p_far: float = 0.005,
    p_cannot: float = 0.05,
) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """The hard instance where spectral clustering on G alone fails.

    Blocks A1, A2, B1, B2. G: ``p_in`` inside a block, ``p_pair`` for A1-B1 and A2-B2,
    ``p_side`` for A1-A2 and B1-B2, ``p_far`` for A1-B2 and A2-B1, so G's sparsest cut is
    {A1, B1} | {A2, B2}. H: cannot-links between side A and side B with probability
    ``p_cannot``. Returns ``(G, H, truth)`` with truth 0 for side A, 1 for side B.
    """
    # block order: A1, A2, B1, B2
    P4 = np.array(
        [
            [p_in, p_side, p_pair, p_far],
            [p_side, p_in, p_far, p_pair],
            [p_pair, p_far, p_in, p_side],
            [p_far, p_pair, p_side, p_in],
        ]
    )
    z = np.repeat(np.arange(4), block)
    G = _symmetric_bernoulli(P4[z][:, z], rng)
    side = (z >= 2).astype(np.int64)
    H = _symmetric_bernoulli(np.where(side[:, None] != side[None, :], p_cannot, 0.0), rng)
    return G, H, side


def knn_graph(X: np.ndarray, k: int = 10, symmetrize: str = "max") -> sp.csr_matrix:
    """Symmetrised k-nearest-neighbour graph of the rows of X.

    ``symmetrize="max"`` (the default, the reproduction's graph): unweighted, an edge wherever
    either row is among the other's k nearest. ``"mean"``: ``(A + A.T) / 2``, weight 1 between
    mutual neighbours and 1/2 where only one is the other's neighbour (scikit-learn's
    ``SpectralClustering(affinity="nearest_neighbors")`` weighting, without its self-loops).

    Built with a k-d tree, which computes each distance in a plain loop, so the graph does not
    depend on the number of BLAS/OpenMP threads. scikit-learn's default for more than 15
    features is brute force through a matrix product, whose rounding changes with the thread
    count; on data with exact distance ties (digits: integer pixels, 16 of 722 points tied at
    the 10th neighbour) that moved two edges of the digits graph between one and two threads,
    and the tiny reproduction's verdict with them (issue 57).
    """
    if symmetrize not in ("max", "mean"):
        raise ValueError(f"symmetrize must be 'max' or 'mean', got {symmetrize!r}")
    nn = NearestNeighbors(n_neighbors=k, algorithm="kd_tree").fit(X)
    A = nn.kneighbors_graph(mode="connectivity")  # the training points, self excluded
    return sp.csr_matrix(A.maximum(A.T) if symmetrize == "max" else (A + A.T) * 0.5)


def cannot_links(
    groups: Sequence[int] | np.ndarray, n_links: int, rng: np.random.Generator
) -> sp.csr_matrix:
    """``n_links`` random cannot-link edges between vertices of different ``groups`` (labels)."""
    g = np.asarray(groups)
    n = len(g)
    rows: list[int] = []
    cols: list[int] = []
    while len(rows) < n_links:
        i, j = rng.integers(0, n, size=2)
        if g[i] != g[j]:
            rows.append(int(i))
            cols.append(int(j))
    H = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n)).tocsr()
    H = H.maximum(H.T)
    H.data[:] = 1.0
    return sp.csr_matrix(H)


def geometric_instance(
    n: int, rng: np.random.Generator, k: int = 10, links_per_vertex: float = 1.0
) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """A large sparse instance: kNN graph of n uniform points in the unit square, with
    cannot-links between the left and right halves. Returns ``(G, H, side)``."""
    X = rng.random((n, 2))
    side = (X[:, 0] > 0.5).astype(np.int64)
    return knn_graph(X, k), cannot_links(side, int(links_per_vertex * n), rng), side


def ring_instance(
    n: int, rng: np.random.Generator, links_per_vertex: float = 1.0
) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """A cycle of ``n`` vertices (unit weights) with cannot-links between two opposite arcs.

    G is the ring C_n, whose conductance is exactly ``1 / (n // 2)`` (every proper subset cuts
    at least two edges and has volume twice its size), so the generalized Cheeger bound can be
    checked exactly far beyond brute force. The arcs start at a random offset; H has
    ``links_per_vertex * n`` random cannot-links between them. Returns ``(G, H, side)``.
    """
    n = integer("n", n, low=4)
    links_per_vertex = positive("links_per_vertex", links_per_vertex)
    i = np.arange(n)
    A = sp.coo_matrix((np.ones(n), (i, (i + 1) % n)), shape=(n, n)).tocsr()
    side = ((i - rng.integers(n)) % n < n // 2).astype(np.int64)
    links = max(1, int(links_per_vertex * n))
    return sp.csr_matrix(A.maximum(A.T)), cannot_links(side, links, rng), side


def ring_conductance(n: int) -> float:
    """The exact conductance of the unweighted cycle C_n: ``1 / (n // 2)``."""
    return 1.0 / (integer("n", n, low=3) // 2)
