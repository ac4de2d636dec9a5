"""Pairs that hold (issue 69 item 4) and a cannot-link graph without edges (issue 70).

``constraints="soft"`` is the paper's objective and may leave pairs violated; ``"enforce"``
keeps every pair. ``n_violated_`` is always set, the k-way extension keeps no singleton
cluster, and an H without edges is the unconstrained problem with meaningful attributes."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.cluster import SpectralClustering
from sklearn.datasets import load_iris, make_moons
from sklearn.metrics import adjusted_rand_score
from sklearn.neighbors import kneighbors_graph

from icml25.constrained_clustering import ConstrainedSpectralClustering, constrained_cut
from icml25.constrained_clustering import enforce as est_mod
from icml25.constrained_clustering.algorithm import sweep, sweep_cuts
from icml25.constrained_clustering.datasets import knn_graph, random_instance


def _pairs(y, m, seed):
    """m random pairs: must-links within a class, cannot-links across (the benchmark's)."""
    rng = np.random.default_rng(seed)
    must, cannot = [], []
    while len(must) + len(cannot) < m:
        i, j = (int(v) for v in rng.integers(0, len(y), 2))
        if i != j:
            (must if y[i] == y[j] else cannot).append((i, j))
    return must, cannot


def _brute_violations(labels, must, cannot):
    pairs = {tuple(sorted(p)): "m" for p in must}
    pairs.update({tuple(sorted(p)): "c" for p in cannot})
    return sum((labels[i] == labels[j]) == (kind == "c") for (i, j), kind in pairs.items())


# ------------------------------------------------------------------ n_violated_
def test_soft_reports_the_pairs_it_breaks():
    """Two cliques joined weakly; a cannot-link inside a clique is the paper's cost to pay."""
    G = np.zeros((8, 8))
    G[:4, :4] = G[4:, 4:] = 1.0
    G[3, 4] = G[4, 3] = 0.1
    np.fill_diagonal(G, 0.0)
    H = np.zeros((8, 8))
    H[0, 7] = H[7, 0] = H[0, 1] = H[1, 0] = 1.0
    soft = ConstrainedSpectralClustering().fit(G, H, must_link=[(2, 5)])
    assert soft.labels_.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    # broken: the cannot-link (0, 1) and the must-link (2, 5)
    assert (
        soft.n_violated_ == 2 == est_mod.count_violations(soft.labels_, [(2, 5)], [(0, 7), (0, 1)])
    )
    hard = ConstrainedSpectralClustering(constraints="enforce").fit(G, H, must_link=[(2, 5)])
    assert hard.n_violated_ == 0
    assert est_mod.count_violations(hard.labels_, [(2, 5)], [(0, 7), (0, 1)]) == 0


@pytest.mark.parametrize("constraints", ["soft", "enforce"])
def test_n_violated_matches_a_brute_count(constraints):
    X, y = load_iris(return_X_y=True)
    for seed in range(3):
        must, cannot = _pairs(y, 20, seed)
        est = ConstrainedSpectralClustering(3, constraints=constraints)
        labels = est.fit_predict(X, must_link=must, cannot_link=cannot + cannot[:2])  # repeats
        assert est.n_violated_ == _brute_violations(labels, must, cannot)
        assert est_mod.count_violations(labels, must, cannot) == est.n_violated_


# ------------------------------------------------------------------ enforce
@pytest.mark.parametrize(
    ("name", "k", "m"), [("moons", 2, 6), ("moons", 2, 20), ("iris", 3, 10), ("iris", 3, 50)]
)
def test_enforce_keeps_every_pair_and_beats_sklearn(name, k, m):
    """The issue's cases: no pair broken, and the ARI (mean over 12 draws) at least that of
    scikit-learn's SpectralClustering on the same graph. Per draw it is not always: with 5-10
    pairs on iris, a third to a half of the draws score a little below (see the README)."""
    X, y = (
        make_moons(200, noise=0.1, random_state=0)
        if name == "moons"
        else load_iris(return_X_y=True)
    )
    sc = SpectralClustering(k, affinity="nearest_neighbors", n_neighbors=10, random_state=0)
    sc_ari = adjusted_rand_score(y, sc.fit_predict(X))
    aris = []
    for seed in range(12):
        must, cannot = _pairs(y, m, seed)
        est = ConstrainedSpectralClustering(
            k, constraints="enforce", affinity="nearest_neighbors", random_state=seed
        )
        labels = est.fit_predict(X, must_link=must, cannot_link=cannot)
        assert _brute_violations(labels, must, cannot) == 0 == est.n_violated_
        assert sorted(np.unique(labels)) == list(range(k))
        aris.append(adjusted_rand_score(y, labels))
    assert np.mean(aris) >= sc_ari


def test_enforce_on_the_graph_form_keeps_every_edge_of_H():
    rng = np.random.default_rng(5)
    X = np.r_[rng.normal(0, 1, (40, 2)), rng.normal(2.0, 1, (40, 2))]
    G = knn_graph(X, 8)
    H = sp.lil_matrix((80, 80))
    for i, j in rng.integers(0, 40, (15, 2)):
        H[i, 40 + j] = H[40 + j, i] = 1.0
    est = ConstrainedSpectralClustering(constraints="enforce").fit(G, sp.csr_matrix(H))
    C = sp.triu(H).tocoo()
    assert not np.any(est.labels_[C.row] == est.labels_[C.col]) and est.n_violated_ == 0
    assert est.embedding_.shape == (80, 2) and est.split_ratios_ == []
    assert est.cut_ratio_ == pytest.approx(_naive_ratio(G, H, est.labels_))
    ref = constrained_cut(G, H, method="cc")
    assert est.lower_bound_ == pytest.approx(ref.lower_bound)
    assert est.lower_bound_ <= est.cut_ratio_ + 1e-12  # a certificate for any partition


def _naive_ratio(G, H, labels):
    G, H = (np.asarray(W.todense()) for W in (G, H))
    apart = labels[:, None] != labels[None, :]
    return G[apart].sum() / H[apart].sum()


def test_enforce_propagates_must_links():
    """A chain of must-links across two well-separated blobs moves as one unit."""
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 0.3, (20, 2)), rng.normal(6, 0.3, (20, 2))]
    must = [(0, 20), (20, 21), (21, 22)]  # 0 joins the far blob through a chain
    est = ConstrainedSpectralClustering(n_neighbors=5, constraints="enforce")
    labels = est.fit_predict(X, must_link=must, cannot_link=[(22, 5)])
    assert labels[0] == labels[20] == labels[21] == labels[22] != labels[5]
    assert est.n_violated_ == 0


