"""A scikit-learn estimator over :func:`~.algorithm.constrained_cut`: data or graphs in,
must-link and cannot-link pairs, two or more clusters, and ``predict`` for new points."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.base import BaseEstimator, ClusterMixin

from icml25.constrained_clustering.algorithm import (
    Method,
    Solver,
    as_graph,
    constrained_cut,
    cut_ratio,
)
from icml25.constrained_clustering.datasets import knn_graph
from icml25.core.validate import finite_array, integer, number

AFFINITIES = ("auto", "knn", "rbf", "precomputed")


class ConstrainedSpectralClustering(ClusterMixin, BaseEstimator):
    r"""Constrained spectral clustering: a similarity graph G and a cannot-link graph H.

    Two-way, the paper's problem: minimise :math:`w_G(S,\bar S)/w_H(S,\bar S)` approximately,
    by the smallest eigenvector of the signed Laplacian pencil (``method="signed"``, the ICML
    2025 algorithm) or of :math:`L_G x = \lambda L_H x` (``method="cc"``), then a sweep.

    Use it either way:

    - **Data and pairs:** ``fit(X, must_link=[(i, j), ...], cannot_link=[(i, j), ...])``. G is
      built from the rows of ``X`` (``affinity="knn"``: the symmetrised unweighted
      ``n_neighbors`` graph, built with a k-d tree; ``"rbf"``: ``exp(-gamma |x - y|^2)``,
      dense), must-links are added to G with weight ``must_link_weight`` (default: G's largest
      weight) and cannot-links form H with weight ``cannot_link_weight``.
    - **Graphs:** ``fit(G, H)`` with adjacency matrices (dense or scipy.sparse); pairs given
      too are added to them.

    ``affinity="auto"`` (default) reads ``X`` as the graph G when ``H`` is passed and as data
    otherwise. Where a cluster to split has no cannot-link inside it (no pairs at all, or a
    later split of ``n_clusters > 2``), H is the demand graph :math:`d d^\top / \mathrm{vol}`
    of that cluster (degrees of G; the ratio is then a normalised-cut-like objective; dense
    in the cluster's size). The objective is the paper's: with very few cannot-links its
    optimum can be a tiny cluster (one cannot-link in a dense graph: cut off one endpoint).

    ``n_clusters > 2`` is **not the paper's** (it is two-way): recursive bisection, the standard
    extension. At each step it splits, in this order of preference, a cluster whose graph is
    disconnected (ratio 0), the cluster with cannot-links inside whose best two-way cut has the
    smallest ratio, or else the cluster whose demand-graph cut has the smallest ratio.

    Parameters
    ----------
    n_clusters : int, default=2
    affinity : {"auto", "knn", "rbf", "precomputed"}, default="auto"
    n_neighbors : int, default=10
        Neighbours of the kNN graph and of ``predict``'s vote.
    gamma : float or None, default=None
        RBF width; None is ``1 / (n_features * X.var())`` (scikit-learn's ``"scale"``).
    must_link_weight, cannot_link_weight : float or None
        Weights of the pairs' edges (must-link default: G's largest weight; cannot-link 1).
    method : {"signed", "cc"}, default="signed"
    solver : {"auto", "dense", "sparse"}, default="auto"
    lower_bound : bool, default=True
        Compute the certified spectral lower bound ``lower_bound_`` (of the first split).
    ridge : float, default=1e-8
        Relative ridge for the CC pencil.
    tol : float, default=0.0
        ARPACK tolerance for the sparse solver.
    random_state : int or None, default=0
        Seeds ARPACK's start vector.

    Attributes
    ----------
    labels_ : ndarray of shape (n,)
        Cluster per vertex, ``0 .. n_clusters - 1`` in order of first appearance.
    cut_ratio_ : float
        :math:`w_G(S,\bar S)/w_H(S,\bar S)` of the first (two-way) split found.
    split_ratios_ : list of float
        The ratio of every split, in order (one for two clusters).
    lower_bound_ : float or None
        Spectral lower bound :math:`\lambda \le \Phi_{G,H}` of the first split.
    eigenvalue_ : float
        The first split's eigenvalue.
    embedding_ : ndarray of shape (n,)
        The eigenvector of the first split.

    Examples
    --------
    >>> import numpy as np
    >>> G = np.ones((4, 4)) - np.eye(4); G[:2, 2:] = G[2:, :2] = 0.1
    >>> H = np.zeros((4, 4)); H[0, 3] = H[3, 0] = 1.0
    >>> ConstrainedSpectralClustering().fit(G, H).labels_
    array([0, 0, 1, 1])
    >>> X = np.r_[np.zeros((5, 2)), np.ones((5, 2))] + np.arange(10)[:, None] * 1e-3
    >>> ConstrainedSpectralClustering(n_neighbors=3).fit_predict(X, cannot_link=[(0, 9)])
    array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1])

    References
    ----------
    J. S. Fabila-Carrasco and H. Sun. Signed Laplacians for Constrained Graph Clustering.
    ICML 2025.
    """

    def __init__(
        self,
        n_clusters: int = 2,
        *,
        affinity: str = "auto",
        n_neighbors: int = 10,
        gamma: float | None = None,
        must_link_weight: float | None = None,
        cannot_link_weight: float = 1.0,
        method: Method = "signed",
        solver: Solver = "auto",
        lower_bound: bool = True,
        ridge: float = 1e-8,
        tol: float = 0.0,
        random_state: int | None = 0,
    ) -> None:
        self.n_clusters = n_clusters
        self.affinity = affinity
        self.n_neighbors = n_neighbors
        self.gamma = gamma
        self.must_link_weight = must_link_weight
        self.cannot_link_weight = cannot_link_weight
        self.method = method
        self.solver = solver
        self.lower_bound = lower_bound
        self.ridge = ridge
        self.tol = tol
        self.random_state = random_state

    # ------------------------------------------------------------------ graphs
    def _affinity(self, H: Any) -> str:
        if self.affinity not in AFFINITIES:
            raise ValueError(f"affinity must be one of {AFFINITIES}, got {self.affinity!r}")
        if self.affinity == "auto":
            return "precomputed" if H is not None else "knn"
        return str(self.affinity)

    def _data_graph(self, X: np.ndarray, affinity: str) -> sp.csr_matrix:
        n = len(X)
        if affinity == "knn":
            k = integer("n_neighbors", self.n_neighbors, low=1)
            if k >= n:
                raise ValueError(f"n_neighbors must be below the number of rows ({n}), got {k}")
            return knn_graph(X, k)  # the reproduction's graph (k-d tree: thread-independent)
        var = float(X.var())
        gamma = (
            1.0 / (X.shape[1] * var if var > 0 else 1.0)
            if self.gamma is None
            else number("gamma", self.gamma, low=0.0, low_open=True)
        )
        sq = (X**2).sum(1)
        D2 = np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0.0)
        W = np.exp(-gamma * D2)
        np.fill_diagonal(W, 0.0)
        return sp.csr_matrix(W)

    @staticmethod
    def _pairs(name: str, pairs: Any, n: int) -> np.ndarray:
        if pairs is None:
            return np.zeros((0, 2), dtype=np.int64)
        arr = np.asarray(pairs)
        if arr.size == 0:
            return np.zeros((0, 2), dtype=np.int64)
        if arr.ndim != 2 or arr.shape[1] != 2 or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(
                f"{name} must be pairs of vertex indices, e.g. [(0, 5), (2, 7)], got "
                f"{np.asarray(pairs).tolist()[:3]!r}..."
            )
        if arr.min() < 0 or arr.max() >= n:
            raise ValueError(f"{name} indices must lie in 0..{n - 1}, got {arr.min()}..{arr.max()}")
        loops = arr[arr[:, 0] == arr[:, 1]]
        if len(loops):
            raise ValueError(
                f"{name} pairs must join two different vertices, got {loops[0].tolist()}"
            )
        return arr.astype(np.int64)

    @staticmethod
    def _with_pairs(W: sp.csr_matrix, pairs: np.ndarray, weight: float) -> sp.csr_matrix:
        if not len(pairs):
            return W
        n = W.shape[0]
        E = sp.coo_matrix((np.full(len(pairs), weight), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
        E = sp.csr_matrix(E.maximum(E.T))
        return sp.csr_matrix(W.maximum(E))

    # ------------------------------------------------------------------ fit
    def fit(
        self, X: Any, H: Any = None, *, must_link: Any = None, cannot_link: Any = None
    ) -> ConstrainedSpectralClustering:
        """Fit on data ``X`` (n, d) or a similarity graph ``X = G`` (n, n) with its cannot-link
        graph ``H``; ``must_link`` / ``cannot_link`` are pairs of row indices."""
        k = integer("n_clusters", self.n_clusters, low=2)
        affinity = self._affinity(H)
        if affinity == "precomputed":
            G = as_graph(X, "G")
            self._fit_X = None
        else:
            if sp.issparse(X):
                raise TypeError(
                    "data X must be a dense array; pass affinity='precomputed' for a graph"
                )
            Xd = finite_array("X", X, ndim=2, min_len=2)
            G = self._data_graph(Xd, affinity)
            self._fit_X = Xd
        n = G.shape[0]
        if k > n:
            raise ValueError(f"n_clusters must be at most the number of vertices ({n}), got {k}")
        must = self._pairs("must_link", must_link, n)
        cannot = self._pairs("cannot_link", cannot_link, n)
        w_must = (
            float(G.max())
            if self.must_link_weight is None
            else number("must_link_weight", self.must_link_weight, low=0.0, low_open=True)
        )
        w_cannot = number("cannot_link_weight", self.cannot_link_weight, low=0.0, low_open=True)
        G = self._with_pairs(G, must, w_must)
        Hm = sp.csr_matrix((n, n)) if H is None else as_graph(H, "H", n)
        Hm = self._with_pairs(Hm, cannot, w_cannot)
        self._split(G, Hm, k)
        return self

    def _cut(self, G: sp.csr_matrix, H: sp.csr_matrix) -> tuple[np.ndarray, tuple[int, float], Any]:
        """Best two-way split of one cluster: (mask of one side, its priority, result or None).
        The priority sorts splits: a disconnected cluster first (ratio 0), then clusters with
        cannot-links inside (by ratio), then the demand-graph splits (by ratio), whose ratios
        are on another scale than the cannot-link ones."""
        constrained = H.nnz > 0
        ncomp, comp = connected_components(G, directed=False)
        if ncomp > 1 and not constrained:  # splits at ratio 0 along a component
            return comp == comp[0], (0, 0.0), None
        if not constrained:
            d = np.asarray(G.sum(axis=1)).ravel()
            H = sp.csr_matrix(np.outer(d, d) / max(d.sum(), 1e-300))
            H.setdiag(0.0)
            H.eliminate_zeros()
        try:
            res = constrained_cut(
                G,
                H,
                method=self.method,
                solver=self.solver,
                lower_bound=self.lower_bound,
                ridge=self.ridge,
                tol=self.tol,
                random_state=self.random_state,
            )
        except ValueError as exc:  # components with no cannot-link between them
            if "separates" not in str(exc):
                raise
            return comp == comp[0], (0, 0.0), None
        mask = res.labels.astype(bool)
        return mask, (1 if constrained else 2, float(cut_ratio(G, H, res.labels))), res

    def _split(self, G: sp.csr_matrix, H: sp.csr_matrix, k: int) -> None:
        n = G.shape[0]
        clusters = [np.arange(n)]
        cache: dict[int, tuple[np.ndarray, tuple[int, float], Any]] = {}
        ratios: list[float] = []
        first = None
        while len(clusters) < k:
            best, best_key = -1, (3, np.inf)
            for i, idx in enumerate(clusters):
                if len(idx) < 2:
                    continue
                key = id(idx)
                if key not in cache:
                    cache[key] = self._cut(G[idx][:, idx], H[idx][:, idx])
                if cache[key][1] < best_key:
                    best, best_key = i, cache[key][1]
            if best < 0:
                raise ValueError(f"cannot split into {k} clusters: every cluster has one vertex")
            idx = clusters.pop(best)
            mask, (_, ratio), res = cache.pop(id(idx))
            if first is None:
                first = res
            ratios.append(ratio)
            clusters[best:best] = [idx[~mask], idx[mask]]
        labels = np.empty(n, dtype=np.int64)
        for c, idx in enumerate(clusters):
            labels[idx] = c
        _, first_seen = np.unique(labels, return_index=True)
        order = np.argsort(np.argsort(first_seen))  # clusters renumbered by first appearance
        self.labels_ = order[labels]
        self.split_ratios_ = ratios
        self.cut_ratio_ = ratios[0]
        self.lower_bound_ = None if first is None else first.lower_bound
        self.eigenvalue_ = 0.0 if first is None else first.eigenvalue
        self.embedding_ = (
            np.zeros(n) if first is None else np.asarray(first.embedding, dtype=np.float64)
        )

    def fit_predict(self, X: Any, H: Any = None, **kwargs: Any) -> np.ndarray:
        """Fit and return ``labels_``."""
        return self.fit(X, H, **kwargs).labels_

    def predict(self, X: Any) -> np.ndarray:
        """Clusters of new rows: the majority cluster of their ``n_neighbors`` nearest training
        rows (an out-of-sample extension by neighbours, not part of the paper). Needs a fit on
        data (affinity ``"knn"`` or ``"rbf"``)."""
        if not hasattr(self, "labels_"):
            raise ValueError("this ConstrainedSpectralClustering is not fitted yet: call fit first")
        if self._fit_X is None:
            raise ValueError(
                "predict needs a fit on data (affinity 'knn' or 'rbf'); a precomputed graph "
                "has no features to place new points by"
            )
        Xn = finite_array("X", X, ndim=2)
        if Xn.shape[1] != self._fit_X.shape[1]:
            raise ValueError(
                f"X has {Xn.shape[1]} features, but the fit had {self._fit_X.shape[1]}"
            )
        from sklearn.neighbors import KNeighborsClassifier

        vote = KNeighborsClassifier(
            n_neighbors=min(self.n_neighbors, len(self._fit_X)), algorithm="kd_tree"
        )
        return np.asarray(vote.fit(self._fit_X, self.labels_).predict(Xn))
