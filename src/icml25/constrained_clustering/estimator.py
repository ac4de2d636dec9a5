"""A scikit-learn estimator over :func:`~.algorithm.constrained_cut`: data or graphs in,
must-link and cannot-link pairs, two or more clusters, and ``predict`` for new points.

Two ways to treat the pairs (``constraints=``): ``"soft"``, the paper's objective (a pair is a
weighted edge, so the best cut may leave it violated), and ``"enforce"``, which keeps every
pair: must-links are propagated (their transitive closure is one unit), the rows are embedded
by the signed graph's eigenvectors and clustered by a k-means whose assignment step is solved
exactly under the cannot-links (a small integer programme over the constrained units)."""

from __future__ import annotations

import math
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
from icml25.constrained_clustering.enforce import (
    _edges,
    _signed_embedding,
    _unit_problem,
    _violations,
    check_pairs,
    constrained_kmeans,
    must_link_groups,
)
from icml25.core.validate import finite_array, integer, number

AFFINITIES = ("auto", "knn", "nearest_neighbors", "rbf", "precomputed")
CONSTRAINTS = ("soft", "enforce")


def _by_first_appearance(labels: np.ndarray) -> np.ndarray:
    """Cluster ids renumbered 0, 1, ... in order of their first vertex."""
    _, first_seen, inverse = np.unique(labels, return_index=True, return_inverse=True)
    return np.asarray(np.argsort(np.argsort(first_seen))[inverse], dtype=np.int64)


def _demand_graph(G: sp.csr_matrix) -> sp.csr_matrix:
    r"""The demand graph :math:`d d^\top / \mathrm{vol}` of G (dense in its size)."""
    d = np.asarray(G.sum(axis=1)).ravel()
    D = sp.csr_matrix(np.outer(d, d) / max(d.sum(), 1e-300))
    D.setdiag(0.0)
    D.eliminate_zeros()
    return D


def _between(W: sp.spmatrix, labels: np.ndarray) -> float:
    """Total weight of W's edges whose endpoints lie in different clusters."""
    C = sp.triu(W, k=1).tocoo()
    return float(C.data[labels[C.row] != labels[C.col]].sum())


def _kway_cut_ratio(G: sp.spmatrix, H: sp.spmatrix, labels: np.ndarray) -> float:
    """Weight of G's edges between clusters over H's (the two-way cut ratio for two)."""
    ch = _between(H, labels)
    return _between(G, labels) / ch if ch > 0 else float("inf")


