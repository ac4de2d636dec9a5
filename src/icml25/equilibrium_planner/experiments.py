"""The arms of the equilibrium planner's reproduction: the budgets, one seed's training and
evaluation, the claims' statistics and the run's notes.
:mod:`icml25.equilibrium_planner.claims` holds the claims and
:mod:`icml25.equilibrium_planner.reproduce` puts these together.

- **Budgets**: :class:`Budget`, :data:`BUDGETS`.
- **One seed** (:func:`run_seed`): the data (training tasks, three test splits), the shared
  base, the supervised and the equilibrium planner trained from it with equal gradient steps,
  the world model, and every evaluation arm (open loop, environment, world model, both, the
  null arms with content-free feedback, the supervised planner in the equilibrium loop);
  :class:`_Memo` remembers repeated ``propose`` calls exactly.
- **Statistics** (:func:`measures`): paired bootstraps over the test items, stratified by
  seed; **notes** (:func:`notes`): the per-split table beside the paper's numbers.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.core.claims import Measurement, contrast_key, gate_key, null_key
from icml25.core.runner import RunContext
from icml25.equilibrium_planner.claims import BASE_FLOOR
from icml25.equilibrium_planner.env import SUCCESS, Task, content_free, feedback, make_tasks, score
from icml25.equilibrium_planner.equilibrium import (
    ConstantWorldModel,
    Episode,
    WorldModel,
    closed_loop,
    pretrain_base,
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


@dataclass(frozen=True, kw_only=True)
class Budget:
    """Sizes per budget."""

    n_scenes: int
    """Scenes generated (scene 6 is the held-out one)."""
    base_steps: int
    """Gradient steps of the shared base (write + copy), before any arm's training."""
    steps: int
    """Gradient steps of each planner from the base (equal across arms)."""
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
    lr: float = 2e-3
    """Learning rate of the arms' training from the base (the base and the world model: 2e-3)."""
    lora_rank: int | None = None
    """The arms train through LoRA of this rank on the query and value projections (a fresh
    one per equilibrium round, merged, as the official code); ``None``: every weight."""
    curve_iters: int | None = None
    """Refinement cap of the open-loop solve behind ``fixed_point_share`` (its rule counts
    convergence within 10 steps) and the SR-vs-iterations curve (``None``: ``test_iters``)."""
    seeds: int = 1
    """Seeds run (the first ``seeds`` of ``--seeds``; the full budget runs them all)."""


BUDGETS = {
    "tiny": Budget(
        n_scenes=7,
        base_steps=10,
        steps=10,
        rounds=2,
        wm_steps=10,
        d_model=32,
        n_layers=1,
        max_test=12,
        test_iters=3,
        train_iters=2,
        max_train=40,
    ),
    "quick": Budget(
        n_scenes=7,
        base_steps=240,
        steps=80,
        rounds=2,
        wm_steps=60,
        d_model=64,
        n_layers=2,
        max_test=40,
        test_iters=3,
        train_iters=3,
        curve_iters=10,
    ),
    "full": Budget(
        n_scenes=7,
        base_steps=400,
        steps=600,
        rounds=6,
        wm_steps=250,
        d_model=64,
        n_layers=2,
        max_test=400,
        test_iters=20,
        seeds=5,
    ),
}


FIXED_POINT_STEPS = 10
"""``fixed_point_share`` counts an item that reaches ``x_{t+1} == x_t`` within this many greedy
steps after the first (sampled) one (the brief's 10), or within the solve's cap if lower."""


def open_loop_cap(cfg: Budget) -> int:
    """Refinement cap of the open-loop solve behind ``fixed_point_share`` and the curve."""
    return cfg.test_iters if cfg.curve_iters is None else cfg.curve_iters