def test_enforce_refuses_contradictions_and_uncolourable_pairs():
    X = np.random.default_rng(0).normal(size=(30, 2))
    est = ConstrainedSpectralClustering(n_neighbors=5, constraints="enforce")
    with pytest.raises(ValueError, match=r"must_link and cannot_link contradict: vertices 1 and 3"):
        est.fit(X, must_link=[(1, 2), (2, 3)], cannot_link=[(1, 3)])
    with pytest.raises(ValueError, match=r"cannot all be kept with n_clusters=2"):
        est.fit(X, cannot_link=[(0, 1), (1, 2), (2, 0)])  # a triangle needs three colours
    labels = ConstrainedSpectralClustering(3, n_neighbors=5, constraints="enforce").fit_predict(
        X, cannot_link=[(0, 1), (1, 2), (2, 0)]
    )
    assert len({labels[0], labels[1], labels[2]}) == 3
    with pytest.raises(ValueError, match="constraints must be one of"):
        ConstrainedSpectralClustering(constraints="hard").fit(X)
    with pytest.raises(ValueError, match="method must be 'signed' there"):
        ConstrainedSpectralClustering(constraints="enforce", method="cc").fit(X)
    with pytest.raises(ValueError, match="min_cluster_size applies to constraints='soft'"):
        ConstrainedSpectralClustering(constraints="enforce", min_cluster_size=3).fit(X)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1), k=st.integers(2, 4), enumerate_max=st.sampled_from([0, 4096])
)
def test_the_constrained_assignment_is_exact(seed, k, enumerate_max):
    """Enumeration and the integer programme both give the brute-force optimum."""
    rng = np.random.default_rng(seed)
    nu = int(rng.integers(2, 6))
    cost = rng.random((nu, k))
    pairs = [p for p in itertools.combinations(range(nu), 2) if rng.random() < 0.5]
    pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    best = None
    for assignment in itertools.product(range(k), repeat=nu):
        a = np.array(assignment)
        if len(pairs) and np.any(a[pairs[:, 0]] == a[pairs[:, 1]]):
            continue
        c = cost[np.arange(nu), a].sum()
        best = c if best is None or c < best else best
    saved = est_mod.ENUMERATE_MAX
    est_mod.ENUMERATE_MAX = enumerate_max
    try:
        got = est_mod._assign_units(cost, est_mod._unit_parts(nu, pairs))
    finally:
        est_mod.ENUMERATE_MAX = saved
    if best is None:
        assert got is None
    else:
        assert got is not None
        assert not (len(pairs) and np.any(got[pairs[:, 0]] == got[pairs[:, 1]]))
        assert cost[np.arange(nu), got].sum() == pytest.approx(best)


