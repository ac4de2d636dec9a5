"""The reproduction's null arms (issue 48): ridge toward the origin, no pull, a fixed lambda."""

import numpy as np
import pytest

from icml25.pfl_tradeoff import experiments as E
from icml25.pfl_tradeoff.fedclup import pfl_optimum


def test_ridge_null_is_local_at_zero_and_shrinks_to_the_origin() -> None:
    problems, _, w_star = E.synthetic(np.random.default_rng(0), 0.5)
    _, local = pfl_optimum(problems, 0.0)
    want = np.mean([np.sum((w - ws) ** 2) for w, ws in zip(local, w_star, strict=True)])
    assert E.ridge_error(problems, w_star, 0.0) == pytest.approx(want, rel=1e-10)
    far = E.ridge_error(problems, w_star, 1e9)
    assert far == pytest.approx(np.mean(np.sum(w_star**2, axis=1)), rel=1e-6)
    # brute force: each client's ridge solution zeroes its objective's gradient
    lam, pr = 0.7, problems[3]
    w = np.linalg.solve(pr.A + lam * np.eye(pr.dim), pr.b)
    np.testing.assert_allclose(pr.grad(w) + lam * w, 0, atol=1e-12)


def test_no_pull_scores_every_lambda_arm_as_local_training() -> None:
    rows = [(0.0, 90.0, 0.1), (0.1, 92.0, 0.2), (0.5, 91.0, 0.3), (np.nan, 89.0, 0.1)]
    rows.append((np.inf, 80.0, 0.5))
    null = E._no_pull(rows, 2)
    assert [r[1] for r in null] == [90.0, 90.0, 90.0, 89.0, 80.0]
    assert E._interior(rows, 2) == pytest.approx(2.0)
    assert E._interior(null, 2) == 0.0  # ties local: the null cannot show a gain
    # FedAvg ahead: the null's interior value is local - FedAvg < 0
    rows[-1] = (np.inf, 95.0, 0.5)
    assert E._interior(E._no_pull(rows, 2), 2) == pytest.approx(-5.0)


def _cnn_table(accs: dict[int, list[float]]) -> dict[int, list[tuple[float, float, float]]]:
    """A CNN sweep: per c, rows local, the CNN's fixed lambdas and FedAvg with these accuracies."""
    lams = [0.0, *E.CNN_LAMBDAS, np.inf]
    return {c: [(lam, a, 0.0) for lam, a in zip(lams, acc, strict=True)] for c, acc in accs.items()}


def _cnn_moves(table: dict[int, list[tuple[float, float, float]]]) -> tuple[float, float]:
    """(image_cnn_best_lambda_moves_with_c, its null) from one seed's CNN table."""
    im = {"logreg": _LR_TABLE, "cnn": table}
    out = E.image_measurements(im)
    return out["image_cnn_best_lambda_moves_with_c"], out["image_cnn_best_lambda_moves_with_c/null"]


_LR_TABLE = {
    c: [(lam, 50.0 + i, 0.0) for i, lam in enumerate([0.0, *E.IMG_LAMBDAS, np.nan, np.inf])]
    for c in (2, 6, 10)
}


def _whole_axis_best(rows: list[tuple[float, float, float]]) -> float:
    """The statistic before issue 66: the best arm's mean position on local < lambdas < FedAvg
    (the adaptive arm, when there is one, left out)."""
    axis = [r for r in rows if not np.isnan(r[0])]
    accs = np.array([r[1] for r in axis])
    return float(np.mean(np.flatnonzero(accs >= accs.max() - 1e-9)))


