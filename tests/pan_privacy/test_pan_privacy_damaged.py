"""The T-ratio claims' sensitivity arms: the information-theoretic noisy switch (pan-private,
error growing with T) and the per-step-budget counter (error shrinking with T), checked
against exact enumeration and closed forms, and wired into the claims' verdicts."""

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.core.claims import Measurement, sensitivity_key
from icml25.pan_privacy import keep_probability
from icml25.pan_privacy.baselines import (
    NoisySwitchDevice,
    PerStepBudgetCounter,
    flip_probability,
    switch_signal,
    switch_step,
)
from icml25.pan_privacy.claims import CLAIMS
from icml25.pan_privacy.experiments import DAMAGED, Budget, damaged_counting

BY_ID = {c.id: c for c in CLAIMS}
EPS = st.floats(0.05, 4.0)


def kernel(a: int, b: int, event: bool, eps: float) -> dict[tuple[int, int], float]:
    """The exact law of the next state (a', b') of the noisy switch, by enumerating its two
    noise bits."""
    q = flip_probability(eps)
    law: dict[tuple[int, int], float] = {}
    for fa, fb in itertools.product((0, 1), repeat=2):
        w = (q if fa else 1 - q) * (q if fb else 1 - q)
        nxt = switch_step(a, b, event, fa, fb)
        law[nxt] = law.get(nxt, 0.0) + w
    return law


@given(EPS)
def test_one_step_of_the_noisy_switch_is_eps_dp(eps):
    """An intruder who reads the state before and after a step (any number of times: the
    trajectory's likelihood ratio is the differing step's) sees the event at level e^eps."""
    worst = 0.0
    for a, b in itertools.product((0, 1), repeat=2):
        with_event, without = kernel(a, b, True, eps), kernel(a, b, False, eps)
        assert set(with_event) == set(without)  # full support: a pure-DP ratio exists
        ratios = [max(with_event[s] / without[s], without[s] / with_event[s]) for s in without]
        if a == b:
            assert max(ratios) == pytest.approx(1.0)  # nothing to hide
        worst = max(worst, *ratios)
    assert worst == pytest.approx(math.exp(eps), rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=0, max_size=14), EPS)
def test_noisy_switch_report_keeps_the_seen_bit_as_the_closed_form_says(events, eps):
    """Exact: the Markov chain over (a, b) from a = RR(0), b = RR(1); the report keeps the
    seen bit with probability (1 + tanh(eps/2)^(T+1)) / 2 whatever the events' timing."""
    p = keep_probability(eps)
    law = {
        (a, b): (p if a == 0 else 1 - p) * (p if b == 1 else 1 - p) for a in (0, 1) for b in (0, 1)
    }
    for e in events:
        nxt: dict[tuple[int, int], float] = {}
        for (a, b), w in law.items():
            for s, v in kernel(a, b, e, eps).items():
                nxt[s] = nxt.get(s, 0.0) + w * v
        law = nxt
    seen = int(any(events))
    keep = sum(w for (a, _), w in law.items() if a == seen)
    assert keep == pytest.approx((1 + switch_signal(len(events), eps)) / 2, abs=1e-12)
    assert switch_signal(0, eps) == pytest.approx(2 * p - 1)  # T = 0: plain randomized response


@pytest.mark.parametrize("events", [[False, True, False], [False] * 3, [True, True, False]])
def test_the_device_class_follows_the_closed_form(events):
    rng, n = random.Random(11), 30_000
    seen = int(any(events))
    hits = 0
    for _ in range(n):
        dev = NoisySwitchDevice(1.0, rng)
        dev.run(events)
        assert len(dev.state()) == 2 and dev.steps == len(events)
        hits += dev.report() == seen
    keep = (1 + switch_signal(len(events), 1.0)) / 2
    assert abs(hits / n - keep) < 4.5 * math.sqrt(keep * (1 - keep) / n)


def standardised_variance(T: int, eps: float) -> float:
    """The noisy switch's per-device variance of its debiased estimate over the protocol's:
    the square of its RMS standardised group error (the protocol's is 1)."""
    p, s = keep_probability(eps), switch_signal(T, eps)
    return ((1 - s * s) / 4 / s**2) / (p * (1 - p) / (2 * p - 1) ** 2)


@given(st.floats(0.5, 4.0), st.integers(0, 60), st.integers(1, 60))  # no float underflow
def test_noisy_switch_error_grows_with_T(eps, T, extra):
    assert standardised_variance(0, eps) == pytest.approx(1.0)  # T = 0: the protocol's error
    assert standardised_variance(T + extra, eps) > standardised_variance(T, eps)
    # at least by the factor tanh(eps/2)^-extra (the debiasing divides by the signal)
    ratio = math.sqrt(standardised_variance(T + extra, eps) / standardised_variance(T, eps))
    assert ratio >= (1 - 1e-9) * math.tanh(eps / 2) ** -extra


