import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from icml25.core.claims import (
    Claim,
    Gate,
    Interval,
    Measurement,
    Null,
    Rule,
    bootstrap_interval,
    t_interval,
)


def test_measurement_mean_std_match_statistics():
    import statistics

    vals = [0.1, 0.4, 0.35, 0.9]
    m = Measurement.of(vals)
    assert m.mean == pytest.approx(statistics.fmean(vals))
    assert m.std == pytest.approx(statistics.stdev(vals))
    assert Measurement.of(3.0).std == 0.0


def test_measurement_json_round_trip_keeps_nonfinite():
    m = Measurement.of([1.0, math.inf])
    back = Measurement.from_json(m.to_json())
    assert back.values == m.values


# --- intervals ------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=3, max_size=12),
    st.sampled_from([0.8, 0.9, 0.95]),
)
def test_t_interval_matches_scipy(values, level):
    iv = t_interval(values, level)
    sem = stats.sem(values)
    if sem == 0 or not np.isfinite(sem):
        assert iv.low == pytest.approx(np.mean(values)) and iv.high == pytest.approx(iv.low)
        return
    low, high = stats.t.interval(level, len(values) - 1, loc=np.mean(values), scale=sem)
    assert iv.low == pytest.approx(low, rel=1e-9, abs=1e-9)
    assert iv.high == pytest.approx(high, rel=1e-9, abs=1e-9)
    assert iv.method == f"t (n={len(values)})" and iv.level == level


def test_fewer_than_three_values_give_no_interval():
    for vals in ([0.5], [0.4, 0.6]):
        iv = Measurement.of(vals).interval
        assert iv.low == -math.inf and iv.high == math.inf and iv.method.startswith("none")
    assert Rule(">=", 0.0).verdict([5.0, 6.0]) == "inconclusive"


def test_exact_interval_is_the_mean():
    m = Measurement.exact([1.0, 1.0, 0.5])
    assert (m.interval.low, m.interval.high, m.interval.method) == (m.mean, m.mean, "exact")
    assert Rule(">=", 1.0).verdict(m) == "not reproduced"
    assert Rule(">=", 1.0).verdict(Measurement.exact(1.0)) == "reproduced"


def test_bootstrap_matches_scipy_percentile():
    rng = np.random.default_rng(0)
    x = rng.exponential(size=60)
    m = Measurement.bootstrap([x], n_boot=20_000, seed=1)
    ref = stats.bootstrap(
        (x,), np.mean, n_resamples=20_000, confidence_level=0.9, method="percentile", rng=2
    ).confidence_interval
    se = x.std() / math.sqrt(x.size)
    assert m.values == (pytest.approx(x.mean()),)
    assert abs(m.interval.low - ref.low) < 0.05 * se * 4
    assert abs(m.interval.high - ref.high) < 0.05 * se * 4
    # a statistic passed as a function gives the same distribution
    f = Measurement.bootstrap([x], statistic=lambda a: float(np.mean(a)), n_boot=20_000, seed=1)
    assert f.interval.low == pytest.approx(m.interval.low, abs=1e-12)


def test_bootstrap_against_exact_enumeration():
    """On 5 items all 5^5 resamples can be enumerated: the percentile interval of a large
    bootstrap must sit at the exact distribution's quantiles."""
    x = np.array([0.0, 1.0, 1.0, 3.0, 7.0])
    exact = np.array([x[list(idx)].mean() for idx in itertools.product(range(5), repeat=5)])
    lo, hi = np.quantile(exact, [0.05, 0.95])
    m = Measurement.bootstrap([x], n_boot=200_000, seed=3)
    # Monte Carlo error of a quantile at 200k draws is far below one atom of this distribution
    atoms = np.unique(exact)
    step = np.min(np.diff(atoms))
    assert abs(m.interval.low - lo) <= step + 1e-9
    assert abs(m.interval.high - hi) <= step + 1e-9


