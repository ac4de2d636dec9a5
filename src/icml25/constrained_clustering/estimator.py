"""A scikit-learn style estimator over :func:`~.algorithm.constrained_cut`."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin

from icml25.constrained_clustering.algorithm import Method, Solver, constrained_cut


class ConstrainedSpectralClustering(ClusterMixin, BaseEstimator):
    r"""Two-way constrained spectral clustering of a graph G under cannot-link graph H.

    Minimises :math:`w_G(S,\bar S)/w_H(S,\bar S)` approximately: the smallest eigenvector of
    the signed Laplacian pencil (``method="signed"``, the ICML 2025 algorithm) or of the
    generalized pencil :math:`L_G x = \lambda L_H x` (``method="cc"``), then a sweep.

    Parameters
    ----------
    method : {"signed", "cc"}, default="signed"
    solver : {"auto", "dense", "sparse"}, default="auto"
    lower_bound : bool, default=True
        Compute the certified spectral lower bound ``lower_bound_``.
    ridge : float, default=1e-8
        Relative ridge for the CC pencil.
    tol : float, default=0.0
        ARPACK tolerance for the sparse solver.
    random_state : int or None, default=0
        Seeds ARPACK's start vector.

    Attributes
    ----------
    labels_ : ndarray of shape (n,)
        0/1 cluster per vertex (vertex 0 in cluster 0).
    cut_ratio_ : float
        :math:`w_G(S,\bar S)/w_H(S,\bar S)` of the partition found (an upper bound on the optimum).
    lower_bound_ : float or None
        Spectral lower bound :math:`\lambda \le \Phi_{G,H}`.
    eigenvalue_ : float
        The method's eigenvalue.
    embedding_ : ndarray of shape (n,)
        The eigenvector swept over.

    Examples
    --------
    >>> import numpy as np
    >>> G = np.ones((4, 4)) - np.eye(4); G[:2, 2:] = G[2:, :2] = 0.1
    >>> H = np.zeros((4, 4)); H[0, 3] = H[3, 0] = 1.0
    >>> ConstrainedSpectralClustering().fit(G, H).labels_
    array([0, 0, 1, 1])

    References
    ----------
    J. S. Fabila-Carrasco and H. Sun. Signed Laplacians for Constrained Graph Clustering.
    ICML 2025.
    """

    def __init__(
        self,
        method: Method = "signed",
        solver: Solver = "auto",
        lower_bound: bool = True,
        ridge: float = 1e-8,
        tol: float = 0.0,
        random_state: int | None = 0,
    ) -> None:
        self.method = method
        self.solver = solver
        self.lower_bound = lower_bound
        self.ridge = ridge
        self.tol = tol
        self.random_state = random_state

    def fit(self, G: Any, H: Any) -> ConstrainedSpectralClustering:
        """Fit on the similarity graph ``G`` and the cannot-link graph ``H`` (adjacency
        matrices, dense or scipy.sparse, same size)."""
        result = constrained_cut(
            G,
            H,
            method=self.method,
            solver=self.solver,
            lower_bound=self.lower_bound,
            ridge=self.ridge,
            tol=self.tol,
            random_state=self.random_state,
        )
        self.labels_ = result.labels
        self.cut_ratio_ = result.ratio
        self.lower_bound_ = result.lower_bound
        self.eigenvalue_ = result.eigenvalue
        self.embedding_ = result.embedding
        return self

    def fit_predict(self, G: Any, H: Any) -> np.ndarray:
        """Fit and return ``labels_``."""
        return self.fit(G, H).labels_
