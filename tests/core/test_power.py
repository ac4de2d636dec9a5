"""Seed counts from a pilot's spread (icml25 power), against the t interval's closed form."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.core.claims import t_interval
from icml25.core.power import claim_power, half_width, method_power, render, seeds_needed


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-10, 10), min_size=3, max_size=12))
def test_half_width_is_the_t_interval_of_the_engine(values):
    import statistics

    iv = t_interval(values)
    sd = statistics.stdev(values)
    assert math.isclose(
        half_width(sd, len(values)), (iv.high - iv.low) / 2, rel_tol=1e-9, abs_tol=1e-12
    )


def test_seeds_needed_is_the_first_count_that_clears():
    n = seeds_needed(1.0, 0.5)
    assert n is not None and half_width(1.0, n) < 0.5 <= half_width(1.0, n - 1)
    assert seeds_needed(1.0, 0.5, at_least=40) == 40
    assert seeds_needed(1.0, 0.0) is None and seeds_needed(1.0, 1e-6) is None


def _row(values, rule="mean >= 0.5", verdict="inconclusive", null=None, iv="t (n=5)"):
    return {
        "id": "c",
        "kind": "claim",
        "verdict": verdict,
        "rule_verdict": verdict,
        "rule": rule,
        "measured": {"values": values},
        "interval": {"method": iv},
        "null": null,
    }


def test_claim_power_uses_the_nearest_threshold_or_the_contrast():
    p = claim_power("m", _row([0.6, 0.4, 0.7, 0.5, 0.65], "mean >= 0.8 (partial if >= 0.5)"))
    assert p is not None and p.what == "rule"
    assert math.isclose(p.distance, abs(0.57 - 0.5), abs_tol=1e-9)
    null = {"verdict": "partial", "measured": {"values": [0.5, 0.3, 0.6, 0.45, 0.6]},
            "interval": {"method": "t (n=5)"}}  # fmt: skip
    q = claim_power("m", _row([0.6, 0.4, 0.7, 0.5, 0.65], null=null, verdict="inconclusive"))
    assert q is not None and q.what == "contrast" and math.isclose(q.mean, 0.08, abs_tol=1e-9)
    assert claim_power("m", _row([0.6, 0.4], verdict="reproduced")) is None  # decided
    assert claim_power("m", _row([0.6, 0.4, 0.5], iv="bootstrap (items)")) is None


def test_a_method_takes_the_largest_affordable_need_and_reports_the_rest():
    entry = {
        "method": "m",
        "seeds": [0, 1, 2, 3, 4],
        "wall_s": 500.0,  # 100 s a seed: 36 affordable in an hour
        "claims": [
            {**_row([0.6, 0.4, 0.7, 0.5, 0.65], "mean >= 0.8 (partial if >= 0.5)"), "id": "a"},
            {**_row([0.51, 0.49, 0.5, 0.52, 0.5], "mean >= 0.5"), "id": "b"},  # needs many
            {**_row([0.9] * 5, verdict="out of scale"), "id": "g", "interval": None},
        ],
    }
    mp = method_power(entry)
    needs = [p.needed for p in mp.claims]
    assert mp.cap == 36 and mp.seeds == max(needs) and mp.undecided_other == ("g",)
    dear = {**entry, "wall_s": 5000.0}  # 1,000 s a seed: only the pilot's 5 are affordable
    assert method_power(dear).seeds == 5
    assert "beyond the budget" in render({"command": "x", "methods": [dear]})
