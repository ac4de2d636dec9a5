"""The arms of OrcaLoca's reproduction: the budgets, the agent's arms and judges, the
measurements and the report's lines; :mod:`icml25.orcaloca.reproduce` runs them in order and
:mod:`icml25.orcaloca.claims` holds the claims.

- **Arms** (:data:`ARMS`): the same :class:`~icml25.orcaloca.agent.OrcaLoca` agent with the
  priority queue, the action decomposition and distance-aware pruning switched on or off: FIFO
  (none), + priority, + decomposition, full, and the leave-one-out ablations
  (:data:`COMPONENTS`: claim id -> the full agent without that component).
- **Judges** (:func:`judges`, :data:`PLAN`): :class:`~icml25.orcaloca.policy.ReadingPolicy`;
  the content-free judge ``ReadingPolicy(blind=True)`` (the null arms); :class:`OracleReading`
  (the gates); noisy judges (:func:`noise_gains`).
- **Per-bug measures** (:func:`run_arm`): function and file match, precision, the gold in the
  final context (:func:`gold_shown`) and its reciprocal position, the gold searched; the
  judge's AUC before and after reading (:func:`reading_aucs`); the search-budget sweep
  (:func:`budget_sweep`).
- **Statistics** (:func:`measure`): paired differences over bugs with a bootstrap interval;
  :func:`notes`: the report's tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from icml25.core.claims import Measurement, gate_key, null_key
from icml25.orcaloca.agent import LocalizationResult, OrcaLoca, tracer_seed_nodes
from icml25.orcaloca.bench import Benchmark, Bug
from icml25.orcaloca.graph import CodeGraph
from icml25.orcaloca.metrics import auc, match
from icml25.orcaloca.policy import Policy, ReadingPolicy

# Arms: (priority, decomposition, pruning). "+decomposition" is full without pruning.
ARMS: dict[str, tuple[bool, bool, bool]] = {
    "fifo": (False, False, False),
    "+priority": (True, False, False),
    "+decomposition": (True, True, False),
    "full": (True, True, True),
    "no_priority": (False, True, True),
    "no_decomposition": (True, False, True),
}
# claim id -> the full agent without that component
COMPONENTS: dict[str, str] = {
    "priority_gain": "no_priority",
    "decomposition_gain": "no_decomposition",
    "pruning_gain": "+decomposition",
}
ABLATIONS = tuple(COMPONENTS.values())


@dataclass(frozen=True, kw_only=True)
class Budget:
    """Sizes per budget."""

    n_bugs: int  # bugs asked of make_benchmark (it may keep fewer: bugs_kept)
    max_steps: int  # executed searches per arm
    sweep_steps: tuple[int, ...]  # the longer search budgets of the sweep (FIFO and full)
    sweep_bugs: int  # the first bugs the longer budgets of the sweep run on
    noise_levels: tuple[float, ...]  # noise sweep (notes); 2.0 is always measured
    noise_seeds: int  # how many of ctx.seeds the noisy arms use
    modules: tuple[str, ...] | None = None  # the benchmark's modules (None: all of them)


BUDGETS: dict[str, Budget] = {
    "tiny": Budget(
        n_bugs=12,
        max_steps=10,
        sweep_steps=(20,),
        sweep_bugs=12,
        noise_levels=(),
        noise_seeds=1,
        modules=("textwrap.py", "shlex.py", "gettext.py"),
    ),
    "quick": Budget(
        n_bugs=160,
        max_steps=10,
        sweep_steps=(20, 40),
        sweep_bugs=80,
        noise_levels=(),
        noise_seeds=1,
    ),
    "full": Budget(
        n_bugs=330,
        max_steps=10,
        sweep_steps=(20, 40),
        sweep_bugs=330,
        noise_levels=(0.5, 1.0, 4.0),
        noise_seeds=3,
    ),
}


class OracleReading(ReadingPolicy):
    """The gate's judge: :class:`ReadingPolicy`, except that the gold scores 100 once its
    code is read (the prior stays as it is: an oracle only for what it reads)."""

    def __init__(self, gold: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gold = gold

    def posterior(self, node_id: str, code: str) -> int:
        return 100 if node_id == self.gold else super().posterior(node_id, code)


def gold_shown(graph: CodeGraph, gold: str, context: tuple[tuple[str, str | None], ...]) -> int:
    """1-based position of the first context entry that shows the gold's code (its own
    result, or a full class/file text holding it); 0 if none does."""
    g = graph.nodes[gold]
    for pos, (kind, node) in enumerate(context, 1):
        if node == gold:
            return pos
        if node is None:
            continue
        if kind == "file" and g.file == node:
            return pos
        if kind == "class" and g.kind == "method" and node == f"{g.file}::{g.class_name}":
            return pos
    return 0


def run_arm(
    bench: Benchmark,
    arm: tuple[bool, bool, bool],
    judge: Callable[[Bug], Policy],
    *,
    max_steps: int,
    bugs: list[Bug] | None = None,
) -> dict[str, np.ndarray]:
    """Per-bug function match, file match, precision, gold in the final context and its
    reciprocal position there, gold searched, searches and scorer calls of one arm."""
    prio, dec, prune = arm
    rows = []
    for bug in bench.bugs if bugs is None else bugs:
        graph = bench.graph_for(bug)
        agent = OrcaLoca(
            judge(bug), priority=prio, decomposition=dec, pruning=prune, max_steps=max_steps
        )
        res: LocalizationResult = agent.localize(bug.issue, graph)
        m = match(bug.gold, res.locations)
        pos = gold_shown(graph, bug.gold_node, res.context)
        searched = bug.gold_node in {st.node for st in res.steps}
        rows.append(
            (
                m.function_match,
                m.file_match,
                m.precision,
                pos > 0,
                1.0 / pos if pos else 0.0,
                searched,
                res.tool_calls,
                res.scorer_calls,
            )
        )
    a = np.array(rows, dtype=float)
    keys = ("function", "file", "precision", "context", "rr", "searched", "tool_calls", "scorer")
    return {k: a[:, i] for i, k in enumerate(keys)}


def reading_aucs(bug: Bug, graph: CodeGraph) -> tuple[float, float, float, float]:
    """AUC of gold vs all other functions and vs the other traced functions, with the prior
    (before reading) and the posterior (after reading) of :class:`ReadingPolicy` as the agent's
    search has it (told the trace step's seeds)."""
    pol = ReadingPolicy()
    pol.prepare(bug.issue, graph)
    seeds = tracer_seed_nodes(bug.issue, graph, pol)
    pol.prepare(replace(bug.issue, seeds=tuple(seeds)), graph)
    funcs = [n.id for n in graph.nodes.values() if n.kind in ("function", "method")]
    traced = {f"{c.file}::{c.qualname}" for c in bug.issue.trace} - {bug.gold_node}
    traced_in = [t for t in sorted(traced) if t in graph.nodes and t in set(funcs)]
    out = []
    for score in (pol.prior, lambda i: pol.posterior(i, graph.source(i))):
        sc = {i: score(i) for i in funcs}
        gold = [sc[bug.gold_node]]
        out.append(auc(gold, [v for i, v in sc.items() if i != bug.gold_node]))
        out.append(auc(gold, [sc[i] for i in traced_in]) if traced_in else float("nan"))
    return out[0], out[1], out[2], out[3]


def _count_lower(rows: np.ndarray) -> float:
    """Number of columns (full minus an ablation, per bug) whose mean is > 0."""
    return float((rows.mean(axis=0) > 0).sum())


def _boot(values: np.ndarray | list[np.ndarray], statistic: Any = None) -> Measurement:
    groups = values if isinstance(values, list) else [values]
    return Measurement.bootstrap(groups, statistic, seed=0)


def _noisy_judge(noise: float, seed: int) -> Callable[[Bug], Policy]:
    return lambda _bug: ReadingPolicy(noise=noise, seed=seed)


# ---- the runs ----------------------------------------------------------------------------------

PLAN: dict[str, list[str]] = {
    "reading": list(ARMS),
    "blind": ["fifo", "full", *ABLATIONS],
    "oracle": ["full", *ABLATIONS],
}
"""The arms each judge runs: every arm with ReadingPolicy; the arms the null arms and gates
compare with the blind and the oracle judge."""

Results = dict[str, dict[str, dict[str, np.ndarray]]]
"""judge (or search budget) -> arm -> per-bug measure (:func:`run_arm`)."""


def judges(seed: int) -> dict[str, Callable[[Bug], Policy]]:
    """The reading judge, the content-free (blind) judge and the oracle, all seeded by ``seed``."""
    return {
        "reading": lambda b: ReadingPolicy(seed=seed),
        "blind": lambda b: ReadingPolicy(blind=True, seed=seed),
        "oracle": lambda b: OracleReading(b.gold_node, seed=seed),
    }


def run_plan(
    bench: Benchmark,
    judge: dict[str, Callable[[Bug], Policy]],
    cfg: Budget,
    progress: Callable[[str], None],
) -> Results:
    """Every arm of :data:`PLAN` on every bug at ``cfg.max_steps`` searches."""
    n = len(bench.bugs)
    res: Results = {j: {} for j in judge}
    for j, arms in PLAN.items():
        for name in arms:
            progress(f"{j} judge, arm {name}, {n} bugs")
            res[j][name] = run_arm(bench, ARMS[name], judge[j], max_steps=cfg.max_steps)
    return res


def budget_sweep(
    bench: Benchmark,
    reading: Callable[[Bug], Policy],
    cfg: Budget,
    res: Results,
    progress: Callable[[str], None],
) -> dict[int, dict[str, dict[str, np.ndarray]]]:
    """FIFO and full at each search budget on the first ``cfg.sweep_bugs`` bugs (the main
    budget's runs reused)."""
    sweep_bugs = bench.bugs[: cfg.sweep_bugs]
    k = len(sweep_bugs)
    sweep: dict[int, dict[str, dict[str, np.ndarray]]] = {
        cfg.max_steps: {
            a: {m: v[:k] for m, v in res["reading"][a].items()} for a in ("fifo", "full")
        }
    }
    for steps in cfg.sweep_steps:
        sweep[steps] = {}
        for a in ("fifo", "full"):
            progress(f"budget sweep: {a} at {steps} searches, {k} bugs")
            sweep[steps][a] = run_arm(bench, ARMS[a], reading, max_steps=steps, bugs=sweep_bugs)
    return sweep


def noise_gains(
    bench: Benchmark, cfg: Budget, seeds: Sequence[int], progress: Callable[[str], None]
) -> dict[float, list[np.ndarray]]:
    """Full minus FIFO function match (points, per bug) with noisy judges: noise sd 2.0 and
    ``cfg.noise_levels``, one list entry per seed of ``seeds``."""
    noisy: dict[float, list[np.ndarray]] = {}
    for noise in (2.0, *cfg.noise_levels):
        noisy[noise] = []
        for s in seeds:
            progress(f"noise {noise}, seed {s}")
            pol = _noisy_judge(noise, s)
            f = run_arm(bench, ARMS["full"], pol, max_steps=cfg.max_steps)
            o = run_arm(bench, ARMS["fifo"], pol, max_steps=cfg.max_steps)
            noisy[noise].append(100 * (f["function"] - o["function"]))
    return noisy


# ---- statistics and the report -----------------------------------------------------------------


def measure(
    res: Results, aucs: np.ndarray, noisy: dict[float, list[np.ndarray]], n: int
) -> dict[str, Any]:
    """Every claim's, null arm's and gate's measurement: paired differences over bugs
    (points), bootstrapped; ``n`` is the number of bugs kept."""

    def diff(judge: str, metric: str, a: str, b: str) -> np.ndarray:
        return 100 * (res[judge][a][metric] - res[judge][b][metric])

    out: dict[str, Any] = {}
    for cid, without in COMPONENTS.items():
        out[cid] = _boot(diff("reading", "function", "full", without))
        out[null_key(cid)] = _boot(diff("blind", "function", "full", without))
        out[gate_key(cid)] = _boot(diff("oracle", "function", "full", without))
    for key, judge in (("ablations_lower", "reading"), (null_key("ablations_lower"), "blind")):
        rows = np.stack([diff(judge, "function", "full", a) for a in ABLATIONS], axis=1)
        out[key] = _boot(rows, _count_lower)
    rows = np.stack([diff("oracle", "function", "full", a) for a in ABLATIONS], axis=1)
    out[gate_key("ablations_lower")] = _boot(rows, _count_lower)
    out["context_gain"] = _boot(diff("reading", "context", "full", "fifo"))
    out[null_key("context_gain")] = _boot(diff("blind", "context", "full", "fifo"))
    out["full_vs_fifo"] = _boot(diff("reading", "function", "full", "fifo"))
    valid = ~np.isnan(aucs[:, 1]) & ~np.isnan(aucs[:, 3])
    out["reading_auc_gain"] = _boot(aucs[valid, 3] - aucs[valid, 1])
    out["scorer_auc"] = _boot(aucs[:, 2])
    out["scorer_auc_traced"] = _boot(aucs[valid, 3])
    out["gain_at_noise_2"] = _boot(noisy[2.0])
    out["precision_gain"] = _boot(
        res["reading"]["full"]["precision"] - res["reading"]["fifo"]["precision"]
    )
    out["bugs_kept"] = Measurement.exact(float(n))
    return out


def notes(
    bench: Benchmark,
    res: Results,
    sweep: dict[int, dict[str, dict[str, np.ndarray]]],
    aucs: np.ndarray,
    noisy: dict[float, list[np.ndarray]],
) -> list[str]:
    """The report's lines: the benchmark, every arm's measures per judge, the paired
    differences, the judge's AUC, the budget sweep and the noise sweep."""
    lines: list[str] = []
    n = len(bench.bugs)
    ops: dict[str, int] = {}
    for bug in bench.bugs:
        ops[bug.operator] = ops.get(bug.operator, 0) + 1
    lines.append(
        f"Benchmark: {n} bugs kept of {bench.tried} candidate edits tried, in "
        f"{len({x.file for x in bench.bugs})} modules; operators {ops}; "
        f"{sum(x.raises for x in bench.bugs)} raise, the rest give a wrong result. "
        "Judge: ReadingPolicy (noise 0); 10 executed searches per arm, at most 3 locations; "
        "unpruned context oldest first."
    )
    lines.append("")
    lines.append(
        "| judge | arm | function match % | file match % | precision | gold in final context % "
        "| gold's reciprocal position in context | gold searched % | searches | scorer calls |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for judge, arms in res.items():
        for name, v in arms.items():
            lines.append(
                f"| {judge} | {name} | {100 * v['function'].mean():.1f} | "
                f"{100 * v['file'].mean():.1f} | {v['precision'].mean():.3f} | "
                f"{100 * v['context'].mean():.1f} | {v['rr'].mean():.3f} | "
                f"{100 * v['searched'].mean():.1f} | {v['tool_calls'].mean():.1f} | "
                f"{v['scorer'].mean():.1f} |"
            )
    lines.append("")
    lines.append("Paired differences (points, 90% bootstrap interval over bugs):")
    lines.append("")
    lines.append("| difference | metric | ReadingPolicy | blind (null) | oracle (gate) |")
    lines.append("|---|---|---|---|---|")

    def iv(judge: str, metric: str, a: str, b: str) -> str:
        if a not in res[judge] or b not in res[judge]:
            return "-"
        d = 100 * (res[judge][a][metric] - res[judge][b][metric])
        m = Measurement.bootstrap([d], seed=0)
        return f"{m.mean:+.1f} [{m.interval.low:+.1f}, {m.interval.high:+.1f}]"

    for a, b in [("full", x) for x in (*ABLATIONS, "fifo")]:
        for metric in ("function", "context", "searched"):
            lines.append(
                f"| {a} - {b} | {metric} | {iv('reading', metric, a, b)} | "
                f"{iv('blind', metric, a, b)} | {iv('oracle', metric, a, b)} |"
            )
    lines.append("")
    m = np.nanmean(aucs, axis=0)
    lines.append(
        f"Judge AUC (ReadingPolicy), mean over bugs: gold vs all functions {m[0]:.3f} before "
        f"reading (prior) -> {m[2]:.3f} after (posterior); gold vs the other traced functions "
        f"{m[1]:.3f} -> {m[3]:.3f}."
    )
    lines.append("")
    k = len(next(iter(sweep[min(sweep)].values()))["function"])
    lines.append(f"Search-budget sweep (ReadingPolicy; the first {k} bugs):")
    lines.append("")
    lines.append(
        "| searches | FIFO function % | full function % | FIFO gold in context % | "
        "full gold in context % | FIFO gold searched % | full gold searched % |"
    )
    lines.append("|---|---|---|---|---|---|---|")
    for steps in sorted(sweep):
        f, o = sweep[steps]["full"], sweep[steps]["fifo"]
        lines.append(
            f"| {steps} | {100 * o['function'].mean():.1f} | {100 * f['function'].mean():.1f} | "
            f"{100 * o['context'].mean():.1f} | {100 * f['context'].mean():.1f} | "
            f"{100 * o['searched'].mean():.1f} | {100 * f['searched'].mean():.1f} |"
        )
    lines.append("")
    lines.append("| judge noise sd | full - FIFO function match (points), per seed |")
    lines.append("|---|---|")
    for noise, gains in sorted(noisy.items()):
        lines.append(f"| {noise:g} | {', '.join(f'{g.mean():+.1f}' for g in gains)} |")
    rf = res["reading"]
    gain0 = 100 * (rf["full"]["function"].mean() - rf["fifo"]["function"].mean())
    lines.append(f"(noise 0: {gain0:+.1f})")
    return lines
