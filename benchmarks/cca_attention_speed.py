"""CCA-Attention against PyTorch's fused causal SDPA: time and peak memory, forward and
forward + backward.

For each sequence length L (1K to 16K by default), one (B=1, H=8, L, D=64) float32 causal
self-attention pass:
- ``sdpa``: ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``, the
  natural baseline;
- ``cca``: :func:`icml25.cca_attention.cca_attention` with group size 16 and window 256
  (with ``--fast``: ``low_memory=False``, all heads and all core tokens at once).
Each (method, L, pass) runs in a fresh subprocess on ``--threads`` threads
(:func:`icml25.cca_attention.experiments_cost.forward_cost`, the reproduction's measurement):
the time is the best of ``--repeats - 1`` runs after a warm-up, as wall time and as the
process's CPU time (robust to other processes' load when one thread is used); the peak memory
is the growth of the process's resident high-water mark over the inputs. Printed: milliseconds,
MiB, and the SDPA/CCA ratios, from the same run. Run:
``python benchmarks/cca_attention_speed.py [--lengths 1024,...] [--backward] [--fast]
[--threads 1]``.
"""

from __future__ import annotations

import argparse
import os

from icml25.cca_attention.experiments_cost import (
    SPEED_DIM,
    SPEED_G,
    SPEED_HEADS,
    SPEED_S,
    forward_cost,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lengths", default="1024,2048,4096,8192,16384")
    ap.add_argument("--backward", action="store_true", help="time forward + backward")
    ap.add_argument("--fast", action="store_true", help="CCA with low_memory=False")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    what = "forward + backward" if args.backward else "forward"
    print(
        f"{what}; B=1, H={SPEED_HEADS}, D={SPEED_DIM}, float32, {args.threads} thread(s); "
        f"CCA g={SPEED_G}, s={SPEED_S}, low_memory={not args.fast}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'L':>6} {'sdpa ms':>9} {'cca ms':>9} {'wall x':>7} {'sdpa cpu':>9} {'cca cpu':>9} "
        f"{'cpu x':>7} {'sdpa MiB':>9} {'cca MiB':>9}"
    )
    for length in (int(x) for x in args.lengths.split(",")):
        a, c = (
            forward_cost(m, length, args.repeats, backward=args.backward, threads=args.threads)
            for m in ("sdpa", "cca-fast" if args.fast else "cca")
        )
        print(
            f"{length:>6} {1000 * a['seconds']:>9.1f} {1000 * c['seconds']:>9.1f} "
            f"{a['seconds'] / c['seconds']:>6.2f}x "
            f"{1000 * a['cpu_seconds']:>9.1f} {1000 * c['cpu_seconds']:>9.1f} "
            f"{a['cpu_seconds'] / c['cpu_seconds']:>6.2f}x {a['mib']:>9.2f} {c['mib']:>9.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
