"""The figures of OrcaLoca's reproduction, one function each: plain data in (per-bug measures
from :mod:`icml25.orcaloca.experiments`), a matplotlib Figure out;
:func:`icml25.orcaloca.reproduce.reproduce` saves them."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _pyplot() -> ModuleType:
    """matplotlib's pyplot on the Agg backend (imported when a figure is drawn)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def arms(reading: dict[str, dict[str, np.ndarray]], n: int) -> Figure:
    """Every arm's function match and gold-in-context rate with the ReadingPolicy judge
    (``reading``: arm -> per-bug measures, in the arms' order), with 90% bootstrap bars (500
    resamples of the bugs, ``default_rng(0)``); ``n`` bugs."""
    fig, axes = _pyplot().subplots(1, 2, figsize=(10, 3.8))
    names = list(reading)
    rng = np.random.default_rng(0)
    for ax, metric, label in (
        (axes[0], "function", "function match (%)"),
        (axes[1], "context", "gold in final context (%)"),
    ):
        vals, errs = [], []
        for a in names:
            x = 100 * reading[a][metric]
            idx = rng.integers(0, len(x), size=(500, len(x)))
            q = np.quantile(x[idx].mean(axis=1), [0.05, 0.95])
            vals.append(x.mean())
            errs.append((x.mean() - q[0], q[1] - x.mean()))
        ax.bar(
            names,
            vals,
            yerr=np.array(errs).T,
            capsize=3,
            color=["grey", "C0", "C0", "C2", "C1", "C1"],
        )
        ax.set_ylabel(label)
        ax.tick_params(axis="x", labelsize=8, rotation=20)
    fig.suptitle(f"Arms at 10 searches, {n} injected stdlib bugs, ReadingPolicy (90% bootstrap)")
    return fig


def budget_sweep(sweep: dict[int, dict[str, dict[str, np.ndarray]]]) -> Figure:
    """FIFO's and the full agent's function match and gold-in-context rate against the search
    budget (``sweep``: searches -> arm -> per-bug measures)."""
    fig, ax = _pyplot().subplots(figsize=(5.5, 3.8))
    xs = sorted(sweep)
    for a, c in (("fifo", "grey"), ("full", "C2")):
        ax.plot(
            xs,
            [100 * sweep[x][a]["function"].mean() for x in xs],
            "o-",
            color=c,
            label=f"{a} function match",
        )
        ax.plot(
            xs,
            [100 * sweep[x][a]["context"].mean() for x in xs],
            "s--",
            color=c,
            label=f"{a} gold in context",
        )
    ax.set_xlabel("executed searches")
    ax.set_ylabel("% of bugs")
    ax.legend(fontsize=8)
    ax.set_title("Search-budget sweep (ReadingPolicy)")
    return fig