def test_the_budgets_horizons_put_both_arms_beyond_their_rules():
    """Closed forms at eps = 1: the noisy switch's error ratio is far above the partial
    threshold 2 (T = 10 -> 100 and tiny's 3 -> 10); the per-step counter's, sqrt(T_s / T_l),
    is below 0.5 at T = 10 -> 100 (tiny's sqrt(3/10) = 0.55 is not: tiny cannot decide)."""
    for t_short, t_long in ((10, 100), (3, 10)):
        growing = math.sqrt(
            standardised_variance(t_long, 1.0) / standardised_variance(t_short, 1.0)
        )
        assert growing > 2.0
    assert math.sqrt(10 / 100) < 0.5 < math.sqrt(3 / 10)


def test_per_step_budget_counter_reports_T_randomized_responses():
    rng = random.Random(2)
    c = PerStepBudgetCounter(1.0, rng)
    c.run([False, True, False, False])
    assert c.state() == b"\x01" and c.steps == 4
    assert PerStepBudgetCounter(1.0, rng).report() == []  # no steps, no reports
    p = keep_probability(1.0)
    reps = []
    for _ in range(4000):
        d = PerStepBudgetCounter(1.0, rng)
        d.run([True] * 16)
        reps.append(np.mean(d.report()))
    assert np.mean(reps) == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / 16 / 4000))
    assert np.var(reps) == pytest.approx(p * (1 - p) / 16, rel=0.1)


CFG = Budget(n=2000, horizons=(2, 32), trials=10, game_T=4)


def measured_arm(arm: str) -> Measurement:
    """The arm's measurement as the reproduction makes it (one seed, its 20 groups)."""
    rows = np.array([damaged_counting(CFG, 0, T, arm) for T in CFG.horizons]).T

    def t_ratio(r: np.ndarray) -> float:
        return float(np.sqrt(np.mean(r[:, -1] ** 2) / np.mean(r[:, 0] ** 2)))

    return Measurement.bootstrap([rows], statistic=t_ratio)


def test_both_arms_are_caught_by_their_claims_rules():
    growing = measured_arm("noisy switch")
    closed = math.sqrt(standardised_variance(32, 1.0) / standardised_variance(2, 1.0))
    assert growing.interval.low > 2.0 and growing.mean == pytest.approx(closed, rel=0.5)
    assert BY_ID["error_independent_of_T"].rule.verdict(growing) == "not reproduced"
    shrinking = measured_arm("per-step budget")
    assert shrinking.mean == pytest.approx(math.sqrt(2 / 32), rel=0.3)
    assert BY_ID["error_not_smaller_for_large_T"].rule.verdict(shrinking) == "not reproduced"
    # the growing counter passes ">= 0.7": it could not be the not-smaller claim's arm
    assert BY_ID["error_not_smaller_for_large_T"].rule.verdict(growing) == "reproduced"


def test_the_claims_are_inconclusive_unless_their_arm_is_caught():
    method = Measurement.with_interval(1.0, 0.9, 1.2, "a passing ratio, for the test")
    caught = {
        "error_independent_of_T": Measurement.with_interval(3.2, 2.6, 3.9, "test"),
        "error_not_smaller_for_large_T": Measurement.with_interval(0.32, 0.26, 0.4, "test"),
    }
    for claim_id, arm in DAMAGED.items():
        claim = BY_ID[claim_id]
        assert claim.sensitivity is not None and claim.null is not None
        assert claim.null.exempt is not None  # no measured null arm: see T_EXEMPT
        assert claim.judge(method, sensitivity=caught[claim_id]).verdict == "reproduced"
        missing = claim.judge(method)
        assert (missing.verdict, missing.reason) == ("inconclusive", "sensitivity arm not measured")
        missed = claim.judge(method, sensitivity=method)  # a damaged arm as good as the method
        assert missed.verdict == "inconclusive", arm
        assert "does not catch a damaged method" in (missed.reason or "")
        assert sensitivity_key(claim_id) == f"{claim_id}/sensitivity"


def test_the_tiny_run_measures_both_sensitivity_arms(tiny_run):
    entry, _ = tiny_run("pan_privacy")
    assert entry["error"] is None, entry["error"]
    rows = {c["id"]: c for c in entry["claims"]}
    for claim_id in DAMAGED:
        sens = rows[claim_id]["sensitivity"]
        assert sens["measured"] is not None and sens["interval"] is not None, claim_id
    # tiny's horizons (3, 10) already put the growing counter far above the rule
    assert rows["error_independent_of_T"]["sensitivity"]["verdict"] == "not reproduced"
