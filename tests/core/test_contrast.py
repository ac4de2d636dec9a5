"""The paired contrast (method against its null arm), equivalence rules with a sensitivity arm,
and gates read per seed (issue 66's engine)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.core.claims import (
    Claim,
    Gate,
    Interval,
    Measurement,
    Null,
    Rule,
    Sensitivity,
    paired_contrast,
)

UP = Rule(">=", 0.5, partial=0.3)


def _claim(**kw):
    base = dict(id="c", statement="s", where="w", metric="m", rule=UP, null=Null(arm="no mech"))
    return Claim(**{**base, **kw})


def test_a_null_that_passes_the_rule_but_loses_on_every_seed_leaves_the_claim_reproduced():
    method = Measurement.of([0.90, 0.92, 0.91, 0.93, 0.90])
    null = Measurement.of([0.70, 0.71, 0.69, 0.72, 0.70])  # passes >= 0.5 too
    j = _claim().judge(method, null)
    assert j.null_verdict == "reproduced"
    assert j.contrast is not None and j.contrast.verdict == "for"
    assert j.verdict == "reproduced" and "beats its null" in (j.reason or "")


def test_a_null_better_than_the_method_makes_it_not_reproduced():
    method = Measurement.of([0.70, 0.71, 0.69, 0.72])
    null = Measurement.of([0.80, 0.81, 0.79, 0.82])
    j = _claim().judge(method, null)
    assert j.contrast.verdict == "against"
    assert j.verdict == "not reproduced" and "mechanism does not carry it" in j.reason


def test_a_straddling_contrast_with_a_passing_null_is_inconclusive():
    method = Measurement.of([0.9, 0.7, 0.8, 0.75])
    null = Measurement.of([0.8, 0.8, 0.7, 0.85])
    j = _claim().judge(method, null)
    assert j.contrast.verdict == "undecided" and j.verdict == "inconclusive"


def test_a_null_that_fails_keeps_the_verdict_unless_the_contrast_is_against():
    method = Measurement.of([0.9, 0.7, 0.8, 0.75])
    null = Measurement.of([0.2, 0.1, 0.1, 0.15])
    assert _claim().judge(method, null).verdict == "reproduced"
    near = Measurement.of([0.62, 0.6, 0.61, 0.6])
    flat = Measurement.of([0.61, 0.61, 0.6, 0.61])
    # no margin: a straddling contrast does not move a claim whose null fails the rule
    assert _claim(rule=Rule(">=", 0.55)).judge(near, Measurement.of([0.1] * 4)).verdict == (
        "reproduced"
    )
    # with a margin, a contrast at 0 inside it says the mechanism adds nothing
    j = _claim(rule=Rule(">=", 0.5), null=Null(arm="x", margin=0.05)).judge(near, flat)
    assert j.contrast.verdict == "against" and j.verdict == "not reproduced"


def test_downward_rules_mirror_the_contrast():
    rule = Rule("<=", 0.2)
    method = Measurement.of([0.05, 0.06, 0.04, 0.05])
    null = Measurement.of([0.15, 0.16, 0.14, 0.15])
    assert paired_contrast(rule, method, null).verdict == "for"
    assert paired_contrast(rule, null, method).verdict == "against"


def test_items_bootstrapped_need_the_reproductions_own_paired_contrast():
    iv = Interval(0.6, 0.8, method="bootstrap (items)")
    method = Measurement((0.7, 0.7, 0.7), iv)
    null = Measurement((0.6, 0.6, 0.6), iv)
    assert paired_contrast(UP, method, null) is None  # not paired by the engine
    given = Measurement((0.1,), Interval(0.05, 0.15, method="bootstrap (paired)"))
    assert paired_contrast(UP, method, null, given=given).verdict == "for"
    j = _claim().judge(method, null, contrast=given)
    assert j.verdict == "reproduced"


def test_the_contrast_reaches_results_json(tmp_path):
    from icml25.core.runner import claim_entry

    c = _claim()
    row = claim_entry(
        c,
        {"c": Measurement.of([0.9, 0.92, 0.91]), "c/null": Measurement.of([0.7, 0.71, 0.69])},
        None,
    )
    assert row["contrast"]["verdict"] == "for" and len(row["contrast"]["values"]) == 3
    from icml25.core.results import null_text

    assert "method − null 0.21" in null_text(row)


EQ = Rule("within", 0.05)


def test_equivalence_is_two_one_sided_intervals():
    assert EQ.verdict(Measurement.of([0.01, -0.01, 0.0, 0.02])) == "reproduced"
    assert EQ.verdict(Measurement.of([0.3, 0.31, 0.32])) == "not reproduced"
    assert EQ.verdict(Measurement.of([-0.3, -0.31, -0.32])) == "not reproduced"
    assert EQ.verdict(Measurement.of([0.0, 0.1, -0.05, 0.08])) == "inconclusive"
    assert EQ.describe() == "|mean| <= 0.05 (equivalence)"
    with pytest.raises(ValueError, match="margin must be > 0"):
        Rule("within", 0.0)


def test_equivalence_needs_a_sensitivity_arm_that_it_catches():
    same = Measurement.of([0.01, -0.01, 0.0, 0.02])
    bare = _claim(rule=EQ, null=Null(exempt="by construction"))
    assert bare.judge(same).verdict == "inconclusive"
    sens = _claim(rule=EQ, null=Null(exempt="x"), sensitivity=Sensitivity("coarse quantiser"))
    assert sens.judge(same).reason == "sensitivity arm not measured"
    caught = Measurement.of([0.3, 0.31, 0.32])
    assert sens.judge(same, sensitivity=caught).verdict == "reproduced"
    missed = Measurement.of([0.01, 0.0, 0.02])
    j = sens.judge(same, sensitivity=missed)
    assert j.verdict == "inconclusive" and "does not catch a damaged method" in j.reason


def test_a_per_seed_gate_fails_when_one_seed_fails_though_the_mean_passes():
    gate = Measurement.of([0.001, 0.002, 0.0153])  # mean 0.006 passes <= 0.01
    method = Measurement.of([0.9, 0.92, 0.91])
    null = Measurement.of([0.1, 0.1, 0.1])
    on_mean = _claim(gate=Gate("converged", Rule("<=", 0.01)))
    per_seed = _claim(gate=Gate("converged", Rule("<=", 0.01), per_seed=True))
    assert on_mean.judge(method, null, gate).verdict == "reproduced"
    j = per_seed.judge(method, null, gate)
    assert j.verdict == "out of scale" and "1 of 3 seeds fail it" in j.reason


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1, 1), min_size=3, max_size=8),
    st.floats(0.01, 0.5),
)
def test_a_contrast_is_for_exactly_when_its_interval_is_above_zero(diffs, shift):
    null = [0.5 + 0.01 * i for i in range(len(diffs))]
    method = [n + d + shift for n, d in zip(null, diffs, strict=True)]
    pair = paired_contrast(UP, Measurement.of(method), Measurement.of(null))
    assert pair is not None
    iv = pair.measured.interval
    assert (pair.verdict == "for") == (iv.bounded and iv.low > 0)
    assert (pair.verdict == "against") == (iv.bounded and iv.high < 0)


def _results(verdicts, budget="quick"):
    return {
        "schema": 2,
        "created": "t",
        "command": "c",
        "environment": {"python": "3", "platform": "p", "packages": {}, "git_commit": None},
        "methods": [
            {
                "method": "m",
                "paper": {"title": "T", "authors": "A", "venue": "V", "url": "u"},
                "budget": budget,
                "seeds": [0],
                "wall_s": 1.0,
                "claims": [
                    {
                        "id": i,
                        "kind": "claim",
                        "statement": "s",
                        "where": "w",
                        "metric": "x",
                        "paper_value": None,
                        "measured": {"mean": 1.0, "std": 0.0, "n": 1, "values": [1.0]},
                        "interval": None,
                        "rule": "mean >= 0.5",
                        "rule_verdict": v,
                        "verdict": v,
                        "reason": None,
                        "null": None,
                    }
                    for i, v in verdicts.items()
                ],
                "figures": [],
                "notes": [],
                "error": None,
            }
        ],
    }


def test_quick_verdicts_stand_beside_the_published_full_ones_and_only_opposites_are_flagged():
    from icml25.core import report as rep
    from icml25.core.html import render_html
    from icml25.core.results import beside_published, quick_summary

    quick = _results(
        {"a": "reproduced", "b": "inconclusive", "c": "not reproduced", "d": "partial"}
    )
    full = _results(
        {"a": "not reproduced", "b": "reproduced", "c": "not reproduced", "d": "reproduced"},
        budget="full",
    )
    beside_published(quick, full, "docs/reproduction/results.json")
    flags = {c["id"]: c["published"]["disagrees"] for c in quick["methods"][0]["claims"]}
    assert flags == {"a": True, "b": False, "c": False, "d": False}
    summary = quick_summary(quick)
    assert summary is not None
    assert "1 of 4 are inconclusive or out of scale here" in summary
    assert "2 claims are decided here the same way" in summary
    assert "**1 disagree**" in summary and "m.a (reproduced here, not reproduced" in summary
    md = rep.render_markdown(quick)
    assert summary in md and "| not reproduced (disagrees) |" in md
    page = render_html(quick, Path("."))
    assert '<td class="disagrees">not reproduced (disagrees)</td>' in page
    assert quick_summary(full) is None  # a full run needs no such line
