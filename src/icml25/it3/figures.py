"""The figures of IT3's reproduction, one function each: plain data in, a matplotlib Figure out
(:mod:`icml25.it3.reproduce` saves them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def severity(
    panels: Sequence[tuple[Sequence[float], dict[str, np.ndarray], str, str]],
) -> Figure:
    """One panel per setting, ``(severities, values, xlabel, ylabel)``: each method's metric
    against the shift severity, mean ± std over seeds (``values[method]``: seeds x severities)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax, (sev, values, xlabel, ylabel) in zip(axes, panels, strict=True):
        for m, vals in values.items():
            mean, sd = vals.mean(0), vals.std(0)
            ax.errorbar(sev, mean, yerr=sd, marker="o", capsize=3, label=m)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Test-time methods vs shift severity (mean ± std over seeds)")
    return fig


def idempotence_error(hists: Sequence[tuple[str, np.ndarray, np.ndarray]]) -> Figure:
    """Histograms of the idempotence error, clean vs the strongest shift, one panel per
    ``(label, clean scores, shifted scores)``."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.5))
    for ax, (label, s_clean, s_last) in zip(axes, hists, strict=True):
        hi = max(float(np.quantile(np.r_[s_clean, s_last], 0.99)), 1e-12)
        bins = [float(b) for b in np.linspace(0, hi, 40)]
        for part, what in ((s_clean, "clean"), (s_last, "strongest shift")):
            ax.hist(part, bins=bins, alpha=0.5, density=True, label=what)
        ax.set_xlabel("idempotence error")
        ax.set_title(f"{label} (first seed)")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("density")
    return fig
