import itertools

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score

from icml25.constrained_clustering import (
    ConstrainedSpectralClustering,
    brute_force,
    cc_eigenpair,
    conductance,
    constrained_cut,
    cut_ratio,
    generalized_cheeger_bound,
    laplacian,
    signed_cheeger_constant,
    signed_eigenpair,
    signed_laplacian,
    signed_threshold_sweep,
)
from icml25.constrained_clustering.algorithm import as_graph, sweep_cuts
from icml25.constrained_clustering.datasets import four_block_sbm, random_instance

seeds = st.integers(0, 2**32 - 1)


def _naive_cut(W, mask):
    W = W.toarray() if sp.issparse(W) else np.asarray(W)
    return float(W[np.ix_(mask, ~mask)].sum())


@settings(max_examples=30, deadline=None)
@given(seed=seeds, n=st.integers(5, 10))
def test_bound_below_optimum_below_sweep(seed, n):
    G, H = random_instance(n, np.random.default_rng(seed))
    labels, phi = brute_force(G, H)
    assert cut_ratio(G, H, labels) == pytest.approx(phi)
    for method in ("signed", "cc"):
        r = constrained_cut(G, H, method=method)
        assert r.lower_bound <= phi * (1 + 1e-9)
        assert r.ratio >= phi * (1 - 1e-9)  # the sweep returns a feasible cut
        assert r.ratio == pytest.approx(cut_ratio(G, H, r.labels))


def test_brute_force_matches_itertools():
    G, H = random_instance(7, np.random.default_rng(5))
    Gd, Hd = G.toarray(), H.toarray()
    best = np.inf
    for bits in itertools.product([False, True], repeat=7):
        mask = np.array(bits)
        if mask.all() or not mask.any():
            continue
        ch = _naive_cut(Hd, mask)
        if ch > 0:
            best = min(best, _naive_cut(Gd, mask) / ch)
    assert brute_force(G, H)[1] == pytest.approx(best)


def test_conductance_matches_itertools():
    G, _ = random_instance(8, np.random.default_rng(6))
    Gd = G.toarray()
    d = Gd.sum(1)
    best = np.inf
    for bits in itertools.product([False, True], repeat=8):
        mask = np.array(bits)
        if mask.all() or not mask.any():
            continue
        best = min(best, _naive_cut(Gd, mask) / min(d[mask].sum(), d[~mask].sum()))
    assert conductance(G) == pytest.approx(best)


@settings(max_examples=20, deadline=None)
@given(seed=seeds, n=st.integers(5, 11))
def test_generalized_cheeger_upper_bound_met_by_cc_sweep(seed, n):
    """Koutis-Miller-Peng: the CC sweep cut has ratio <= 8 lambda / phi(G)."""
    G, H = random_instance(n, np.random.default_rng(seed))
    r = constrained_cut(G, H, method="cc")
    _, phi = brute_force(G, H)
    assert phi <= r.ratio * (1 + 1e-9)
    assert r.ratio <= generalized_cheeger_bound(r.eigenvalue, conductance(G)) * (1 + 1e-9)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, n=st.integers(3, 30))
