"""The compositional reproduction's figures, one function each: the from-scratch runs of
:func:`icml25.compositional.experiments.scratch` (a list of dicts) in, a Figure out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from icml25.compositional.experiments import K_LOW, K_N_AXIS, N_VALUES

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def accuracy_vs_k_and_n(runs: list[dict[str, Any]], n_small: int) -> Figure:
    """Unseen joint accuracy against ``k`` (with the placebo) at N = ``n_small``, and against
    ``n`` at ``k = 1, 2``; mean and spread over seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    ax = axes[0]
    for axis, label in (("k", "k combinations per value"), ("placebo", "placebo (k = 1)")):
        xs = sorted({r["label"] for r in runs if r["axis"] == axis and r["N"] == n_small})
        if axis == "placebo":
            xs = [K_LOW, *xs]

        def pick(x: int, axis: str = axis) -> list[float]:
            if axis == "placebo" and x == K_LOW:
                return [
                    r["unseen"]
                    for r in runs
                    if r["axis"] == "k" and r["k"] == K_LOW and r["N"] == n_small
                ]
            return [
                r["unseen"]
                for r in runs
                if r["axis"] == axis
                and r["label"] == x
                and r["N"] == n_small
                and r["n"] == N_VALUES
            ]

        ax.errorbar(
            xs, [np.mean(pick(x)) for x in xs], yerr=[np.std(pick(x)) for x in xs],
            marker="o", capsize=3, label=label,
        )  # fmt: skip
    ax.set_xlabel(f"k (seen combinations per value), n = 10, N = {n_small}")
    ax.set_ylabel("joint accuracy, unseen combinations")
    ax.legend(fontsize=8)
    ax = axes[1]
    for k in (K_LOW, K_N_AXIS):
        rs = [r for r in runs if r["k"] == k and r["N"] == n_small and r["axis"] in ("k", "n")]
        ns = sorted({r["n"] for r in rs})
        if len(ns) < 2:
            continue
        m = [np.mean([r["unseen"] for r in rs if r["n"] == n]) for n in ns]
        ax.plot(ns, m, marker="o", label=f"k = {k}")
    ax.set_xlabel("n (values per concept)")
    ax.set_ylabel("joint accuracy, unseen combinations")
    ax.legend(fontsize=8)
    return fig


def r2_vs_accuracy(runs: list[dict[str, Any]]) -> Figure:
    """Both R^2 (of the combination means, per image) of the k-axis runs against their unseen
    joint accuracy, coloured by ``k``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    k_runs = [r for r in runs if r["axis"] == "k"]
    for ax, key, title in zip(
        axes, ("r2_means", "r2_image"), ("R^2 of combination means", "R^2 per image"),
        strict=True,
    ):  # fmt: skip
        sca = ax.scatter(
            [r[key] for r in k_runs], [r["unseen"] for r in k_runs], c=[r["k"] for r in k_runs]
        )
        ax.set_xlabel(title)
        ax.set_ylabel("joint accuracy, unseen combinations")
    fig.colorbar(sca, ax=axes, label="k")
    return fig
