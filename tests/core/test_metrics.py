"""Confidence metrics against scikit-learn, brute force and hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

from icml25.pointwise_info import (
    adaptive_sce,
    aupr_error,
    aurc,
    auroc,
    cc_sce,
    eaurc,
    ece,
    fpr_at_95tpr,
    reliability_diagram,
    risk_coverage,
    rms_sce,
    sce,
)

scores = st.lists(st.integers(0, 6).map(lambda v: v / 6), min_size=4, max_size=40)


@settings(max_examples=60, deadline=None)
@given(scores, st.randoms(use_true_random=False))
def test_auroc_and_aupr_match_sklearn_with_ties(conf, rnd):
    ok = np.array([rnd.random() < 0.6 for _ in conf])
    if ok.all() or not ok.any():
        ok[0] = not ok[0]
    c = np.array(conf)
    assert auroc(c, ok) == pytest.approx(roc_auc_score(ok, c), abs=1e-12)
    assert aupr_error(c, ok) == pytest.approx(average_precision_score(~ok, -c), abs=1e-12)


def test_fpr95_against_sklearn_roc_curve():
    rng = np.random.default_rng(0)
    ok = rng.random(500) < 0.8
    conf = rng.normal(size=500) + ok
    fpr, tpr, _ = roc_curve(ok, conf, drop_intermediate=False)
    expected = fpr[np.argmax(tpr >= 0.95)]
    assert fpr_at_95tpr(conf, ok) == pytest.approx(expected, abs=1e-12)


def test_fpr95_by_hand():
    # 20 correct with confidences 1..20, 2 errors at 0.5 and 10.5: accepting 95% of the
    # correct ones (19 of 20) means the threshold 2, which accepts the error at 10.5 only.
    conf = np.r_[np.arange(1, 21), 0.5, 10.5]
    ok = np.r_[np.ones(20, bool), np.zeros(2, bool)]
    assert fpr_at_95tpr(conf, ok) == 0.5


def test_risk_coverage_aurc_eaurc_by_hand():
    conf = np.array([0.9, 0.8, 0.7, 0.6])
    ok = np.array([True, False, True, False])
    cov, risk = risk_coverage(conf, ok)
    np.testing.assert_allclose(cov, [0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(risk, [0, 1 / 2, 1 / 3, 2 / 4])
    assert aurc(conf, ok) == pytest.approx((0 + 0.5 + 1 / 3 + 0.5) / 4)
    r = 0.5
    assert eaurc(conf, ok) == pytest.approx(aurc(conf, ok) - (r + (1 - r) * math.log(1 - r)))


def test_eaurc_of_a_perfect_ranking_is_near_zero():
    n = 20_000
    ok = np.arange(n) >= 2_000  # 10% errors, ranked below every correct prediction
    conf = np.arange(n, dtype=float)
    assert abs(eaurc(conf, ok)) < 1e-3


def test_ece_and_reliability_by_hand():
    conf = np.array([0.05, 0.95, 0.95, 0.55])
    ok = np.array([False, True, False, True])
    d = reliability_diagram(conf, ok, n_bins=10)
    assert d["count"].tolist() == [1, 0, 0, 0, 0, 1, 0, 0, 0, 2]
    # bins: {0.05: acc 0}, {0.55: acc 1}, {0.95, 0.95: acc 1/2}
    expected = (0.05 + 0.45 + 2 * 0.45) / 4
    assert ece(conf, ok, n_bins=10) == pytest.approx(expected)


def test_ece_bins_are_right_closed():
    # 1/15 lies on a bin edge: it belongs to the first bin, with 0
    d = reliability_diagram(np.array([0.0, 1 / 15, 0.0667]), np.array([1, 1, 1]), 15)
    assert d["count"][0] == 2 and d["count"][1] == 1


def test_sce_by_hand_and_its_variants():
    probs = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
    y = np.array([0, 1, 1])
    # class 0 column 0.9 (hit), 0.6 (miss), 0.2 (miss); 2 bins (<= .5, > .5)
    #   bin1 {0.2}: |0.2 - 0| = .2, weight 1/3;  bin2 {0.9, 0.6}: |0.75 - 0.5| = .25, weight 2/3
    # class 1 column 0.1 (miss), 0.4 (hit), 0.8 (hit)
    #   bin1 {0.1, 0.4}: |0.25 - 0.5| = .25, weight 2/3;  bin2 {0.8}: |0.8 - 1| = .2, weight 1/3
    c0 = 0.2 / 3 + 0.25 * 2 / 3
    c1 = 0.25 * 2 / 3 + 0.2 / 3
    assert sce(probs, y, n_bins=2) == pytest.approx((c0 + c1) / 2)
    r0 = 0.2**2 / 3 + 0.25**2 * 2 / 3
    assert rms_sce(probs, y, n_bins=2) == pytest.approx(math.sqrt((r0 + r0) / 2))
    # adaptive with 3 bins of one sample each: mean |p - hit| over all entries
    p_flat, hits = probs.ravel(), (np.arange(2)[None, :] == y[:, None]).ravel()
    assert adaptive_sce(probs, y, n_bins=3) == pytest.approx(np.mean(np.abs(p_flat - hits)))


def test_cc_sce_by_hand():
    probs = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.3, 0.7], [0.45, 0.55]])
    y = np.array([0, 1, 1, 0, 1])
    # predicted 0: rows 0, 1 (p_0 = 0.9 hit, 0.6 miss), both in bin (.5, 1]:
    #   |0.75 - 0.5| = 0.25 with weight 2/2
    # predicted 1: rows 2, 3, 4 (p_1 = 0.8 hit, 0.7 miss, 0.55 hit), all in bin (.5, 1]:
    #   |0.6833 - 2/3| with weight 3/3
    c0, c1 = 0.25, abs((0.8 + 0.7 + 0.55) / 3 - 2 / 3)
    assert cc_sce(probs, y, n_bins=2) == pytest.approx((c0 + c1) / 2)
    # with 10 bins the predicted-1 samples split: {0.55}: .45, {0.7}: .7, {0.8}: .2
    c1_10 = (0.45 + 0.7 + 0.2) / 3
    c0_10 = (0.1 + 0.6) / 2  # {0.6}: |0.6 - 0| and {0.9}: |0.9 - 1|
    assert cc_sce(probs, y, n_bins=10) == pytest.approx((c0_10 + c1_10) / 2)
    # a class never predicted does not enter the mean
    three = np.c_[probs * 0.9, np.full(5, 0.1)]
    assert np.isfinite(cc_sce(three, y, n_bins=2))


def test_perfectly_calibrated_labels_give_small_errors():
    rng = np.random.default_rng(0)
    p1 = rng.random(200_000)
    y = (rng.random(len(p1)) < p1).astype(int)
    probs = np.c_[1 - p1, p1]
    assert sce(probs, y) < 0.005
    assert cc_sce(probs, y) < 0.005
    assert ece(probs.max(1), probs.argmax(1) == y) < 0.005


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: auroc([0.1, 0.2], [1, 0, 1]), "correct must have shape"),
        (lambda: auroc([0.1, np.nan], [1, 0]), "confidence must be finite"),
        (lambda: auroc([0.1, 0.2], [1, 1]), "needs both correct and wrong"),
        (lambda: auroc([0.1, 0.2], [2, 0]), "booleans or 0/1"),
        (lambda: ece([1.5, 0.2], [1, 0]), r"probabilities in \[0, 1\]"),
        (lambda: sce([[0.5, 0.6], [0.5, 0.5]], [0, 1]), "rows must sum to 1"),
        (lambda: sce([[0.5, 0.5], [0.5, 0.5]], [0, 2]), r"class indices in \[0, 2\)"),
        (lambda: sce([[0.5, 0.5], [0.5, 0.5]], [0]), r"must have shape \(2,\)"),
        (lambda: sce([[1.5, -0.5], [0.5, 0.5]], [0, 1]), "non-negative"),
        (lambda: ece([0.5], [1], n_bins=0), "n_bins must be a positive integer"),
    ],
)
def test_bad_input_says_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()
