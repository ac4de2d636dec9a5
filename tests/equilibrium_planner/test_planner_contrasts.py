"""The planner's paired contrasts (method minus null arm on the same test items): every claim
with a measured null arm gets one, equal to the per-seed difference of the two measurements
and zero when the null arm is the method."""

from __future__ import annotations

import numpy as np
import pytest

from icml25.core.claims import contrast_key, null_key
from icml25.equilibrium_planner.claims import CLAIMS
from icml25.equilibrium_planner.experiments import SPLITS, measures

ARMS = (
    "supervised", "supervised_greedy", "self_refine_env", "eq_none", "eq_wm", "eq_env",
    "eq_both", "eq_wm_bit", "eq_env_bit", "eq_both_bit", "sup_wm_loop", "sup_env_loop",
)  # fmt: skip


def fake_runs(n_seeds: int = 4, n_items: int = 40, rng_seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(rng_seed)
    bern = lambda p: (rng.random(n_items) < p).astype(float)  # noqa: E731
    return [
        {
            "success": {s: {a: bern(rng.uniform(0.2, 0.9)) for a in ARMS} for s in SPLITS},
            "base_sr": 0.9,
            "sup_train": 0.95,
            "fixed_point": bern(0.9),
            "fixed_point_null": bern(0.6),
            "wm_agreement": bern(0.8),
            "wm_agreement_null": bern(0.5),
        }
        for _ in range(n_seeds)
    ]


def test_every_claim_with_a_null_arm_gets_a_paired_contrast() -> None:
    out = measures(fake_runs())
    with_null = [c.id for c in CLAIMS if c.null is not None and null_key(c.id) in out]
    assert with_null, "no claim's null arm measured"
    for cid in with_null:
        assert contrast_key(cid) in out, cid


@pytest.mark.parametrize(
    "cid",
    ["sr_gain_novel_task", "novel_scene_gain", "fixed_point_share", "closed_loop_gain",
     "eq_vs_selfrefine", "world_model_agreement"],
)  # fmt: skip
def test_contrast_is_method_minus_null_per_seed(cid: str) -> None:
    out = measures(fake_runs())
    m, n, c = out[cid], out[null_key(cid)], out[contrast_key(cid)]
    np.testing.assert_allclose(c.values, np.subtract(m.values, n.values), atol=1e-12)
    assert c.interval.low <= c.mean <= c.interval.high


def test_ordering_contrast_is_zero_when_the_null_arms_are_the_method() -> None:
    runs = fake_runs()
    for r in runs:
        for s in SPLITS:
            for a in ("wm", "env", "both"):
                r["success"][s][f"eq_{a}_bit"] = r["success"][s][f"eq_{a}"]
    c = measures(runs)[contrast_key("feedback_ordering")]
    assert c.values == (0.0,) * len(runs) or list(c.values) == [0.0] * len(runs)
    assert c.interval.low == c.interval.high == 0.0
