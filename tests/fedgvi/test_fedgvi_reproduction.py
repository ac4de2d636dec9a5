"""The reproduction's measurement code (issue 48): metrics from per-point rows, null arms."""

import numpy as np
import pytest

from icml25.core.metrics import ece
from icml25.fedgvi import experiments_bnn as BNN
from icml25.fedgvi import experiments_location as LOC
from icml25.fedgvi import experiments_logistic as LR
from icml25.fedgvi import reproduce as R
from icml25.fedgvi.models import MLPClassifier


def _fake_lr(seed: int) -> dict:
    """A (B) result with random predictive probabilities for every arm the metrics read."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 60)
    arms = ["clean|FedAvg", "contaminated|FedAvg", "clean|prior-only"]
    for tag in ("clean", "contaminated"):
        for p in LR.LR_PRIORS:
            methods = (*LR.LR_METHODS, *(LR.LR_NULLS if tag == "contaminated" else ()))
            arms += [f"{tag}|{p}|{m}" for m in methods]
    p1 = {a: np.clip(rng.beta(2, 2, 60) * 0.6 + 0.4 * y, 0, 1) for a in arms}
    p1["clean|prior-only"] = np.full(60, 0.5)
    return {"p1": p1, "y": y}


def test_lr_metrics_from_rows_equal_the_direct_metrics() -> None:
    """The row statistics (fast ECE included) give the numbers of _metrics / core ece."""
    r = _fake_lr(0)
    rows, index = LR._lr_rows(r)
    table = LR.lr_table(r)
    for arm in r["p1"]:
        for what in ("acc", "nll", "ece"):
            assert LR._col(rows, index, arm, what) == pytest.approx(table[arm][what], abs=1e-12)
    p = np.clip(r["p1"]["clean|broad|PVI"], 1e-12, 1 - 1e-12)
    pred = (p >= 0.5).astype(int)
    conf = np.where(pred == 1, p, 1 - p)
    assert table["clean|broad|PVI"]["ece"] == pytest.approx(100 * ece(conf, pred == r["y"]))
    # a claim by hand: best FedGVI variant - PVI, contaminated, mean over priors
    want = np.mean(
        [
            max(table[f"contaminated|{p}|{m}"]["acc"] for m in LR.LR_METHODS[1:])
            - table[f"contaminated|{p}|PVI"]["acc"]
            for p in LR.LR_PRIORS
        ]
    )
    stat = LR._LRStat("lr_accuracy_gain_contaminated", index)
    assert stat(rows) == pytest.approx(want)
    assert LR._LRStat("lr_no_loss_clean/null", index)(rows) == pytest.approx(
        np.mean(
            [abs(100 * np.mean(r["y"] == 1) - table[f"clean|{p}|PVI"]["acc"]) for p in LR.LR_PRIORS]
        )
    )


def test_lr_measurements_bootstrap_one_seed_and_t_over_three() -> None:
    one = LR.lr_measurements([_fake_lr(0)])
    three = LR.lr_measurements([_fake_lr(s) for s in range(3)])
    for name in LR.LR_METRICS:
        assert one[name].interval.method.startswith("bootstrap"), name
        assert three[name].interval.method == "t (n=3)", name
        assert len(three[name].values) == 3


def test_a_no_pull_fedavg_with_the_same_budget_stops_early() -> None:
    """FedAvg with patience stops before its cap on an easy problem and keeps the best epoch."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] > 0).astype(int)
    models = [MLPClassifier(X[i::2], y[i::2], 2) for i in range(2)]
    w0 = np.zeros(models[0].dim)
    w = BNN.fedavg_mlp(models, w0, rounds=1, epochs=400, seed=0, patience=3)
    import torch

    acc = np.mean(models[0].predict_proba(torch.as_tensor(w)[None], X).argmax(1) == y)
    assert acc > 0.9
    same = BNN.fedavg_mlp(models, w0, rounds=1, epochs=2, seed=0)
    again = BNN.fedavg_mlp(models, w0, rounds=1, epochs=2, seed=0, patience=None)
    np.testing.assert_array_equal(same, again)


def test_location_nulls_are_the_mechanisms_at_their_vanishing_limits() -> None:
    """IMQ with a flat weight and the AR divergence at alpha -> 1 are PVI to high accuracy on
    the same data; the damped one-round null is not exact."""
    xs = LOC.location_data(np.random.default_rng(0), 0.2)
    pvi, _, _ = LOC.location_run(xs, "PVI", (0.0, 10.0), 30)
    flat, _, _ = LOC.location_run(xs, "null IMQ c=1e6", (0.0, 10.0), 30)
    assert flat == pytest.approx(pvi, abs=1e-6)
    wrong = (3.0, 0.1)
    pvi_w, _, _ = LOC.location_run(xs, "PVI", wrong, 30)
    ar1, _, _ = LOC.location_run(xs, "null AR 1.001", wrong, 30)
    assert abs(ar1 - pvi_w) < 0.01 * abs(pvi_w)
    assert LOC._one_round_error(xs, (0.0, 10.0), 1.0) < 1e-12
    assert LOC._one_round_error(xs, (0.0, 10.0), 0.2) > 1e-3