def test_bootstrap_paired_rows_and_strata():
    rng = np.random.default_rng(5)
    # paired (score, label) rows: a statistic over rows, one group per seed
    groups = []
    for _ in range(3):
        y = rng.integers(0, 2, 80)
        s = y + rng.normal(0, 1.0, 80)
        groups.append(np.column_stack([s, y]))

    def auc(rows):
        from sklearn.metrics import roc_auc_score

        return float(roc_auc_score(rows[:, 1], rows[:, 0]))

    m = Measurement.bootstrap(groups, statistic=auc, n_boot=300)
    assert len(m.values) == 3
    assert m.values[0] == pytest.approx(auc(groups[0]))
    assert m.interval.low < m.mean < m.interval.high
    assert "240 items in 3 seeds" in m.interval.method
    # strata: the interval of the mean of 3 seeds is narrower than one seed's
    one = Measurement.bootstrap(groups[:1], statistic=auc, n_boot=300)
    assert (m.interval.high - m.interval.low) < (one.interval.high - one.interval.low)


def test_bootstrap_coverage_is_near_nominal():
    """Over many samples of a known distribution the 90% interval covers the mean ~90%."""
    rng = np.random.default_rng(11)
    hits = 0
    trials = 300
    for t in range(trials):
        x = rng.normal(2.0, 1.0, 40)
        iv = Measurement.bootstrap([x], n_boot=400, seed=t).interval
        hits += iv.low <= 2.0 <= iv.high
    assert 0.83 <= hits / trials <= 0.95


def test_bootstrap_rejects_bad_groups():
    with pytest.raises(ValueError, match="at least one group"):
        bootstrap_interval([])
    with pytest.raises(ValueError, match=">= 2 items"):
        bootstrap_interval([[1.0]])
    with pytest.raises(ValueError, match="statistic="):
        bootstrap_interval([np.ones((4, 2))])
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_interval([[1.0, 2.0]], n_boot=5)


def test_interval_validation():
    with pytest.raises(ValueError, match="low must be <= high"):
        Interval(1.0, 0.0)
    with pytest.raises(ValueError, match="level"):
        Interval(0.0, 1.0, level=1.5)


# --- the verdict table ----------------------------------------------------------------------


def _iv(low, high):
    return Measurement.with_interval((low + high) / 2, low, high, "given")


@pytest.mark.parametrize(
    ("rule", "low", "high", "verdict"),
    [
        # >= 0.9 (partial >= 0.7)
        (Rule(">=", 0.9, partial=0.7), 0.92, 0.99, "reproduced"),
        (Rule(">=", 0.9, partial=0.7), 0.90, 0.95, "reproduced"),
        (Rule(">=", 0.9, partial=0.7), 0.75, 0.85, "partial"),
        (Rule(">=", 0.9, partial=0.7), 0.75, 0.95, "partial"),  # clears p, straddles t
        (Rule(">=", 0.9, partial=0.7), 0.60, 0.80, "inconclusive"),  # straddles p
        (Rule(">=", 0.9, partial=0.7), 0.60, 0.95, "inconclusive"),
        (Rule(">=", 0.9, partial=0.7), 0.30, 0.69, "not reproduced"),
        # >= 0.9 without a partial band
        (Rule(">=", 0.9), 0.91, 0.95, "reproduced"),
        (Rule(">=", 0.9), 0.85, 0.95, "inconclusive"),
        (Rule(">=", 0.9), 0.80, 0.89, "not reproduced"),
        # <= 1.2 (partial <= 1.5): mirrored
        (Rule("<=", 1.2, partial=1.5), 1.0, 1.2, "reproduced"),
        (Rule("<=", 1.2, partial=1.5), 1.1, 1.4, "partial"),
        (Rule("<=", 1.2, partial=1.5), 1.3, 1.6, "inconclusive"),
        (Rule("<=", 1.2, partial=1.5), 1.51, 1.9, "not reproduced"),
        (Rule("<=", 1.2), 1.1, 1.3, "inconclusive"),
        (Rule("<=", 1.2), 1.21, 1.3, "not reproduced"),
        # strict comparisons
        (Rule(">", 0.0), 0.0, 0.5, "inconclusive"),
        (Rule(">", 0.0), 0.01, 0.5, "reproduced"),
        (Rule(">", 0.0), -0.5, 0.0, "not reproduced"),
        (Rule("<", 1.0), 0.5, 1.0, "inconclusive"),
        (Rule("<", 1.0), 1.0, 1.5, "not reproduced"),
        # unbounded
        (Rule(">=", 0.0), -math.inf, math.inf, "inconclusive"),
    ],
)
def test_rule_verdict_table(rule, low, high, verdict):
    center = 0.5 * (low + high) if math.isfinite(low + high) else 0.0
    assert rule.verdict(Measurement((center,), Interval(low, high, 0.9, "given"))) == verdict


