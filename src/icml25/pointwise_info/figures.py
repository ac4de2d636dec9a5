"""The figures of the pointwise-information reproduction, one function each: a setting's
confidence scores of the predicted class and whether each prediction is right in, a matplotlib
Figure out (:mod:`icml25.pointwise_info.reproduce` saves one of each per setting)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from icml25.core.metrics import ece, reliability_diagram
from icml25.core.metrics import risk_coverage as risk_coverage_curve

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def reliability(
    curves: dict[str, np.ndarray],
    ok: np.ndarray,
    *,
    label: str,
    seed: int,
    methods: Sequence[str] = ("MSP", "TS", "PVI-cal", "PMI", "PSI"),
) -> Figure:
    """Reliability diagrams (15 bins) of each method's confidence ``curves[m]``, with its ECE."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(methods), figsize=(17, 3.4), sharey=True)
    for ax, m in zip(axes, methods, strict=True):
        p = curves[m]
        dia = reliability_diagram(p, ok, 15)
        centers = (dia["edges"][:-1] + dia["edges"][1:]) / 2
        has = dia["count"] > 0
        ax.bar(centers[has], dia["accuracy"][has], width=1 / 15, edgecolor="k", alpha=0.7)
        ax.plot([0, 1], [0, 1], "r--", lw=1)
        ax.set_title(f"{m}: ECE {100 * ece(p, ok):.2f}%")
        ax.set_xlabel("confidence of the predicted class")
    axes[0].set_ylabel("accuracy")
    fig.suptitle(f"Reliability diagrams, {label}, seed {seed} (softmax of the scores)", y=1.04)
    return fig


def risk_coverage(
    curves: dict[str, np.ndarray],
    ok: np.ndarray,
    *,
    label: str,
    seed: int,
    methods: Sequence[str] = ("MSP", "TS", "PVI", "PMI", "PSI"),
) -> Figure:
    """Selective risk against coverage when each method's confidence ranks the predictions."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for m in methods:
        cov, risk = risk_coverage_curve(curves[m], ok)
        ax.plot(cov, 100 * risk, label=m, lw=1.2)
    ax.set_xlabel("coverage")
    ax.set_ylabel("selective risk (%)")
    ax.set_xlim(0.3, 1)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(f"Risk-coverage (softmax-scaled scores), {label}, seed {seed}")
    return fig
