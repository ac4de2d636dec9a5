"""LLMScan's figure: one function, plain data in, a matplotlib Figure out."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from icml25.llmscan.scan import ScanResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def causal_effects(
    results: list[ScanResult], y: np.ndarray, F: np.ndarray, protocol: str
) -> Figure:
    """Token effects of the first test prompt of each class, and the mean layer effects by
    class, of one seed's lie-task test prompts (``results``, labels ``y`` and features ``F``
    of protocol ``"a"`` or ``"b"``)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8), gridspec_kw={"width_ratios": [1, 1, 1.3]})
    a = protocol == "a"
    names = ("told the truth", "told to lie (and lied)") if a else ("right answer", "wrong answer")
    for ax, label, name in ((axes[0], 0, names[0]), (axes[1], 1, names[1])):
        idx = np.flatnonzero(y == label)
        r = results[int(idx[0])]
        toks = [r.tokens[i] for i in r.positions]
        ax.bar(range(len(toks)), r.token_effects)
        ax.set_xticks(range(len(toks)), toks, rotation=70, fontsize=7)
        ax.set_title(f"attention token effects, {name}\n(y* = {r.top_token!r})", fontsize=9)
        ax.set_ylabel("attention-map distance")
    for label, name in ((0, names[0]), (1, names[1])):
        axes[2].plot(F[y == label, 5:].mean(0), marker="o", ms=3, label=name)
    axes[2].set_xlabel("skipped block")
    axes[2].set_ylabel("mean |dP(y*)|")
    axes[2].set_title(f"layer effects, protocol {protocol} test prompts", fontsize=9)
    axes[2].legend()
    return fig
