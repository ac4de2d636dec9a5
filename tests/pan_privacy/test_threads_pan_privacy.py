"""The reproduction does not depend on the thread count (issue 57, item 2).

The tiny budget runs in a fresh process with 1 and with 2 BLAS/OpenMP/torch threads (set
before NumPy loads, and checked there with threadpoolctl); verdicts must agree, and so must the
numbers up to rounding. The protocol is pure-Python cryptography (no BLAS), so this guards the
numeric summaries and any future vectorisation (no claim of this method reads a clock)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

import icml25

SLUG = "pan_privacy"
TIMINGS = set()  # no claim reads a clock
RUN = """
import json, sys
from pathlib import Path
import numpy, torch, threadpoolctl
torch.set_num_threads(int(sys.argv[2]))
from icml25.core.runner import run_method
from icml25.methods import load_all
entry = run_method(load_all()[sys.argv[1]], budget="tiny", seeds=[0], out_dir=Path(sys.argv[3]))
pools = {p["internal_api"]: p["num_threads"] for p in threadpoolctl.threadpool_info()}
print(json.dumps({"claims": entry["claims"], "error": entry["error"], "pools": pools}))
"""


def tiny_run(slug: str, threads: int, out: Path) -> dict[str, Any]:
    """The tiny reproduction's entry, run in a fresh process with ``threads`` threads."""
    src = str(Path(icml25.__file__).parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    proc = subprocess.run(
        [sys.executable, "-c", RUN, slug, str(threads), str(out)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["error"] is None, result["error"]
    assert set(result["pools"].values()) == {threads}, result["pools"]
    return result


def assert_same_results(a: dict[str, Any], b: dict[str, Any], timings: set[str]) -> None:
    """Same verdicts (claim, null arm, gate); same measured values where no clock enters."""

    def values(m: dict[str, Any] | None) -> np.ndarray:
        return np.array([float(v) for v in (m or {}).get("values", [])])

    for ca, cb in zip(a["claims"], b["claims"], strict=True):
        assert ca["id"] == cb["id"]
        assert (ca["verdict"], ca["rule_verdict"]) == (cb["verdict"], cb["rule_verdict"]), ca["id"]
        pairs = [(ca["measured"], cb["measured"])]
        if ca.get("null") and "arm" in ca["null"]:
            assert ca["null"]["verdict"] == cb["null"]["verdict"], ca["id"]
            pairs.append((ca["null"]["measured"], cb["null"]["measured"]))
        if ca.get("gate"):
            assert ca["gate"]["passed"] == cb["gate"]["passed"], ca["id"]
            pairs.append((ca["gate"]["measured"], cb["gate"]["measured"]))
        if ca["id"] in timings:
            continue
        for ma, mb in pairs:
            np.testing.assert_allclose(
                values(ma), values(mb), rtol=1e-6, atol=1e-9, err_msg=ca["id"]
            )


def test_tiny_reproduction_is_the_same_with_one_and_two_threads(tmp_path: Path) -> None:
    one = tiny_run(SLUG, 1, tmp_path / "one")
    two = tiny_run(SLUG, 2, tmp_path / "two")
    assert_same_results(one, two, TIMINGS)
