"""The reproduction's null arms and gate are what they say."""

from __future__ import annotations

import numpy as np

from icml25.constrained_clustering.datasets import cannot_links, four_block_sbm
from icml25.constrained_clustering.experiments import (
    _ari,
    _cross_group_h,
    _permuted,
    _random_direction,
)


def test_permuted_h_keeps_edges_and_degrees_and_loses_the_sides() -> None:
    rng = np.random.default_rng(0)
    _, H, truth = four_block_sbm(rng, block=30)
    P = _permuted(H, rng)
    assert P.nnz == H.nnz and abs(P - P.T).max() == 0
    deg = lambda M: np.sort(np.asarray(M.sum(axis=1)).ravel())  # noqa: E731
    np.testing.assert_array_equal(deg(P), deg(H))
    crossing = lambda M: float(M[truth == 0][:, truth == 1].sum()) / M.sum()  # noqa: E731
    assert crossing(H) == 0.5 and crossing(P) < 0.4  # every edge of H crosses the sides


def test_random_direction_is_orthogonal_to_ones() -> None:
    x = _random_direction(50, np.random.default_rng(1))
    assert abs(x.sum()) < 1e-12 and np.linalg.norm(x) > 1


def test_the_ceiling_recovers_a_planted_split() -> None:
    rng = np.random.default_rng(2)
    G, _, truth = four_block_sbm(rng, block=20)
    assert _ari(G, _cross_group_h(truth), truth) == 1.0
    assert _ari(G, cannot_links(truth, 2, rng), truth) < 0.5  # two links do not carry the split
