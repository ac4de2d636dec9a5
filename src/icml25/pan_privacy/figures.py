"""The pan-privacy figure: the protocol's error against the horizon, and the intruder game's
advantages of the protocol and the naive controls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure


def pan_privacy(
    errors: Mapping[int, Sequence[float]],
    rms: Mapping[int, float],
    advantages: Mapping[str, Sequence[float]],
    *,
    n: int,
    epsilon: float,
) -> Figure:
    """Left: ``|estimate - truth| / stderr`` per seed at each horizon T (``errors``) and the RMS
    of the group errors (``rms``). Right: each method's best-adversary advantage, mean and std
    over seeds (``advantages``, the protocol first, then the controls)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for T, errs in errors.items():
        axes[0].plot([T] * len(errs), errs, "o", label=f"T={T}: per seed")
    axes[0].plot(list(rms), list(rms.values()), "k-s", label="RMS of group errors")
    axes[0].axhline(4, ls=":", color="gray", label="4 standard errors")
    axes[0].set_xscale("log")
    axes[0].set_xlabel("horizon T")
    axes[0].set_ylabel("|estimate - truth| / stderr")
    axes[0].set_title(f"Protocol error vs horizon (n = {n}, eps = {epsilon})", fontsize=9)
    axes[0].legend(fontsize=7)
    methods = list(advantages)
    best = [advantages[m] for m in methods]
    axes[1].bar(range(len(methods)), [np.mean(b) for b in best],
                yerr=[np.std(b) for b in best],
                color=["tab:green"] + ["tab:red"] * (len(methods) - 1))  # fmt: skip
    axes[1].set_xticks(range(len(methods)), [m.replace(" ", "\n") for m in methods], fontsize=7)
    axes[1].axhline(0.05, ls=":", color="gray")
    axes[1].set_ylabel("best adversary's advantage")
    axes[1].set_title("Intruder game: two unannounced intrusions", fontsize=9)
    fig.tight_layout()
    return fig
