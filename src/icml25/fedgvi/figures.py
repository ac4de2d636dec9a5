"""The figures of FedGVI's reproduction: plain data in, a matplotlib Figure out
(:mod:`icml25.fedgvi.reproduce` saves them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def location_bias(
    eps: Sequence[float], bias: Mapping[str, Mapping[str, Sequence[float]]]
) -> Figure:
    """(A): the mean bias against the outlier fraction ``eps``, one panel per prior;
    ``bias[prior][method]`` holds one value per ``eps``."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=False)
    for ax, (pn, by_method) in zip(axes, bias.items(), strict=True):
        for m, ys in by_method.items():
            ax.plot(eps, ys, marker="o", label=m)
        ax.set_xlabel("outlier fraction on 2 of 5 clients")
        ax.set_ylabel("|posterior mean - theta*|")
        ax.set_title(f"prior {pn}")
        ax.set_yscale("log")
    axes[0].legend(fontsize=8)
    fig.suptitle("Posterior bias vs contamination (1-D Gaussian location model)")
    return fig


def logistic_accuracy(
    names: Sequence[str], accs: Mapping[str, Sequence[float]], fedavg: Mapping[str, float]
) -> Figure:
    """(B): each arm's test accuracy (``names``: ``"<prior>|<method>"``) in each setting
    (``accs[setting]``, the settings ``clean`` and ``contaminated``), FedAvg's dotted."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.6))
    for tag, style in (("clean", "o"), ("contaminated", "s")):
        ax.plot(range(len(names)), accs[tag], style, label=tag)
        ax.axhline(fedavg[tag], ls=":", lw=1)
        ax.set_xticks(range(len(names)), [n.replace("|", "\n") for n in names], fontsize=7)
    ax.set_ylabel("test accuracy %")
    ax.set_title("Bayesian logistic regression, 3 clients (dotted: FedAvg)")
    ax.legend()
    return fig
