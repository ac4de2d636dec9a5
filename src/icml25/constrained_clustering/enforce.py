"""Keeping every must-link and cannot-link pair (``ConstrainedSpectralClustering(constraints=
"enforce")``): the must-links' transitive closure as units, a count of violated pairs, the
signed graph's spectral embedding, and a k-means whose assignment step is exact under the
cannot-links (enumeration for small linked groups, a small integer programme otherwise).
Not the paper's algorithm (the paper's objective treats a pair as a weighted edge, the
``"soft"`` mode); the estimator's docstring says when to use which."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse.csgraph import connected_components

from icml25.constrained_clustering.algorithm import (
    Solver,
    _use_dense,
)
from icml25.core.validate import finite_array, integer

KMEANS_INIT = 10
"""k-means restarts of ``constraints="enforce"`` (the lowest inertia is kept)."""
KMEANS_MAX_ITER = 100


def check_pairs(name: str, pairs: Any, n: int) -> np.ndarray:
    """``pairs`` as an ``(m, 2)`` int64 array of distinct vertices in ``0 .. n - 1`` (none:
    an empty array); refused by ``name`` otherwise."""
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
        raise ValueError(f"{name} pairs must join two different vertices, got {loops[0].tolist()}")
    return arr.astype(np.int64)


def must_link_groups(n: int, must_link: Any) -> np.ndarray:
    """Group of every vertex under the transitive closure of the must-links (0 .. groups-1):
    vertices joined by a chain of must-link pairs share a group."""
    n = integer("n", n, low=1)
    must_link = check_pairs("must_link", must_link, n)
    if not len(must_link):
        return np.arange(n)
    A = sp.coo_matrix((np.ones(len(must_link)), (must_link[:, 0], must_link[:, 1])), (n, n))
    return np.asarray(connected_components(A, directed=False)[1], dtype=np.int64)


def _edges(H: sp.csr_matrix) -> np.ndarray:
    """The edges of a symmetric graph, each once, as (m, 2) vertex pairs."""
    C = sp.triu(H, k=1).tocoo()
    return np.c_[C.row, C.col].astype(np.int64)


def count_violations(labels: Any, must_link: Any = None, cannot_link: Any = None) -> int:
    """Constraint pairs a labelling breaks: must-links split plus cannot-links kept together.

    ``must_link`` and ``cannot_link`` are pairs of indices (``[(i, j), ...]``); a pair listed
    twice, either way round, counts once."""
    lab = np.asarray(labels)
    if lab.ndim != 1:
        raise ValueError(f"labels must be one label per vertex (1-D), got shape {lab.shape}")
    must = check_pairs("must_link", must_link, len(lab))
    cannot = check_pairs("cannot_link", cannot_link, len(lab))
    return _violations(lab, must, cannot)


def _violations(labels: np.ndarray, must: np.ndarray, cannot: np.ndarray) -> int:
    """:func:`count_violations` on checked pairs."""
    total = 0
    for pairs, broken in ((must, np.not_equal), (cannot, np.equal)):
        if len(pairs):
            pairs = np.unique(np.sort(pairs, axis=1), axis=0)
            total += int(np.sum(broken(labels[pairs[:, 0]], labels[pairs[:, 1]])))
    return total


def _unit_problem(groups: np.ndarray, cannot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The groups touched by cannot-links (units) and the cannot-links between them, as
    index pairs into the units. Raises if a cannot-link joins two vertices of one group."""
    if not len(cannot):
        return np.zeros(0, dtype=np.int64), np.zeros((0, 2), dtype=np.int64)
    g = groups[cannot]
    inside = np.flatnonzero(g[:, 0] == g[:, 1])
    if len(inside):
        i, j = cannot[inside[0]]
        raise ValueError(
            f"must_link and cannot_link contradict: vertices {i} and {j} are joined by a chain of "
            "must-links but cannot-linked; constraints='enforce' needs consistent pairs "
            "(constraints='soft' weighs them instead)"
        )
    g = np.unique(np.sort(g, axis=1), axis=0)
    units = np.unique(g)
    return units, np.searchsorted(units, g)


