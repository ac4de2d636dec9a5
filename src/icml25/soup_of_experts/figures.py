"""The figure of the Soup-of-Experts reproduction: plain data in, a matplotlib Figure out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def per_target_loss(rows: Sequence[Mapping[str, Any]], seed: int) -> Figure:
    """Bars of every arm's test loss on each target of one seed (rows of
    :func:`~icml25.soup_of_experts.experiments.measure_seed`), the specialists as black marks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6.0, 0.7 * len(rows)), 3.6))
    xs = np.arange(len(rows))
    arms = [("generic", "generic"), ("s_only", "S only (null)"), ("soup", "soup (h)")]
    arms += [("soup_hat", "soup (estimated h)"), ("routerless", "router-less soup")]
    w = 0.16
    for j, (key, label) in enumerate(arms):
        ax.bar(xs + (j - 2) * w, [x[key] for x in rows], w, label=label)
    sp = [(i, x["specialist"]) for i, x in enumerate(rows) if x["specialist"] is not None]
    ax.scatter(
        [i for i, _ in sp], [v for _, v in sp], color="k", marker="_", s=300, zorder=3,
        label="specialist",
    )  # fmt: skip
    lo = min(min(x["specialist"] or 9e9, x["soup"], x["generic"]) for x in rows)
    hi = max(max(x[key] for key, _ in arms) for x in rows)
    ax.set_ylim(lo - 0.15, hi + 0.05)
    ax.set_xticks(xs, [x["target"] for x in rows], rotation=45, ha="right")
    ax.set_ylabel("test loss (nats/byte)")
    ax.set_title(f"Per-target loss, seed {seed}, each arm at its tuned learning rate")
    ax.legend(fontsize=7, ncol=3)
    return fig
