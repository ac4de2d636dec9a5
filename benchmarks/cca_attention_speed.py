"""CCA-Attention against PyTorch's fused causal SDPA: forward latency and peak memory.

For each sequence length L (1K to 16K by default), one (B=1, H=8, L, D=64) float32 causal
self-attention forward pass, timed as the mean of 3 runs after a warm-up:
- ``sdpa``: ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``, the
  natural baseline;
- ``cca``: :func:`icml25.cca_attention.cca_attention` with group size 16 and window 256.
Peak memory is the growth of the process's maximum resident set over the inputs, measured
in a fresh subprocess per (method, L), so that runs do not share a high-water mark.
Printed: milliseconds, MiB, and the SDPA/CCA ratios. Run:
``python benchmarks/cca_attention_speed.py [--lengths 1024,2048,4096,8192,16384]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys

import torch

from _timing import mean_seconds

G, S, H, D = 16, 256, 8, 64


def one(method: str, length: int) -> dict[str, float]:
    from icml25.cca_attention import cca_attention

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, H, length, D) for _ in range(3))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    def run() -> None:
        with torch.no_grad():
            if method == "sdpa":
                torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                cca_attention(q, k, v, group_size=G, window=S)

    sec = mean_seconds(run, repeats=3)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
    return {"ms": 1000 * sec, "mib": peak / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lengths", default="1024,2048,4096,8192,16384")
    ap.add_argument("--one", nargs=2, metavar=("METHOD", "L"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]))))
        return
    print(f"B=1, H={H}, D={D}, float32, {torch.get_num_threads()} threads; CCA g={G}, s={S}")
    print(f"{'L':>6} {'sdpa ms':>9} {'cca ms':>9} {'speed-up':>9} {'sdpa MiB':>9} {'cca MiB':>9}")
    for length in (int(x) for x in args.lengths.split(",")):
        res = {}
        for method in ("sdpa", "cca"):
            cmd = [sys.executable, __file__, "--one", method, str(length)]
            res[method] = json.loads(
                subprocess.run(cmd, capture_output=True, check=True, text=True).stdout
            )
        a, c = res["sdpa"], res["cca"]
        print(
            f"{length:>6} {a['ms']:>9.1f} {c['ms']:>9.1f} {a['ms'] / c['ms']:>8.2f}x "
            f"{a['mib']:>9.1f} {c['mib']:>9.1f}"
        )


if __name__ == "__main__":
    main()
