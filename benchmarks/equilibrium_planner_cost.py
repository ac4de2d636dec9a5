"""Equilibrium planner costs, as ratios measured in one run.

1. Simulator throughput: ``HouseholdEnv.step`` lines per second, and whole-plan ``execute``
   calls per second (gold plans).
2. Refinement cost: one fixed-point solve per plan (first sampled draft, then greedy steps to
   ``x_{t+1} == x_t`` or the cap) against one forward decode of the same model on the same
   items; the ratio is the inference-time price of self-refinement.
3. The share of items that stop early at a fixed point (before the cap), and the mean number
   of decodes per item.

Run: ``PYTHONPATH=src python benchmarks/equilibrium_planner_cost.py`` (about a minute).
"""

from __future__ import annotations

import time

import torch

from icml25.equilibrium_planner import (
    HouseholdEnv,
    PlanTransformer,
    TransformerPlanner,
    execute,
    make_tasks,
    solve_fixed_point,
    train_equilibrium,
)


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    splits = make_tasks(seed=0)
    train, test = splits["train"], splits["test_new_task"]

    env = HouseholdEnv(train)
    t0, lines = time.perf_counter(), 0
    for k in range(len(train)):
        env.reset(options={"task_index": k})
        for ln in train[k].gold.splitlines():
            _, _, terminated, truncated, _ = env.step(ln)
            lines += 1
            if terminated or truncated:
                break
    env_rate = lines / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(5):
        for t in train:
            execute(t.scene, t.gold)
    exec_rate = 5 * len(train) / (time.perf_counter() - t0)
    print(f"simulator: {env_rate:,.0f} env.step lines/s, {exec_rate:,.0f} whole plans/s")
    print(
        "  (env.step re-executes the plan so far; plans/s over lines/s = "
        f"{exec_rate / env_rate:.2f})"
    )

    model = PlanTransformer()
    train_equilibrium(model, train, steps=300, rounds=3, generator=torch.Generator().manual_seed(0))
    planner = TransformerPlanner(model)
    g = torch.Generator().manual_seed(1)
    t0 = time.perf_counter()
    planner.propose(test, [[] for _ in test], [None] * len(test), top_k=1, generator=g)
    one = time.perf_counter() - t0
    t0 = time.perf_counter()
    sol = solve_fixed_point(planner, test, max_iters=20, generator=g)
    solve = time.perf_counter() - t0
    early = sum(sol.converged) / len(test)
    decodes = sum(sol.iterations) / len(test)
    print(
        f"refinement: one decode {1e3 * one / len(test):.2f} ms/plan, fixed-point solve "
        f"{1e3 * solve / len(test):.2f} ms/plan -> ratio {solve / one:.2f}x"
    )
    print(
        f"  {decodes:.2f} decodes per item on average; {100 * early:.1f}% stop early at a "
        f"fixed point (cap 20)"
    )


if __name__ == "__main__":
    main()
