"""Time of constrained spectral clustering vs the number of vertices.

For each n: a kNN graph of n random points (k=10) with n cannot-links between the two halves.
Whole ``constrained_cut`` calls, best of ``--repeats``:

- the default ``method="signed"`` fit on the sparse path without and with the certified lower
  bound (``lower_bound=False`` / ``True``; the bound is the CC eigenvalue, one more
  eigensolve), and their ratio;
- ``method="cc"`` on the sparse path: LOBPCG with the library's preconditioner (``"auto"``,
  which factorises L_G on these graphs) and, up to ``--jacobi-max`` vertices, with the Jacobi
  preconditioner that was the only one before (the old cost of the bound);
- dense LAPACK (signed without the bound, and CC) on the same graphs where it fits
  (n <= ``--dense-max``).

Run: ``python benchmarks/constrained_clustering_scaling.py [--max-n 100000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from icml25.constrained_clustering import ConstrainedCut, cc_eigenpair, constrained_cut, cut_ratio
from icml25.constrained_clustering.algorithm import Method, Solver, as_graph
from icml25.constrained_clustering.datasets import geometric_instance

T = TypeVar("T")
SIZES = (1_000, 2_000, 4_000, 10_000, 30_000, 100_000)


def _time(fn: Callable[[], T], repeats: int) -> tuple[float, T]:
    """Best wall time of ``fn()`` over ``repeats`` calls, and its last result."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return float(best), out


def _row(n: int, args: argparse.Namespace) -> str:
    """One table row: every timing on one instance of n vertices."""
    G, H, side = geometric_instance(n, np.random.default_rng(n))
    Gm, Hm = as_graph(G, "G"), as_graph(H, "H")

    def fit(method: Method, solver: Solver, lower_bound: bool) -> Callable[[], ConstrainedCut]:
        return lambda: constrained_cut(
            Gm, Hm, method=method, solver=solver, lower_bound=lower_bound
        )

    t_signed, signed = _time(fit("signed", "sparse", False), args.repeats)
    t_bound, bounded = _time(fit("signed", "sparse", True), args.repeats)
    assert bounded.lower_bound is not None
    t_cc, _ = _time(fit("cc", "sparse", False), args.repeats)
    row = f"{n:>7} {Gm.nnz // 2:>8} | {t_signed:>7.3f}s {t_bound:>7.3f}s "
    row += f"{t_bound / t_signed:>5.1f}x | {t_cc:>7.3f}s "
    if n <= args.jacobi_max:
        t_jacobi, (lam, _) = _time(
            lambda: cc_eigenpair(Gm, Hm, solver="sparse", preconditioner="jacobi"), args.repeats
        )
        assert np.isclose(lam, bounded.lower_bound, rtol=1e-6), "factor != jacobi"
        row += f"{t_jacobi:>8.3f}s | "
    else:
        row += f"{'-':>9} | "
    if n <= args.dense_max:
        t_signed_dense, signed_dense = _time(fit("signed", "dense", False), args.repeats)
        t_cc_dense, cc_dense = _time(fit("cc", "dense", False), args.repeats)
        assert np.isclose(signed_dense.eigenvalue, signed.eigenvalue, rtol=1e-6), "dense != sparse"
        assert np.isclose(cc_dense.eigenvalue, bounded.lower_bound, rtol=1e-6), "dense != sparse"
        row += f"{t_signed_dense:>8.3f}s {t_cc_dense:>7.3f}s | "
    else:
        row += f"{'-':>9} {'-':>8} | "
    return row + f"{signed.ratio / cut_ratio(Gm, Hm, side):.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--max-n", type=int, default=100_000)
    ap.add_argument("--dense-max", type=int, default=4_000)
    ap.add_argument("--jacobi-max", type=int, default=30_000)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    header = (
        f"{'n':>7} {'edges':>8} | {'signed':>8} {'+bound':>8} {'ratio':>6} | "
        f"{'cc':>8} {'cc jacobi':>9} | {'signed dn':>9} {'cc dn':>8} | found/planted"
    )
    print(header)
    print("-" * len(header))
    for n in SIZES:
        if n <= args.max_n:
            print(_row(n, args), flush=True)


if __name__ == "__main__":
    main()