class _Memo:
    """A :class:`RefinementModel` that remembers whole ``propose`` calls.

    The evaluation arms repeat work: the equilibrium arms start with the same solve from
    ``Null`` (same model, items and generator seed), and the sampled supervised arms with the
    same first draft. A call is looked up by its exact inputs (items, feedback, drafts, top-k
    and, when sampling, the generator's state); a hit returns the remembered plans and puts the
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


class _SuccessBitWorldModel:
    """The learned world model with its feedback reduced to the success bit (null arm)."""

    def __init__(self, wm: WorldModel) -> None:
        self.wm = wm

    def feedback(
        self, tasks: Sequence[Task], plans: Sequence[str], *, generator: torch.Generator
    ) -> list[str]:
        return [content_free(f) for f in self.wm.feedback(tasks, plans, generator=generator)]


def _content_free_env(task: Task, plan: str) -> str:
    return content_free(feedback(task.scene, task.goal, plan))


def _success(eps: list[Episode]) -> np.ndarray:
    return np.array([float(e.success) for e in eps])


def run_seed(
    cfg: Budget, seed: int, progress: Any = lambda _m: None, *, memo: bool = True
) -> dict[str, Any]:
    """One seed: data, the base, both planners, the world model, every evaluation arm.

    Returns per-item success vectors (``res[split][arm]``), the fixed-point indicators and
    the scalar checks."""
    splits = make_tasks(n_scenes=cfg.n_scenes, seed=seed, randomize_ids=True)
    rng = random.Random(seed)
    train = rng.sample(splits["train"], min(cfg.max_train, len(splits["train"])))
    test = {k: rng.sample(splits[k], min(cfg.max_test, len(splits[k]))) for k in SPLITS}
    arch: dict[str, Any] = {"d_model": cfg.d_model, "n_layers": cfg.n_layers}
    torch.manual_seed(seed)
    base = PlanTransformer(**arch)
    g = torch.Generator().manual_seed(seed)
    progress(f"seed {seed}: base (write + copy), {cfg.base_steps} steps")
    pretrain_base(base, train, steps=cfg.base_steps, batch_size=cfg.batch_size, generator=g)
    sup, eq = copy.deepcopy(base), copy.deepcopy(base)  # the same start for both arms

    def loop(model: RefinementModel, tasks: list[Task], **kw: Any) -> list[Episode]:
        return closed_loop(
            model,
            tasks,
            max_iters=cfg.test_iters,
            generator=torch.Generator().manual_seed(seed + 7),
            **kw,
        )

    gate_items = train[: cfg.max_test]
    base_sr = float(
        _success(loop(TransformerPlanner(base), gate_items, mode="none", self_refine=True)).mean()
    )
    progress(f"seed {seed}: base SR on training tasks {base_sr:.2f}; supervised, {cfg.steps}")
    train_supervised(
        sup,
        train,
        steps=cfg.steps,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        lora_rank=cfg.lora_rank,
        generator=g,
    )
    progress(f"seed {seed}: equilibrium, {cfg.rounds} rounds, {cfg.steps} steps")
    log = train_equilibrium(
        eq,
        train,
        steps=cfg.steps,
        rounds=cfg.rounds,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        max_iters=cfg.train_iters,
        lora_rank=cfg.lora_rank,
        generator=g,
    )
    progress(f"seed {seed}: world model on {len(log.pairs)} pairs")
    torch.manual_seed(seed + 1)
    wm = WorldModel(PlanTransformer(**arch)).fit(
        log.pairs, steps=cfg.wm_steps, batch_size=cfg.batch_size, generator=g
    )
    wm_bit = _SuccessBitWorldModel(wm)
    P: RefinementModel = TransformerPlanner(sup)
    Q: RefinementModel = TransformerPlanner(eq)
    if memo:  # exact: the same numbers, less repeated decoding (tests compare both)
        P, Q = _Memo(TransformerPlanner(sup)), _Memo(TransformerPlanner(eq))

    res: dict[str, Any] = {
        "base_sr": base_sr,
        "train_round_success": log.round_success,
        "train_round_converged": log.round_converged,
    }
    progress(f"seed {seed}: evaluation")
    res["sup_train"] = float(_success(loop(P, gate_items, mode="none", self_refine=True)).mean())
    table: dict[str, dict[str, list[Episode]]] = {}
    for split, tasks in test.items():
        r = {
            "supervised": loop(P, tasks, mode="none", self_refine=True),
            "supervised_greedy": loop(P, tasks, mode="none", self_refine=True, first_top_k=1),
            "self_refine_env": loop(P, tasks, mode="environment", self_refine=True),
            "eq_none": loop(Q, tasks, mode="none"),
            "eq_env": loop(Q, tasks, mode="environment"),
            "eq_wm": loop(Q, tasks, mode="world_model", world_model=wm),
            "eq_both": loop(Q, tasks, mode="mixed", world_model=wm),
            # null arms: content-free feedback (success bits only)
            "eq_env_bit": loop(Q, tasks, mode="environment", env_feedback=_content_free_env),
            "eq_wm_bit": loop(Q, tasks, mode="world_model", world_model=wm_bit),
            "eq_both_bit": loop(
                Q, tasks, mode="mixed", world_model=wm_bit, env_feedback=_content_free_env
            ),
        }
        if split in ("test_new_task", "test_new_scene"):  # null: no equilibrium training
            r["sup_wm_loop"] = loop(P, tasks, mode="world_model", world_model=wm)
        if split == "test_new_task":
            r["sup_env_loop"] = loop(P, tasks, mode="environment")
        table[split] = r
    res["episodes"] = table
    res["success"] = {s: {a: _success(e) for a, e in r.items()} for s, r in table.items()}
    # convergence and SR against refinement iterations (open loop, from Null)
    nt = test["test_new_task"]
    curves: dict[str, list[float]] = {}
    c_iters = open_loop_cap(cfg)
    for name, m in (("equilibrium", Q), ("supervised iterated", P)):
        sol = solve_fixed_point(
            m, nt, max_iters=c_iters, generator=torch.Generator().manual_seed(seed + 9)
        )
        curve = []
        for t in range(c_iters + 1):
            plans = [tr[min(t, len(tr) - 1)] for tr in sol.trajectories]
            ok = [score(x.scene, x.goal, p).success for x, p in zip(nt, plans, strict=True)]
            curve.append(100.0 * float(np.mean(ok)))
        curves[name] = curve
        conv10 = np.array(
            [
                float(c and it <= 1 + FIXED_POINT_STEPS)  # the sampled first step + greedy ones
                for c, it in zip(sol.converged, sol.iterations, strict=True)
            ]
        )
        key = "fixed_point" if name == "equilibrium" else "fixed_point_null"
        res[key] = conv10
        if name == "equilibrium":
            res["mean_iterations"] = float(np.mean(sol.iterations))
    res["curves"] = curves
    eq_plans = [e.plan for e in table["test_new_task"]["eq_none"]]
    env_ok = np.array(
        [score(x.scene, x.goal, p).success for x, p in zip(nt, eq_plans, strict=True)]
    )
    gw = torch.Generator().manual_seed(seed + 11)
    for key, model in (("wm_agreement", wm), ("wm_agreement_null", ConstantWorldModel())):
        verdicts = model.feedback(nt, eq_plans, generator=gw)
        said = np.array([v == SUCCESS for v in verdicts])
        res[key] = (said == env_ok).astype(float)
    return res


ORDERING_ARMS = ("eq_none", "eq_wm", "eq_env", "eq_both")
"""The SR columns that :func:`_ordering` reads, in its order."""


def _ordering(rows: np.ndarray) -> float:
    """Share of (wm > none, env > wm, both > wm) among the SR columns (none, wm, env, both)."""
    none, wm, env, both = rows.mean(axis=0)
    return float(np.mean([wm > none, env > wm, both > wm]))


def _points(rows: np.ndarray) -> float:
    return 100.0 * float(rows.mean())


def measures(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The claims' measurements, null arms and gates from :func:`run_seed` of every seed:
    paired differences of SR points (bootstrap over the test items, stratified by seed)."""
    nt, ns = "test_new_task", "test_new_scene"

    def diff(split: str, a: str, b: str) -> Measurement:
        groups = [r["success"][split][a] - r["success"][split][b] for r in runs]
        return Measurement.bootstrap(groups, _points)

    def stacked(arms: tuple[str, ...]) -> list[np.ndarray]:  # per seed: items x arms, all splits
        return [
            np.concatenate([np.stack([r["success"][s][a] for a in arms], axis=1) for s in SPLITS])
            for r in runs
        ]

    def ordering(arms: tuple[str, str, str, str]) -> Measurement:
        return Measurement.bootstrap(stacked(arms), _ordering)

    def paired(key: str, key_null: str) -> Measurement:  # method minus null, item by item
        return Measurement.bootstrap([r[key] - r[key_null] for r in runs])

    arms, arms_null = ORDERING_ARMS, ("eq_none", "eq_wm_bit", "eq_env_bit", "eq_both_bit")
    # both orderings on one resample of the items
    ordering_contrast = Measurement.bootstrap(
        stacked(arms + arms_null), lambda x: _ordering(x[:, :4]) - _ordering(x[:, 4:])
    )
    base = Measurement.of([r["base_sr"] for r in runs])
    return {
        # each null arm's paired contrast (method minus null on the same items, the same
        # bootstrap stratified by seed): a bootstrap over items must be paired here
        contrast_key("sr_gain_novel_task"): diff(nt, "eq_wm", "sup_wm_loop"),
        contrast_key("novel_scene_gain"): diff(ns, "eq_wm", "sup_wm_loop"),
        contrast_key("fixed_point_share"): paired("fixed_point", "fixed_point_null"),
        contrast_key("closed_loop_gain"): diff(nt, "eq_env", "eq_env_bit"),
        contrast_key("eq_vs_selfrefine"): diff(nt, "eq_env", "sup_env_loop"),
        contrast_key("feedback_ordering"): ordering_contrast,
        contrast_key("world_model_agreement"): paired("wm_agreement", "wm_agreement_null"),
        "sr_gain_novel_task": diff(nt, "eq_wm", "supervised"),
        null_key("sr_gain_novel_task"): diff(nt, "sup_wm_loop", "supervised"),
        "novel_scene_gain": diff(ns, "eq_wm", "supervised"),
        null_key("novel_scene_gain"): diff(ns, "sup_wm_loop", "supervised"),
        "fixed_point_share": Measurement.bootstrap([r["fixed_point"] for r in runs]),
        null_key("fixed_point_share"): Measurement.bootstrap([r["fixed_point_null"] for r in runs]),
        "closed_loop_gain": diff(nt, "eq_env", "eq_none"),
        null_key("closed_loop_gain"): diff(nt, "eq_env_bit", "eq_none"),
        "eq_vs_selfrefine": diff(nt, "eq_env", "self_refine_env"),
        null_key("eq_vs_selfrefine"): diff(nt, "sup_env_loop", "self_refine_env"),
        "feedback_ordering": ordering(arms),
        null_key("feedback_ordering"): ordering(arms_null),
        "supervised_fits_train": Measurement.of([r["sup_train"] for r in runs]),
        "eq_open_loop_vs_supervised": diff(nt, "eq_none", "supervised"),
        "eq_vs_supervised_greedy": diff(nt, "eq_wm", "supervised_greedy"),
        "world_model_agreement": Measurement.bootstrap([r["wm_agreement"] for r in runs]),
        null_key("world_model_agreement"): Measurement.bootstrap(
            [r["wm_agreement_null"] for r in runs]
        ),
        # every claim's gate: the shared base plans
        gate_key("sr_gain_novel_task"): base,
        gate_key("novel_scene_gain"): base,
        gate_key("fixed_point_share"): base,
        gate_key("closed_loop_gain"): base,
        gate_key("eq_vs_selfrefine"): base,
        gate_key("feedback_ordering"): base,
    }


