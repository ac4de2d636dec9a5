"""BackSlash's figure: rate against accuracy over lambda, one panel per model family."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

Curve = Sequence[Mapping[str, Any]]
"""One BackSlash grid: per lambda, ``bits`` (per coded weight) and ``acc`` (decoded test
accuracy, %), as :func:`icml25.backslash.experiments.curve_means` gives them."""


def rate_accuracy(
    panels: Sequence[tuple[str, Mapping[str, Curve], tuple[float, float]]],
) -> Figure:
    """Decoded test accuracy against bits per coded weight (log scale), one panel per family.

    ``panels``: per family, its title label, its BackSlash grids by name (``auto``, ``nu=2``,
    ...) and normal training's point ``(bits, accuracy)``.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(12, 4))
    for ax, (label, curves, (n_bits, n_acc)) in zip(axes, panels, strict=True):
        for key, points in curves.items():
            xs = [p["bits"] for p in points]
            ys = [p["acc"] for p in points]
            ax.plot(xs, ys, "o-", label=f"BackSlash ({key})")
        ax.plot([n_bits], [n_acc], "k*", ms=12, label="normal training")
        ax.set_xscale("log")
        ax.set_xlabel("bits per coded weight (Exp-Golomb, delta 0.01)")
        ax.set_ylabel("decoded test accuracy (%)")
        ax.set_title(f"Rate-accuracy over lambda, {label}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return fig
