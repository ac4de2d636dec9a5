"""CCA-Attention's reproduction figure, one function: the run's measurements (plain lists and
dicts) in, a Figure out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from icml25.cca_attention.experiments import VALUES
from icml25.cca_attention.experiments_lm import LM_G, LM_S

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def cca_summary(
    table: dict[str, list[float]],
    ppl: dict[str, list[float]],
    memory: dict[str, list[float]],
    cost: dict[str, list[dict[str, Any]]],
    *,
    speed_lengths: Sequence[int],
    lm_lengths: Sequence[int],
    kv_lengths: Sequence[int],
) -> Figure:
    """Four panels: (a)/(b) needle accuracy of each model (``table``: per seed), (c) the
    pretrained LM's perplexity at ``lm_lengths`` per arm (``ppl``), (d) the forward speed-up
    over SDPA at ``speed_lengths`` (best CPU time of ``cost``), and (d) the decoding memory
    after a prefill of ``kv_lengths`` tokens (``memory``) beside one pass's peak memory."""
    import matplotlib.pyplot as plt

    ratios = [
        a["cpu_seconds"] / c["cpu_seconds"] for a, c in zip(cost["sdpa"], cost["cca"], strict=True)
    ]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.2))
    ax1, ax3, ax2, ax4 = axes.ravel()
    names = list(table)
    ax1.bar(range(len(names)), [np.mean(table[n]) for n in names])
    ax1.axhline(1 / VALUES, ls=":", color="gray", label="chance")
    ax1.set_xticks(range(len(names)), names, rotation=30)
    ax1.set_ylabel("needle accuracy")
    ax1.set_title("(a) long-range retrieval, (b) swap in CCA", fontsize=9)
    ax1.legend()
    ax2.plot(speed_lengths, ratios, marker="o")
    ax2.axhline(1, ls=":", color="gray")
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("sequence length")
    ax2.set_ylabel("SDPA time / CCA time")
    ax2.set_title("(d) forward speed-up over PyTorch SDPA (CPU)", fontsize=9)
    for name, vals in ppl.items():
        ax3.plot(lm_lengths, vals, marker="o", ls="--" if "ft" in name else "-", label=name)
    ax3.set_xscale("log", base=2)
    ax3.set_xlabel("context length")
    ax3.set_ylabel(f"perplexity (positions >= {LM_S})")
    ax3.set_title(f"(c) pretrained LM, CCA swapped in (g={LM_G}, s={LM_S})", fontsize=9)
    ax3.legend(fontsize=8)
    ax4.plot(kv_lengths, memory["full"], marker="o", label="KV cache, full attention")
    ax4.plot(kv_lengths, memory["cca"], marker="o", label="CCACache + core tokens")
    ax4.plot(speed_lengths, [c["mib"] for c in cost["sdpa"]], marker="s", ls=":", label="SDPA")
    ax4.plot(speed_lengths, [c["mib"] for c in cost["cca"]], marker="s", ls=":", label="CCA")
    ax4.set_xscale("log", base=2)
    ax4.set_yscale("log")
    ax4.set_xlabel("sequence length")
    ax4.set_ylabel("MiB")
    ax4.set_title("(d) decoding memory (solid); forward peak, one layer (dotted)", fontsize=9)
    ax4.legend(fontsize=7)
    fig.tight_layout()
    return fig