NOTE_ARMS = (
    "supervised",
    "supervised_greedy",
    "self_refine_env",
    "eq_none",
    "eq_wm",
    "eq_env",
    "eq_both",
    "eq_wm_bit",
    "eq_env_bit",
    "eq_both_bit",
    "sup_wm_loop",
    "sup_env_loop",
)
"""The arms of the notes' per-split table."""


def notes(ctx: RunContext, runs: list[dict[str, Any]], seeds: Sequence[int]) -> None:
    """The per-split table (Exec / SR / GCR of every arm) with the paper's numbers beside it,
    equilibrium training per round and the SR-vs-iterations curves."""
    ctx.note(
        f"Seeds {list(seeds)}; items per split (first seed): "
        + ", ".join(f"{s} {len(runs[0]['success'][s]['supervised'])}" for s in SPLITS)
        + f"; base SR on training tasks per seed {[round(r['base_sr'], 3) for r in runs]}"
        f" (gate >= {BASE_FLOOR})"
    )
    ctx.note("| arm | " + " | ".join(f"{s} Exec / SR / GCR" for s in SPLITS) + " |")
    ctx.note("|---|" + "---|" * len(SPLITS))
    for arm in NOTE_ARMS:
        cells = []
        for s in SPLITS:
            eps = [e for r in runs for e in r["episodes"][s].get(arm, [])]
            if not eps:
                cells.append("-")
                continue
            ex = 100 * np.mean([e.executable for e in eps])
            sr = 100 * np.mean([e.success for e in eps])
            gcr = 100 * np.mean([e.gcr for e in eps])
            cells.append(f"{ex:.1f} / {sr:.1f} / {gcr:.1f}")
        ctx.note(f"| {arm} | " + " | ".join(cells) + " |")
    ctx.note(
        "Paper SR (novel task / novel scene / novel scene+task): "
        + "; ".join(f"{k} {v}" for k, v in PAPER_SR.items())
    )
    r0 = runs[0]
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
