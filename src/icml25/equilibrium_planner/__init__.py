"""Equilibrium planner: self-refining plans to a fixed point, trained end to end, with
closed-loop feedback (Li, Sun, Mu et al., ICML 2025).

Library: a symbolic household simulator with VirtualHome's action vocabulary, preconditions,
goal atoms, metrics (Exec, SR, GCR) and feedback text, with compositional novel-task /
novel-scene splits and a Gymnasium-style interface (:mod:`icml25.equilibrium_planner.env`);
a small plan transformer (:mod:`icml25.equilibrium_planner.model`); the fixed-point solver,
equilibrium training, the learned world model and the nested closed loop
(:mod:`icml25.equilibrium_planner.equilibrium`). Reproduction:
``icml25 reproduce equilibrium_planner``.
"""

from icml25.core.registry import register
from icml25.equilibrium_planner.env import (
    ACTIONS,
    Execution,
    HouseholdEnv,
    Parsed,
    Scene,
    Score,
    Task,
    content_free,
    execute,
    feedback,
    goal_diffs,
    gold_plan,
    make_scene,
    make_tasks,
    parse_plan,
    relabel,
    score,
)
from icml25.equilibrium_planner.equilibrium import (
    ConstantWorldModel,
    Episode,
    Solve,
    TrainLog,
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
    build_prompt,
    plan_to_tokens,
    tokens_to_plan,
)

__all__ = [
    "ACTIONS",
    "ConstantWorldModel",
    "Episode",
    "Execution",
    "HouseholdEnv",
    "Parsed",
    "PlanTransformer",
    "RefinementModel",
    "Scene",
    "Score",
    "Solve",
    "Task",
    "TrainLog",
    "TransformerPlanner",
    "WorldModel",
    "build_prompt",
    "closed_loop",
    "content_free",
    "execute",
    "feedback",
    "goal_diffs",
    "gold_plan",
    "make_scene",
    "make_tasks",
    "parse_plan",
    "plan_to_tokens",
    "pretrain_base",
    "relabel",
    "score",
    "solve_fixed_point",
    "tokens_to_plan",
    "train_equilibrium",
    "train_supervised",
]

register(
    slug="equilibrium_planner",
    title="Closed-Loop Long-Horizon Robotic Planning via Equilibrium Sequence Modeling",
    authors="Jinghan Li, Zhicheng Sun, Yadong Mu et al.",
    venue="ICML 2025 (PMLR 267:35884-35908; arXiv:2410.01440)",
    url="https://arxiv.org/abs/2410.01440",
    summary="Train a planner to refine its own drafts to a fixed point (supervised on the gold "
    "plan given its detached equilibrium and feedback); nested closed loop with environment "
    "and world-model feedback.",
    quick_seconds=75,
    module="icml25.equilibrium_planner.reproduce",
)