def test_seeds_are_checkpointed_and_reused_only_for_the_same_budget(monkeypatch, tmp_path):
    from icml25.core.runner import RunContext

    calls = []

    def fake(name):
        def run(b, seed):
            calls.append((name, seed))
            return {"seed": seed, "name": name}

        return run

    for name in ("run_location", "run_logistic", "run_bnn"):
        monkeypatch.setattr(R, name, fake(name))
    ctx = RunContext(budget="tiny", seeds=(0,), out_dir=tmp_path)
    first = R.run_seed(ctx, 3, with_bnn=True)
    assert len(calls) == 3 and first["bnn"]["seed"] == 3
    assert (tmp_path / "checkpoints" / "tiny-seed3.pkl").is_file()
    again = R.run_seed(ctx, 3, with_bnn=True)
    assert len(calls) == 3 and again == first  # reused
    R.run_seed(ctx, 3, with_bnn=False)  # another key: recomputed
    assert len(calls) == 5
    monkeypatch.setattr(R, "CHECKPOINT_VERSION", R.CHECKPOINT_VERSION + 1)
    R.run_seed(ctx, 3, with_bnn=False)
    assert len(calls) == 7


def test_one_seed_computes_the_checkpoint_reproduce_reuses(monkeypatch, tmp_path):
    """``icml25 seed fedgvi SEED`` (one_seed) saves what run_seed, as reproduce calls it for
    that seed, reuses."""
    from icml25.core.runner import RunContext

    calls = []

    def fake(name):
        def run(b, seed):
            calls.append((name, seed))
            return {"seed": seed}

        return run

    for name in ("run_location", "run_logistic", "run_bnn"):
        monkeypatch.setattr(R, name, fake(name))
    R.one_seed(RunContext(budget="tiny", seeds=(0,), out_dir=tmp_path), 0)
    assert len(calls) == 3  # (C) included: the tiny budget runs it on its one seed
    R.run_seed(RunContext(budget="tiny", seeds=(0,), out_dir=tmp_path), 0, with_bnn=True)
    assert len(calls) == 3  # reused


def test_paired_contrasts_of_the_bootstrapped_claims_are_claim_minus_null() -> None:
    """Issue 66: where a claim and its null arm are bootstraps over items (one seed in (B) and
    (C), always in (A)), the reproduction returns their paired contrast itself; its values are
    the claim's minus the null arm's on the same items, and with three seeds (B) leaves the
    pairing to the engine (per-seed t)."""
    from icml25.core.claims import contrast_key, null_key

    one = LR.lr_measurements([_fake_lr(0)])
    for cid in LR.LR_WITH_NULL:
        c = one[contrast_key(cid)]
        assert c.interval.method.startswith("bootstrap"), cid
        assert c.values[0] == pytest.approx(one[cid].values[0] - one[null_key(cid)].values[0])
    three = LR.lr_measurements([_fake_lr(s) for s in range(3)])
    assert not any(k.endswith("/contrast") for k in three)
    assert set(LR.LR_WITH_NULL) >= {"lr_nll_contaminated", "lr_ece_contaminated"}

    rng = np.random.default_rng(1)
    seed = {"mean": {}, "prec": {}, "exact_err": 0.0, "damped_err": 0.1, "rounds": 5}
    seed["client_ar_rounds"] = 31
    for cell, methods in LOC.CLAIM_CELLS.items():
        for m in methods:
            seed["mean"][(*cell, m)] = rng.normal(0.3, 0.2, 4)
    for m in LOC.LOCATION_METHODS:
        seed["prec"][(0.2, LOC.BROAD, m)] = rng.uniform(100, 200, 4)
    loc = LOC.location_measurements([seed], n_boot=200)
    for cid in ("imq_cuts_outlier_bias", "ar_cuts_prior_bias"):
        want = loc[cid].values[0] - loc[null_key(cid)].values[0]
        assert loc[contrast_key(cid)].values[0] == pytest.approx(want), cid

    n = 50
    arms = ("FedGVI-GCE+AR", "FedGVI-GCE(1.0)+AR", "PVI", BNN.BNN_NULL, "FedAvg")
    c = {f"{a}|correct": (rng.random(n) < 0.7).astype(float) for a in arms}
    c["FedAvg early-stopped|correct"] = (rng.random(n) < 0.6).astype(float)
    for key in list(c):
        c[key.removesuffix("|correct")] = 100 * float(c[key].mean())
    got = BNN._bnn_contrast([c], ("FedGVI-GCE+AR", "PVI"), (BNN.BNN_NULL, "PVI"), 200)
    want = (
        BNN._bnn_diff([c], "FedGVI-GCE+AR", "PVI", 200).values[0]
        - BNN._bnn_diff([c], BNN.BNN_NULL, "PVI", 200).values[0]
    )
    assert got.values[0] == pytest.approx(want)


def test_lr_share_note_is_a_ratio_of_means_and_says_when_nothing_was_lost() -> None:
    from icml25.fedgvi.experiments_logistic import LR_METHODS, lr_share_note

    def seed(clean: float, pvi: float, best: float) -> dict[str, dict[str, float]]:
        r = {f"clean|{p}|PVI": {"acc": clean} for p in ("tight", "broad")}
        for p in ("tight", "broad"):
            for m in LR_METHODS:
                r[f"contaminated|{p}|{m}"] = {"acc": pvi if m == "PVI" else best}
        return r

    # lost 0.10 and ~0 (1e-12): the mean of ratios would be astronomically large
    note = lr_share_note([seed(0.9, 0.8, 0.85), seed(0.9, 0.9 - 1e-12, 0.95)])
    # mean recovered (0.05 + 0.05) / 2 over mean lost (0.10 + 0) / 2
    assert ": 1.00 (PVI loses 0.050" in note
    assert "none to recover" in lr_share_note([seed(0.8, 0.85, 0.9)])
