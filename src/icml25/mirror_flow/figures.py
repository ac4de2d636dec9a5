"""The figures of Mirror Flow's reproduction, one function each: plain data in (from
:mod:`icml25.mirror_flow.experiments`), a matplotlib Figure out;
:func:`icml25.mirror_flow.reproduce.reproduce` saves them."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from icml25.mirror_flow.power import collapse_time, dual_interval_width

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _pyplot() -> ModuleType:
    """matplotlib's pyplot on the Agg backend (imported when a figure is drawn)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def error_vs_switch(curves: dict[int, tuple[list[int], list[float]]]) -> Figure:
    """Sparse regression's recovery error against the switch-off time, one line per seed
    (``curves[seed] = (switch times never..always, errors)``; dotted: always on)."""
    fig, ax = _pyplot().subplots(figsize=(5.5, 4))
    for seed, (offs, err) in curves.items():
        ax.plot([max(t, 1) for t in offs[:-1]], err[:-1], "o-", label=f"seed {seed}")
        ax.axhline(err[-1], ls=":", color=ax.lines[-1].get_color())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("weight decay switched off after step T (1 = never on)")
    ax.set_ylabel("recovery error ||x - x*|| / ||x*||")
    ax.set_title("Sparse regression: error vs switch-off time (dotted: always on)")
    ax.legend(fontsize=8)
    return fig


def c_trajectory(grid: np.ndarray, med: list[float], pred: np.ndarray, t_end: int) -> Figure:
    """The measured median Legendre parameter c of one run against its prediction, weight
    decay off at ``t_end``."""
    fig, ax = _pyplot().subplots(figsize=(5.5, 4))
    ax.plot(grid, med, "o", ms=3, label="measured median c (GD)")
    ax.plot(grid, pred, "-", label="predicted c0 (1 - eta alpha)^(2 min(k, T))")
    ax.set_yscale("log")
    ax.set_xlabel("GD step k")
    ax.set_ylabel("c = u^2 - v^2")
    ax.set_title(f"Legendre parameter under weight decay, off at T = {t_end}")
    ax.legend(fontsize=8)
    return fig


def range_width(
    runs: dict[float, tuple[tuple[float, ...], np.ndarray, np.ndarray, np.ndarray]],
    lr: float,
    alpha: float,
    claim_A_max: float,
) -> Figure:
    """Range shrinking: the dual-interval width over time, predicted (lines) and measured
    (dots, the median over coordinates), one panel per p (``runs[p] = (A_T of each run,
    recorded steps, measured S, predicted S)``)."""
    fig, axes = _pyplot().subplots(1, 2, figsize=(10, 4))
    for ax, (p, (A_off, steps, S, pred)) in zip(axes, runs.items(), strict=True):
        t = steps * lr
        for r, a in enumerate(A_off):
            if a == 0 or a > claim_A_max + 0.5:
                continue
            width = dual_interval_width(S[r], p)
            (line,) = ax.plot(t, dual_interval_width(pred[r], p), "-", lw=1, label=f"A_T = {a:g}")
            with np.errstate(all="ignore"):
                alive = np.isfinite(width).any(axis=1)
                wmed = np.where(
                    alive, np.nanmedian(np.where(alive[:, None], width, 0), axis=1), np.nan
                )
            ax.plot(t[::5], wmed[::5], "o", ms=3, color=line.get_color())
        if p < 2:
            ax.axvline(collapse_time(2.0, p) / alpha, ls=":", color="grey")
        ax.set_xlabel("time t = eta k")
        ax.set_ylabel("dual interval width S / (p |2 - p|)")
        ax.set_title(f"p = {p:g}: lines predicted, dots measured (median)", fontsize=9)
        ax.legend(fontsize=7)
    return fig


def frozen_share(
    p: float, A_off: tuple[float, ...], by_sw: np.ndarray, at_end: np.ndarray, steps: int
) -> Figure:
    """The share of coordinates frozen in sign (a factor at 0) by the switch and after
    ``steps`` steps against A_T, the mean over seeds (the rows of ``by_sw`` and ``at_end``)."""
    fig, ax = _pyplot().subplots(figsize=(5.5, 4))
    ax.plot(A_off, by_sw.mean(axis=0), "o-", label="by the switch")
    ax.plot(A_off, at_end.mean(axis=0), "s--", label=f"after {steps} steps")
    ax.axvline(collapse_time(2.0, p), ls=":", color="grey", label="collapse A = 4/3")
    ax.set_xlabel("A_T = eta alpha T (how long weight decay stays on)")
    ax.set_ylabel("share of coordinates frozen (a factor at 0)")
    ax.set_title("p = 1.5: coordinates frozen in sign (mean over seeds)")
    ax.legend(fontsize=8)
    return fig
