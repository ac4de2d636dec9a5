"""The figure of the personalization trade-off's reproduction: plain data in, a matplotlib
Figure out (:mod:`icml25.pfl_tradeoff.reproduce` saves it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def tradeoff(
    lambdas: Sequence[float],
    errors: Mapping[float, np.ndarray],
    round_lambdas: Sequence[float],
    rounds: np.ndarray,
    panels: Sequence[tuple[str, Sequence[int], Sequence[str], np.ndarray]],
) -> Figure:
    """Four panels: (A)'s mean local error by lambda for each R (``errors[R]``, one value per
    lambda; 0 plotted at 1e-3) and FedCLUP's rounds by lambda; then for each image model
    ``(label, cs, arm names, accuracy[c, arm])`` the accuracy of every arm against ``c``."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(21, 4))
    xs = [lam if lam > 0 else 1e-3 for lam in lambdas]
    for R, error in errors.items():
        axes[0].plot(xs, error, "o-", label=f"R = {R}")
    axes[0].axhline(10 / 39, color="gray", ls=":", label="d/(n-d-1)")
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("lambda (0 plotted at 1e-3)")
    axes[0].set_ylabel("mean ||w_i - w_i*||^2")
    axes[0].set_title("Statistical error vs personalization degree")
    axes[0].legend()
    axes[1].plot(round_lambdas, rounds, "o-")
    axes[1].set_xscale("log")
    axes[1].set_xlabel("lambda")
    axes[1].set_ylabel("rounds to ||w_g - w_g^opt|| <= 1e-4")
    axes[1].set_title("Communication vs lambda (R = 0.5, E = 50)")
    for ax, (label, cs, names, acc) in zip(axes[2:], panels, strict=True):
        for j, name in enumerate(names):
            ax.plot(cs, acc[:, j], "o-" if name in ("local", "FedAvg") else ".--", label=name)
        ax.set_xlabel("classes per client c")
        ax.set_ylabel("personalized test accuracy (%)")
        ax.set_title(f"{label}: 10 clients, accuracy vs c")
        ax.legend(fontsize=7)
    return fig
