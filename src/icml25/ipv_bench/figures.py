"""The figures of the IPV-Bench reproduction, one function each: frames and scores in, a
matplotlib Figure out (:mod:`icml25.ipv_bench.reproduce` saves them); matplotlib is imported
on the first figure, with the Agg backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from icml25.ipv_bench.bench import BenchScores
from icml25.ipv_bench.generator import PLAUSIBLE, VIOLATIONS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

BY_KIND = {v.name: ("S" if v.spatial_temporal == "spatial" else "T",) for v in VIOLATIONS}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def example_frames(clips: Mapping[str, np.ndarray]) -> Figure:
    """``example_frames``: frames 0, 4, 8, 12 and 15 of one clip per class, ``clips[name]`` of
    shape ``(T, 3, H, W)`` (plausible first, then each violation, with its kind S or T)."""
    plt = _pyplot()
    names = list(clips)
    cols = (0, 4, 8, 12, 15)
    fig, axes = plt.subplots(len(names), len(cols), figsize=(1.6 * len(cols), 1.5 * len(names)))
    for r, name in enumerate(names):
        frames = clips[name]
        for k, t in enumerate(cols):
            ax = axes[r, k]
            ax.imshow(frames[t].transpose(1, 2, 0), interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if k == 0:
                kind = "" if name == PLAUSIBLE else f" ({BY_KIND[name][0]})"
                ax.set_ylabel(name + kind, fontsize=6, rotation=0, ha="right", va="center")
            if r == 0:
                ax.set_title(f"frame {t}", fontsize=7)
    fig.suptitle("Generated clips: plausible vs one impossible clip per violation", fontsize=8)
    return fig


def accuracy_by_category(scores: Mapping[str, BenchScores]) -> Figure:
    """``accuracy_by_category``: MCQA accuracy per violation and per kind (spatial, temporal)
    of each model, ``scores[model]`` as :func:`icml25.ipv_bench.evaluate` returns them."""
    plt = _pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 3.6), gridspec_kw={"width_ratios": [4, 1]})
    vnames = [v.name for v in VIOLATIONS]
    width = 0.8 / len(scores)
    for k, (model, s) in enumerate(scores.items()):
        xs = np.arange(len(vnames)) + k * width
        a1.bar(xs, [s.mcqa_by_violation[v] for v in vnames], width, label=model)
        a2.bar(
            np.arange(2) + k * width,
            [float(s.mcqa.by_spatial_temporal[w]) for w in ("spatial", "temporal")],
            width,
            label=model,
        )
    a1.axhline(20, color="k", ls=":", lw=1, label="random (20)")
    a1.set_xticks(np.arange(len(vnames)) + 0.4 - width / 2)
    a1.set_xticklabels(
        [f"{v} ({BY_KIND[v][0]})" for v in vnames], rotation=35, ha="right", fontsize=7
    )
    a1.set_ylabel("MCQA accuracy (%)")
    a1.legend(fontsize=6, ncol=3)
    a2.set_xticks(np.arange(2) + 0.4 - width / 2)
    a2.set_xticklabels(["spatial", "temporal"])
    a2.axhline(20, color="k", ls=":", lw=1)
    a1.set_title("MCQA accuracy by violation (category)", fontsize=8)
    a2.set_title("by spatial / temporal", fontsize=8)
    return fig