def test_logreg_moves_statistic_reads_the_lambda_grid_so_the_ends_only_null_cannot_pass() -> None:
    """Issue 66: the logistic regression's statistic had the same flaw as the CNN's: with the
    ends crossing, the whole-axis position gave the no-pull null 0.866. On the lambda grid alone
    the null scores 0 and a best lambda that grows with c scores 1."""
    lams = E.IMG_LAMBDAS
    n = len(lams)

    def table(best: dict[int, int]) -> dict[int, list[tuple[float, float, float]]]:
        # local, the fixed lambdas (the best one at index best[c]), adaptive, FedAvg;
        # local wins against FedAvg at c = 2 and loses at 6 and 10 (the ends cross)
        out = {}
        for c, k in best.items():
            local, fedavg = (90.0, 60.0) if c == 2 else (60.0, 90.0)
            accs = [70.0 + (10.0 if i == k else 0.0) for i in range(n)]
            out[c] = [
                (0.0, local, 0.0),
                *zip(lams, accs, [0.0] * n, strict=True),
                (np.nan, 0.0, 0.0),
                (np.inf, fedavg, 0.0),
            ]
        return out

    grows = table({2: 0, 6: n // 2, 10: n - 1})
    out = E.image_measurements(
        {
            "logreg": grows,
            "cnn": _cnn_table({c: [90.0, 91.0, 92.0, 93.0, 94.0] for c in (2, 6, 10)}),
        }
    )
    assert out["image_best_lambda_moves_with_c"] == pytest.approx(1.0)
    assert out["image_best_lambda_moves_with_c/null"] == 0.0
    nulls = {c: E._no_pull(grows[c], n) for c in grows}
    old = E._spearman(list(nulls), [_whole_axis_best(nulls[c]) for c in nulls])
    assert old == pytest.approx(np.sqrt(3) / 2)  # the old statistic let the null pass 0.7
    shrinks = table({2: n - 1, 6: n // 2, 10: 0})
    out = E.image_measurements(
        {
            "logreg": shrinks,
            "cnn": _cnn_table({c: [90.0, 91.0, 92.0, 93.0, 94.0] for c in (2, 6, 10)}),
        }
    )
    assert out["image_best_lambda_moves_with_c"] == pytest.approx(-1.0)


def test_cnn_moves_statistic_reads_the_lambda_grid_so_the_ends_only_null_cannot_pass() -> None:
    """Issue 66: with the ends crossing (local best at c = 2, FedAvg at 6 and 10) the old
    whole-axis statistic gave the no-pull null 0.866 > 0.7; on FedCLUP's lambda grid alone the
    null's lambda arms tie at every c, so it scores 0, while a best lambda that grows scores 1."""
    moving = _cnn_table(
        {
            2: [95.0, 94.0, 93.0, 92.0, 80.0],
            6: [80.0, 82.0, 84.0, 83.0, 85.0],
            10: [70.0, 72.0, 74.0, 76.0, 78.0],
        }
    )
    value, null = _cnn_moves(moving)
    assert value == pytest.approx(1.0)
    assert null == 0.0
    # the old statistic on the same sweep: the ends alone reach 0.866
    nulls = {c: E._no_pull(moving[c], len(E.CNN_LAMBDAS)) for c in moving}
    old = E._spearman(list(nulls), [_whole_axis_best(nulls[c]) for c in nulls])
    assert old == pytest.approx(np.sqrt(3) / 2)
    # a best lambda that shrinks as c grows fails the rule although the ends still cross
    shrinking = _cnn_table(
        {
            2: [95.0, 90.0, 91.0, 93.0, 80.0],
            6: [80.0, 82.0, 84.0, 83.0, 85.0],
            10: [70.0, 76.0, 74.0, 72.0, 78.0],
        }
    )
    assert _cnn_moves(shrinking)[0] == pytest.approx(-1.0)


def test_fixed_lambda_is_the_rule_at_the_middle_heterogeneity() -> None:
    assert E.FIXED_LAMBDA == pytest.approx(5 / (50 * 0.25))


def test_synthetic_metrics_read_the_requested_table() -> None:
    lams = len(E.LAMBDAS)
    errors = {R_: np.linspace(1.0, 2.0, lams) for R_ in E.R_VALUES}
    ridge = {R_: np.linspace(2.0, 1.0, lams) for R_ in E.R_VALUES}
    s = {"errors": errors, "ridge": ridge}
    assert E._synthetic_metrics(s)["interior_lambda"] == pytest.approx(1.0)
    assert E._synthetic_metrics(s, "ridge")["best_lambda_decreases_with_R"] == 1.0
