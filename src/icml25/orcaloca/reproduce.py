"""Reproduction of OrcaLoca's component claims on an offline localization benchmark.

Bugs are injected into pure-Python standard-library modules copied into a work folder
(:mod:`icml25.orcaloca.bench`); each issue comes from a reproducer's real output or traceback
and carries the reproducer's real ``sys.settrace`` trace. Every arm runs the same agent with the
same embedded :class:`RetrievalPolicy` and the same fixed budget of executed search actions; only
the three components are switched: FIFO baseline (none), + priority queue, + decomposition,
full (+ distance-aware pruning), and the leave-one-out ablations. The scorer's quality (AUC of
the gold function against every other function, and against the other functions the reproducer
ran) is measured, and the FIFO-vs-full gain is measured again with the scorer made noisier.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.core.claims import Claim, Rule
from icml25.core.runner import RunContext
from icml25.orcaloca.agent import OrcaLoca
from icml25.orcaloca.bench import Benchmark, Bug, make_benchmark
from icml25.orcaloca.metrics import auc, match
from icml25.orcaloca.policy import RetrievalPolicy

# Arms: (priority, decomposition, pruning). "no_pruning" is the same agent as "+decomposition".
ARMS: dict[str, tuple[bool, bool, bool]] = {
    "fifo": (False, False, False),
    "+priority": (True, False, False),
    "+decomposition": (True, True, False),
    "full": (True, True, True),
    "no_priority": (False, True, True),
    "no_decomposition": (True, False, True),
}
ABLATIONS = ("no_priority", "no_decomposition", "+decomposition")  # full minus one component
PAPER_FUNCTION_MATCH = 65.33

CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="full_vs_fifo",
        statement="Priority scheduling, action decomposition and distance-aware pruning "
        "together localize more bugs than the plain agent (FIFO queue, no decomposition, "
        "no pruning) at the same search budget.",
        where="Sec. 5 ablation; brief's rule (full - FIFO >= 10 points)",
        metric="function match (percentage points), full minus FIFO, same bugs, 10 searches",
        rule=Rule(">=", 10.0, partial=3.0),
        paper_value="each component raises function match",
    ),
    Claim(
        id="full_vs_fifo_ci_low",
        statement="The gain of the full agent over FIFO is not noise.",
        where="brief's rule (bootstrap CI above 0)",
        metric="lower end of the 95% paired bootstrap CI of full - FIFO (points, 2000 draws)",
        rule=Rule(">", 0.0),
    ),
    Claim(
        id="ablations_lower",
        statement="Removing any one component lowers the function match.",
        where="Sec. 5 ablation; brief's rule (>= 2 of 3)",
        metric="number of single-component ablations with lower function match than full",
        rule=Rule(">=", 2.0, partial=1.0),
        paper_value="3 of 3",
    ),
    Claim(
        id="swe_bench_lite",
        statement="OrcaLoca reaches 65.33% function match (83.33% file match) on SWE-bench "
        "Lite with Claude-3.5-Sonnet, and +6.33 resolved-rate points when its locations feed "
        "Agentless.",
        where="Table 1, Table 3",
        metric="function match on SWE-bench Lite (%)",
        rule=None,
        paper_value=PAPER_FUNCTION_MATCH,
        out_of_scale="needs SWE-bench Lite's 300 repositories in docker and Claude-3.5-Sonnet; "
        "the laptop benchmark and scoring policy here are stand-ins",
    ),
    Claim(
        id="scorer_auc",
        statement="(control) The embedded scorer is informative: gold function vs every other "
        "function of the repository.",
        where="brief's pitfall: report scorer AUC",
        metric="AUC of the default scorer, gold vs all other functions, mean over bugs",
        rule=Rule(">=", 0.7),
        kind="control",
    ),
    Claim(
        id="scorer_auc_traced",
        statement="(control) ... but not an oracle: gold vs the other functions the "
        "reproducer ran.",
        where="brief's pitfall: a near-oracle scorer makes the result tautological",
        metric="AUC of the default scorer, gold vs other traced functions, mean over bugs",
        rule=Rule("<=", 0.95),
        kind="control",
    ),
    Claim(
        id="gain_at_noise_2",
        statement="(control) The components still help with a much noisier scorer.",
        where="issue 30: how the gain changes as the scorer gets noisier",
        metric="full - FIFO function match (points) with noise sd 2 on every score's logit, "
        "mean over seeds",
        rule=Rule(">", 0.0),
        kind="control",
    ),
    Claim(
        id="precision_gain",
        statement="(control) The gain is not bought with longer outputs: both arms return at "
        "most 3 locations; precision does not drop.",
        where="brief's pitfall: subset match rewards long outputs",
        metric="precision, full minus FIFO",
        rule=Rule(">=", 0.0),
        kind="control",
    ),
    Claim(
        id="bugs_kept",
        statement="(control) The benchmark has 150+ bugs, each failing its reproducer.",
        where="brief: 150-300 bugs",
        metric="bugs generated (tiny uses few)",
        rule=Rule(">=", 150.0),
        kind="control",
    ),
)


@dataclass(frozen=True)
class Config:
    n_bugs: int
    max_steps: int
    noise_levels: tuple[float, ...]
    noise_seeds: int  # how many of ctx.seeds the noisy arms use
    modules: tuple[str, ...] | None = None
    bootstrap: int = 2000


CONFIGS: dict[str, Config] = {
    "tiny": Config(12, 10, (2.0,), 1, ("textwrap.py", "shlex.py", "gettext.py"), 200),
    "quick": Config(160, 10, (0.5, 1.0, 2.0), 1),
    "full": Config(330, 10, (0.5, 1.0, 2.0, 4.0), 3),
}


def run_arm(
    bench: Benchmark, arm: tuple[bool, bool, bool], *, max_steps: int, noise: float, seed: int
) -> dict[str, np.ndarray]:
    """Per-bug function match, file match, precision, searches and scorer calls of one arm."""
    prio, dec, prune = arm
    rows = []
    for bug in bench.bugs:
        agent = OrcaLoca(
            RetrievalPolicy(noise=noise, seed=seed),
            priority=prio,
            decomposition=dec,
            pruning=prune,
            max_steps=max_steps,
        )
        res = agent.localize(bug.issue, bench.graph_for(bug))
        m = match(bug.gold, res.locations)
        reached = bug.gold_node in {st.node for st in res.steps}
        rows.append(
            (m.function_match, m.file_match, m.precision, res.tool_calls, res.scorer_calls, reached)
        )
    a = np.array(rows, dtype=float)
    return {
        "function": a[:, 0],
        "file": a[:, 1],
        "precision": a[:, 2],
        "tool_calls": a[:, 3],
        "scorer_calls": a[:, 4],
        "reached": a[:, 5],
    }


def scorer_aucs(bench: Benchmark, bug: Bug, *, noise: float, seed: int) -> tuple[float, float]:
    """AUC of gold vs all other functions, and vs the other functions the reproducer ran."""
    g = bench.graph_for(bug)
    pol = RetrievalPolicy(noise=noise, seed=seed)
    pol.prepare(bug.issue, g)
    funcs = [n.id for n in g.nodes.values() if n.kind in ("function", "method")]
    scores = {i: pol.score(i, g.source(i)) for i in funcs}
    gold = scores[bug.gold_node]
    rest = [s for i, s in scores.items() if i != bug.gold_node]
    traced = {f"{c.file}::{c.qualname}" for c in bug.issue.trace} - {bug.gold_node}
    rest_t = [scores[i] for i in traced if i in scores]
    return auc([gold], rest), (auc([gold], rest_t) if rest_t else float("nan"))


def bootstrap_ci(diff: np.ndarray, draws: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(diff), size=(draws, len(diff)))
    means = diff[idx].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def reproduce(ctx: RunContext) -> dict[str, Any]:
    cfg = CONFIGS[ctx.budget]
    seed0 = ctx.seeds[0]
    ctx.progress(f"generating {cfg.n_bugs} bugs")
    bench = make_benchmark(cfg.n_bugs, seed=seed0, modules=cfg.modules)
    n = len(bench.bugs)
    results: dict[str, dict[str, np.ndarray]] = {}
    for name, arm in ARMS.items():
        ctx.progress(f"arm {name} on {n} bugs")
        results[name] = run_arm(bench, arm, max_steps=cfg.max_steps, noise=0.0, seed=seed0)
    fm = {k: 100 * v["function"].mean() for k, v in results.items()}
    diff = 100 * (results["full"]["function"] - results["fifo"]["function"])
    lo, hi = bootstrap_ci(diff, cfg.bootstrap, seed0)
    se = float(diff.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")

    ctx.progress("scorer AUC")
    aucs = np.array([scorer_aucs(bench, b, noise=0.0, seed=seed0) for b in bench.bugs])
    sweep: dict[float, list[float]] = {0.0: [float(diff.mean())]}
    sweep_auc: dict[float, float] = {0.0: float(np.nanmean(aucs[:, 0]))}
    sweep_auc_t: dict[float, float] = {0.0: float(np.nanmean(aucs[:, 1]))}
    for noise in cfg.noise_levels:
        gains = []
        for s in ctx.seeds[: cfg.noise_seeds]:
            ctx.progress(f"noise {noise}, seed {s}")
            f = run_arm(bench, ARMS["full"], max_steps=cfg.max_steps, noise=noise, seed=s)
            b = run_arm(bench, ARMS["fifo"], max_steps=cfg.max_steps, noise=noise, seed=s)
            gains.append(100 * float(f["function"].mean() - b["function"].mean()))
        sweep[noise] = gains
        a = np.array([scorer_aucs(bench, bg, noise=noise, seed=seed0) for bg in bench.bugs])
        sweep_auc[noise] = float(np.nanmean(a[:, 0]))
        sweep_auc_t[noise] = float(np.nanmean(a[:, 1]))

    _report(ctx, bench, results, fm, (lo, hi), se, sweep, sweep_auc, sweep_auc_t)
    noisy = sweep.get(2.0, [float("nan")])
    return {
        "full_vs_fifo": float(diff.mean()),
        "full_vs_fifo_ci_low": lo,
        "ablations_lower": float(sum(fm[a] < fm["full"] for a in ABLATIONS)),
        "scorer_auc": float(np.nanmean(aucs[:, 0])),
        "scorer_auc_traced": float(np.nanmean(aucs[:, 1])),
        "gain_at_noise_2": noisy,
        "precision_gain": float(
            results["full"]["precision"].mean() - results["fifo"]["precision"].mean()
        ),
        "bugs_kept": float(n),
    }


def _report(
    ctx: RunContext,
    bench: Benchmark,
    results: dict[str, dict[str, np.ndarray]],
    fm: dict[str, float],
    ci: tuple[float, float],
    se: float,
    sweep: dict[float, list[float]],
    sweep_auc: dict[float, float],
    sweep_auc_t: dict[float, float],
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(bench.bugs)
    ops: dict[str, int] = {}
    for b in bench.bugs:
        ops[b.operator] = ops.get(b.operator, 0) + 1
    ctx.note(
        f"Benchmark: {n} bugs kept of {bench.tried} candidate edits tried, in "
        f"{len({b.file for b in bench.bugs})} modules; operators {ops}; "
        f"{sum(b.raises for b in bench.bugs)} raise, the rest give a wrong result. "
        "Every arm: embedded RetrievalPolicy (noise 0), 10 executed searches, at most 3 "
        "locations."
    )
    ctx.note("")
    ctx.note(
        "| arm | priority | decomposition | pruning | function match % | file match % | "
        "precision | gold searched % | searches | scorer calls |"
    )
    ctx.note("|---|---|---|---|---|---|---|---|---|---|")
    for name, (p, d, r) in ARMS.items():
        v = results[name]
        ctx.note(
            f"| {name} | {'y' if p else '-'} | {'y' if d else '-'} | {'y' if r else '-'} | "
            f"{fm[name]:.1f} | {100 * v['file'].mean():.1f} | {v['precision'].mean():.3f} | "
            f"{100 * v['reached'].mean():.1f} | {v['tool_calls'].mean():.1f} | "
            f"{v['scorer_calls'].mean():.1f} |"
        )
    ctx.note("")
    ctx.note(
        f"full - FIFO: {fm['full'] - fm['fifo']:.1f} points (paired SE {se:.1f}; 95% bootstrap "
        f"CI [{ci[0]:.1f}, {ci[1]:.1f}]). Paper (SWE-bench Lite, Claude-3.5): function match "
        f"{PAPER_FUNCTION_MATCH}%."
    )
    ctx.note("")
    ctx.note("| scorer noise sd | AUC gold vs all | AUC gold vs traced | full - FIFO (points) |")
    ctx.note("|---|---|---|---|")
    for noise, gains in sweep.items():
        ctx.note(
            f"| {noise:g} | {sweep_auc[noise]:.3f} | {sweep_auc_t[noise]:.3f} | "
            f"{np.mean(gains):.1f} (seeds: {', '.join(f'{g:.1f}' for g in gains)}) |"
        )

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    names = list(ARMS)
    rng = np.random.default_rng(0)
    errs = []
    for k in names:
        f = results[k]["function"]
        idx = rng.integers(0, len(f), size=(500, len(f)))
        q = np.quantile(100 * f[idx].mean(axis=1), [0.025, 0.975])
        errs.append((fm[k] - q[0], q[1] - fm[k]))
    ax.bar(
        names,
        [fm[k] for k in names],
        yerr=np.array(errs).T,
        capsize=3,
        color=["grey", "C0", "C0", "C2", "C1", "C1"],
    )
    ax.set_ylabel("function match (%)")
    ax.set_title(f"Arms at 10 searches, {n} injected stdlib bugs (95% bootstrap CI)")
    ax.tick_params(axis="x", labelsize=8, rotation=20)
    ctx.save_figure(fig, "arms")

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    xs = list(sweep)
    ax.plot(xs, [np.mean(sweep[x]) for x in xs], "o-", label="full - FIFO (points)")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("scorer noise sd (on the logit)")
    ax.set_ylabel("function-match gain (points)")
    ax2 = ax.twinx()
    ax2.plot(xs, [sweep_auc[x] for x in xs], "s--", color="C1", label="AUC gold vs all")
    ax2.plot(xs, [sweep_auc_t[x] for x in xs], "^--", color="C2", label="AUC gold vs traced")
    ax2.set_ylabel("scorer AUC")
    ax.legend(loc="upper right", fontsize=8)
    ax2.legend(loc="lower left", fontsize=8)
    ax.set_title("Gain of the components as the scorer gets noisier")
    ctx.save_figure(fig, "noise_sweep")