ENUMERATE_MAX = 4096
"""Joint assignments of one group of linked units are enumerated up to this many, else an
integer programme solves them."""


def _unit_parts(nu: int, pairs: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The connected parts of the cannot-link graph over the units: (units, their pairs as
    indices into those units), each part assigned on its own."""
    A = sp.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(nu, nu))
    _, part = connected_components(A, directed=False)
    out = []
    for p in range(int(part.max()) + 1 if nu else 0):
        members = np.flatnonzero(part == p)
        mine = pairs[part[pairs[:, 0]] == p]
        out.append((members, np.searchsorted(members, mine)))
    return out


def _assign_part(cost: np.ndarray, pairs: np.ndarray) -> np.ndarray | None:
    """The cluster of each unit of one part minimising ``sum cost[u, c_u]`` with
    ``c_u != c_v`` for every pair: the nearest clusters if they keep the pairs, else every
    joint assignment (up to :data:`ENUMERATE_MAX`) or an integer programme (HiGHS through
    ``scipy.optimize.milp``). None if no assignment keeps the pairs."""
    nu, k = cost.shape
    first = cost.argmin(axis=1)
    if not np.any(first[pairs[:, 0]] == first[pairs[:, 1]]):
        return first
    if k**nu <= ENUMERATE_MAX:
        every = np.indices((k,) * nu).reshape(nu, -1)  # (units, assignments)
        ok = np.all(every[pairs[:, 0]] != every[pairs[:, 1]], axis=0)
        if not ok.any():
            return None
        total = cost[np.arange(nu)[:, None], every].sum(axis=0)
        return np.asarray(every[:, np.flatnonzero(ok)[np.argmin(total[ok])]], dtype=np.int64)
    one = LinearConstraint(sp.kron(sp.identity(nu), np.ones((1, k))), 1, 1)
    rows = np.repeat(np.arange(len(pairs) * k), 2)
    cols = (pairs[:, None, :] * k + np.arange(k)[None, :, None]).ravel()
    apart = LinearConstraint(
        sp.csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(pairs) * k, nu * k)), 0, 1
    )
    res = milp(
        cost.ravel(), constraints=[one, apart], integrality=np.ones(nu * k), bounds=Bounds(0, 1)
    )
    if res.x is None:
        if res.status == 2:
            return None
        raise RuntimeError(f"the constrained assignment failed: {res.message}")
    return np.asarray(np.round(res.x).reshape(nu, k).argmax(axis=1), dtype=np.int64)


def _assign_units(
    cost: np.ndarray, parts: list[tuple[np.ndarray, np.ndarray]]
) -> np.ndarray | None:
    """:func:`_assign_part` over every part (exact: the parts share no pair)."""
    out = np.empty(len(cost), dtype=np.int64)
    for members, pairs in parts:
        got = _assign_part(cost[members], pairs)
        if got is None:
            return None
        out[members] = got
    return out


def constrained_kmeans(
    E: np.ndarray,
    k: int,
    groups: np.ndarray,
    cannot: np.ndarray,
    *,
    n_init: int = KMEANS_INIT,
    max_iter: int = KMEANS_MAX_ITER,
    random_state: int | None = 0,
) -> tuple[np.ndarray, float]:
    """k-means on the rows of ``E`` that keeps every constraint: returns (labels, inertia).

    ``groups`` (one integer per row, e.g. :func:`must_link_groups`): rows of one group move
    together. ``cannot`` (pairs of row indices): the groups joined by cannot-links are assigned
    jointly, minimising their squared distances to the centres subject to every cannot-link
    pair lying in two clusters, exactly (each connected set of linked groups by enumeration up
    to :data:`ENUMERATE_MAX` joint choices, else by an integer programme; COP-k-means assigns
    greedily and can fail). The other groups go to their nearest centre. k-means++ starts,
    ``n_init`` restarts, the lowest inertia kept. Raises ``ValueError`` if the cannot-links
    cannot be kept with k clusters (their graph over the groups needs more than k colours) or
    join two rows of one group."""
    E = finite_array("E", E, ndim=2, min_len=1)
    n = len(E)
    k = integer("k", k, low=1, high=n)
    n_init = integer("n_init", n_init, low=1)
    max_iter = integer("max_iter", max_iter, low=1)
    g = np.asarray(groups)
    if g.shape != (n,) or not np.issubdtype(g.dtype, np.integer):
        raise ValueError(f"groups must be one integer per row of E ({n}), got {g.shape} {g.dtype}")
    groups = np.unique(g, return_inverse=True)[1].ravel()
    cannot = check_pairs("cannot", cannot, n)
    ng = int(groups.max()) + 1
    M = sp.csr_matrix((np.ones(n), (groups, np.arange(n))), shape=(ng, n))
    units, pairs = _unit_problem(groups, cannot)
    parts = _unit_parts(len(units), pairs)
    if len(units) and _assign_units(np.zeros((len(units), k)), parts) is None:
        raise ValueError(
            f"the cannot-links cannot all be kept with n_clusters={k}: their graph over the "
            f"must-link groups needs more than {k} colours; raise n_clusters or use "
            "constraints='soft'"
        )
    rng = np.random.default_rng(random_state)
    sq = (E**2).sum(axis=1)
    best_labels, best_inertia = np.zeros(n, dtype=np.int64), np.inf
    for _ in range(n_init):
        centres = np.empty((k, E.shape[1]))
        centres[0] = E[rng.integers(n)]
        d2 = ((E - centres[0]) ** 2).sum(axis=1)
        for c in range(1, k):
            p = d2 / d2.sum() if d2.sum() > 0 else np.full(n, 1.0 / n)
            centres[c] = E[rng.choice(n, p=p)]
            d2 = np.minimum(d2, ((E - centres[c]) ** 2).sum(axis=1))
        glab = np.full(ng, -1, dtype=np.int64)
        for _ in range(max_iter):
            D2 = np.maximum(sq[:, None] - 2 * E @ centres.T + (centres**2).sum(axis=1), 0.0)
            gcost = np.asarray(M @ D2)
            new = gcost.argmin(axis=1)
            if len(units):
                assigned = _assign_units(gcost[units], parts)
                assert assigned is not None  # feasible, checked above
                new[units] = assigned
            if np.array_equal(new, glab):
                break
            glab = new
            labels = glab[groups]
            for c in range(k):
                members = labels == c
                if members.any():
                    centres[c] = E[members].mean(axis=0)
                else:  # an empty cluster restarts at the row farthest from its centre
                    centres[c] = E[int(np.argmax(D2[np.arange(n), labels]))]
        inertia = float(gcost[np.arange(ng), glab].sum())
        if inertia < best_inertia:
            best_labels, best_inertia = glab[groups], inertia
    return best_labels, best_inertia


def _signed_embedding(
    G: sp.csr_matrix,
    H: sp.csr_matrix,
    k: int,
    *,
    solver: Solver = "auto",
    tol: float = 0.0,
    random_state: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    r"""The ``k`` smallest eigenpairs of :math:`(L_G + J_H)x = \lambda (D_G + D_H)x`, the
    signed pencil of the paper's algorithm (its first eigenvector is what the two-way sweep
    sorts): returns (eigenvalues ascending, vectors as columns)."""
    n = G.shape[0]
    d = np.asarray(G.sum(axis=1)).ravel() + np.asarray(H.sum(axis=1)).ravel()
    if np.any(d <= 0):
        raise ValueError("every vertex needs an edge in G or H for the signed Laplacian")
    s = sp.diags(1.0 / np.sqrt(d))
    N = sp.csr_matrix(s @ (G - H) @ s)
    if _use_dense(solver, n) or k >= n - 1:
        w, V = sla.eigh(N.toarray(), subset_by_index=[n - k, n - 1])
    else:
        v0 = np.random.default_rng(random_state).standard_normal(n)
        w, V = spla.eigsh(N, k=k, which="LA", tol=tol, v0=v0)
    order = np.argsort(-w)
    return 1.0 - w[order], V[:, order] / np.sqrt(d)[:, None]
