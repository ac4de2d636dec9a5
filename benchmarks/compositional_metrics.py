"""Cost of the linear-factorisation metrics against a plain ``numpy.linalg.lstsq`` solve.

Embeddings: ``N`` rows (default 10^5) x ``d`` dimensions (default 512), two concepts with 10
values each on the unbalanced cyclic design ``S_3`` (random counts per combination). The
baseline solves the same additive least-squares problem with a dense design matrix
(``N x (1 + 2 * 10)``, intercept plus one-hot columns) by ``numpy.linalg.lstsq`` and computes
R^2 from its residual. Ours: :func:`factorization_r2` (the normal equations assembled from
sparse group sums), and the full :func:`linear_factorization` (also whitened R^2,
orthogonality and ranks, which the baseline does not compute). Both R^2 values are checked to
agree. Run: ``python benchmarks/compositional_metrics.py [--n 100000] [--d 512]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from _timing import mean_seconds
from icml25.compositional import cyclic_design, factorization_r2, linear_factorization


def baseline_r2(X: np.ndarray, labels: np.ndarray, n: int) -> float:
    N = len(X)
    A = np.zeros((N, 1 + 2 * n))
    A[:, 0] = 1.0
    A[np.arange(N), 1 + labels[:, 0]] = 1.0
    A[np.arange(N), 1 + n + labels[:, 1]] = 1.0
    beta, *_ = np.linalg.lstsq(A, X, rcond=None)
    R = X - A @ beta
    Xc = X - X.mean(axis=0)
    return 1.0 - float(np.sum(R * R)) / float(np.sum(Xc * Xc))


def cpu_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Mean process CPU time of ``repeats`` calls (steadier than wall time on a shared machine;
    the metrics run single-threaded with OMP_NUM_THREADS=1)."""
    t0 = time.process_time()
    for _ in range(repeats):
        fn()
    return (time.process_time() - t0) / repeats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = 10
    design = cyclic_design(n, 3)
    labels = design[rng.integers(0, len(design), size=args.n)]
    U, V = rng.normal(size=(n, args.d)), rng.normal(size=(n, args.d))
    X = U[labels[:, 0]] + V[labels[:, 1]] + rng.normal(size=(args.n, args.d))
    ours, base = factorization_r2(X, labels), baseline_r2(X, labels, n)
    assert abs(ours - base) < 1e-8, (ours, base)
    print(f"N={args.n}, d={args.d}, S_3 with n={n} (unbalanced); R^2 = {ours:.6f} (both)")
    rows: list[tuple[str, Callable[[], object]]] = [
        ("numpy.linalg.lstsq, dense design (baseline)", lambda: baseline_r2(X, labels, n)),
        ("factorization_r2 (sparse normal equations)", lambda: factorization_r2(X, labels)),
        (
            "linear_factorization (+ whitened R^2, cos, ranks)",
            lambda: linear_factorization(X, labels),
        ),
    ]
    times = [
        (name, mean_seconds(fn, args.repeats), cpu_seconds(fn, args.repeats)) for name, fn in rows
    ]
    _, wall0, cpu0 = times[0]
    print(f"{'method':50s} {'wall s':>8s} {'ratio':>6s} {'CPU s':>8s} {'ratio':>6s}")
    for name, wall, cpu in times:
        print(f"{name:50s} {wall:8.3f} {wall / wall0:6.2f} {cpu:8.3f} {cpu / cpu0:6.2f}")


if __name__ == "__main__":
    main()
