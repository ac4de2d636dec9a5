"""The figures of the constrained-clustering reproduction, one function each: plain data in
(from :mod:`icml25.constrained_clustering.experiments`), a matplotlib Figure out;
:func:`icml25.constrained_clustering.reproduce.reproduce` saves them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


def bound_vs_optimum(small_rows: Sequence[tuple[float, float, float, float]]) -> Figure:
    """The lower bound and the signed and CC sweeps against the exact optimum, one point per
    brute-force instance (``small_rows``: Phi*, lambda_CC, signed ratio, CC ratio)."""
    rows = np.array(small_rows)
    fig, ax = _pyplot().subplots(figsize=(5, 4))
    ax.scatter(rows[:, 0], rows[:, 1], s=12, label="lower bound lambda_CC")
    ax.scatter(rows[:, 0], rows[:, 2], s=12, marker="x", label="signed sweep")
    ax.scatter(rows[:, 0], rows[:, 3], s=12, marker="+", label="CC sweep")
    lim = [0, float(rows[:, :4].max()) * 1.05]
    ax.plot(lim, lim, "k--", lw=0.8, label="optimum")
    ax.set_xlabel("optimal ratio Phi* (brute force)")
    ax.set_ylabel("value")
    ax.set_title("Bound and sweep vs the exact optimum")
    ax.legend(fontsize=8)
    return fig


def ari(ari_rows: Sequence[Mapping[str, float]]) -> Figure:
    """Mean (and std over seeds) ARI of spectral clustering of G alone, CC and the signed
    method on the SBM and on digits (``ari_rows``: one mapping per seed)."""
    fig, ax = _pyplot().subplots(figsize=(6, 3.5))
    keys = [
        ("sbm_sc", "SBM SC"),
        ("sbm_cc", "SBM CC"),
        ("sbm_signed", "SBM signed"),
        ("dig_sc", "digits SC"),
        ("dig_cc", "digits CC"),
        ("dig_signed", "digits signed"),
    ]
    vals = [[r[k] for r in ari_rows] for k, _ in keys]
    ax.bar(
        range(len(keys)),
        [np.mean(v) for v in vals],
        yerr=[np.std(v) for v in vals],
        color=["grey", "tab:blue", "tab:orange"] * 2,
    )
    ax.set_xticks(range(len(keys)), [k[1] for k in keys], rotation=30, fontsize=8)
    ax.set_ylabel("ARI vs constrained truth")
    ax.set_title("Spectral clustering of G alone vs constrained methods")
    return fig