class ConstrainedSpectralClustering(ClusterMixin, BaseEstimator):
    r"""Constrained spectral clustering: a similarity graph G and a cannot-link graph H.

    Two-way, the paper's problem: minimise :math:`w_G(S,\bar S)/w_H(S,\bar S)` approximately,
    by the smallest eigenvector of the signed Laplacian pencil (``method="signed"``, the ICML
    2025 algorithm) or of :math:`L_G x = \lambda L_H x` (``method="cc"``), then a sweep.

    Use it either way:

    - **Data and pairs:** ``fit(X, must_link=[(i, j), ...], cannot_link=[(i, j), ...])``. G is
      built from the rows of ``X`` (``affinity="knn"``: the symmetrised unweighted
      ``n_neighbors`` graph, built with a k-d tree; ``"nearest_neighbors"``: the graph of
      scikit-learn's ``SpectralClustering(affinity="nearest_neighbors")``, whose
      ``n_neighbors`` counts the row itself, weight 1 between mutual neighbours and 1/2
      otherwise, self-loops dropped; ``"rbf"``: ``exp(-gamma |x - y|^2)``, dense), must-links
      are added to G with weight ``must_link_weight`` (default: G's largest weight) and
      cannot-links form H with weight ``cannot_link_weight``.
    - **Graphs:** ``fit(G, H)`` with adjacency matrices (dense or scipy.sparse); pairs given
      too are added to them. Every edge of H is a cannot-link pair.

    ``affinity="auto"`` (default) reads ``X`` as the graph G when ``H`` is passed and as data
    otherwise. No cannot-links (``H=None``, an H without edges, no ``cannot_link`` pairs) is
    the unconstrained problem: where a cluster to split has no cannot-link inside it, H is the
    demand graph :math:`d d^\top / \mathrm{vol}` of that cluster (degrees of G; the ratio is
    then a normalised-cut-like objective; dense in the cluster's size).

    **constraints="soft"** (default) is the paper's objective: a pair is an edge of G or H, and
    with few cannot-links its optimum can leave pairs violated or be a tiny cluster (one
    cannot-link in a dense graph: cut off one endpoint); ``n_violated_`` counts them.
    ``n_clusters > 2`` is **not the paper's** (it is two-way): recursive bisection, the standard
    extension. At each step it splits, in this order of preference, a cluster whose graph is
    disconnected (ratio 0, along its components), the cluster with cannot-links inside whose
    best two-way cut has the smallest ratio, or else the cluster whose demand-graph cut has the
    smallest ratio; every sweep keeps at least ``min_cluster_size`` vertices on each side.

    **constraints="enforce"** keeps every pair (``n_violated_`` is 0): must-links are propagated
    (a chain of must-links is one unit that moves as a whole), the vertices are embedded by the
    ``n_clusters`` smallest eigenvectors of the same signed pencil (each cannot-link weighing
    in H as much as G's mean weighted degree, times its weight relative to H's largest; rows
    scaled to unit length) and clustered by a k-means whose assignment step is exact under the
    cannot-links (:func:`constrained_kmeans`). Not the paper's algorithm. A ``ValueError``
    says when the pairs contradict (a cannot-link inside a chain of must-links) or cannot be
    kept with ``n_clusters`` clusters.

    Parameters
    ----------
    n_clusters : int, default=2
    constraints : {"soft", "enforce"}, default="soft"
        ``"soft"``: the paper's objective, pairs may be violated; ``"enforce"``: no pair is.
    affinity : {"auto", "knn", "nearest_neighbors", "rbf", "precomputed"}, default="auto"
    n_neighbors : int, default=10
        Neighbours of the kNN graph and of ``predict``'s vote.
    gamma : float or None, default=None
        RBF width; None is ``1 / (n_features * X.var())`` (scikit-learn's ``"scale"``).
    must_link_weight, cannot_link_weight : float or None
        Weights of the pairs' edges (must-link default: G's largest weight; cannot-link 1).
    min_cluster_size : int or None, default=None
        ``"soft"`` with ``n_clusters > 2``: every split keeps at least this many vertices on
        each side (a disconnected cluster is still split along its components). None is 1 for
        two clusters (the paper's problem) and ``max(2, ceil(n / (10 * n_clusters)))`` above
        (a tenth of the mean cluster size). Not used by ``"enforce"``.
    method : {"signed", "cc"}, default="signed"
        The two-way solver of ``"soft"``; ``"enforce"`` embeds by the signed pencil only.
    solver : {"auto", "dense", "sparse"}, default="auto"
    lower_bound : bool, default=True
        Compute the certified spectral lower bound ``lower_bound_`` (of the first split).
    ridge : float, default=1e-8
        Relative ridge for the CC pencil.
    tol : float, default=0.0
        ARPACK tolerance for the sparse solver.
    random_state : int or None, default=0
        Seeds ARPACK's start vector and the k-means starts of ``"enforce"``.

    Attributes
    ----------
    labels_ : ndarray of shape (n,)
        Cluster per vertex, ``0 .. n_clusters - 1`` in order of first appearance.
    n_violated_ : int
        Constraint pairs the labels break: must-link pairs split plus cannot-link pairs (the
        ``cannot_link`` pairs and the edges of H) inside one cluster. 0 for ``"enforce"``.
    cut_ratio_ : float
        ``"soft"``: :math:`w_G(S,\bar S)/w_H(S,\bar S)` of the first (two-way) split found.
        ``"enforce"``: G's weight between clusters over H's (the same for two clusters), H
        the demand graph when there are no cannot-links.
    split_ratios_ : list of float
        The ratio of every split, in order (one for two clusters; empty for ``"enforce"``).
    lower_bound_ : float or None
        Spectral lower bound :math:`\lambda \le \Phi_{G,H}` of the first split (``"enforce"``:
        of the whole graph pair).
    eigenvalue_ : float
        The first split's eigenvalue (``"enforce"``: the signed pencil's smallest).
    embedding_ : ndarray of shape (n,) or (n, n_clusters)
        ``"soft"``: the vector the first split's sweep ran over (the indicator of the split
        side where the cluster was disconnected). ``"enforce"``: the rows k-means clustered.

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
    >>> est = ConstrainedSpectralClustering(n_neighbors=3, constraints="enforce")
    >>> est.fit_predict(X, cannot_link=[(0, 4)], must_link=[(4, 9)])
    array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1])
    >>> est.n_violated_
    0

    References
    ----------
    J. S. Fabila-Carrasco and H. Sun. Signed Laplacians for Constrained Graph Clustering.
    ICML 2025.
    """

    def __init__(
        self,
        n_clusters: int = 2,
        *,
        constraints: str = "soft",
        affinity: str = "auto",
        n_neighbors: int = 10,
        gamma: float | None = None,
        must_link_weight: float | None = None,
        cannot_link_weight: float = 1.0,
        min_cluster_size: int | None = None,
        method: Method = "signed",
        solver: Solver = "auto",
        lower_bound: bool = True,
        ridge: float = 1e-8,
        tol: float = 0.0,
        random_state: int | None = 0,
    ) -> None:
        self.n_clusters = n_clusters
        self.constraints = constraints
        self.affinity = affinity
        self.n_neighbors = n_neighbors
        self.gamma = gamma
        self.must_link_weight = must_link_weight
        self.cannot_link_weight = cannot_link_weight
        self.min_cluster_size = min_cluster_size
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
        if affinity in ("knn", "nearest_neighbors"):
            k = integer("n_neighbors", self.n_neighbors, low=1)
            if k >= n:
                raise ValueError(f"n_neighbors must be below the number of rows ({n}), got {k}")
            if affinity == "knn":  # the reproduction's graph (k-d tree: thread-independent)
                return knn_graph(X, k)
            if k < 2:
                raise ValueError(
                    "n_neighbors must be at least 2 with affinity='nearest_neighbors' (it counts "
                    f"the row itself, as scikit-learn does), got {k}"
                )
            return knn_graph(X, k - 1, "mean")  # scikit-learn's graph without its self-loops
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
        if self.constraints not in CONSTRAINTS:
            raise ValueError(f"constraints must be one of {CONSTRAINTS}, got {self.constraints!r}")
        enforce = self.constraints == "enforce"
        if enforce and self.method != "signed":
            raise ValueError(
                "constraints='enforce' embeds by the signed pencil only: method must be "
                f"'signed' there, got {self.method!r} (method='cc' is for constraints='soft')"
            )
        if enforce and self.min_cluster_size is not None:
            raise ValueError(
                "min_cluster_size applies to constraints='soft' (its recursive bisection); "
                f"leave it None with constraints='enforce', got {self.min_cluster_size!r}"
            )
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
        if G.nnz == 0:
            hint = (
                " (affinity='rbf': gamma is too large for these rows)" if affinity == "rbf" else ""
            )
            raise ValueError(f"G has no edges: every similarity is zero, nothing to cluster{hint}")
        must = check_pairs("must_link", must_link, n)
        cannot = check_pairs("cannot_link", cannot_link, n)
        w_must = (
            float(G.max())
            if self.must_link_weight is None
            else number("must_link_weight", self.must_link_weight, low=0.0, low_open=True)
        )
        w_cannot = number("cannot_link_weight", self.cannot_link_weight, low=0.0, low_open=True)
        G = self._with_pairs(G, must, w_must)
        Hm = sp.csr_matrix((n, n)) if H is None else as_graph(H, "H", n)
        Hm = self._with_pairs(Hm, cannot, w_cannot)
        if enforce:
            self._enforce(G, Hm, must, k)
        else:
            self._split(G, Hm, k, self._min_size(n, k))
        self.n_violated_ = _violations(self.labels_, must, _edges(Hm))
        return self

    def _min_size(self, n: int, k: int) -> int:
        """The smallest side a soft split may have (see ``min_cluster_size``)."""
        if self.min_cluster_size is None:
            return 1 if k == 2 else max(2, math.ceil(n / (10 * k)))
        size = integer("min_cluster_size", self.min_cluster_size, low=1)
        if size * k > n:
            raise ValueError(
                f"min_cluster_size must be at most n / n_clusters ({n // k}) for {k} clusters "
                f"of {n} vertices, got {size}"
            )
        return size

    # ------------------------------------------------------------------ soft: the paper's
    def _cut(
        self, G: sp.csr_matrix, H: sp.csr_matrix, min_size: int = 1
    ) -> tuple[np.ndarray, tuple[int, float], Any]:
        """Best two-way split of one cluster: (mask of one side, its priority, result or None).
        The priority sorts splits: a disconnected cluster first (ratio 0), then clusters with
        cannot-links inside (by ratio), then the demand-graph splits (by ratio), whose ratios
        are on another scale than the cannot-link ones; ``(3, inf)``: no admissible split.
        With ``min_size > 1`` each side keeps that many vertices: a disconnected cluster is split
        along its components where they allow it, else its largest component is split and the
        components too small to stand alone join the side they have more cannot-links
        against (result None in both cases)."""
        n = G.shape[0]
        constrained = H.nnz > 0
        ncomp, comp = connected_components(G, directed=False)
        if min_size > 1:
            if n < 2 * min_size:
                return np.zeros(n, dtype=bool), (3, np.inf), None
            if ncomp > 1:
                return self._disconnected_cut(G, H, comp, ncomp, min_size)
        if ncomp > 1 and not constrained:  # splits at ratio 0 along a component
            return comp == comp[0], (0, 0.0), None
        if not constrained:
            H = _demand_graph(G)
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
                min_size=min_size,
            )
        except ValueError as exc:  # components with no cannot-link between them
            if "separates" not in str(exc):
                raise
            return comp == comp[0], (0, 0.0), None
        mask = res.labels.astype(bool)
        return mask, (1 if constrained else 2, float(cut_ratio(G, H, res.labels))), res

    def _disconnected_cut(
        self, G: sp.csr_matrix, H: sp.csr_matrix, comp: np.ndarray, ncomp: int, min_size: int
    ) -> tuple[np.ndarray, tuple[int, float], Any]:
        """:meth:`_cut` of a disconnected cluster with both sides at least ``min_size``."""
        n = G.shape[0]
        sizes = np.bincount(comp, minlength=ncomp)
        order = np.argsort(sizes, kind="stable")
        total = np.cumsum(sizes[order])
        take = int(np.searchsorted(total, min_size)) + 1  # the smallest components first
        if take < ncomp and total[take - 1] <= n - min_size:
            return np.isin(comp, order[:take]), (0, 0.0), None
        big = comp == order[-1]  # the others hold fewer than min_size vertices together
        idx = np.flatnonzero(big)
        sub_mask, (kind, _), _ = self._cut(G[idx][:, idx], H[idx][:, idx], min_size)
        if kind == 3:
            return np.zeros(n, dtype=bool), (3, np.inf), None
        mask = np.zeros(n, dtype=bool)
        mask[idx] = sub_mask
        for c in order[:-1]:
            members = comp == c
            w_side = float(H[members][:, big & mask].sum())
            w_rest = float(H[members][:, big & ~mask].sum())
            mask[members] = w_rest > w_side or (w_rest == w_side and sub_mask.mean() > 0.5)
        H_ratio = H if H.nnz else _demand_graph(G)
        kind = 1 if H.nnz else 2
        return mask, (kind, float(cut_ratio(G, H_ratio, mask.astype(np.int64)))), None

    def _split(self, G: sp.csr_matrix, H: sp.csr_matrix, k: int, min_size: int = 1) -> None:
        n = G.shape[0]
        clusters = [np.arange(n)]
        cache: dict[int, tuple[np.ndarray, tuple[int, float], Any]] = {}
        ratios: list[float] = []
        first: tuple[np.ndarray, Any] | None = None
        while len(clusters) < k:
            best, best_key = -1, (3, np.inf)
            for i, idx in enumerate(clusters):
                if len(idx) < 2:
                    continue
                key = id(idx)
                if key not in cache:
                    cache[key] = self._cut(G[idx][:, idx], H[idx][:, idx], min_size)
                if cache[key][1] < best_key:
                    best, best_key = i, cache[key][1]
            if best < 0:
                raise ValueError(
                    f"cannot split into {k} clusters: every cluster has one vertex"
                    if min_size == 1
                    else f"cannot split into {k} clusters of at least {min_size} vertices "
                    "(min_cluster_size): no cluster has an admissible split; lower it"
                )
            idx = clusters.pop(best)
            mask, (_, ratio), res = cache.pop(id(idx))
            if first is None:
                first = (mask, res)
            ratios.append(ratio)
            clusters[best:best] = [idx[~mask], idx[mask]]
        labels = np.empty(n, dtype=np.int64)
        for c, idx in enumerate(clusters):
            labels[idx] = c
        self.labels_ = _by_first_appearance(labels)
        self.split_ratios_ = ratios
        self.cut_ratio_ = ratios[0]
        assert first is not None
        mask, res = first
        if res is None:  # split along a component of G: ratio 0, the optimum, certified
            self.lower_bound_ = 0.0 if self.lower_bound else None
            self.eigenvalue_ = 0.0  # the component's indicator is in the kernel of L_G
            self.embedding_ = mask.astype(np.float64)
        else:
            self.lower_bound_ = res.lower_bound
            self.eigenvalue_ = res.eigenvalue
            self.embedding_ = np.asarray(res.embedding, dtype=np.float64)

    # ------------------------------------------------------------------ enforce
    def _enforce(self, G: sp.csr_matrix, H: sp.csr_matrix, must: np.ndarray, k: int) -> None:
        """Every pair kept: the signed embedding, then :func:`constrained_kmeans`."""
        n = G.shape[0]
        cannot = _edges(H)
        groups = must_link_groups(n, must)
        _unit_problem(groups, cannot)  # contradictions first, before any eigensolve
        if H.nnz:
            d_mean = float(G.sum()) / n
            H_embed = sp.csr_matrix(H * (d_mean / float(H.max())))
        else:
            H_embed = sp.csr_matrix((n, n))
        eigenvalues, V = _signed_embedding(
            G, H_embed, k, solver=self.solver, tol=self.tol, random_state=self.random_state
        )
        E = V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-300)
        labels, _ = constrained_kmeans(E, k, groups, cannot, random_state=self.random_state)
        self.labels_ = _by_first_appearance(labels)
        if H.nnz:
            self.cut_ratio_ = _kway_cut_ratio(G, H, self.labels_)
        else:  # the demand graph's weight between clusters, (vol^2 - sum vol_c^2) / (2 vol)
            d = np.asarray(G.sum(axis=1)).ravel()
            vol_c = np.bincount(self.labels_, weights=d)
            between = (d.sum() ** 2 - float(vol_c @ vol_c)) / (2.0 * d.sum())
            self.cut_ratio_ = _between(G, self.labels_) / between if between > 0 else np.inf
        self.split_ratios_ = []
        self.eigenvalue_ = float(eigenvalues[0])
        self.embedding_ = E
        self.lower_bound_ = None
        if self.lower_bound:
            try:
                self.lower_bound_ = constrained_cut(
                    G,
                    H if H.nnz else _demand_graph(G),
                    method="cc",
                    solver=self.solver,
                    ridge=self.ridge,
                    tol=self.tol,
                    random_state=self.random_state,
                ).lower_bound
            except ValueError as exc:  # components with no cannot-link between them
                if "separates" not in str(exc):
                    raise
                self.lower_bound_ = 0.0

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
