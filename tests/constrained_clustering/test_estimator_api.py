"""The estimator as a practitioner reaches for it (issue 56 item 1): data and constraint pairs
in, k clusters, predict; the graph-pair form unchanged."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.metrics import adjusted_rand_score

from icml25.constrained_clustering import ConstrainedSpectralClustering, constrained_cut
from icml25.constrained_clustering.datasets import knn_graph


def _cannot_links(y, n_links, seed=0):
    rng = np.random.default_rng(seed)
    pairs = []
    while len(pairs) < n_links:
        i, j = rng.integers(0, len(y), 2)
        if y[i] != y[j]:
            pairs.append((int(i), int(j)))
    return pairs


def test_iris_from_data_and_cannot_links():
    X, y = load_iris(return_X_y=True)
    pairs = _cannot_links(y, 30)
    two = ConstrainedSpectralClustering().fit_predict(X, cannot_link=pairs)
    assert set(np.flatnonzero(two == two[0])) == set(np.flatnonzero(y == 0))  # setosa alone
    three = ConstrainedSpectralClustering(n_clusters=3).fit(X, cannot_link=pairs)
    assert sorted(np.bincount(three.labels_)) != [1, 1, 148]
    assert adjusted_rand_score(y, three.labels_) > 0.6
    assert len(three.split_ratios_) == 2 and three.labels_[0] == 0


def test_the_graph_pair_form_is_constrained_cut():
    rng = np.random.default_rng(1)
    X = np.r_[rng.normal(0, 1, (30, 2)), rng.normal(4, 1, (30, 2))]
    G = knn_graph(X, 6)
    H = sp.lil_matrix((60, 60))
    H[0, 59] = H[59, 0] = H[3, 40] = H[40, 3] = 1.0
    H = sp.csr_matrix(H)
    est = ConstrainedSpectralClustering().fit(G, H)
    ref = constrained_cut(G, H)
    assert np.array_equal(est.labels_, ref.labels)
    assert est.cut_ratio_ == pytest.approx(ref.ratio) and est.lower_bound_ == ref.lower_bound
    # the same graph from the data and the same pairs: the same answer
    data = ConstrainedSpectralClustering(n_neighbors=6).fit(X, cannot_link=[(0, 59), (3, 40)])
    assert np.array_equal(data.labels_, ref.labels)


def test_k_blobs_are_recovered_and_new_points_predicted():
    rng = np.random.default_rng(2)
    centres = np.array([[0, 0], [8, 0], [0, 8], [8, 8]], dtype=float)
    y = np.repeat(np.arange(4), 25)
    X = centres[y] + rng.normal(0, 1, (100, 2))
    est = ConstrainedSpectralClustering(n_clusters=4, n_neighbors=8)
    labels = est.fit_predict(X, cannot_link=_cannot_links(y, 12, seed=3))
    assert adjusted_rand_score(y, labels) == 1.0
    new = centres + rng.normal(0, 0.5, (4, 2))
    blob_label = {int(y[i]): int(labels[i]) for i in range(100)}
    assert est.predict(new).tolist() == [blob_label[b] for b in range(4)]


def test_a_heavy_must_link_moves_a_vertex_across():
    rng = np.random.default_rng(4)
    X = np.r_[rng.normal(0, 0.3, (20, 2)), rng.normal(5, 0.3, (20, 2))]
    kw = {"cannot_link": [(0, 20)]}
    apart = ConstrainedSpectralClustering(n_neighbors=5).fit_predict(X, **kw)
    assert apart[1] != apart[21]
    joined = ConstrainedSpectralClustering(n_neighbors=5, must_link_weight=100.0).fit_predict(
        X, must_link=[(1, 21)], **kw
    )
    assert joined[1] == joined[21] and joined[0] != joined[20]


def test_clone_and_clear_errors():
    est = ConstrainedSpectralClustering(n_clusters=3, affinity="rbf", gamma=0.5)
    twin = clone(est)
    assert twin.get_params() == est.get_params() and twin.get_params()["n_clusters"] == 3
    X = np.random.default_rng(0).normal(size=(12, 2))
    with pytest.raises(ValueError, match="cannot_link must be pairs of vertex indices"):
        ConstrainedSpectralClustering().fit(X, cannot_link=[0, 1])
    with pytest.raises(ValueError, match=r"indices must lie in 0\.\.11"):
        ConstrainedSpectralClustering(n_neighbors=3).fit(X, cannot_link=[(0, 12)])
    with pytest.raises(ValueError, match="n_clusters must be at most"):
        ConstrainedSpectralClustering(n_clusters=13, n_neighbors=3).fit(X)
    with pytest.raises(ValueError, match="affinity must be one of"):
        ConstrainedSpectralClustering(affinity="cosine").fit(X)
    G = knn_graph(X, 3)
    fitted = ConstrainedSpectralClustering().fit(G, G * 0 + sp.eye(12, k=1) + sp.eye(12, k=-1))
    with pytest.raises(ValueError, match="predict needs a fit on data"):
        fitted.predict(X)
    with pytest.raises(ValueError, match="not fitted"):
        ConstrainedSpectralClustering().predict(X)