def test_sweep_cuts_match_naive(seed, n):
    rng = np.random.default_rng(seed)
    W = np.triu(rng.random((n, n)) * (rng.random((n, n)) < 0.4), 1)
    W = sp.csr_matrix(W + W.T)
    order = rng.permutation(n)
    expected = []
    for k in range(1, n):
        mask = np.zeros(n, bool)
        mask[order[:k]] = True
        expected.append(_naive_cut(W, mask))
    np.testing.assert_allclose(sweep_cuts(W, order), expected, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(seed=seeds)
def test_relabeling_invariance(seed):
    rng = np.random.default_rng(seed)
    G, H = random_instance(12, rng)
    perm = rng.permutation(12)
    P = sp.csr_matrix((np.ones(12), (np.arange(12), perm)), shape=(12, 12))
    Gp, Hp = P @ G @ P.T, P @ H @ P.T  # vertex i of the new graph is perm[i] of the old
    for method in ("signed", "cc"):
        a = constrained_cut(G, H, method=method)
        b = constrained_cut(Gp, Hp, method=method)
        assert b.ratio == pytest.approx(a.ratio, rel=1e-9)
        assert b.eigenvalue == pytest.approx(a.eigenvalue, rel=1e-7, abs=1e-10)
        assert b.lower_bound == pytest.approx(a.lower_bound, rel=1e-7, abs=1e-10)


def test_signed_eigenvalue_matches_scipy_generalized_eigh():
    G, H = random_instance(20, np.random.default_rng(1))
    Gm, Hm = as_graph(G, "G"), as_graph(H, "H")
    A = (laplacian(Gm) + signed_laplacian(Hm)).toarray()
    D = np.diag(np.asarray(Gm.sum(1)).ravel() + np.asarray(Hm.sum(1)).ravel())
    ref = sla.eigh(A, D, eigvals_only=True)[0]
    lam, x = signed_eigenpair(Gm, Hm, solver="dense")
    assert lam == pytest.approx(ref, abs=1e-10)
    np.testing.assert_allclose(A @ x, lam * (D @ x), atol=1e-9)


def test_cc_eigenvalue_matches_projected_pencil():
    """Independent route: restrict both Laplacians to 1-perp with an orthonormal basis."""
    G, H = random_instance(15, np.random.default_rng(2), p_h=0.6)
    Gm, Hm = as_graph(G, "G"), as_graph(H, "H")
    Q = sla.null_space(np.ones((1, 15)))
    a = Q.T @ laplacian(Gm).toarray() @ Q
    b = Q.T @ laplacian(Hm).toarray() @ Q
    assert np.linalg.eigvalsh(b).min() > 1e-6  # H connected: the pencil is definite on 1-perp
    ref = sla.eigh(a, b, eigvals_only=True)[0]
    lam, _ = cc_eigenpair(Gm, Hm, solver="dense", ridge=1e-12)
    assert lam == pytest.approx(ref, rel=1e-6)


@pytest.mark.parametrize("method", ["signed", "cc"])
def test_sparse_equals_dense(method):
    G, H, _ = four_block_sbm(np.random.default_rng(3), block=75)
    d = constrained_cut(G, H, method=method, solver="dense")
    s = constrained_cut(G, H, method=method, solver="sparse")
    assert s.eigenvalue == pytest.approx(d.eigenvalue, rel=1e-5)
    assert s.lower_bound == pytest.approx(d.lower_bound, rel=1e-5)
    assert adjusted_rand_score(d.labels, s.labels) == 1.0
    assert s.ratio == pytest.approx(d.ratio)
    # dense input and sparse input give the same answer
    dd = constrained_cut(G.toarray(), H.toarray(), method=method, solver="dense")
    assert np.array_equal(dd.labels, d.labels)


def test_sbm_recovers_truth_where_spectral_clustering_fails():
    from sklearn.cluster import SpectralClustering

    G, H, truth = four_block_sbm(np.random.default_rng(0))
    sc = SpectralClustering(2, affinity="precomputed", random_state=0).fit_predict(G.toarray())
    assert adjusted_rand_score(truth, sc) < 0.2
    for method in ("signed", "cc"):
        assert adjusted_rand_score(truth, constrained_cut(G, H, method=method).labels) > 0.9


@settings(max_examples=10, deadline=None)
@given(seed=seeds)
def test_signed_cheeger_inequality(seed):
    G, H = random_instance(7, np.random.default_rng(seed))
    Gm, Hm = as_graph(G, "G"), as_graph(H, "H")
    lam, x = signed_eigenpair(Gm, Hm, solver="dense")
    h = signed_cheeger_constant(Gm, Hm)
    _, beta = signed_threshold_sweep(Gm, Hm, x)
    assert lam / 2 <= h + 1e-12
    assert h <= beta + 1e-12
    assert beta <= np.sqrt(2 * lam) + 1e-12


def test_estimator_api_and_docstring_example():
    G = np.ones((4, 4)) - np.eye(4)
    G[:2, 2:] = G[2:, :2] = 0.1
    H = np.zeros((4, 4))
    H[0, 3] = H[3, 0] = 1.0
    est = ConstrainedSpectralClustering()
    assert est.fit(G, H) is est
    assert est.labels_.tolist() == [0, 0, 1, 1]
    assert est.cut_ratio_ == pytest.approx(0.4)  # 4 edges of 0.1 across / 1 cannot-link
    assert est.lower_bound_ <= est.cut_ratio_
    assert clone(est).get_params() == est.get_params()
    assert est.fit_predict(G, H).tolist() == [0, 0, 1, 1]
    assert ConstrainedSpectralClustering(method="cc").fit(G, H).labels_.tolist() == [0, 0, 1, 1]


def test_same_seed_same_result_sparse():
    G, H, _ = four_block_sbm(np.random.default_rng(4))
    a = constrained_cut(G, H, solver="sparse", random_state=7)
    b = constrained_cut(G, H, solver="sparse", random_state=7)
    assert np.array_equal(a.labels, b.labels) and a.eigenvalue == b.eigenvalue


# ---- bad input -------------------------------------------------------------------------------

GOOD_G = np.ones((4, 4)) - np.eye(4)
GOOD_H = np.zeros((4, 4))
GOOD_H[0, 3] = GOOD_H[3, 0] = 1.0


@pytest.mark.parametrize(
    ("G", "H", "exc", "match"),
    [
        (np.ones((3, 4)), GOOD_H, ValueError, "G must be square"),
        (GOOD_G, np.zeros((5, 5)), ValueError, "same size as G"),
        (np.ones(4), GOOD_H, ValueError, "2-D"),
        (
            GOOD_G - 2 * np.eye(4) * 0 - np.eye(4) * 0 - 3 * (np.ones((4, 4)) - np.eye(4)),
            GOOD_H,
            ValueError,
            "negative",
        ),
        (np.where(GOOD_G > 0, np.nan, 0), GOOD_H, ValueError, "non-finite"),
        (np.triu(GOOD_G), GOOD_H, ValueError, "symmetric"),
        (GOOD_G, np.zeros((4, 4)), ValueError, "H has no edges"),
        (np.array([["a", "b"], ["b", "a"]]), GOOD_H, TypeError, "numeric"),
        (np.ones((1, 1)), GOOD_H, ValueError, "at least 2"),
    ],
)
def test_bad_graphs_raise_clear_errors(G, H, exc, match):
    with pytest.raises(exc, match=match):
        constrained_cut(G, H)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "ncut"}, "method must be"),
        ({"solver": "gpu"}, "solver must be"),
        ({"ridge": 0.0}, "ridge must be"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        constrained_cut(GOOD_G, GOOD_H, **kwargs)


def test_disconnected_g_returns_the_zero_ratio_component():
    G = np.zeros((6, 6))
    G[:3, :3] = G[3:, 3:] = 1
    np.fill_diagonal(G, 0)
    H = np.zeros((6, 6))
    H[0, 4] = H[4, 0] = 1
    r = constrained_cut(G, H)
    assert r.ratio == 0.0 and r.lower_bound == 0.0
    assert r.labels.tolist() == [0, 0, 0, 1, 1, 1]
    H2 = np.zeros((6, 6))
    H2[0, 1] = H2[1, 0] = 1  # only inside a component of G
    with pytest.raises(ValueError, match="connected components"):
        constrained_cut(G, H2)


def test_self_loops_are_ignored():
    G = GOOD_G + 5 * np.eye(4)
    assert constrained_cut(G, GOOD_H).ratio == constrained_cut(GOOD_G, GOOD_H).ratio
