"""Time of constrained spectral clustering vs the number of vertices.

For each n: a kNN graph of n random points (k=10) with n cannot-links between the two halves.
Sparse solvers (ARPACK for the signed pencil, LOBPCG for CC) are timed up to 10^5 vertices;
dense LAPACK on the same graphs where it fits (n <= --dense-max). Ratios are measured in the
same run. Run: ``python benchmarks/constrained_clustering_scaling.py [--max-n 100000]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from icml25.constrained_clustering import constrained_cut, cut_ratio
from icml25.constrained_clustering.datasets import geometric_instance


def _time(fn, repeats: int):  # type: ignore[no-untyped-def]
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--max-n", type=int, default=100_000)
    ap.add_argument("--dense-max", type=int, default=4_000)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    sizes = [n for n in (1_000, 2_000, 4_000, 10_000, 30_000, 100_000) if n <= args.max_n]
    header = (
        f"{'n':>7} {'edges':>8} | {'signed sp':>9} {'cc sp':>8} {'cc/signed':>9} | "
        f"{'signed dn':>9} {'cc dn':>8} {'dn/sp signed':>12} {'dn/sp cc':>9} | ratio found/planted"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        G, H, side = geometric_instance(n, np.random.default_rng(n))
        planted = cut_ratio(G, H, side)

        def run(method: str, solver: str, G=G, H=H):  # type: ignore[no-untyped-def]
            return constrained_cut(G, H, method=method, solver=solver, lower_bound=False)

        ts, rs = _time(lambda: run("signed", "sparse"), args.repeats)
        tc, _ = _time(lambda: run("cc", "sparse"), args.repeats)
        line = f"{n:>7} {G.nnz // 2:>8} | {ts:>8.3f}s {tc:>7.3f}s {tc / ts:>8.1f}x | "
        if n <= args.dense_max:
            tsd, rd = _time(lambda: run("signed", "dense"), args.repeats)
            tcd, _ = _time(lambda: run("cc", "dense"), args.repeats)
            assert np.isclose(rd.eigenvalue, rs.eigenvalue, rtol=1e-6), "dense != sparse"
            line += f"{tsd:>8.3f}s {tcd:>7.3f}s {tsd / ts:>11.1f}x {tcd / tc:>8.1f}x | "
        else:
            line += f"{'-':>9} {'-':>8} {'-':>12} {'-':>9} | "
        line += f"{rs.ratio / planted:.3f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
