"""The figure of the drift-calibration reproduction: plain data in, a matplotlib Figure out
(:mod:`icml25.drift_calibration.reproduce` saves it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def drift_calibration(
    curves: dict[str, np.ndarray], matrix: np.ndarray, classes_seen: Sequence[int]
) -> Figure:
    """Left: each ablation's accuracy after each task, mean ± std over seeds (``curves[ab]``:
    seeds x tasks; ``classes_seen[t]``: classes seen after task ``t``). Right: the full method's
    accuracy matrix (``matrix[i, t]``: accuracy on task ``i``'s classes after task ``t``, %)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = len(classes_seen)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    x = np.arange(tasks)
    for ab, c in curves.items():
        axes[0].errorbar(x, c.mean(0), yerr=c.std(0), marker="o", capsize=2, label=ab)
    axes[0].set_xticks(x, [f"task {t}\n({n} cls)" for t, n in enumerate(classes_seen)], fontsize=7)
    axes[0].set_ylabel("task-agnostic accuracy over seen classes (%)")
    axes[0].set_title("Accuracy after each task (mean ± std over seeds)", fontsize=9)
    axes[0].legend(fontsize=7)
    m = matrix
    im = axes[1].imshow(m, vmin=0, vmax=100, cmap="viridis")
    for i in range(tasks):
        for j in range(tasks):
            axes[1].text(j, i, f"{m[i, j]:.0f}", ha="center", va="center", color="w", fontsize=8)
    axes[1].set_xticks(range(tasks))
    axes[1].set_yticks(range(tasks))
    axes[1].set_xlabel("after task")
    axes[1].set_ylabel("accuracy on task's classes")
    axes[1].set_title("Full method: accuracy matrix (%)", fontsize=9)
    fig.colorbar(im, ax=axes[1])
    fig.tight_layout()
    return fig
