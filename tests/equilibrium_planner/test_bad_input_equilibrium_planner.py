"""Bad input at the public entry points of equilibrium_planner: a clear error."""

from __future__ import annotations

# not entry points: ACTIONS, Episode, Execution, Parsed, Scene, Score, Solve, Task, TrainLog
# not entry points: RefinementModel
import pytest
import torch

from icml25.equilibrium_planner import (
    ConstantWorldModel,
    HouseholdEnv,
    PlanTransformer,
    TransformerPlanner,
    WorldModel,
    build_prompt,
    closed_loop,
    content_free,
    execute,
    feedback,
    goal_diffs,
    gold_plan,
    make_scene,
    make_tasks,
    parse_plan,
    plan_to_tokens,
    pretrain_base,
    relabel,
    score,
    solve_fixed_point,
    tokens_to_plan,
    train_equilibrium,
    train_supervised,
)
from icml25.equilibrium_planner.env import Task

SPLITS = make_tasks(seed=0)
T = SPLITS["train"][0]
EMPTY = Task(T.name, T.description, T.scene, T.gold, frozenset())


def _planner():
    return TransformerPlanner(PlanTransformer(d_model=16, n_layers=1, n_heads=2))


CASES = [
    ("make_scene index", lambda: make_scene(-1), ValueError, "index must be an integer >= 0"),
    ("make_scene seed", lambda: make_scene(0, seed=1.5), ValueError, "seed must be an integer"),
    ("make_tasks n_scenes", lambda: make_tasks(n_scenes=3), ValueError, "n_scenes must be"),
    (
        "make_tasks fraction",
        lambda: make_tasks(held_out_fraction=1.0),
        ValueError,
        "held_out_fraction must be",
    ),
    ("gold_plan unknown task", lambda: gold_plan(T.scene, "Fly kite"), ValueError, "name must be"),
    ("gold_plan scene", lambda: gold_plan("scene", "Heat apple"), TypeError, "scene must be"),
    ("parse_plan type", lambda: parse_plan(3), TypeError, "plan must be a str"),
    ("execute scene", lambda: execute(None, T.gold), TypeError, "scene must be a Scene"),
    ("score goal", lambda: score(T.scene, [("x",)], T.gold), TypeError, "goal must be a set"),
    ("feedback empty goal", lambda: feedback(T.scene, frozenset(), T.gold), ValueError, "goal"),
    (
        "goal_diffs bad gold",
        lambda: goal_diffs(T.scene, "[WALK] <ghost> (999)\n[END]"),
        ValueError,
        "gold_plan does not execute",
    ),
    ("content_free type", lambda: content_free(None), TypeError, "feedback must be a str"),
    ("relabel scene", lambda: relabel("scene", None), TypeError, "scene must be a Scene"),
    (
        "pretrain_base steps",
        lambda: pretrain_base(PlanTransformer(d_model=16, n_heads=2), [T], steps=-1),
        ValueError,
        "steps",
    ),
    (
        "pretrain_base copy_share",
        lambda: pretrain_base(PlanTransformer(d_model=16, n_heads=2), [T], steps=1, copy_share=2),
        ValueError,
        "copy_share",
    ),
    (
        "ConstantWorldModel lengths",
        lambda: ConstantWorldModel().feedback([T], [], generator=torch.Generator()),
        ValueError,
        "same length",
    ),
    (
        "closed_loop env_feedback",
        lambda: closed_loop(_planner(), [T], env_feedback="env"),
        TypeError,
        "env_feedback must be callable",
    ),
    (
        "train_supervised lora_rank",
        lambda: train_supervised(PlanTransformer(d_model=16, n_heads=2), [T], steps=1, lora_rank=0),
        ValueError,
        "rank",
    ),
    ("env tasks", lambda: HouseholdEnv([]), ValueError, "tasks must be a non-empty"),
    ("env max_steps", lambda: HouseholdEnv([T], max_steps=0), ValueError, "max_steps"),
    (
        "PlanTransformer heads",
        lambda: PlanTransformer(d_model=30, n_heads=4),
        ValueError,
        "divisible",
    ),
    ("PlanTransformer layers", lambda: PlanTransformer(n_layers=0), ValueError, "n_layers"),
    ("PlanTransformer dropout", lambda: PlanTransformer(dropout=1.0), ValueError, "dropout"),
    ("TransformerPlanner model", lambda: TransformerPlanner(None), TypeError, "model must be"),
    ("WorldModel model", lambda: WorldModel("m"), TypeError, "model must be a PlanTransformer"),
    (
        "WorldModel.fit empty",
        lambda: WorldModel(PlanTransformer(d_model=16, n_heads=2)).fit([], steps=1),
        ValueError,
        "pairs must be a non-empty",
    ),
    ("build_prompt task", lambda: build_prompt("task", [], None), TypeError, "task must be a Task"),
    ("build_prompt feedbacks", lambda: build_prompt(T, "fb", None), TypeError, "feedbacks"),
    ("plan_to_tokens type", lambda: plan_to_tokens(["[END]"]), TypeError, "plan must be"),
    ("tokens_to_plan range", lambda: tokens_to_plan([10_000]), ValueError, "tokens must be ids"),
    ("solve no tasks", lambda: solve_fixed_point(_planner(), []), ValueError, "tasks must be"),
    ("solve empty goal", lambda: solve_fixed_point(_planner(), [EMPTY]), ValueError, "empty goal"),
    (
        "solve max_iters",
        lambda: solve_fixed_point(_planner(), [T], max_iters=-1),
        ValueError,
        "max_iters",
    ),
    (
        "solve drafts length",
        lambda: solve_fixed_point(_planner(), [T], drafts=[None, None]),
        ValueError,
        "one entry per task",
    ),
    ("closed_loop mode", lambda: closed_loop(_planner(), [T], mode="oracle"), ValueError, "mode"),
    (
        "closed_loop needs world model",
        lambda: closed_loop(_planner(), [T], mode="world_model"),
        ValueError,
        "needs world_model",
    ),
    (
        "closed_loop task type",
        lambda: closed_loop(_planner(), ["Heat apple"]),
        TypeError,
        r"tasks\[0\] must be a Task",
    ),
    (
        "train_supervised steps",
        lambda: train_supervised(PlanTransformer(d_model=16, n_heads=2), [T], steps=-1),
        ValueError,
        "steps must be",
    ),
    (
        "train_supervised lr",
        lambda: train_supervised(PlanTransformer(d_model=16, n_heads=2), [T], steps=1, lr=0),
        ValueError,
        "lr must be",
    ),
    (
        "train_equilibrium rounds",
        lambda: train_equilibrium(PlanTransformer(d_model=16, n_heads=2), [T], steps=1, rounds=0),
        ValueError,
        "rounds must be",
    ),
    (
        "train_equilibrium ratios",
        lambda: train_equilibrium(
            PlanTransformer(d_model=16, n_heads=2), [T], steps=1, feedback_ratios=(1.5,)
        ),
        ValueError,
        "feedback_ratios",
    ),
    (
        "train_equilibrium empty goal",
        lambda: train_equilibrium(PlanTransformer(d_model=16, n_heads=2), [EMPTY], steps=1),
        ValueError,
        "empty goal",
    ),
]


@pytest.mark.parametrize(
    ("call", "exc", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input(call, exc, words):
    with pytest.raises(exc, match=words):
        call()


def test_env_step_unknown_action_and_object():
    env = HouseholdEnv([T])
    env.reset(seed=0)
    with pytest.raises(ValueError, match="ACTION in"):
        env.step("[JUMP] <apple> (3)")
    with pytest.raises(ValueError, match="object of the scene"):
        env.step("[WALK] <ghost> (999)")
    with pytest.raises(ValueError, match="non-empty plan line"):
        env.step("  ")
    with pytest.raises(ValueError, match="task_index"):
        env.reset(options={"task_index": 99})


def test_world_model_feedback_lengths():
    wm = WorldModel(PlanTransformer(d_model=16, n_heads=2))
    with pytest.raises(ValueError, match="zip"):
        wm.feedback([T], [], generator=torch.Generator())
