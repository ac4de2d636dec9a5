"""OrcaLoca: how often the gold function is a callee of the function the reproducer calls, and
how often the agent localizes it, by the gold's depth in the reproducer's trace (issue 69).

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/orcaloca_callee.py [--bugs 160] \\
        [--out rows.json] [--compare before.json after.json]

Depth: the gold's shallowest call in the reproducer's real trace, the calls the reproducer's own
code makes being depth 0 (the benchmark keeps no gold there): depth 1 is a direct callee of
the API the reproducer calls. "caller named": that API's name is in the issue text; "gold
named": the gold's own name is (a traceback through it). Arms: the full agent at 10 searches
(the reproduction's setting) with ``ReadingPolicy`` (the reproduction's judge) and
``RetrievalPolicy`` (the library default): function match %, the gold among the trace step's
seeds %. ``--out`` writes the per-bug rows; ``--compare`` prints paired differences (after
minus before, points, 90% bootstrap) of two such files, e.g. from two checkouts.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable

import numpy as np

from icml25.core.claims import Measurement
from icml25.orcaloca import OrcaLoca, ReadingPolicy, RetrievalPolicy, make_benchmark
from icml25.orcaloca.agent import _action_for
from icml25.orcaloca.metrics import match

JUDGES: dict[str, Callable[[], object]] = {"reading": ReadingPolicy, "retrieval": RetrievalPolicy}


def rows(n_bugs: int) -> list[dict[str, object]]:
    bench = make_benchmark(n_bugs, seed=0)
    out = []
    for bug in bench.bugs:
        trace = bug.issue.trace
        by = {c.index: c for c in trace}
        gold = [c for c in trace if f"{c.file}::{c.qualname}" == bug.gold_node]
        words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", bug.issue.text))
        top = min(gold, key=lambda c: c.depth)
        caller = by.get(top.parent)
        row: dict[str, object] = {
            "id": bug.id,
            "depth": top.depth,
            "caller_named": caller is not None and caller.qualname.split(".")[-1] in words,
            "gold_named": bug.gold_node.split("::")[1].split(".")[-1] in words,
            "raises": bug.raises,
        }
        graph = bench.graph_for(bug)
        seed_of_gold = str(_action_for(graph, bug.gold_node))
        for name, make in JUDGES.items():
            res = OrcaLoca(make(), max_steps=10).localize(bug.issue, graph)  # type: ignore[arg-type]
            row[name] = match(bug.gold, res.locations).function_match
            row[name + "_seeded"] = seed_of_gold in res.seeds
        out.append(row)
    return out


def report(data: list[dict[str, object]]) -> None:
    depth = np.array([r["depth"] for r in data])
    named = np.array([r["caller_named"] for r in data], dtype=bool)
    gold_named = np.array([r["gold_named"] for r in data], dtype=bool)
    n = len(data)
    d1 = depth == 1
    depths = {int(k): int(v) for k, v in zip(*np.unique(depth, return_counts=True), strict=True)}
    print(
        f"{n} bugs: gold a direct callee of the API the reproducer calls (depth 1): {d1.sum()} "
        f"({100 * d1.mean():.1f}%), that API named in the issue: {(d1 & named).sum()} "
        f"({100 * (d1 & named).mean():.1f}%); gold named in the issue: {gold_named.sum()}; "
        f"depths {depths}"
    )
    groups = {
        "all": np.ones(n, bool),
        "depth 1": d1,
        "depth >= 2": depth >= 2,
        "gold not named": ~gold_named,
    }
    for judge in JUDGES:
        fm = np.array([r[judge] for r in data], dtype=float)
        sd = np.array([r[judge + "_seeded"] for r in data], dtype=float)
        parts = [
            f"{g} {100 * fm[m].mean():.1f} (n {m.sum()}, seeded {100 * sd[m].mean():.1f})"
            for g, m in groups.items()
        ]
        print(f"{judge}: function match % — " + "; ".join(parts))


def compare(before: list[dict[str, object]], after: list[dict[str, object]]) -> None:
    if [r["id"] for r in before] != [r["id"] for r in after]:
        raise ValueError("--compare needs the rows of the same bugs in the same order")
    depth = np.array([r["depth"] for r in after])
    for judge in JUDGES:
        a = np.array([r[judge] for r in after], dtype=float)
        b = np.array([r[judge] for r in before], dtype=float)
        for g, m in (("all", np.ones(len(a), bool)), ("depth 1", depth == 1)):
            d = Measurement.bootstrap([100 * (a[m] - b[m])], seed=0)
            print(
                f"{judge}, {g} (n {m.sum()}): {100 * b[m].mean():.1f} -> {100 * a[m].mean():.1f}"
                f" ({d.mean:+.1f} [{d.interval.low:+.1f}, {d.interval.high:+.1f}])"
            )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bugs", type=int, default=160)
    ap.add_argument("--out", default=None)
    ap.add_argument("--compare", nargs=2, default=None, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        with open(args.compare[0]) as f, open(args.compare[1]) as g:
            compare(json.load(f), json.load(g))
        return
    data = rows(args.bugs)
    report(data)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(data, f, indent=1)


if __name__ == "__main__":
    main()
