"""The reproduction's null arms and gate are what they say."""

from __future__ import annotations

import numpy as np
import pytest

from icml25.constrained_clustering.bounds import conductance
from icml25.constrained_clustering.datasets import (
    cannot_links,
    four_block_sbm,
    ring_conductance,
    ring_instance,
)
from icml25.constrained_clustering.experiments import (
    BUDGETS,
    _ari,
    _cross_group_h,
    _permuted,
    _random_direction,
    generalized_cheeger_fractions,
    ring_instances,
)
from icml25.core.claims import null_key


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


@pytest.mark.parametrize("n", [4, 5, 8, 11, 14])
def test_ring_conductance_is_exact(n: int) -> None:
    rng = np.random.default_rng(n)
    G, H, side = ring_instance(n, rng)
    assert conductance(G) == pytest.approx(ring_conductance(n), rel=1e-12)
    assert np.asarray(G.sum(axis=1)).ravel().tolist() == [2.0] * n
    rows, cols = H.nonzero()
    assert H.nnz and np.all(side[rows] != side[cols])  # every cannot-link joins the two arcs
    assert abs(int(side.sum()) - n / 2) <= 0.5 and int(np.sum(side != np.roll(side, 1))) == 2


def test_on_rings_the_random_vector_can_miss_the_bound_that_cc_meets() -> None:
    """The null arm of generalized_cheeger can fail: at the quick budget's ring size the sweep
    over a random vector misses 8 lambda/phi(G) on every ring, the CC sweep meets it."""
    tightness: list[float] = []
    upper, upper0 = ring_instances(BUDGETS["quick"], 0, tightness)
    assert all(upper) and not any(upper0)
    assert min(tightness) > 1


def test_generalized_cheeger_pools_small_instances_and_rings() -> None:
    out: dict[str, list[float]] = {"generalized_cheeger": [], null_key("generalized_cheeger"): []}
    generalized_cheeger_fractions(out, ([True, True], [True, True]), ([True, True], [False, False]))
    assert out == {"generalized_cheeger": [1.0], null_key("generalized_cheeger"): [0.5]}


def test_ring_instance_refuses_bad_sizes() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="n must be an integer >= 4, got 3"):
        ring_instance(3, rng)
    with pytest.raises(ValueError, match="links_per_vertex must be"):
        ring_instance(10, rng, links_per_vertex=0.0)
    with pytest.raises(TypeError, match="n must be an integer"):
        ring_conductance(True)
