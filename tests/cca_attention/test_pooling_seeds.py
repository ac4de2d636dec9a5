"""The pooling claim on several training seeds (issue 66): one training seed hid a spread
between two mean-pooling models (0.065) five times the item bootstrap's half-width."""

from dataclasses import replace

import numpy as np
import pytest

from icml25.cca_attention.experiments import BUDGETS, needle_arms, needle_measures, pooling_arms
from icml25.core.claims import null_key


def _items(acc: float, n: int = 100) -> np.ndarray:
    out = np.zeros(n)
    out[: round(acc * n)] = 1.0
    return out


def _ok() -> dict[str, list[np.ndarray]]:
    names = ("full", "local", "sink", "cca", "cca_mean", "swap", "swap+ft", "local_swap")
    ok = {k: [_items(0.5)] for k in names}
    ok["local_swap+ft"] = [_items(0.2)]
    return ok


def test_pooling_claim_is_a_t_interval_over_training_seeds_and_its_null_pairs_other_seeds():
    pool = {
        "cca": [_items(1.0), _items(0.99), _items(0.98)],
        "cca_mean": [_items(0.93), _items(0.99), _items(0.95)],
    }
    out = needle_measures(_ok(), pool)
    m = out["attention_pooling_beats_mean"]
    np.testing.assert_allclose(m.values, [0.07, 0.0, 0.03], atol=1e-12)
    assert m.interval.method.startswith("t")  # over seeds, not items: seed spread counts
    # a t interval over 3 seeds is wider than the mean's spread: it straddles 0 here
    assert m.interval.low < 0 < m.interval.high
    null = out[null_key("attention_pooling_beats_mean")]
    np.testing.assert_allclose(null.values, [0.06, -0.04, -0.02], atol=1e-12)
    assert sum(null.values) == pytest.approx(0.0, abs=1e-12)
    # the paired contrast (method - null, seed by seed) is CCA against the next seed's model
    contrast = np.subtract(m.values, null.values)
    np.testing.assert_allclose(contrast, [1.0 - 0.99, 0.99 - 0.95, 0.98 - 0.93], atol=1e-12)
    assert "attention_pooling_beats_mean" not in needle_measures(_ok(), None)
    with pytest.raises(ValueError, match="training seeds"):
        needle_measures(_ok(), {"cca": [_items(1.0)], "cca_mean": [_items(0.9)]})


def test_pooling_arms_train_exactly_as_the_needle_arms_do():
    """A further seed's pooling models are the models needle_arms would train on that seed."""
    b = replace(BUDGETS["tiny"], steps=2, finetune_steps=1, test_items=40)
    assert BUDGETS["full"].pooling_seeds >= 3
    every = needle_arms(b, 1, lambda _msg: None)
    pool = pooling_arms(b, 1, lambda _msg: None)
    assert set(pool) == {"cca", "cca_mean"}
    for name, ok in pool.items():
        assert (ok == every[name]).all(), name
