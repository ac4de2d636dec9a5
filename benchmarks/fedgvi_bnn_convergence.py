"""Diagnostics for issue 37 (no claims).

``main``: the full budget's BNN arms with the local problems run closer to convergence (the
official patience of 10 epochs, at most 60 epochs instead of 15), on one seed. It ran on seeds
0-2 before the second full run (the method's NOTES.md) and showed that 70% of the local
problems then stop early, the first round's still at the cap.

``pilot`` (``--pilot``): how many epochs the *first* round's local problems need before early
stopping ends them (patience 10, cap 300), on seed 100 (not a claims seed), one round, the
full budget's data (3 clients x 3,000 images), every Bayesian arm; it prints each local
problem's epochs and the CPU time. Rule written before it ran: the second full budget's cap is
the largest first-round epoch count rounded up to a multiple of 20, at least the diagnostic's
60, unless the projected full run then exceeds ~800 s of CPU on one core; then the largest
multiple of 20 that fits.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/fedgvi_bnn_convergence.py [seed]
    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/fedgvi_bnn_convergence.py --pilot
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any

from icml25.fedgvi.experiments import BUDGETS
from icml25.fedgvi.experiments_bnn import BNN_ARMS, run_bnn

# the submodule (the package re-exports the function fedgvi under the same name)
F = sys.modules["icml25.fedgvi.fedgvi"]


def main(seed: int = 0) -> None:
    b = dataclasses.replace(BUDGETS["full"], bnn_epochs=60, bnn_patience=10)
    t = time.process_time()
    c = run_bnn(b, seed)
    print(f"seed {seed}, {c['n']} images, patience {b.bnn_patience}, cap {b.bnn_epochs}")
    for arm in (*BNN_ARMS, "FedAvg"):
        extra = ""
        if arm != "FedAvg":
            extra = f", {c[arm + '|epochs']:.1f} epochs, {c[arm + '|stopped']:.2f} early-stopped"
        print(f"{arm}: {c[arm]:.2f}%{extra}")
    print(f"data term {c['data_init']:.0f} -> {c['data_q']:.0f}, KL(q || prior) {c['kl_q']:.0f}")
    print(f"CPU {time.process_time() - t:.0f} s")


def pilot(seed: int = 100, cap: int = 300) -> None:
    per_solve: list[int] = []
    inner = F._adam_epochs

    def counted(*args: Any, **kw: Any) -> Any:
        events = args[7]
        before = events["epochs"]
        out = inner(*args, **kw)
        per_solve.append(events["epochs"] - before)
        return out

    F._adam_epochs = counted  # type: ignore[assignment]
    b = dataclasses.replace(BUDGETS["full"], bnn_epochs=cap, bnn_patience=10)
    t = time.process_time()
    c = run_bnn(b, seed, rounds=1)
    print(f"pilot seed {seed}, one round, patience 10, cap {cap}")
    for i, arm in enumerate(BNN_ARMS):
        print(f"{arm}: epochs a local problem {per_solve[3 * i : 3 * i + 3]}")
    print(f"largest {max(per_solve)}; CPU {time.process_time() - t:.0f} s")
    print(f"(accuracies not used) {[round(c[a], 1) for a in BNN_ARMS]}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pilot"]:
        pilot()
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
