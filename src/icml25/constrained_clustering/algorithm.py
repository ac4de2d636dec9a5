r"""Constrained graph clustering: spectral algorithms for the constrained cut ratio.

Two graphs on one vertex set: ``G`` carries similarity (and must-links), ``H`` carries
cannot-links. The constrained clustering problem is

.. math::
    \Phi_{G,H} = \min_{\emptyset \ne S \subsetneq V}
                 \frac{w_G(S, V\setminus S)}{w_H(S, V\setminus S)}.

Two spectral relaxations, each followed by a sweep over the sorted eigenvector:

``method="signed"`` (Fabila-Carrasco & Sun, ICML 2025; matrices *inferred*, see README)
    Put G's edges with positive sign and H's with negative sign into one signed graph; its
    signed Laplacian is :math:`L_G + J_H` with :math:`J_H = D_H + A_H` (the signed Laplacian of
    H, all edges negative). Solve :math:`(L_G + J_H)x = \lambda (D_G + D_H)x` for the smallest
    eigenpair: a standard symmetric eigenproblem of the normalised signed adjacency
    :math:`D^{-1/2}(A_G - A_H)D^{-1/2}`, with no singular matrix to handle.

``method="cc"`` (Cucuringu, Koutis, Chawla, Miller & Peng, AISTATS 2016)
    :math:`\lambda = \min_{x \perp 1} x^\top L_G x / x^\top L_H x`, the generalized eigenproblem
    :math:`L_G x = \lambda L_H x`. For any two-valued x the quotient equals the cut ratio, so
    :math:`\lambda \le \Phi_{G,H}`: a certificate. :math:`L_H` is singular; a ridge
    :math:`L_H + \delta I` keeps the pencil definite and can only lower the quotient, so the
    bound stays valid.

References
----------
J. S. Fabila-Carrasco and H. Sun. Signed Laplacians for Constrained Graph Clustering. ICML 2025,
PMLR 267:6794-6810.

M. Cucuringu, I. Koutis, S. Chawla, G. Miller and R. Peng. Scalable Constrained Clustering: A
Generalized Spectral Method. AISTATS 2016.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import connected_components, reverse_cuthill_mckee

from icml25.core.validate import finite_array, integer, number

Method = Literal["signed", "cc"]
Solver = Literal["auto", "dense", "sparse"]
Preconditioner = Literal["auto", "jacobi", "factor"]
DENSE_MAX_N = 1000
"""``solver="auto"`` uses dense LAPACK up to this many vertices and sparse solvers above (the
benchmark measured the sparse path 5x faster at 1,000 vertices and 17x at 2,000)."""
LOBPCG_BLOCK = 3
"""Block size of the sparse CC eigensolve (LOBPCG)."""
SPARSE_MIN_N = 5 * LOBPCG_BLOCK + 1
"""Every solver is dense LAPACK below this many vertices, ``solver="sparse"`` included: scipy's
``lobpcg`` replaces its iterations by a dense solver that refuses constraints when
``n - 1 < 5 * block size``, and a Krylov method gains nothing on a matrix this small."""
FACTOR_ENVELOPE_MAX = 4.0
"""``preconditioner="auto"`` factorises :math:`L_G` when the envelope of G under reverse
Cuthill-McKee ordering has at most ``FACTOR_ENVELOPE_MAX * n**1.5`` entries (see
:func:`factorisation_is_cheap`)."""


def as_graph(W: Any, name: str, n: int | None = None) -> sp.csr_matrix:
    """Validate a weighted adjacency matrix and return it as CSR float64 without self-loops.

    ``W`` may be a NumPy array (or array-like) or a SciPy sparse matrix. It must be square,
    real, finite, non-negative and symmetric; with ``n`` given, of size ``n``. Self-loops are
    dropped: they never cross a cut, so they change neither objective.
    """
    if sp.issparse(W):
        M = sp.csr_matrix(W)
    else:
        try:
            arr = np.asarray(W)
        except Exception as exc:  # ragged lists, objects
            raise TypeError(f"{name} must be a 2-D array or scipy.sparse matrix: {exc}") from exc
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a 2-D adjacency matrix, got shape {arr.shape}")
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{name} must have real numeric weights, got dtype {arr.dtype}")
        M = sp.csr_matrix(arr) if arr.size else sp.csr_matrix(arr.shape)
    if M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be square (an adjacency matrix), got shape {M.shape}")
    if n is not None and M.shape[0] != n:
        raise ValueError(f"{name} must have the same size as G ({n} vertices), got {M.shape[0]}")
    if M.shape[0] < 2:
        raise ValueError(f"{name} needs at least 2 vertices, got {M.shape[0]}")
    if M.dtype.kind not in "biuf":
        raise TypeError(f"{name} must have real numeric weights, got dtype {M.dtype}")
    M = M.astype(np.float64)
    data = M.data
    if not np.all(np.isfinite(data)):
        raise ValueError(
            f"{name} has {int(np.sum(~np.isfinite(data)))} non-finite weights (NaN/inf)"
        )
    if np.any(data < 0):
        raise ValueError(
            f"{name} has negative weights (min {data.min():g}); weights must be >= 0 "
            "(put cannot-links in H, not as negative entries of G)"
        )
    asym = abs(M - M.T)
    scale = float(data.max()) if data.size else 0.0
    if asym.nnz and float(asym.max()) > 1e-10 * max(scale, 1.0):
        raise ValueError(
            f"{name} must be symmetric (an undirected graph); max |W - W.T| = {asym.max():g}. "
            "Symmetrize it first, e.g. (W + W.T) / 2 or W.maximum(W.T)."
        )
    M = M.tolil()
    M.setdiag(0)
    M = M.tocsr()
    M.eliminate_zeros()
    return M


def vertex_vector(x: Any, n: int, name: str = "x") -> np.ndarray:
    """A finite vector with one entry per vertex."""
    x = finite_array(name, x, ndim=1)
    if len(x) != n:
        raise ValueError(f"{name} must have one entry per vertex ({n}), got {len(x)}")
    return x


def laplacian(W: Any) -> sp.csr_matrix:
    """Combinatorial Laplacian :math:`L = D - A`."""
    return _laplacian(as_graph(W, "W"))


def _laplacian(W: sp.csr_matrix) -> sp.csr_matrix:
    """:func:`laplacian` of a graph :func:`as_graph` already checked."""
    d = np.asarray(W.sum(axis=1)).ravel()
    return sp.csr_matrix(sp.diags(d) - W)


def signed_laplacian(W: Any) -> sp.csr_matrix:
    """Signed Laplacian of a graph whose edges are all negative: :math:`J = D + A`."""
    W = as_graph(W, "W")
    d = np.asarray(W.sum(axis=1)).ravel()
    return sp.csr_matrix(sp.diags(d) + W)


def _labels_from_mask(mask: np.ndarray) -> np.ndarray:
    """0/1 labels with vertex 0 always in cluster 0 (a canonical labelling)."""
    mask = np.asarray(mask, dtype=bool)
    return (mask != mask[0]).astype(np.int64)


def two_way_labels(labels: Any, n: int) -> np.ndarray:
    """``labels`` as a 0/1 float vector of length ``n``; anything but two clusters (0/1 or
    boolean) is refused, since a 2-way cut of 3 labels would silently merge two of them."""
    arr = np.asarray(labels)
    if arr.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), got {arr.shape}")
    if arr.dtype != bool and not np.isin(arr, (0, 1)).all():
        found = np.unique(arr)[:5].tolist()
        raise ValueError(f"labels must be 0/1 or boolean (a 2-way cut), got values {found}")
    return arr.astype(bool).astype(np.float64)


def cut_weight(W: Any, labels: Any) -> float:
    """Total weight of the edges whose endpoints have different labels (0/1 or boolean)."""
    A = W if sp.issparse(W) else sp.csr_matrix(np.asarray(W, dtype=np.float64))
    x = two_way_labels(labels, A.shape[0])
    return float(x @ (A @ (1.0 - x)))


def cut_ratio(G: Any, H: Any, labels: Any) -> float:
    r"""The constrained cut ratio :math:`w_G(S,\bar S) / w_H(S,\bar S)` of a 2-way labelling.

    Returns ``inf`` when H has no edge across the cut (the ratio is undefined there).
    """
    Gm = as_graph(G, "G")
    Hm = as_graph(H, "H", Gm.shape[0])
    labels = two_way_labels(labels, Gm.shape[0])
    cg, ch = cut_weight(Gm, labels), cut_weight(Hm, labels)
    return cg / ch if ch > 0 else float("inf")


def sweep_cuts(W: sp.spmatrix, order: np.ndarray) -> np.ndarray:
    """Cut weights of all prefixes ``S_k = order[:k]``, ``k = 1..n-1``, in O(m + n).

    An edge ``(u, v)`` crosses ``S_k`` exactly when ``min(r_u, r_v) < k <= max(r_u, r_v)``,
    with ``r`` the rank in ``order``; a difference array accumulates all edges at once.
    """
    n = W.shape[0]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    C = sp.triu(W, k=1).tocoo()
    lo = np.minimum(rank[C.row], rank[C.col])
    hi = np.maximum(rank[C.row], rank[C.col])
    diff = np.zeros(n + 1)
    np.add.at(diff, lo + 1, C.data)
    np.add.at(diff, hi + 1, -C.data)
    return np.cumsum(diff)[1:n]


def sweep(
    G: sp.spmatrix, H: sp.spmatrix, x: np.ndarray, *, min_size: int = 1
) -> tuple[np.ndarray, float]:
    """Best prefix of the vertices sorted by ``x``: returns (boolean mask of S, its cut ratio).

    ``min_size``: only cuts with at least that many vertices on each side (1: every prefix).
    """
    G = as_graph(G, "G")
    H = as_graph(H, "H", G.shape[0])
    min_size = _min_size(min_size, G.shape[0])
    return _sweep(G, H, vertex_vector(x, G.shape[0]), min_size)


def _min_size(min_size: Any, n: int) -> int:
    """``min_size`` checked: an integer with two sides of that size fitting in ``n`` vertices."""
    min_size = integer("min_size", min_size, low=1)
    if 2 * min_size > n:
        raise ValueError(
            f"min_size must be at most half the number of vertices ({n // 2} of {n}), "
            f"got {min_size}"
        )
    return min_size


def _sweep(
    G: sp.csr_matrix, H: sp.csr_matrix, x: np.ndarray, min_size: int = 1
) -> tuple[np.ndarray, float]:
    """:func:`sweep` on checked graphs and vector (``min_size`` checked too)."""
    order = np.argsort(x, kind="stable")
    cg, ch = sweep_cuts(G, order), sweep_cuts(H, order)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(ch > 0, cg / np.where(ch > 0, ch, 1.0), np.inf)
    # prefix k + 1 (index k) against n - k - 1 vertices: both sides at least min_size
    k = min_size - 1 + int(np.argmin(ratios[min_size - 1 : len(ratios) - min_size + 1]))
    mask = np.zeros(G.shape[0], dtype=bool)
    mask[order[: k + 1]] = True
    return mask, float(ratios[k])


def _use_dense(solver: Solver, n: int) -> bool:
    """Whether ``solver`` means dense LAPACK on ``n`` vertices (validates ``solver``)."""
    if solver not in ("auto", "dense", "sparse"):
        raise ValueError(f"solver must be 'auto', 'dense' or 'sparse', got {solver!r}")
    if n < SPARSE_MIN_N:
        return True
    return solver == "dense" or (solver == "auto" and n <= DENSE_MAX_N)


def _v0(n: int, random_state: int | None) -> np.ndarray:
    return np.random.default_rng(random_state).standard_normal(n)


def signed_eigenpair(
    G: sp.spmatrix,
    H: sp.spmatrix,
    *,
    solver: Solver = "auto",
    tol: float = 0.0,
    random_state: int | None = 0,
) -> tuple[float, np.ndarray]:
    r"""Smallest eigenpair of :math:`(L_G + J_H)x = \lambda (D_G + D_H) x`.

    Computed as :math:`\lambda = 1 - \mu_{\max}` of :math:`N = D^{-1/2}(A_G - A_H)D^{-1/2}`
    and :math:`x = D^{-1/2} z`. Eigenvalues lie in [0, 2]. Needs every vertex to have an edge
    in G or H.
    """
    tol = number("tol", tol, low=0.0)
    G = as_graph(G, "G")
    H = as_graph(H, "H", G.shape[0])
    return _signed_eigenpair(G, H, solver=solver, tol=tol, random_state=random_state)


def _signed_eigenpair(
    G: sp.csr_matrix, H: sp.csr_matrix, *, solver: Solver, tol: float, random_state: int | None
) -> tuple[float, np.ndarray]:
    """:func:`signed_eigenpair` on graphs :func:`as_graph` already checked."""
    d = np.asarray(G.sum(axis=1)).ravel() + np.asarray(H.sum(axis=1)).ravel()
    if np.any(d <= 0):
        raise ValueError("every vertex needs an edge in G or H for the signed Laplacian")
    s = sp.diags(1.0 / np.sqrt(d))
    N = sp.csr_matrix(s @ (G - H) @ s)
    if _use_dense(solver, G.shape[0]):
        w, V = sla.eigh(N.toarray(), subset_by_index=[G.shape[0] - 1, G.shape[0] - 1])
        mu, z = float(w[0]), V[:, 0]
    else:
        w, V = spla.eigsh(N, k=1, which="LA", tol=tol, v0=_v0(G.shape[0], random_state))
        mu, z = float(w[0]), V[:, 0]
    return 1.0 - mu, z / np.sqrt(d)


def factorisation_is_cheap(G: sp.spmatrix) -> bool:
    r"""Whether a sparse factorisation of :math:`L_G` should have little fill (a heuristic).

    Reverse Cuthill-McKee orders the vertices by breadth-first levels; the *envelope* of the
    reordered adjacency (for each row, the distance from its first nonzero to the diagonal) is
    about :math:`n^{1.5}` on 2-D meshes and kNN graphs of planar points, whose nested separators
    keep a minimum-degree factorisation near :math:`O(n \log n)`, and grows like :math:`n^2`
    on expanders (random graphs, kNN graphs of high-dimensional data), where fill is
    catastrophic. Returns ``envelope <= FACTOR_ENVELOPE_MAX * n**1.5``, computed in O(m).
    """
    n = G.shape[0]
    order = reverse_cuthill_mckee(sp.csr_matrix(G), symmetric_mode=True)
    A = sp.csr_matrix(G)[order][:, order]
    row = np.repeat(np.arange(n), np.diff(A.indptr))
    first = np.arange(n)
    np.minimum.at(first, row, A.indices)
    envelope = int(np.sum(np.arange(n) - first))
    return envelope <= FACTOR_ENVELOPE_MAX * n**1.5


def _grounded_laplacian_solver(LG: sp.spmatrix) -> spla.LinearOperator | None:
    r"""The pseudo-inverse of :math:`L_G` on :math:`1^\perp`, from one sparse factorisation.

    Vertex 0 is grounded: for connected G the Laplacian without its row and column is positive
    definite, and ``x = [0, L_{11}^{-1} b_1]`` solves :math:`L_G x = b` for every
    :math:`b \perp 1` (row 0 holds because the rows of :math:`L_G` sum to zero). Returns None if
    the factorisation fails (SuperLU out of memory, or a pivot lost to rounding).
    """
    n = LG.shape[0]
    try:
        lu = spla.splu(
            sp.csc_matrix(LG[1:, 1:]),
            permc_spec="MMD_AT_PLUS_A",
            options={"SymmetricMode": True},
        )
    except (RuntimeError, MemoryError):
        return None

    def solve(b: np.ndarray) -> np.ndarray:
        x = np.zeros(b.shape)
        x[1:] = lu.solve(np.ascontiguousarray(b[1:]))
        return x

    return spla.LinearOperator((n, n), matvec=solve, matmat=solve, dtype=np.float64)


def _cc_preconditioner(
    G: sp.spmatrix,
    LG: sp.spmatrix,
    LH: sp.spmatrix,
    delta: float,
    preconditioner: Preconditioner,
) -> spla.LinearOperator | sp.spmatrix:
    """LOBPCG preconditioner for the CC pencil: Jacobi, or the exact inverse of L_G."""
    if preconditioner == "auto":
        preconditioner = "factor" if factorisation_is_cheap(G) else "jacobi"
    if preconditioner == "factor":
        solver = _grounded_laplacian_solver(LG)
        if solver is not None:
            return solver
        warnings.warn(
            "the sparse factorisation of L_G failed; falling back to the Jacobi preconditioner "
            "(same answer, slower)",
            RuntimeWarning,
            stacklevel=3,
        )
    return sp.diags(1.0 / (LG.diagonal() + LH.diagonal() + delta))


def cc_eigenpair(
    G: sp.spmatrix,
    H: sp.spmatrix,
    *,
    solver: Solver = "auto",
    ridge: float = 1e-8,
    tol: float = 0.0,
    random_state: int | None = 0,
    preconditioner: Preconditioner = "auto",
) -> tuple[float, np.ndarray]:
    r""":math:`\lambda = \min_{x \perp 1} x^\top L_G x / x^\top (L_H + \delta I) x` and its vector.

    ``G`` must be connected, so that :math:`L_G` is positive definite on :math:`1^\perp`.
    Dense: the exact reversed pencil on :math:`1^\perp`. Sparse: LOBPCG on
    :math:`L_G x = \lambda (L_H + \delta I) x` constrained to :math:`1^\perp`, with
    ``delta = ridge * mean weighted degree of H``; the ridge can only lower the quotient, so the
    bound stays valid (up to the solver's tolerance).

    ``preconditioner`` (sparse solver only) changes the time, not the answer: ``"jacobi"``
    (the diagonal, as Cucuringu et al.), ``"factor"`` (the exact inverse of :math:`L_G` on
    :math:`1^\perp` from one sparse factorisation: LOBPCG then converges in tens of iterations,
    but the factorisation is only cheap on graphs with small separators) or ``"auto"``
    (``"factor"`` when :func:`factorisation_is_cheap` says so, else ``"jacobi"``).
    """
    if preconditioner not in ("auto", "jacobi", "factor"):
        raise ValueError(
            f"preconditioner must be 'auto', 'jacobi' or 'factor', got {preconditioner!r}"
        )
    tol = number("tol", tol, low=0.0)
    ridge = number("ridge", ridge, low=0.0, low_open=True)
    G = as_graph(G, "G")
    H = as_graph(H, "H", G.shape[0])
    return _cc_eigenpair(
        G,
        H,
        solver=solver,
        ridge=ridge,
        tol=tol,
        random_state=random_state,
        preconditioner=preconditioner,
    )


def _cc_eigenpair(
    G: sp.csr_matrix,
    H: sp.csr_matrix,
    *,
    solver: Solver,
    ridge: float,
    tol: float,
    random_state: int | None,
    preconditioner: Preconditioner,
) -> tuple[float, np.ndarray]:
    """:func:`cc_eigenpair` on graphs :func:`as_graph` already checked."""
    n = G.shape[0]
    LG, LH = _laplacian(G), _laplacian(H)
    if _use_dense(solver, n):
        # Exact and well conditioned: on 1-perp (orthonormal basis Q) L_G is positive definite
        # for connected G, so solve the reversed pencil Q'L_H Q y = mu Q'L_G Q y for the
        # largest mu; lambda = 1/mu. No ridge is needed here.
        Q = sla.null_space(np.ones((1, n)))
        a = Q.T @ (LH @ Q)
        b = Q.T @ (LG @ Q)
        w, Y = sla.eigh(a, b, subset_by_index=[n - 2, n - 2])
        if w[0] <= 0:
            raise ValueError("H has no edge across any cut (L_H vanishes on 1-perp)")
        return 1.0 / float(w[0]), Q @ Y[:, 0]
    else:
        # LOBPCG in the complement of the constant vector (x^T B 1 = delta x^T 1). A direct
        # factorisation of L_G + s L_H fills in badly because H's edges are long-range; L_G
        # alone does not (on graphs with small separators), and is what "factor" uses.
        delta = ridge * max(float(LH.diagonal().mean()), 1e-300)
        B = sp.csr_matrix(LH + delta * sp.identity(n))
        X = np.random.default_rng(random_state).standard_normal((n, LOBPCG_BLOCK))
        precond = _cc_preconditioner(G, LG, LH, delta, preconditioner)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # checked below instead
            w, V = spla.lobpcg(
                LG,
                X,
                B=B,
                M=precond,
                Y=np.ones((n, 1)),
                largest=False,
                tol=tol or 1e-8,
                maxiter=5000,
            )
        i = int(np.argmin(w))
        v, lam = V[:, i], float(w[i])
        resid = float(np.linalg.norm(LG @ v - lam * (B @ v))) / max(
            float(np.linalg.norm(LG @ v)), 1e-300
        )
        if resid > 1e-4:
            warnings.warn(
                f"LOBPCG did not converge (relative residual {resid:.1e}); the CC eigenvalue "
                "may overestimate the bound. Try solver='dense' or a larger tol.",
                RuntimeWarning,
                stacklevel=2,
            )
        return max(lam, 0.0), v


@dataclass(frozen=True)
class ConstrainedCut:
    """Result of :func:`constrained_cut`."""

    labels: np.ndarray
    """0/1 cluster of each vertex (vertex 0 is in cluster 0); cluster 1 is S."""
    ratio: float
    """Cut ratio :math:`w_G(S,\\bar S)/w_H(S,\\bar S)` of the returned partition."""
    eigenvalue: float
    """The method's eigenvalue (signed: smallest of the signed pencil; cc: the CC quotient)."""
    lower_bound: float | None
    """The CC eigenvalue, a certified lower bound on the optimum (None if not computed)."""
    embedding: np.ndarray
    """The eigenvector the sweep ran over."""


def constrained_cut(
    G: Any,
    H: Any,
    *,
    method: Method = "signed",
    solver: Solver = "auto",
    lower_bound: bool = True,
    ridge: float = 1e-8,
    tol: float = 0.0,
    random_state: int | None = 0,
    min_size: int = 1,
) -> ConstrainedCut:
    r"""Find :math:`S` with a small :math:`w_G(S,\bar S)/w_H(S,\bar S)`: eigenvector, then sweep.

    Parameters
    ----------
    G, H
        Symmetric non-negative adjacency matrices (dense or scipy.sparse) on the same vertices:
        G the similarity graph, H the cannot-link (constraint) graph. H needs at least one edge.
    method
        ``"signed"`` (the signed-Laplacian algorithm) or ``"cc"`` (generalized eigenproblem).
    solver
        ``"dense"`` (LAPACK), ``"sparse"`` (ARPACK) or ``"auto"`` (dense up to
        :data:`DENSE_MAX_N` vertices).
    lower_bound
        Also compute the CC eigenvalue as a certificate :math:`\lambda \le \Phi_{G,H}` (free for
        ``method="cc"``, one more eigensolve for ``"signed"``).
    ridge
        Relative ridge on :math:`L_H` for the CC pencil (must be > 0).
    tol
        ARPACK tolerance (0 = machine precision).
    random_state
        Seeds ARPACK's start vector (results are deterministic for a given value).
    min_size
        The sweep only considers cuts with at least ``min_size`` vertices on each side; 1 (the
        default) is the paper's problem. It does not apply to the disconnected case below.

    Notes
    -----
    If G is disconnected, a connected component of G with H-edges leaving it has cut ratio 0,
    the optimum; it is returned directly (eigenvalue and bound 0). If no component has an H-edge
    leaving it, the problem splits into independent components and a ``ValueError`` says so.
    """
    if method not in ("signed", "cc"):
        raise ValueError(f"method must be 'signed' or 'cc', got {method!r}")
    ridge = number("ridge", ridge, low=0.0, low_open=True)
    tol = number("tol", tol, low=0.0)
    _use_dense(solver, 2)  # validates the name
    Gm = as_graph(G, "G")
    n = Gm.shape[0]
    Hm = as_graph(H, "H", n)
    min_size = _min_size(min_size, n)
    if Hm.nnz == 0:
        raise ValueError("H has no edges: every cut ratio w_G/w_H is undefined (division by zero)")
    ncomp, comp = connected_components(Gm, directed=False)
    if ncomp > 1:
        cuts = [cut_weight(Hm, comp == c) for c in range(ncomp)]
        best = int(np.argmax(cuts))
        if cuts[best] <= 0:
            raise ValueError(
                f"G has {ncomp} connected components and H has no edge between them: the "
                "problem separates; cluster each component of G on its own"
            )
        mask = comp == best
        return ConstrainedCut(_labels_from_mask(mask), 0.0, 0.0, 0.0, mask.astype(np.float64))
    # the graphs are checked once above; the solvers and the sweep take them as they are
    cc = partial(
        _cc_eigenpair,
        solver=solver,
        ridge=ridge,
        tol=tol,
        random_state=random_state,
        preconditioner="auto",
    )
    if method == "signed":
        eigenvalue, x = _signed_eigenpair(Gm, Hm, solver=solver, tol=tol, random_state=random_state)
        bound = cc(Gm, Hm)[0] if lower_bound else None
    else:
        eigenvalue, x = cc(Gm, Hm)
        bound = eigenvalue if lower_bound else None
    mask, ratio = _sweep(Gm, Hm, x, min_size)
    return ConstrainedCut(_labels_from_mask(mask), ratio, eigenvalue, bound, x)