def test_nonfinite_mean_is_not_reproduced():
    assert Rule(">=", 0.0).verdict(Measurement.exact(math.nan)) == "not reproduced"
    assert Rule("<=", 0.0).verdict([math.inf, 1.0, 2.0]) == "not reproduced"


@settings(max_examples=200, deadline=None)
@given(
    st.floats(-5, 5),
    st.floats(0, 3),
    st.floats(-2, 2),
    st.floats(0, 2),
    st.sampled_from([">=", "<="]),
)
def test_verdict_agrees_with_its_definition(center, width, threshold, band, op):
    """Property: the verdict is what the definitions in the module docstring say."""
    partial = threshold - band if op == ">=" else threshold + band
    rule = Rule(op, threshold, partial=partial)
    low, high = center - width, center + width
    v = rule.verdict(Measurement((center,), Interval(low, high, 0.9, "g")))
    sign = 1 if op == ">=" else -1
    worst, best = (low, high) if op == ">=" else (high, low)
    if sign * (worst - threshold) >= 0:
        assert v == "reproduced"
    elif sign * (best - partial) < 0:
        assert v == "not reproduced"
    elif sign * (worst - partial) >= 0:
        assert v == "partial"
    else:
        assert v == "inconclusive"


def test_rule_rejects_partial_tighter_than_threshold():
    with pytest.raises(ValueError, match="looser"):
        Rule(">=", 0.5, partial=0.8)
    with pytest.raises(ValueError, match="op"):
        Rule("==", 0.5)  # type: ignore[arg-type]


def test_claim_needs_rule_or_out_of_scale():
    with pytest.raises(ValueError, match="exactly one"):
        Claim("a", "s", "w", "m", rule=None)
    c = Claim("a", "s", "w", "m", rule=None, out_of_scale="needs 1000 GPUs")
    assert c.judge(Measurement.of(1.0)).verdict == "out of scale"
    assert "1000 GPUs" in c.rule_text()
    with pytest.raises(ValueError, match="'/'"):
        Claim("a/b", "s", "w", "m", Rule(">=", 0))


# --- null arms and gates --------------------------------------------------------------------

PASS = Measurement.exact(0.95)
PART = Measurement.exact(0.8)
FAIL = Measurement.exact(0.1)
WIDE = _iv(0.5, 0.99)


ARM = Null(arm="no mechanism")


def _claim(null=ARM, gate=None, kind="claim"):
    return Claim("c", "s", "w", "m", Rule(">=", 0.9, partial=0.7), kind=kind, null=null, gate=gate)


@pytest.mark.parametrize(
    ("measured", "null", "verdict", "reason"),
    [
        (PASS, FAIL, "reproduced", None),
        (PASS, PASS, "inconclusive", "is reproduced"),
        (PASS, PART, "inconclusive", "is partial"),
        (PART, PART, "inconclusive", "is partial"),
        (PART, FAIL, "partial", None),
        (PASS, WIDE, "reproduced", None),  # a null that may pass but need not: not blocking
        (FAIL, PASS, "not reproduced", None),  # a failure stays a failure
        (PASS, None, "inconclusive", "not measured"),
        (WIDE, FAIL, "inconclusive", "straddles"),
    ],
)
def test_null_arm_logic(measured, null, verdict, reason):
    j = _claim().judge(measured, null)
    assert j.verdict == verdict
    if reason is None:
        assert j.reason is None
    else:
        assert reason in j.reason


