"""Part (d) of CCA-Attention's reproduction: the cost of one attention pass, each measured in
a process of its own, and the speed claims' statistics. It is a file of its own because the
measurement runs in fresh (or forked) Python processes that import only this module, and
:mod:`icml25.cca_attention.experiments` would pass ~600 lines with it.

- :func:`forward_cost_here` measures one (method, length) in the calling process;
  :func:`forward_cost` runs it in a fresh process; :func:`forward_costs` runs several, each
  in a child forked from one fresh process.
- :func:`speed_ratios`: per timed run, the speed-up at the longest length and the fraction of
  adjacent lengths whose speed-up grows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from icml25.cca_attention.attention import cca_attention
from icml25.core import validate as V
from icml25.core.claims import null_key

SPEED_G, SPEED_S, SPEED_HEADS, SPEED_DIM = 16, 256, 8, 64  # (d): one forward pass
SPEED_METHODS = ("sdpa", "cca", "cca-fast", "cca-dense")
"""``cca-dense``: CCA's kernel with a window over the whole sequence (no core token is ever
visible: causal attention through the same blocks), the speed claims' null arm."""


def _rss_kib(field: str) -> int:
    """``VmRSS`` or ``VmHWM`` from ``/proc/self/status``; elsewhere the ``getrusage`` peak."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))
    except OSError:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the high-water mark to the current resident set
    except OSError:  # not Linux: growth over the process's earlier peak (may read 0)
        pass


def forward_cost_here(
    method: str, length: int, repeats: int = 3, *, backward: bool = False, threads: int = 1
) -> dict[str, Any]:
    """Cost of one (1, 8, L, 64) float32 causal attention pass, forward or, with
    ``backward``, forward and backward, on ``threads`` threads.

    After a warm-up, each of ``repeats - 1`` runs is timed (wall and this process's CPU time;
    with one thread the CPU time is what the wall time would be on an idle machine, and other
    processes' load hardly moves it) and its peak growth of resident memory is read: Linux's
    high-water mark (``VmHWM``), reset to the current resident set before the run
    (``/proc/self/clear_refs``), minus that resident set. Returns the lists ``cpu_runs``,
    ``wall_runs`` and ``mib_runs`` (one entry per timed run), and ``seconds``,
    ``cpu_seconds`` (the best run) and ``mib`` (the largest peak). Run it in a fresh process
    (:func:`forward_cost`) whose allocator hands every block of 64 KiB or more back to the
    system when it is freed (``MALLOC_MMAP_THRESHOLD_``), so that freed memory is not there
    to be reused unseen.

    Methods: ``sdpa`` (PyTorch's fused causal SDPA), ``cca`` (g = 16, s = 256, the default
    low-memory kernel), ``cca-fast`` (``low_memory=False``) and ``cca-dense`` (CCA's kernel
    with a window covering the sequence: no compression, the null arm)."""
    V.choice("method", method, SPEED_METHODS)
    V.integer("repeats", repeats, low=2)
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, SPEED_HEADS, length, SPEED_DIM) for _ in range(3))
    grad = torch.randn_like(q) if backward else None
    for x in (q, k, v):
        x.requires_grad_(backward)
    walls, cpus, mibs = [], [], []
    for i in range(repeats):
        for x in (q, k, v):
            x.grad = None
        if i >= 1:  # after the warm-up
            _reset_peak()
            base = _rss_kib("VmRSS")
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.set_grad_enabled(backward):
            if method == "sdpa":
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                window = length if method == "cca-dense" else SPEED_S
                low_memory = method != "cca-fast"
                out = cca_attention(
                    q, k, v, group_size=SPEED_G, window=window, low_memory=low_memory
                )
            if grad is not None:
                out.backward(grad)
        del out
        if i >= 1:
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            mibs.append((_rss_kib("VmHWM") - base) / 1024)
    return {
        "seconds": min(walls),
        "cpu_seconds": min(cpus),
        "mib": max(mibs),
        "wall_runs": walls,
        "cpu_runs": cpus,
        "mib_runs": mibs,
    }


def forward_cost(
    method: str, length: int, repeats: int = 3, *, backward: bool = False, threads: int = 1
) -> dict[str, Any]:
    """:func:`forward_cost_here` in a fresh Python process."""
    V.choice("method", method, SPEED_METHODS)
    code = (
        "import json; from icml25.cca_attention.experiments_cost import forward_cost_here as f; "
        f"print(json.dumps(f({method!r}, {int(length)}, {int(repeats)}, "
        f"backward={bool(backward)}, threads={int(threads)})))"
    )
    env = os.environ | {"MALLOC_MMAP_THRESHOLD_": "65536"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if run.returncode:
        raise RuntimeError(f"forward_cost({method!r}, {length}) failed:\n{run.stderr[-2000:]}")
    return dict(json.loads(run.stdout.strip().splitlines()[-1]))


# One fresh process imports torch once, then forks a child per (method, length): each child
# starts from that clean process (torch imported, no tensor made, no thread pool started) as a
# fresh interpreter would, without paying the ~1.6 CPU-s of importing torch again.
_FORK_SERVER = """
import json, os, sys, traceback
from icml25.cca_attention.experiments_cost import forward_cost_here as f
for req in json.loads(sys.argv[1]):
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            out = f(req[0], req[1], req[2], backward=req[3], threads=req[4])
            sys.stdout.write("forward_cost " + json.dumps(out) + "\\n")
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if os.waitpid(pid, 0)[1]:
        sys.exit(f"forward_cost{tuple(req[:2])} failed")
"""


def forward_costs(
    runs: Sequence[tuple[str, int]],
    repeats: int = 3,
    *,
    backward: bool = False,
    threads: int = 1,
) -> list[dict[str, Any]]:
    """:func:`forward_cost` of each ``(method, length)`` of ``runs``, in that order, each in a
    process of its own: one fresh Python process (with the same allocator setting) imports
    torch once and forks a child per run, which measures and exits. A forked child's CPU time,
    wall time and resident-memory growth are measured as a fresh process's are (the
    high-water mark is reset in the child after its warm-up; the pages it shares with its
    parent were resident before); only the import is not repeated."""
    for method, length in runs:
        V.choice("method", method, SPEED_METHODS)
        V.integer("length", length, low=1)
    V.integer("repeats", repeats, low=2)
    if not hasattr(os, "fork"):  # Windows: a fresh process each, as forward_cost does
        return [forward_cost(m, n, repeats, backward=backward, threads=threads) for m, n in runs]
    reqs = [[m, int(n), int(repeats), bool(backward), int(threads)] for m, n in runs]
    env = os.environ | {"MALLOC_MMAP_THRESHOLD_": "65536"}
    run = subprocess.run(
        [sys.executable, "-c", _FORK_SERVER, json.dumps(reqs)],
        capture_output=True,
        text=True,
        env=env,
    )
    tag = "forward_cost "
    lines = [x[len(tag) :] for x in run.stdout.splitlines() if x.startswith(tag)]
    if run.returncode or len(lines) != len(reqs):
        raise RuntimeError(f"forward_costs({list(runs)}) failed:\n{run.stderr[-2000:]}")
    return [dict(json.loads(line)) for line in lines]


def speed_ratios(
    cost: dict[str, list[dict[str, Any]]], arm: str
) -> tuple[list[float], list[float]]:
    """Per timed run: SDPA time / ``arm`` time at the longest length, and the fraction of
    adjacent lengths whose ratio grows."""
    runs = range(len(cost["sdpa"][0]["cpu_runs"]))
    ratios = [
        [a["cpu_runs"][r] / c["cpu_runs"][r] for a, c in zip(cost["sdpa"], cost[arm], strict=True)]
        for r in runs
    ]
    longest = [rs[-1] for rs in ratios]
    grows = [float(np.mean([rs[i + 1] > rs[i] for i in range(len(rs) - 1)])) for rs in ratios]
    return longest, grows


SPEED_ARMS = ("sdpa", "cca", "cca-dense")
"""The arms of the speed claims: PyTorch's SDPA, CCA, and CCA with a window over everything."""


