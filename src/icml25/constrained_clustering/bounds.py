r"""Exact optima on small graphs and the signed-graph Cheeger quantities.

Brute force gives :math:`\Phi_{G,H}` exactly for up to ~22 vertices, so the spectral bound and
the sweep can be checked against the truth. For the signed graph :math:`\Gamma` with G's edges
positive and H's negative, the *signed bipartiteness ratio* of :math:`y \in \{-1,0,1\}^n`
(Trevisan 2012 for all-negative graphs; Atay & Liu 2020 for signed graphs) is

.. math:: \beta(y) = \frac{\sum_{uv \in G} w_{uv}|y_u - y_v| + \sum_{uv \in H} w_{uv}|y_u + y_v|}
                          {\sum_u d_u |y_u|},\qquad d = d_G + d_H,

and :math:`h = \min_y \beta(y)` satisfies the Cheeger-type inequality
:math:`\lambda_1/2 \le h \le \sqrt{2\lambda_1}`, where :math:`\lambda_1` is the smallest
eigenvalue of :math:`(L_G + J_H)x = \lambda D x`. The upper half is constructive: a threshold
sweep over the eigenvector attains it (:func:`signed_threshold_sweep`).

For the unsigned pair, Koutis, Miller & Peng (2014, "A Generalized Cheeger Inequality") show
:math:`\lambda(L_G, L_H) \ge \Phi_{G,H}\,\phi(G)/8` with :math:`\phi(G)` the conductance of
G, and that a sweep over the generalized eigenvector meets it (:func:`generalized_cheeger_bound`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

from icml25.constrained_clustering.algorithm import _laplacian, as_graph, vertex_vector
from icml25.core.validate import number

BRUTE_FORCE_MAX_N = 22


def _all_cuts(n: int, chunk: int = 1 << 16) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every cut once as a +-1 matrix (vertex 0 fixed to +1), in chunks: (codes, X)."""
    total = 1 << (n - 1)
    bits = np.arange(n - 1)
    for start in range(1, total, chunk):
        codes = np.arange(start, min(start + chunk, total))
        X = np.ones((len(codes), n))
        X[:, 1:] = 1 - 2 * ((codes[:, None] >> bits) & 1)
        yield codes, X


def _code_to_labels(code: int, n: int) -> np.ndarray:
    labels = np.zeros(n, dtype=np.int64)
    labels[1:] = (code >> np.arange(n - 1)) & 1
    return labels


def _check_small(n: int) -> None:
    if n > BRUTE_FORCE_MAX_N:
        raise ValueError(f"brute force is for n <= {BRUTE_FORCE_MAX_N} vertices, got n={n}")


def brute_force(G: Any, H: Any) -> tuple[np.ndarray, float]:
    r"""Exact :math:`\Phi_{G,H}` by enumerating all :math:`2^{n-1}-1` cuts.

    Returns (0/1 labels of an optimal S with vertex 0 in cluster 0, the optimal ratio).
    """
    Gm = as_graph(G, "G")
    n = Gm.shape[0]
    Hm = as_graph(H, "H", n)
    _check_small(n)
    LG, LH = _laplacian(Gm).toarray(), _laplacian(Hm).toarray()
    best_ratio, best_code = np.inf, 0
    for codes, X in _all_cuts(n):
        cg = np.einsum("ij,jk,ik->i", X, LG, X) / 4
        ch = np.einsum("ij,jk,ik->i", X, LH, X) / 4
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(ch > 1e-12, cg / np.where(ch > 1e-12, ch, 1), np.inf)
        i = int(np.argmin(r))
        if r[i] < best_ratio:
            best_ratio, best_code = float(r[i]), int(codes[i])
    return _code_to_labels(best_code, n), best_ratio


def conductance(G: Any) -> float:
    r"""Exact conductance :math:`\phi(G) = \min_S w(S,\bar S)/\min(vol S, vol \bar S)`
    by enumeration (n <= 22)."""
    Gm = as_graph(G, "G")
    n = Gm.shape[0]
    _check_small(n)
    LG = _laplacian(Gm).toarray()
    d = LG.diagonal()
    best = np.inf
    for _, X in _all_cuts(n):
        cut = np.einsum("ij,jk,ik->i", X, LG, X) / 4
        vol_s = (X > 0) @ d
        smaller = np.minimum(vol_s, d.sum() - vol_s)
        with np.errstate(divide="ignore", invalid="ignore"):
            best = min(best, float(np.min(np.where(smaller > 0, cut / smaller, np.inf))))
    return best


