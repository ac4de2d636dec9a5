"""The benchmarks' shared timer (imported by the scripts beside it; not a benchmark itself)."""

from __future__ import annotations

import time
from collections.abc import Callable


def mean_seconds(fn: Callable[[], object], repeats: int = 3) -> float:
    """Call ``fn`` once to warm up, then return the mean wall time of ``repeats`` calls."""
    fn()
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - t0) / repeats
