"""Compute some seeds of a FedGVI reproduction in this process, as checkpoints that
``icml25 reproduce fedgvi --budget BUDGET --out OUT`` then reuses (its full budget costs about
5 minutes of CPU a seed; on a shared machine two processes halve the wall time).

    python benchmarks/fedgvi_seeds.py full runs/fedgvi_full 3,4

The seeds are the reproduction's own (``RunContext.seeds_run``: the CLI's seeds extended to
the budget's count); the (C) part runs for the first ``bnn_seeds`` of them, as in the reproduction.
One seed alone: ``icml25 seed fedgvi SEED --budget BUDGET --out OUT``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from icml25.core.runner import RunContext
from icml25.fedgvi.reproduce import one_seed


def main(budget: str, out: str, which: str, cli_seeds: str = "0,1,2") -> None:
    ctx = RunContext(
        budget=budget,  # type: ignore[arg-type]
        seeds=tuple(int(s) for s in cli_seeds.split(",")),
        out_dir=Path(out) / "fedgvi",
        progress=lambda msg: print(msg, flush=True),
    )
    for s in (int(x) for x in which.split(",")):
        one_seed(ctx, s)


if __name__ == "__main__":
    main(*sys.argv[1:])
