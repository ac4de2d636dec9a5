"""The figures of the SENZ reproduction: plain data (a seed's run dictionary) in, a matplotlib
Figure out; the reproduction saves them (``enzyme_rag_arms``, ``enzyme_rag_real_arms``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

REAL_ARMS = ("natural", "copy", "random_enzyme", "full", "d0", "random_rows", "other", "uncond")
"""The arms of the real-data figure, in its order."""


def synthetic_arms(r: Mapping[str, Any]) -> Figure:
    """One synthetic seed (:func:`~icml25.enzyme_rag.experiments.synthetic_seed`): the mean
    oracle activity of the main arms, and the sweep of the number of retrieved rows d."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["random_seq", "uncond", "copy", "random", "noguide", "full", "natural"]
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    vals = [r["act"][n] for n in names]
    ax[0].bar(range(len(names)), vals, color="tab:blue")
    ax[0].set_xticks(range(len(names)), names, rotation=30)
    ax[0].set_ylabel("oracle activity (held-out substrates)")
    ax[0].set_title(f"arms, seed {r['seed']}")
    ds = sorted(r["sweep_act"])
    ax[1].plot(ds, [r["sweep_act"][d] for d in ds], "o-", label="activity")
    ax[1].plot(ds, [r["sweep_fold"][d] for d in ds], "s--", label="foldability proxy")
    ax[1].set_xlabel("retrieved enzymes d")
    ax[1].legend()
    ax[1].set_title("sweep of d (full model)")
    return fig


def real_arms(runs: Sequence[Mapping[str, Any]]) -> Figure:
    """Each arm's mean profile-HMM bits per seed (dots) and over seeds (bars), and per target
    (sorted) the natural, copy, full and unconditional arms' bits; ``runs`` hold each seed's
    ``hmm`` (arm -> bits per target, every arm of :data:`REAL_ARMS`) and ``seed``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 3.8))
    x = np.arange(len(REAL_ARMS))
    per_seed = np.array([[r["hmm"][a].mean() for a in REAL_ARMS] for r in runs])
    ax[0].bar(x, per_seed.mean(0), color="tab:blue", alpha=0.6)
    for i, row in enumerate(per_seed):
        ax[0].plot(x, row, "o", color="k", ms=3, label="seeds" if i == 0 else None)
    ax[0].axhline(0, color="grey", lw=0.8)
    ax[0].set_xticks(x, [a.replace("_", " ") for a in REAL_ARMS], rotation=30, ha="right")
    ax[0].set_ylabel("profile-HMM bits (target's EC)")
    ax[0].set_title(f"real held-out substrates: arms ({len(runs)} seeds)")
    ax[0].legend()
    order = np.argsort(runs[0]["hmm"]["natural"])
    t = np.arange(len(order))
    for arm, style in (("natural", "o-"), ("copy", "s-"), ("full", "^-"), ("uncond", "v:")):
        mean = np.mean([r["hmm"][arm] for r in runs], axis=0)[order]
        ax[1].plot(t, mean, style, ms=3, lw=1, label=arm)
    ax[1].set_yscale("symlog", linthresh=10)
    ax[1].set_xlabel("held-out target (sorted by its natural enzymes' score)")
    ax[1].set_ylabel("bits (mean over seeds)")
    ax[1].set_title("per target")
    ax[1].legend(fontsize=8)
    return fig
