"""MAPLE's figure: one function, plain data in, a matplotlib Figure out."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def maple_accuracy(hit: dict[str, list[np.ndarray]], n_test: int, corr: list[np.ndarray]) -> Figure:
    """Each method's test accuracy (mean over seeds, binomial error bars over ``n_test``
    queries a seed) from its per-query ``hit`` lists, and the (influence, pseudo-label
    correct) rows ``corr`` of every seed's unlabeled pool items."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    names = list(hit)
    means = [float(np.mean(np.concatenate(hit[m]))) for m in names]
    ses = [
        float(np.sqrt(max(p * (1 - p), 1e-12) / (len(hit[n]) * n_test)))
        for p, n in zip(means, names, strict=True)
    ]
    axes[0].bar(names, means, yerr=ses, capsize=3)
    axes[0].axhline(0.25, color="grey", lw=0.8, ls="--")
    axes[0].set_ylabel("test accuracy (mean over seeds)")
    axes[0].set_title("in-context classification (renamed labels)", fontsize=9)
    axes[0].tick_params(axis="x", rotation=30)
    s = np.concatenate(corr)
    if len(s):
        jitter = np.random.default_rng(0).uniform(-0.08, 0.08, len(s))
        axes[1].scatter(s[:, 0], s[:, 1] + jitter, s=10, alpha=0.6)
    axes[1].set_xlabel("influence score of the unlabeled item")
    axes[1].set_ylabel("pseudo-label correct (jittered)")
    axes[1].set_title("influence vs pseudo-label correctness", fontsize=9)
    return fig
