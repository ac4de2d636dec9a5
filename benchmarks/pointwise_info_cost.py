"""Cost of the confidence metrics and of scoring with PSI / PMI, against natural baselines.

Metrics on ``n`` random (confidence, correct) pairs: our ``auroc`` / ``aupr_error`` /
``fpr_at_95tpr`` against scikit-learn's ``roc_auc_score`` / ``average_precision_score`` /
``roc_curve`` timed in the same run (ratio > 1 means ours is slower). Estimators: the time to
score ``m`` samples of 64-d features for 10 classes with PSI (100 slices, 30 bins) and with a
separable PMI critic, against one softmax of 10 logits per sample (the MSP baseline) and
against a forward pass of the MLP the features could come from. Run:
``python benchmarks/pointwise_info_cost.py [--n 1000000] [--m 10000]``.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

from _timing import mean_seconds
from icml25.core.models import MLP
from icml25.pointwise_info import PMI, PSI, aupr_error, auroc, fpr_at_95tpr, softmax


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--m", type=int, default=10_000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    ok = rng.random(args.n) < 0.9
    conf = rng.normal(size=args.n) + ok

    def sk_fpr() -> float:
        fpr, tpr, _ = roc_curve(ok, conf)
        return float(fpr[np.argmax(tpr >= 0.95)])

    print(f"metrics on n = {args.n:,} predictions (seconds, ratio ours / scikit-learn)")
    for name, ours, ref in (
        ("AUROC", lambda: auroc(conf, ok), lambda: roc_auc_score(ok, conf)),
        ("AUPR-Error", lambda: aupr_error(conf, ok), lambda: average_precision_score(~ok, -conf)),
        ("FPR@95TPR", lambda: fpr_at_95tpr(conf, ok), sk_fpr),
    ):
        a, b = mean_seconds(ours), mean_seconds(ref)
        print(f"  {name:<11} ours {a:.3f}  sklearn {b:.3f}  ratio {a / b:.2f}")

    m, k, d = args.m, 10, 64
    y = rng.integers(0, k, size=20_000)
    feats = rng.normal(size=(20_000, d)) + np.eye(k, d)[y] * 2
    test = rng.normal(size=(m, d))
    psi = PSI(random_state=0).fit(feats, y)
    pmi = PMI(epochs=1, random_state=0).fit(feats, y)
    logits = rng.normal(size=(m, k))
    mlp = MLP(784, (256, d), k).eval()
    x = torch.randn(m, 784)

    def forward() -> None:
        with torch.no_grad():
            mlp(x)

    t_soft = mean_seconds(lambda: softmax(logits))
    t_fwd = mean_seconds(forward)
    print(f"scoring m = {m:,} samples, {d}-d features, {k} classes (seconds)")
    print(f"  softmax of logits (MSP baseline) {t_soft:.4f}; MLP 784-256-64-10 forward {t_fwd:.4f}")
    for name, fn in (
        ("PSI score_samples", lambda: psi.score_samples(test)),
        ("PMI score_samples", lambda: pmi.score_samples(test)),
    ):
        t = mean_seconds(fn)
        print(f"  {name:<18} {t:.4f}  x{t / t_soft:.0f} softmax, x{t / t_fwd:.1f} forward")


if __name__ == "__main__":
    main()