def test_constrained_kmeans_keeps_pairs_against_the_geometry():
    """Two tight blobs; a cannot-link inside a blob and a must-link across are both kept."""
    rng = np.random.default_rng(1)
    E = np.r_[rng.normal(0, 0.05, (10, 2)), rng.normal(1, 0.05, (10, 2))]
    groups = est_mod.must_link_groups(20, np.array([[3, 15]]))
    labels, inertia = est_mod.constrained_kmeans(E, 2, groups, np.array([[0, 1]]))
    assert labels[0] != labels[1] and labels[3] == labels[15]
    free, free_inertia = est_mod.constrained_kmeans(E, 2, np.arange(20), np.zeros((0, 2), int))
    assert inertia > free_inertia and len(set(free[:10])) == 1


# ------------------------------------------------------------------ k-way: no singletons
def test_the_k_way_extension_leaves_no_singleton():
    """Iris, three clusters, two must- and two cannot-links: the recursive bisection used to
    cut one endpoint of a cannot-link off (sizes [1, 50, 99])."""
    X, y = load_iris(return_X_y=True)
    must, cannot = _pairs(y, 4, 0)
    est = ConstrainedSpectralClustering(3).fit(X, must_link=must, cannot_link=cannot)
    assert np.bincount(est.labels_).min() >= 5  # max(2, ceil(150 / 30))
    small = ConstrainedSpectralClustering(3, min_cluster_size=20).fit(
        X, must_link=must, cannot_link=cannot
    )
    assert np.bincount(small.labels_).min() >= 20
    with pytest.raises(ValueError, match=r"min_cluster_size must be at most n / n_clusters \(50\)"):
        ConstrainedSpectralClustering(3, min_cluster_size=51).fit(X)


def test_two_clusters_stay_the_papers_cut():
    """Two-way is the paper's problem: no minimum size, the sweep's cut as it is (here one
    endpoint of a cannot-link cut off, its optimum on this draw)."""
    X, y = make_moons(200, noise=0.1, random_state=0)
    must, cannot = _pairs(y, 5, 2)
    two = ConstrainedSpectralClustering().fit(X, must_link=must, cannot_link=cannot)
    G = ConstrainedSpectralClustering._with_pairs(knn_graph(X, 10), np.array(must), 1.0)
    H = ConstrainedSpectralClustering._with_pairs(sp.csr_matrix((200, 200)), np.array(cannot), 1.0)
    assert np.array_equal(two.labels_, constrained_cut(G, H).labels)
    assert np.bincount(two.labels_).min() == 1


def _blocks(*sizes, bridge=None):
    """A graph of cliques of the given sizes, no edge between them (``bridge``: the first
    two cliques joined by one edge of that weight)."""
    n = sum(sizes)
    G = np.zeros((n, n))
    at = 0
    for size in sizes:
        G[at : at + size, at : at + size] = 1.0
        at += size
    if bridge is not None:
        G[sizes[0] - 1, sizes[0]] = G[sizes[0], sizes[0] - 1] = bridge
    np.fill_diagonal(G, 0.0)
    return G


def test_min_cluster_size_splits_disconnected_clusters_admissibly():
    """Components of two vertices may not stand alone as clusters of at least 10."""
    cliques = np.repeat(np.arange(3), 30)
    # a stray pair, three cliques, a stray pair: the pairs join a clique (a split along
    # components); without the floor the first pair is a cluster of its own
    G, H = _blocks(2, 30, 30, 30, 2), np.zeros((94, 94))
    labels = ConstrainedSpectralClustering(3, min_cluster_size=10).fit_predict(G, H)
    assert np.bincount(labels).min() >= 10
    assert adjusted_rand_score(cliques, labels[2:92]) == 1.0
    free = ConstrainedSpectralClustering(3, min_cluster_size=1).fit_predict(G, H)
    assert np.bincount(free).min() == 2
    # two cliques bridged, and the pairs: the big component is cut, the pairs ride along
    G = _blocks(30, 30, 2, 2, bridge=0.1)
    labels = ConstrainedSpectralClustering(3, min_cluster_size=10).fit_predict(
        G, np.zeros((64, 64))
    )
    assert np.bincount(labels).min() >= 10
    assert labels[0] != labels[59]  # the bridge is the cut


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(6, 14), size=st.integers(1, 3))
def test_sweep_with_min_size_is_the_best_admissible_prefix(seed, n, size):
    G, H = random_instance(n, np.random.default_rng(seed))
    x = np.random.default_rng(seed + 1).standard_normal(n)
    mask, ratio = sweep(G, H, x, min_size=size)
    order = np.argsort(x, kind="stable")
    cg, ch = sweep_cuts(G, order), sweep_cuts(H, order)
    allowed = [r for r in range(size, n - size + 1) if ch[r - 1] > 0]
    best = min((cg[r - 1] / ch[r - 1] for r in allowed), default=np.inf)
    assert ratio == pytest.approx(best)
    assert size <= mask.sum() <= n - size


