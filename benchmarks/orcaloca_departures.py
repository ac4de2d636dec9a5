"""OrcaLoca: the measured effect of this package's remaining departures from the official code
on the quick benchmark (160 bugs, ReadingPolicy judge, the full agent unless said otherwise).

    PYTHONPATH=src python benchmarks/orcaloca_departures.py [--bugs 160]

Each line: function match %, gold in final context %, precision, mean searches, with the
paired difference (points) against the reproduction's setting and its 90% bootstrap interval.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from icml25.core.claims import Measurement
from icml25.orcaloca import OrcaLoca, ReadingPolicy, RetrievalPolicy, make_benchmark
from icml25.orcaloca.experiments import gold_shown
from icml25.orcaloca.metrics import match


class NewestFirst(OrcaLoca):
    """The package's former unpruned context order (newest first)."""

    def context(self, results, bug_nodes, graph, cache):  # type: ignore[no-untyped-def]
        if not self.config.pruning:
            return list(reversed(results))
        return super().context(results, bug_nodes, graph, cache)


def run(bench, make: Callable[[], OrcaLoca]) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    rows = []
    for bug in bench.bugs:
        g = bench.graph_for(bug)
        res = make().localize(bug.issue, g)
        m = match(bug.gold, res.locations)
        rows.append(
            (
                m.function_match,
                gold_shown(g, bug.gold_node, res.context) > 0,
                m.precision,
                res.tool_calls,
            )
        )
    a = np.array(rows, dtype=float)
    return {"function": a[:, 0], "context": a[:, 1], "precision": a[:, 2], "steps": a[:, 3]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bugs", type=int, default=160)
    args = ap.parse_args()
    bench = make_benchmark(args.bugs, seed=0)
    full = {"priority": True, "decomposition": True, "pruning": True}
    nodec = {"priority": True, "decomposition": True, "pruning": False}
    cases: list[tuple[str, Callable[[], OrcaLoca], Callable[[], OrcaLoca]]] = [
        (
            "conclusion uncapped (official) vs <= 3 locations",
            lambda: OrcaLoca(ReadingPolicy(max_locations=1000), max_steps=10, **full),
            lambda: OrcaLoca(ReadingPolicy(), max_steps=10, **full),
        ),
        (
            "no step cap (official: until the queue empties) vs 10 searches",
            lambda: OrcaLoca(ReadingPolicy(), max_steps=None, **full),
            lambda: OrcaLoca(ReadingPolicy(), max_steps=10, **full),
        ),
        (
            "unpruned context newest first (former) vs oldest first (official)",
            lambda: NewestFirst(ReadingPolicy(), max_steps=10, **nodec),
            lambda: OrcaLoca(ReadingPolicy(), max_steps=10, **nodec),
        ),
        (
            "judge not told the trace step's seeds (seed_bonus=0) vs told them (+1.5 logit)",
            lambda: OrcaLoca(ReadingPolicy(seed_bonus=0.0), max_steps=10, **full),
            lambda: OrcaLoca(ReadingPolicy(), max_steps=10, **full),
        ),
        (
            "TF-IDF RetrievalPolicy (fixed scores) vs ReadingPolicy judge",
            lambda: OrcaLoca(RetrievalPolicy(), max_steps=10, **full),
            lambda: OrcaLoca(ReadingPolicy(), max_steps=10, **full),
        ),
    ]
    for name, variant, base in cases:
        a, b = run(bench, variant), run(bench, base)
        d = Measurement.bootstrap([100 * (a["function"] - b["function"])], seed=0)
        print(
            f"{name}: function {100 * a['function'].mean():.1f} vs {100 * b['function'].mean():.1f}"
            f" (diff {d.mean:+.1f} [{d.interval.low:+.1f}, {d.interval.high:+.1f}]); context "
            f"{100 * a['context'].mean():.1f} vs {100 * b['context'].mean():.1f}; precision "
            f"{a['precision'].mean():.3f} vs {b['precision'].mean():.3f}; searches "
            f"{a['steps'].mean():.1f} vs {b['steps'].mean():.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
