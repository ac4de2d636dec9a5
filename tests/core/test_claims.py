import math

import pytest

from icml25.core.claims import Claim, Measurement, Rule


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


@pytest.mark.parametrize(
    ("rule", "value", "verdict"),
    [
        (Rule(">=", 0.9, partial=0.7), 0.95, "reproduced"),
        (Rule(">=", 0.9, partial=0.7), 0.9, "reproduced"),
        (Rule(">=", 0.9, partial=0.7), 0.8, "partial"),
        (Rule(">=", 0.9, partial=0.7), 0.5, "not reproduced"),
        (Rule("<=", 1.2, partial=1.5), 1.1, "reproduced"),
        (Rule("<=", 1.2, partial=1.5), 1.3, "partial"),
        (Rule("<=", 1.2), 1.3, "not reproduced"),
        (Rule(">", 0.0), 0.0, "not reproduced"),
        (Rule(">=", 0.0), math.nan, "not reproduced"),
    ],
)
def test_rule_verdicts(rule, value, verdict):
    assert rule.verdict(value) == verdict


def test_rule_uses_mean_over_seeds():
    assert Rule(">=", 0.5).verdict([0.0, 1.0]) == "reproduced"
    assert Rule(">=", 0.5).verdict([0.0, 0.9]) == "not reproduced"


def test_rule_rejects_partial_tighter_than_threshold():
    with pytest.raises(ValueError, match="looser"):
        Rule(">=", 0.5, partial=0.8)
    with pytest.raises(ValueError, match="op"):
        Rule("==", 0.5)  # type: ignore[arg-type]


def test_claim_needs_rule_or_out_of_scale():
    with pytest.raises(ValueError, match="exactly one"):
        Claim("a", "s", "w", "m", rule=None)
    c = Claim("a", "s", "w", "m", rule=None, out_of_scale="needs 1000 GPUs")
    assert c.judge(Measurement.of(1.0)) == "out of scale"
    assert "1000 GPUs" in c.rule_text()
