"""OrcaLoca: code-graph construction over the whole standard library and the agent's per-step
cost without a language model, each against a plain ``ast.parse`` of the same files measured in
the same run.

    PYTHONPATH=src python benchmarks/orcaloca_graph.py [--steps 10] [--bugs 30]
"""

from __future__ import annotations

import argparse
import ast
import sysconfig
import time
from pathlib import Path

from icml25.orcaloca import OrcaLoca, RetrievalPolicy, make_benchmark
from icml25.orcaloca.graph import _PARSE_CACHE, CodeGraph


def stdlib_sources() -> dict[str, str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    out = {}
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if "site-packages" in rel or rel.split("/")[0] in ("test", "idlelib", "lib2to3"):
            continue
        try:
            out[rel] = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--bugs", type=int, default=30)
    args = ap.parse_args()
    sources = stdlib_sources()
    t = time.perf_counter()
    parsed = 0
    for rel, src in sources.items():
        try:
            ast.parse(src, filename=rel)
            parsed += 1
        except SyntaxError:
            pass
    t_parse = time.perf_counter() - t
    _PARSE_CACHE.clear()
    t = time.perf_counter()
    g = CodeGraph.from_sources(sources)
    t_graph = time.perf_counter() - t
    print(
        f"stdlib: {len(sources)} files ({parsed} parse), {len(g.nodes)} nodes, "
        f"{len(g.references)} reference edges"
    )
    print(f"ast.parse only : {t_parse:.2f} s ({len(sources) / t_parse:.0f} files/s)")
    print(f"code graph     : {t_graph:.2f} s ({len(sources) / t_graph:.0f} files/s)")
    print(f"ratio graph / ast.parse: {t_graph / t_parse:.2f}")

    bench = make_benchmark(args.bugs, seed=0)
    steps, t = 0, time.perf_counter()
    for bug in bench.bugs:
        res = OrcaLoca(RetrievalPolicy(), max_steps=args.steps).localize(
            bug.issue, bench.graph_for(bug)
        )
        steps += res.tool_calls
    t_agent = time.perf_counter() - t
    files = sorted(bench.originals.values())
    t = time.perf_counter()
    for src in files:
        ast.parse(src)
    t_bench_parse = time.perf_counter() - t
    per_step = t_agent / max(steps, 1)
    print(
        f"agent, no LLM : {1e3 * per_step:.2f} ms per search step ({steps} steps, "
        f"{len(bench.bugs)} bugs); ast.parse of the {len(files)}-module repository: "
        f"{1e3 * t_bench_parse:.1f} ms; ratio step / repository parse: "
        f"{per_step / t_bench_parse:.3f}"
    )


if __name__ == "__main__":
    main()
