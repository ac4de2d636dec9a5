"""CCA-Attention against PyTorch's fused causal SDPA: forward latency and peak memory.

For each sequence length L (1K to 16K by default), one (B=1, H=8, L, D=64) float32 causal
self-attention forward pass:
- ``sdpa``: ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``, the
  natural baseline;
- ``cca``: :func:`icml25.cca_attention.cca_attention` with group size 16 and window 256.
Each (method, L) runs in a fresh subprocess (:func:`icml25.cca_attention.reproduce.forward_cost`,
the same measurement as the reproduction's): the time is the best of 3 runs after a warm-up,
the peak memory is the growth of the process's maximum resident set over the inputs.
Printed: milliseconds, MiB, and the SDPA/CCA ratios. Run:
``python benchmarks/cca_attention_speed.py [--lengths 1024,2048,4096,8192,16384]``.
"""

from __future__ import annotations

import argparse

import torch

from icml25.cca_attention.reproduce import SPEED_DIM, SPEED_G, SPEED_HEADS, SPEED_S, forward_cost


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lengths", default="1024,2048,4096,8192,16384")
    args = ap.parse_args()
    print(
        f"B=1, H={SPEED_HEADS}, D={SPEED_DIM}, float32, {torch.get_num_threads()} threads; "
        f"CCA g={SPEED_G}, s={SPEED_S}"
    )
    print(f"{'L':>6} {'sdpa ms':>9} {'cca ms':>9} {'speed-up':>9} {'sdpa MiB':>9} {'cca MiB':>9}")
    for length in (int(x) for x in args.lengths.split(",")):
        a, c = (forward_cost(m, length, repeats=4) for m in ("sdpa", "cca"))
        print(
            f"{length:>6} {1000 * a['seconds']:>9.1f} {1000 * c['seconds']:>9.1f} "
            f"{a['seconds'] / c['seconds']:>8.2f}x {a['mib']:>9.1f} {c['mib']:>9.1f}"
        )


if __name__ == "__main__":
    main()
