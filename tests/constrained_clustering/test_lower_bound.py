"""The certified lower bound (the CC eigenvalue) on the sparse path: both preconditioners give
the same eigenpair, it matches dense LAPACK, and it never exceeds the exact optimum."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.constrained_clustering import algorithm as alg
from icml25.constrained_clustering import brute_force, cc_eigenpair, constrained_cut
from icml25.constrained_clustering.algorithm import as_graph, factorisation_is_cheap
from icml25.constrained_clustering.datasets import (
    four_block_sbm,
    geometric_instance,
    random_instance,
)


def _graphs(G, H):
    return as_graph(G, "G"), as_graph(H, "H")


def _assert_same_eigenpair(a, b, rel=1e-6):
    (lam_a, x_a), (lam_b, x_b) = a, b
    assert lam_a == pytest.approx(lam_b, rel=rel)
    cos = abs(x_a @ x_b) / (np.linalg.norm(x_a) * np.linalg.norm(x_b))
    assert cos == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(
    "instance",
    [
        lambda: geometric_instance(3000, np.random.default_rng(0))[:2],
        lambda: four_block_sbm(np.random.default_rng(3), block=75)[:2],
    ],
    ids=["geometric", "sbm"],
)
def test_factor_preconditioner_agrees_with_jacobi(instance):
    """The fast path (factorised L_G) and the slow path (Jacobi) solve the same pencil."""
    Gm, Hm = _graphs(*instance())
    fast = cc_eigenpair(Gm, Hm, solver="sparse", preconditioner="factor")
    slow = cc_eigenpair(Gm, Hm, solver="sparse", preconditioner="jacobi")
    _assert_same_eigenpair(fast, slow)


def test_sparse_bound_matches_dense_on_a_geometric_graph():
    """``solver="auto"`` would be dense here; forcing sparse takes the factorised path."""
    G, H, _ = geometric_instance(1200, np.random.default_rng(1))
    assert factorisation_is_cheap(as_graph(G, "G"))
    dense = constrained_cut(G, H, solver="dense")
    sparse = constrained_cut(G, H, solver="sparse")
    assert sparse.lower_bound == pytest.approx(dense.lower_bound, rel=1e-6)
    assert sparse.eigenvalue == pytest.approx(dense.eigenvalue, rel=1e-6)
    assert sparse.lower_bound <= sparse.ratio


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(16, 18))
def test_sparse_bound_is_below_the_exact_optimum(seed, n):
    """n >= SPARSE_MIN_N, so the sparse solver really runs LOBPCG here."""
    assert n >= alg.SPARSE_MIN_N
    Gm, Hm = _graphs(*random_instance(n, np.random.default_rng(seed)))
    _, phi = brute_force(Gm, Hm)
    dense, _ = cc_eigenpair(Gm, Hm, solver="dense")
    for preconditioner in ("jacobi", "factor"):
        lam, _ = cc_eigenpair(Gm, Hm, solver="sparse", preconditioner=preconditioner)
        assert lam <= phi * (1 + 1e-9)
        assert lam == pytest.approx(dense, rel=1e-6)
    result = constrained_cut(Gm, Hm, solver="sparse")
    assert result.lower_bound <= phi * (1 + 1e-9) <= result.ratio * (1 + 2e-9)


def test_auto_factorises_only_graphs_with_small_separators():
    geometric, _, _ = geometric_instance(5000, np.random.default_rng(2))
    assert factorisation_is_cheap(as_graph(geometric, "G"))
    m = 60  # a 60 x 60 grid
    path = sp.diags([1.0, 1.0], [-1, 1], shape=(m, m))
    assert factorisation_is_cheap(sp.csr_matrix(sp.kronsum(path, path)))
    sbm, _, _ = four_block_sbm(np.random.default_rng(0), block=500)  # an expander-like graph
    assert not factorisation_is_cheap(as_graph(sbm, "G"))


def test_failed_factorisation_falls_back_to_jacobi(monkeypatch):
    Gm, Hm = _graphs(*geometric_instance(800, np.random.default_rng(4))[:2])
    expected = cc_eigenpair(Gm, Hm, solver="sparse", preconditioner="jacobi")

    def singular(*args, **kwargs):
        raise RuntimeError("Factor is exactly singular")

    monkeypatch.setattr(alg.spla, "splu", singular)
    with pytest.warns(RuntimeWarning, match="factorisation of L_G failed"):
        got = cc_eigenpair(Gm, Hm, solver="sparse", preconditioner="factor")
    _assert_same_eigenpair(got, expected)


def test_auto_and_factor_do_not_warn_on_a_geometric_graph():
    """No fallback and no convergence warning on the graphs the factorised path is for."""
    Gm, Hm = _graphs(*geometric_instance(2000, np.random.default_rng(5))[:2])
    for preconditioner in ("auto", "factor"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cc_eigenpair(Gm, Hm, solver="sparse", preconditioner=preconditioner)


def test_bad_preconditioner():
    Gm, Hm = _graphs(*random_instance(6, np.random.default_rng(0)))
    with pytest.raises(ValueError, match="preconditioner must be 'auto', 'jacobi' or 'factor'"):
        cc_eigenpair(Gm, Hm, preconditioner="amg")  # type: ignore[arg-type]
