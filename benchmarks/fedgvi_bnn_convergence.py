"""Diagnostic for issue 37 (no claim): the full budget's BNN arms with the local problems run
closer to convergence (the official patience of 10 epochs, at most 60 epochs instead of 15),
on one seed. The published verdicts come from the committed full budget; this only asks
whether the GCE + AR against PVI comparison depends on the epoch cap.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/fedgvi_bnn_convergence.py [seed]
"""

from __future__ import annotations

import dataclasses
import sys
import time

from icml25.fedgvi.reproduce import BNN_ARMS, BUDGETS, run_bnn


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


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
