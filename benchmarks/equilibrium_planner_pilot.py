"""Pilot for the equilibrium planner's reproduction (issue 50): how the arms fine-tune from the
shared base, and what the quick budget costs.

Run once on pilot seed 100 (no claim uses it: quick uses the first of ``--seeds``, full 0-4),
before the claims' runs; its output chose the configuration and is quoted in the README. For
each candidate it runs one seed of the quick budget (:func:`run_seed`) and prints, per phase,
the CPU seconds and what the phase produced: the base's gate value (one-shot SR on training
tasks), the supervised planner's fit, equilibrium training's per-round training-task success
and converged share, and the open-loop SR of every arm on the three test splits.

Candidates (the official fine-tuning is a fresh LoRA per round on the query and value
projections, r = 8, alpha = 16, merged; the package's earlier runs tuned every weight):

* ``full``: every weight, AdamW lr 2e-3;
* ``lora``: LoRA r = 8, alpha = 16, AdamW lr 2e-3 (the official rank and scale, with the small
  model's learning rate).

Choice, fixed before the run: the official LoRA unless its supervised arm fits the training
tasks worse than the full fine-tune by more than 10 SR points (the method cannot be judged
through a fine-tuning that cannot fit), in which case every weight is tuned.

Run: ``PYTHONPATH=src python benchmarks/equilibrium_planner_pilot.py`` (two seeds' worth of
the quick budget).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import torch

from icml25.equilibrium_planner.experiments import BUDGETS, run_seed

PILOT_SEED = 100


def main() -> None:
    torch.set_num_threads(1)
    for name, rank in (("full", None), ("lora", 8)):
        cfg = dataclasses.replace(BUDGETS["quick"], lora_rank=rank)
        t0 = time.process_time()

        def progress(msg: str, t0: float = t0, name: str = name) -> None:
            print(f"[{name} {time.process_time() - t0:6.1f} CPU-s] {msg}", flush=True)

        res = run_seed(cfg, PILOT_SEED, progress)
        progress("done")
        print(
            f"{name}: base gate {res['base_sr']:.3f}; supervised on training tasks "
            f"{res['sup_train']:.3f}; equilibrium training success per round "
            f"{[round(x, 3) for x in res['train_round_success']]}, converged "
            f"{[round(x, 3) for x in res['train_round_converged']]}"
        )
        for split, arms in res["success"].items():
            cells = ", ".join(f"{a} {100 * float(np.mean(v)):.1f}" for a, v in arms.items())
            print(f"{name} {split}: {cells}")
        print(
            f"{name}: fixed point share {float(np.mean(res['fixed_point'])):.3f} (supervised "
            f"{float(np.mean(res['fixed_point_null'])):.3f}); world model agreement "
            f"{float(np.mean(res['wm_agreement'])):.3f} (constant "
            f"{float(np.mean(res['wm_agreement_null'])):.3f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