def speed_costs(lengths: Sequence[int], repeats: int) -> dict[str, list[dict[str, Any]]]:
    """:func:`forward_costs` of every arm of :data:`SPEED_ARMS` at each of ``lengths`` on one
    thread (CPU time: on a shared machine the wall time moves with other processes' load),
    each (method, length) in a process of its own; one list per arm, in ``lengths`` order."""
    runs = forward_costs([(m, n) for m in SPEED_ARMS for n in lengths], repeats, threads=1)
    return {m: runs[i * len(lengths) : (i + 1) * len(lengths)] for i, m in enumerate(SPEED_ARMS)}


def speed_measures(cost: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The speed claims from :func:`speed_costs`: per timed run, CCA's speed-up at the longest
    length and whether it grows with the length (the null arm: ``cca-dense``), and CCA's peak
    memory growth over SDPA's at the longest length."""
    longest, grows = speed_ratios(cost, "cca")
    null_longest, null_grows = speed_ratios(cost, "cca-dense")
    return {
        "speedup_long": longest,
        "speedup_grows": grows,
        null_key("speedup_long"): null_longest,
        null_key("speedup_grows"): null_grows,
        "speed_forward_memory": [
            c / max(a, 1e-9)
            for a, c in zip(cost["sdpa"][-1]["mib_runs"], cost["cca"][-1]["mib_runs"], strict=True)
        ],
    }
