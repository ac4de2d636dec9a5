"""Reproduction of "Closed-Loop Long-Horizon Robotic Planning via Equilibrium Sequence
Modeling" at laptop scale.

Setting: the symbolic household of :mod:`icml25.equilibrium_planner.env` (VirtualHome's action
vocabulary and preconditions; task names shuffled, 40% held out; scene 6 held out), and a small
plan transformer trained on the spot instead of Llama-3-8B with QLoRA. Two planners get the
same number of gradient steps from the same initialisation:

* supervised: ``(c, Null, Null) -> y``; scored one-shot (one sampled draft), and run as the
  SELF-REFINE baseline (one generation per feedback round, as ``--self_refine_only``);
* equilibrium: the official outer loop (on-policy fixed points each round, failure re-runs
  with feedback at depths 0-2, replay), trained on ``(c, feedback on x*, x*) -> y``.

A world model (a separate transformer that sees object states) is trained on every (fixed
point, environment feedback) pair met while training the equilibrium planner. Test: open loop,
closed loop with <= 4 environment rounds, world-model rounds, or both alternating. The claims
and their rules were fixed before the first run.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.core.claims import Claim, Rule
from icml25.core.runner import RunContext
from icml25.equilibrium_planner.env import Task, make_tasks, score
from icml25.equilibrium_planner.equilibrium import (
    Episode,
    WorldModel,
    closed_loop,
    solve_fixed_point,
    train_equilibrium,
    train_supervised,
)
from icml25.equilibrium_planner.model import (
    PlanTransformer,
    RefinementModel,
    TransformerPlanner,
)

SPLITS = ("test_new_task", "test_new_scene", "test_new_task_and_new_scene")
PAPER_SR = {  # Table 1 (Llama-3-8B), SR in % on novel task / novel scene / novel scene+task
    "supervised (no correction)": (26.07, 41.05, 24.19),
    "ours, world model only": (41.88, 65.26, 40.32),
    "SELF-REFINE, env + wm, <= 10 corrections": (39.96, 54.74, 43.55),
    "ours, env + wm, <= 10 corrections": (54.91, 77.89, 56.45),
}

CLAIMS = (
    Claim(
        id="sr_gain_novel_task",
        statement="Equilibrium training beats supervised training on novel tasks without "
        "environment correction (world-model feedback only).",
        where="Table 1 (novel task, no correction)",
        metric="SR points, novel task: equilibrium planner with world-model feedback minus the "
        "supervised planner's one-shot plan (equal gradient steps)",
        paper_value="41.88 - 26.07 = +15.8",
        rule=Rule(">=", 5.0, partial=1.0),
    ),
    Claim(
        id="novel_scene_gain",
        statement="...and on the novel scene.",
        where="Table 1 (novel scene, no correction)",
        metric="SR points, novel scene: equilibrium + world model minus supervised one-shot",
        paper_value="65.26 - 41.05 = +24.2",
        rule=Rule(">=", 5.0, partial=1.0),
    ),
    Claim(
        id="fixed_point_share",
        statement="Self-refinement from a Null draft reaches an equilibrium x* = f(x*, c).",
        where="Sec. 3 (fixed-point solver); brief's rule: >= 90% within 10 iterations",
        metric="share of novel-task items with x_{t+1} == x_t exactly within 10 greedy steps",
        paper_value=">= 0.9 (brief)",
        rule=Rule(">=", 0.9, partial=0.7),
    ),
    Claim(
        id="closed_loop_gain",
        statement="Closed-loop planning with environment feedback improves over open loop.",
        where="Table 3 (none 33.87 -> environment 51.61, novel scene+task)",
        metric="SR points, novel task: equilibrium with <= 4 environment rounds minus equilibrium "
        "open loop (no feedback)",
        paper_value="+17.7",
        rule=Rule(">=", 5.0, partial=1.0),
    ),
    Claim(
        id="eq_vs_selfrefine",
        statement="With the same feedback budget the equilibrium planner beats SELF-REFINE.",
        where="Table 1 (env + wm, up to 10 corrections; novel task 54.91 vs 39.96)",
        metric="SR points, novel task: equilibrium minus SELF-REFINE, both with <= 4 "
        "environment rounds",
        paper_value="+14.95",
        rule=Rule(">=", 5.0, partial=1.0),
    ),
    Claim(
        id="feedback_ordering",
        statement="Feedback type: world model > none, environment > world model, both > world "
        "model.",
        where="Table 3 (novel scene+task: 33.87 / 40.32 / 51.61 / 56.45)",
        metric="share of the three orderings that hold for the equilibrium planner's SR pooled "
        "over the three test splits (ties count as not holding)",
        paper_value="3/3",
        rule=Rule(">=", 1.0, partial=0.66),
    ),
    Claim(
        id="supervised_fits_train",
        statement="Check added here: the small planner has the capacity for the task (the "
        "supervised planner solves the training tasks).",
        where="control",
        metric="one-shot SR of the supervised planner on its training tasks",
        rule=Rule(">=", 0.8, partial=0.5),
        kind="control",
    ),
    Claim(
        id="eq_open_loop_vs_supervised",
        statement="Check added here: equilibrium training without any feedback at test (open "
        "loop, fixed point from Null) against supervised one-shot, novel task.",
        where="control",
        metric="SR points, novel task: equilibrium open loop minus supervised one-shot",
        rule=Rule(">=", 0.0),
        kind="control",
    ),
    Claim(
        id="eq_vs_supervised_greedy",
        statement="Check added here: the headline gain against a stronger supervised baseline "
        "that decodes greedily (the official first draft is sampled with top_k = 10).",
        where="control",
        metric="SR points, novel task: equilibrium + world model minus supervised greedy one-shot",
        rule=Rule(">=", 0.0),
        kind="control",
    ),
    Claim(
        id="world_model_agreement",
        statement="Check added here: the learned world model's success verdict agrees with the "
        "environment's on the equilibrium planner's novel-task fixed points.",
        where="control",
        metric="share of novel-task items where world-model success == environment success",
        rule=Rule(">=", 0.7, partial=0.5),
        kind="control",
    ),
)


@dataclass(frozen=True)
class Config:
    """Sizes per budget."""

    n_scenes: int
    """Scenes generated (scene 6 is the held-out one)."""
    steps: int
    """Gradient steps of each planner (equal across arms)."""
    rounds: int
    """Outer iterations of equilibrium training (6 in the official code)."""
    wm_steps: int
    """Gradient steps of the world model."""
    d_model: int
    n_layers: int
    max_test: int
    """Items per test split at most (random subset)."""
    test_iters: int
    """Refinement cap at test (20 in the official code)."""
    train_iters: int = 10
    """Refinement cap while generating training drafts (10 in the official code)."""
    max_train: int = 100_000
    """Training items at most (random subset)."""
    batch_size: int = 32
    curve_iters: int | None = None
    """Refinement cap of the open-loop solve behind ``fixed_point_share`` (its rule counts
    convergence within 10 steps) and the SR-vs-iterations curve (``None``: ``test_iters``)."""


CONFIGS = {
    "tiny": Config(
        n_scenes=7,
        steps=20,
        rounds=2,
        wm_steps=10,
        d_model=32,
        n_layers=1,
        max_test=12,
        test_iters=3,
        train_iters=2,
        max_train=40,
    ),
    # quick was steps 500 / rounds 4 / wm 250 / test cap 20 in the first run (about 200 CPU-s),
    # then steps 400 / rounds 3 / wm 150 / test cap 10 / train cap 10 / 200 items per split
    # (171 s on 2 idle cores, 223 CPU-s under load). Cut for issue 34 (<= 60 s) from a time
    # profile, before this config's run: gradient steps (~45 ms each at batch 32) and capped
    # solves (every equilibrium item runs to the cap) were the cost. The fixed-point claim keeps
    # its 10-step cap (curve_iters). That cut (160 steps, world model 80, 60 items, caps 5 / 5)
    # took 92.6 CPU-s under load (about 71 s idle); cut again for time only, before its
    # verdicts were read: caps 3 / 3 and 50 items per split.
    "quick": Config(
        n_scenes=7,
        steps=160,
        rounds=3,
        wm_steps=80,
        d_model=64,
        n_layers=2,
        max_test=50,
        test_iters=3,
        train_iters=3,
        curve_iters=10,
    ),
    # full: the official 6 rounds and test cap 20, three seeds (sized from the quick run's CPU
    # time so that it fits about 15 minutes on two idle cores)
    "full": Config(
        n_scenes=7,
        steps=600,
        rounds=6,
        wm_steps=250,
        d_model=64,
        n_layers=2,
        max_test=400,
        test_iters=20,
    ),
}


def _sr(eps: list[Episode]) -> float:
    return 100.0 * sum(e.success for e in eps) / len(eps)


def _paired_se(a: list[Episode], b: list[Episode]) -> float:
    d = np.array([float(x.success) - float(y.success) for x, y in zip(a, b, strict=True)])
    return 100.0 * float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else float("nan")


class _Memo:
    """A :class:`RefinementModel` that remembers whole ``propose`` calls.

    The evaluation arms repeat work: the four equilibrium arms start with the same solve from
    ``Null`` (same model, items and generator seed), and the two sampled supervised arms with the
    same first draft. A call is looked up by its exact inputs (items, feedback, drafts, top-k and,
    when sampling, the generator's state); a hit returns the remembered plans and puts the
    generator in the state the call left it in, so every number is the same as without the memo.
    """

    def __init__(self, model: TransformerPlanner) -> None:
        self.model = model
        self.cache: dict[tuple[Any, ...], tuple[list[str], torch.Tensor | None]] = {}
        self.hits = 0

    def propose(
        self,
        tasks: Sequence[Task],
        feedbacks: Sequence[Sequence[str]],
        drafts: Sequence[str | None],
        *,
        top_k: int,
        generator: torch.Generator,
    ) -> list[str]:
        state = bytes(generator.get_state().numpy()) if top_k > 1 else b""
        key = (
            tuple(id(t) for t in tasks),
            tuple(tuple(f) for f in feedbacks),
            tuple(drafts),
            top_k,
            state,
        )
        if key in self.cache:
            plans, after = self.cache[key]
            if after is not None:
                generator.set_state(after)
            self.hits += 1
            return list(plans)
        plans = self.model.propose(tasks, feedbacks, drafts, top_k=top_k, generator=generator)
        # greedy decoding (top_k = 1) draws nothing from the generator
        self.cache[key] = (list(plans), generator.get_state() if top_k > 1 else None)
        return plans


def run_seed(
    cfg: Config, seed: int, progress: Any = lambda _m: None, *, memo: bool = True
) -> dict[str, Any]:
    """One seed: data, both planners, the world model, every evaluation."""
    torch.manual_seed(seed)
    splits = make_tasks(n_scenes=cfg.n_scenes, seed=seed)
    rng = random.Random(seed)
    train = rng.sample(splits["train"], min(cfg.max_train, len(splits["train"])))
    test = {k: rng.sample(splits[k], min(cfg.max_test, len(splits[k]))) for k in SPLITS}
    arch: dict[str, Any] = {"d_model": cfg.d_model, "n_layers": cfg.n_layers}
    torch.manual_seed(seed)
    sup = PlanTransformer(**arch)
    eq = PlanTransformer(**arch)
    eq.load_state_dict(sup.state_dict())  # the same initialisation for both arms
    g = torch.Generator().manual_seed(seed)
    progress(f"seed {seed}: supervised, {cfg.steps} steps")
    train_supervised(sup, train, steps=cfg.steps, batch_size=cfg.batch_size, generator=g)
    progress(f"seed {seed}: equilibrium, {cfg.rounds} rounds, {cfg.steps} steps")
    log = train_equilibrium(
        eq,
        train,
        steps=cfg.steps,
        rounds=cfg.rounds,
        batch_size=cfg.batch_size,
        max_iters=cfg.train_iters,
        generator=g,
    )
    progress(f"seed {seed}: world model on {len(log.pairs)} pairs")
    torch.manual_seed(seed + 1)
    wm = WorldModel(PlanTransformer(**arch)).fit(
        log.pairs, steps=cfg.wm_steps, batch_size=cfg.batch_size, generator=g
    )
    P: RefinementModel = TransformerPlanner(sup)
    Q: RefinementModel = TransformerPlanner(eq)
    if memo:  # exact: the same numbers, less repeated decoding (tests compare both)
        P, Q = _Memo(TransformerPlanner(sup)), _Memo(TransformerPlanner(eq))

    def loop(model: RefinementModel, tasks: list[Task], **kw: Any) -> list[Episode]:
        return closed_loop(
            model,
            tasks,
            max_iters=cfg.test_iters,
            generator=torch.Generator().manual_seed(seed + 7),
            **kw,
        )

    res: dict[str, Any] = {
        "train_round_success": log.round_success,
        "train_round_converged": log.round_converged,
    }
    progress(f"seed {seed}: evaluation")
    res["sup_train"] = loop(P, train[: cfg.max_test], mode="none", self_refine=True)
    for split, tasks in test.items():
        r = {
            "supervised": loop(P, tasks, mode="none", self_refine=True),
            "supervised_greedy": loop(P, tasks, mode="none", self_refine=True, first_top_k=1),
            "self_refine_env": loop(P, tasks, mode="environment", self_refine=True),
            "eq_none": loop(Q, tasks, mode="none"),
            "eq_env": loop(Q, tasks, mode="environment"),
            "eq_wm": loop(Q, tasks, mode="world_model", world_model=wm),
            "eq_both": loop(Q, tasks, mode="mixed", world_model=wm),
        }
        res[split] = r
    # convergence and SR against refinement iterations (open loop, from Null)
    nt = test["test_new_task"]
    curves = {}
    c_iters = cfg.test_iters if cfg.curve_iters is None else cfg.curve_iters
    for name, m in (("equilibrium", Q), ("supervised iterated", P)):
        sol = solve_fixed_point(
            m, nt, max_iters=c_iters, generator=torch.Generator().manual_seed(seed + 9)
        )
        curve = []
        for t in range(c_iters + 1):
            plans = [tr[min(t, len(tr) - 1)] for tr in sol.trajectories]
            curve.append(
                100.0
                * np.mean(
                    [score(x.scene, x.goal, p).success for x, p in zip(nt, plans, strict=True)]
                )
            )
        curves[name] = curve
        if name == "equilibrium":
            conv10 = [c and it <= 11 for c, it in zip(sol.converged, sol.iterations, strict=True)]
            res["fixed_point_share"] = float(np.mean(conv10))
            res["mean_iterations"] = float(np.mean(sol.iterations))
    res["curves"] = curves
    eq_plans = [e.plan for e in res["test_new_task"]["eq_none"]]
    verdicts = wm.feedback(nt, eq_plans, generator=torch.Generator().manual_seed(seed + 11))
    env_ok = [score(x.scene, x.goal, p).success for x, p in zip(nt, eq_plans, strict=True)]
    res["wm_agreement"] = float(
        np.mean([(v == "Task success!") == e for v, e in zip(verdicts, env_ok, strict=True)])
    )
    return res


def _figure(ctx: RunContext, runs: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4))
    for name in runs[0]["curves"]:
        arr = np.array([r["curves"][name] for r in runs])
        x = np.arange(1, arr.shape[1] + 1)
        ax.plot(x, arr.mean(0), marker="o", ms=3, label=name)
    ax.set_xlabel("refinement iterations (1 = first draft from Null)")
    ax.set_ylabel("SR on novel tasks (%)")
    ax.set_title("Open-loop SR vs refinement iterations")
    ax.legend()
    ctx.save_figure(fig, "sr_vs_iterations")


def reproduce(ctx: RunContext) -> dict[str, Any]:
    cfg = CONFIGS[ctx.budget]
    seeds = ctx.seeds if ctx.budget == "full" else ctx.seeds[:1]
    torch.set_num_threads(1)
    runs = [run_seed(cfg, s, ctx.progress) for s in seeds]
    nt = "test_new_task"

    def diff(split: str, a: str, b: str) -> list[float]:
        return [_sr(r[split][a]) - _sr(r[split][b]) for r in runs]

    def pooled(r: dict[str, Any], arm: str) -> float:
        eps = [e for s in SPLITS for e in r[s][arm]]
        return _sr(eps)

    ordering = []
    for r in runs:
        none, wm, env, both = (pooled(r, a) for a in ("eq_none", "eq_wm", "eq_env", "eq_both"))
        ordering.append(float(np.mean([wm > none, env > wm, both > wm])))
    out: dict[str, Any] = {
        "sr_gain_novel_task": diff(nt, "eq_wm", "supervised"),
        "novel_scene_gain": diff("test_new_scene", "eq_wm", "supervised"),
        "fixed_point_share": [r["fixed_point_share"] for r in runs],
        "closed_loop_gain": diff(nt, "eq_env", "eq_none"),
        "eq_vs_selfrefine": diff(nt, "eq_env", "self_refine_env"),
        "feedback_ordering": ordering,
        "supervised_fits_train": [_sr(r["sup_train"]) / 100.0 for r in runs],
        "eq_open_loop_vs_supervised": diff(nt, "eq_none", "supervised"),
        "eq_vs_supervised_greedy": diff(nt, "eq_wm", "supervised_greedy"),
        "world_model_agreement": [r["wm_agreement"] for r in runs],
    }
    # the per-split table, the paper's numbers beside ours
    arms = (
        "supervised",
        "supervised_greedy",
        "self_refine_env",
        "eq_none",
        "eq_wm",
        "eq_env",
        "eq_both",
    )
    ctx.note(
        f"Seeds {list(seeds)}; items per split (first seed): "
        + ", ".join(f"{s} {len(runs[0][s]['supervised'])}" for s in SPLITS)
    )
    ctx.note("| arm | " + " | ".join(f"{s} Exec / SR / GCR" for s in SPLITS) + " |")
    ctx.note("|---|" + "---|" * len(SPLITS))
    for arm in arms:
        cells = []
        for s in SPLITS:
            eps = [e for r in runs for e in r[s][arm]]
            ex, gcr = (
                100 * np.mean([e.executable for e in eps]),
                100 * np.mean([e.gcr for e in eps]),
            )
            cells.append(f"{ex:.1f} / {_sr(eps):.1f} / {gcr:.1f}")
        ctx.note(f"| {arm} | " + " | ".join(cells) + " |")
    ctx.note(
        "Paper SR (novel task / novel scene / novel scene+task): "
        + "; ".join(f"{k} {v}" for k, v in PAPER_SR.items())
    )
    r0 = runs[0]
    ctx.note(
        "Paired standard error of the SR differences (first seed, points): "
        f"eq_wm - supervised {_paired_se(r0[nt]['eq_wm'], r0[nt]['supervised']):.1f}; "
        f"eq_env - eq_none {_paired_se(r0[nt]['eq_env'], r0[nt]['eq_none']):.1f}; "
        f"eq_env - self_refine_env {_paired_se(r0[nt]['eq_env'], r0[nt]['self_refine_env']):.1f}"
    )
    ctx.note(
        "Equilibrium training, per round (first seed): training-task success "
        + str([round(x, 3) for x in r0["train_round_success"]])
        + ", converged share "
        + str([round(x, 3) for x in r0["train_round_converged"]])
        + f"; mean solver iterations at test {r0['mean_iterations']:.2f}"
    )
    ctx.note(
        "SR vs iterations (novel task, first seed): "
        + "; ".join(f"{k}: {[round(float(v), 1) for v in c]}" for k, c in r0["curves"].items())
    )
    _figure(ctx, runs)
    return out
