"""Every method's quick reproduction, timed: wall time against the ``quick_seconds`` that
``icml25 list`` promises, and the total against the 15-minute goal for the main job.

    python benchmarks/quick_budgets.py [NAME ...]

The baseline is the registry's own promise, measured in the same run as the ratio
wall / quick_seconds (> 1 means ``icml25 list`` understates the time).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from icml25.core.parallel import run_methods
from icml25.methods import load_all

GOAL_S = 60.0  # per method on 2 cores (120 s where a language model is fine-tuned)
TOTAL_GOAL_S = 15 * 60.0


def main(names: list[str]) -> None:
    methods = load_all()
    chosen = [methods[n] for n in (names or methods)]
    with tempfile.TemporaryDirectory() as tmp:
        entries = run_methods(
            chosen,
            budget="quick",
            seeds=(0, 1, 2),
            out_dir=Path(tmp),
            say=lambda msg: print(msg, file=sys.stderr, flush=True),
        )
    print(f"{'method':24s} {'wall s':>8s} {'listed s':>9s} {'ratio':>6s}")
    for m, e in zip(chosen, entries, strict=True):
        flag = "" if e["wall_s"] <= GOAL_S else f"  over {GOAL_S:.0f} s"
        print(
            f"{m.slug:24s} {e['wall_s']:8.1f} {m.quick_seconds:9.0f} "
            f"{e['wall_s'] / m.quick_seconds:6.2f}{flag}"
        )
    total = sum(e["wall_s"] for e in entries)
    print(f"{'total':24s} {total:8.1f}   (goal for all 19 methods: {TOTAL_GOAL_S:.0f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
