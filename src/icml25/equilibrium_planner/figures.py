"""The equilibrium planner's reproduction figure, one function: the SR-vs-iterations curves of
every seed (plain lists) in, a Figure out."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def sr_vs_iterations(curves: list[dict[str, list[float]]]) -> Figure:
    """Open-loop SR on novel tasks against refinement iterations, one line per planner (the
    mean over the seeds; ``curves``: one ``{planner: SR per iteration}`` per seed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4))
    for name in curves[0]:
        arr = np.array([c[name] for c in curves])
        x = np.arange(1, arr.shape[1] + 1)
        ax.plot(x, arr.mean(0), marker="o", ms=3, label=name)
    ax.set_xlabel("refinement iterations (1 = first draft from Null)")
    ax.set_ylabel("SR on novel tasks (%)")
    ax.set_title("Open-loop SR vs refinement iterations")
    ax.legend()
    return fig
