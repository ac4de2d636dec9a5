"""Bad input of the enforcing mode's public helpers: refused by name."""

import numpy as np
import pytest

from icml25.constrained_clustering import constrained_kmeans, count_violations


def test_count_violations_refuses_bad_pairs_and_labels() -> None:
    with pytest.raises(ValueError, match="must_link"):
        count_violations([0, 1, 0], must_link=[(0, 5)])
    with pytest.raises(ValueError, match="cannot_link"):
        count_violations([0, 1, 0], cannot_link=[(1, 1)])
    with pytest.raises(ValueError, match="labels"):
        count_violations(np.zeros((2, 2)))


def test_constrained_kmeans_refuses_mismatched_groups() -> None:
    E = np.random.default_rng(0).random((6, 2))
    with pytest.raises(ValueError, match="groups"):
        constrained_kmeans(E, 2, np.arange(5), np.zeros((0, 2), int))