def generalized_cheeger_bound(eigenvalue: float, conductance_g: float) -> float:
    r"""The Cheeger-type upper bound :math:`\Phi_{G,H} \le 8\lambda(L_G, L_H)/\phi(G)` of
    Koutis, Miller & Peng (2014), met by the sweep over the generalized eigenvector."""
    eigenvalue = number("eigenvalue", eigenvalue, low=0.0)
    conductance_g = number("conductance_g", conductance_g, low=0.0, low_open=True)
    return 8.0 * eigenvalue / conductance_g


def signed_bipartiteness(G: sp.spmatrix, H: sp.spmatrix, y: np.ndarray) -> float:
    r""":math:`\beta(y)` for :math:`y \in \{-1, 0, 1\}^n` (``inf`` for y = 0)."""
    G = as_graph(G, "G")
    H = as_graph(H, "H", G.shape[0])
    y = vertex_vector(y, G.shape[0], "y")
    if not np.isin(y, (-1.0, 0.0, 1.0)).all():
        raise ValueError("y must take values in {-1, 0, 1}")
    return _bipartiteness(G, H, y)


def _bipartiteness(G: sp.csr_matrix, H: sp.csr_matrix, y: np.ndarray) -> float:
    Cg, Ch = sp.triu(G, k=1).tocoo(), sp.triu(H, k=1).tocoo()
    num = float(np.sum(Cg.data * np.abs(y[Cg.row] - y[Cg.col])))
    num += float(np.sum(Ch.data * np.abs(y[Ch.row] + y[Ch.col])))
    d = np.asarray(G.sum(axis=1)).ravel() + np.asarray(H.sum(axis=1)).ravel()
    den = float(d @ np.abs(y))
    return num / den if den > 0 else float("inf")


def signed_threshold_sweep(
    G: sp.spmatrix, H: sp.spmatrix, x: np.ndarray
) -> tuple[np.ndarray, float]:
    """Trevisan's sweep: ``y_t = sign(x) * [x^2 >= t]`` over every threshold t; the best y.

    For the eigenvector of the smallest signed eigenvalue this attains
    ``beta <= sqrt(2 * lambda_1)`` (the constructive half of the Cheeger-type inequality).
    """
    G = as_graph(G, "G")
    H = as_graph(H, "H", G.shape[0])
    x = vertex_vector(x, G.shape[0])
    best_y, best = np.zeros_like(x), np.inf
    for t in np.unique(x**2):
        if t <= 0:
            continue
        y = np.sign(x) * (x**2 >= t)
        b = _bipartiteness(G, H, y)
        if b < best:
            best_y, best = y, b
    return best_y, best


def signed_cheeger_constant(G: Any, H: Any) -> float:
    r"""Exact :math:`h = \min_{y \in \{-1,0,1\}^n, y \ne 0} \beta(y)`, enumerating (n <= 11)."""
    Gm = as_graph(G, "G")
    Hm = as_graph(H, "H", Gm.shape[0])
    n = Gm.shape[0]
    if n > 11:
        raise ValueError(f"the exact signed Cheeger constant is for n <= 11, got n={n}")
    Cg, Ch = sp.triu(Gm, k=1).tocoo(), sp.triu(Hm, k=1).tocoo()
    d = np.asarray(Gm.sum(axis=1)).ravel() + np.asarray(Hm.sum(axis=1)).ravel()
    Y = np.array(list(itertools.product((-1.0, 0.0, 1.0), repeat=n)))
    Y = Y[np.any(Y != 0, axis=1)]
    num = (
        np.abs(Y[:, Cg.row] - Y[:, Cg.col]) @ Cg.data
        + np.abs(Y[:, Ch.row] + Y[:, Ch.col]) @ Ch.data
    )
    den = np.abs(Y) @ d
    with np.errstate(divide="ignore", invalid="ignore"):
        beta = np.where(den > 0, num / np.where(den > 0, den, 1), np.inf)
    return float(beta.min())