def test_an_unmeasured_claim_is_out_of_scale_with_a_reason():
    j = _claim().judge(None, FAIL)
    assert j.verdict == "out of scale" and j.reason and "not measured" in j.reason


def test_missing_null_blocks_claims_not_controls_and_exemptions_count():
    assert _claim(null=None).judge(PASS).verdict == "inconclusive"
    assert _claim(null=None).judge(PASS).reason == "no null arm declared"
    assert _claim(null=None, kind="control").judge(PASS).verdict == "reproduced"
    assert _claim(null=Null(exempt="a theorem")).judge(PASS).verdict == "reproduced"
    with pytest.raises(ValueError, match="exactly one"):
        Null()
    with pytest.raises(ValueError, match="exactly one"):
        Null(arm="x", exempt="y")
    with pytest.raises(ValueError, match="empty"):
        Null(arm=" ")


def test_gate_logic():
    gated = _claim(gate=Gate("ceiling arm accuracy"))
    failed = gated.judge(FAIL, FAIL, gate=Measurement.exact(0.5))
    assert failed.verdict == "out of scale" and failed.gate_passed is False
    assert "ceiling arm accuracy = 0.5" in failed.reason and "needs >= 0.9" in failed.reason
    # a failed gate decides even a passing measurement
    assert gated.judge(PASS, FAIL, gate=Measurement.exact(0.5)).verdict == "out of scale"
    ok = gated.judge(FAIL, FAIL, gate=Measurement.exact(0.97))
    assert ok.verdict == "not reproduced" and ok.gate_passed is True
    assert gated.judge(PASS, FAIL, gate=None).verdict == "inconclusive"
    # a gate with its own rule
    own = _claim(gate=Gate("few-shot minus zero-shot", Rule(">=", 0.05)))
    assert own.judge(FAIL, FAIL, gate=Measurement.exact(0.06)).verdict == "not reproduced"
    assert own.judge(FAIL, FAIL, gate=Measurement.exact(0.01)).verdict == "out of scale"
    assert own.judge(FAIL, FAIL, gate=Measurement.exact(math.nan)).verdict == "out of scale"


# --- claim texts name the sizes of the budget that ran (issue 56) ------------------------------


def test_sized_fills_every_text_field_and_formats_integers():
    c = Claim(
        "x",
        "On {{n}} instances the gap is small.",
        "Thm. 1",
        "max gap over {{n}} instances of dimension d = {{d}}; D^{-1/2} K stays as written",
        Rule("<=", 0.1),
        paper_value="exact at d = {{d}}",
        null=Null(arm="the same {{n}} instances shuffled"),
        gate=Gate("{{n}} >= 10 instances reach the bound"),
    )
    assert c.size_names() == {"n", "d"}
    s = c.sized({"n": 1200, "d": 0.5})
    assert s.statement == "On 1,200 instances the gap is small."
    assert (
        s.metric == "max gap over 1,200 instances of dimension d = 0.5; D^{-1/2} K stays as written"
    )
    assert s.paper_value == "exact at d = 0.5"
    assert s.null is not None and s.null.arm == "the same 1,200 instances shuffled"
    assert s.gate is not None and s.gate.check == "1,200 >= 10 instances reach the bound"
    assert s.gate.rule is None and s.rule == c.rule and s.size_names() == set()
    # a text without placeholders is returned as it is, a number untouched
    plain = Claim("y", "s", "w", "m", Rule(">=", 1.0), paper_value=3.0, null=Null(exempt="r"))
    assert plain.sized({}) == plain


def test_sized_names_a_missing_size():
    c = Claim("x", "s", "w", "{{n_test}} images", Rule(">=", 1.0), null=Null(exempt="r"))
    with pytest.raises(KeyError, match=r"n_test.*gives only \['n'\]"):
        c.sized({"n": 3})