# ------------------------------------------------------------------ the graph
def test_nearest_neighbors_is_sklearns_graph():
    X = np.random.default_rng(0).normal(size=(60, 3))
    est = ConstrainedSpectralClustering(affinity="nearest_neighbors", n_neighbors=7)
    A = kneighbors_graph(X, 7, include_self=True)
    ref = 0.5 * (A + A.T)
    ref.setdiag(0)
    ref.eliminate_zeros()
    got = est._data_graph(X, "nearest_neighbors")
    assert abs(got - ref).max() == 0.0
    assert set(np.unique(got.data)) == {0.5, 1.0}
    with pytest.raises(ValueError, match="n_neighbors must be at least 2"):
        ConstrainedSpectralClustering(affinity="nearest_neighbors", n_neighbors=1).fit(X)


# ------------------------------------------------------------------ issue 70: H without edges
def _two_blobs():
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (30, 2)), rng.normal(8, 1, (30, 2))]
    return X, knn_graph(X, 6)


@pytest.mark.parametrize("empty", [np.zeros((60, 60)), sp.csr_matrix((60, 60)), np.eye(60)])
def test_an_h_without_edges_is_the_unconstrained_problem(empty):
    """Disconnected G (two blobs): the components are the optimum, ratio 0, certified 0; the
    attributes used to read all zeros (embedding) and None (bound)."""
    _, G = _two_blobs()
    est = ConstrainedSpectralClustering().fit(G, empty)
    assert est.labels_.tolist() == [0] * 30 + [1] * 30
    assert est.cut_ratio_ == 0.0 and est.lower_bound_ == 0.0 and est.eigenvalue_ == 0.0
    assert est.embedding_.tolist() == [1.0] * 30 + [0.0] * 30  # the split side's indicator
    assert est.n_violated_ == 0
    none = ConstrainedSpectralClustering(affinity="precomputed").fit(G)
    assert np.array_equal(none.labels_, est.labels_)
    assert np.array_equal(none.embedding_, est.embedding_)


def test_an_h_without_edges_on_a_connected_graph_is_the_demand_graph_cut():
    X, _ = _two_blobs()
    G = knn_graph(X[:30], 6)  # one blob: connected
    d = np.asarray(G.sum(axis=1)).ravel()
    demand = np.outer(d, d) / d.sum()
    np.fill_diagonal(demand, 0.0)
    ref = constrained_cut(G, demand)
    est = ConstrainedSpectralClustering().fit(G, np.zeros((30, 30)))
    assert np.array_equal(est.labels_, ref.labels)
    assert est.cut_ratio_ == pytest.approx(ref.ratio) and est.lower_bound_ == ref.lower_bound
    assert np.abs(est.embedding_).max() > 0


def test_three_clusters_of_a_disconnected_graph_report_the_first_split():
    """The first split is along the components; its attributes (not the second split's, on
    fewer vertices) are reported."""
    _, G = _two_blobs()
    est = ConstrainedSpectralClustering(3).fit(G, np.zeros((60, 60)))
    assert est.embedding_.shape == (60,) and est.eigenvalue_ == 0.0 and est.lower_bound_ == 0.0
    assert len(est.split_ratios_) == 2 and est.split_ratios_[0] == 0.0


def test_a_g_without_edges_is_refused_by_name():
    X = np.random.default_rng(0).normal(size=(20, 2)) * 100
    with pytest.raises(ValueError, match=r"G has no edges.*gamma is too large"):
        ConstrainedSpectralClustering(affinity="rbf", gamma=1e6).fit(X)
    with pytest.raises(ValueError, match="G has no edges"):
        ConstrainedSpectralClustering().fit(np.zeros((5, 5)), np.ones((5, 5)) - np.eye(5))


def test_enforce_without_pairs_reports_the_demand_graph_ratio_and_solvers_agree():
    rng = np.random.default_rng(2)
    X = np.r_[rng.normal(0, 1, (40, 2)), rng.normal(5, 1, (40, 2))]
    dense = ConstrainedSpectralClustering(constraints="enforce", solver="dense").fit(X)
    G = knn_graph(X, 10)
    d = np.asarray(G.sum(axis=1)).ravel()
    demand = np.outer(d, d) / d.sum()
    np.fill_diagonal(demand, 0.0)
    assert dense.cut_ratio_ == pytest.approx(_naive_ratio(G, sp.csr_matrix(demand), dense.labels_))
    assert adjusted_rand_score(np.repeat([0, 1], 40), dense.labels_) == 1.0
    sparse = ConstrainedSpectralClustering(constraints="enforce", solver="sparse").fit(X)
    assert np.array_equal(sparse.labels_, dense.labels_)
    assert sparse.eigenvalue_ == pytest.approx(dense.eigenvalue_, abs=1e-8)
