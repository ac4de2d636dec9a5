"""Equilibrium sequence modelling: fixed-point plan refinement, its training, the closed loop.

Self-refinement iterates ``x_{t+1} = f(x_t, c)`` from a ``Null`` draft until an equilibrium
``x* = f(x*, c)`` (exact equality). Training follows the implicit-function view with
``(I - J)^{-1} ~ I``: the loss is the teacher-forced cross-entropy of the gold plan ``y`` given
``(c, feedback on x*, draft = x*)``, where ``x*`` is the *current* model's fixed point, detached
(plain tokens in the prompt) and regenerated every round. At test time a nested loop alternates
inner solves (warm-started from the last fixed point) with feedback from the environment, a
learned world model, or both.

References
----------
Li, Sun, Mu et al. "Closed-Loop Long-Horizon Robotic Planning via Equilibrium Sequence
Modeling." ICML 2025 (arXiv:2410.01440); official code ``Singularity0104/equilibrium-planner``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch

from icml25.core import validate as V
from icml25.equilibrium_planner.env import SUCCESS, Task, feedback, score
from icml25.equilibrium_planner.model import (
    VOCAB,
    PlanTransformer,
    Prompt,
    RefinementModel,
    TransformerPlanner,
    build_prompt,
    decode,
    feedback_to_tokens,
    plan_to_tokens,
    tokens_to_feedback,
    train_steps,
)

FeedbackMode = Literal["none", "environment", "world_model", "mixed"]
FEEDBACK_MODES: tuple[str, ...] = ("none", "environment", "world_model", "mixed")


@dataclass(frozen=True)
class Solve:
    """Result of :func:`solve_fixed_point` for a batch."""

    plans: list[str]
    converged: list[bool]
    iterations: list[int]
    trajectories: list[list[str]]


def _check_tasks(tasks: object) -> list[Task]:
    if not isinstance(tasks, Sequence) or isinstance(tasks, str) or not tasks:
        raise ValueError(f"tasks must be a non-empty sequence of Task, got {tasks!r:.60}")
    for k, t in enumerate(tasks):
        if not isinstance(t, Task):
            raise TypeError(f"tasks[{k}] must be a Task, got {type(t).__name__}")
        if not t.goal:
            raise ValueError(f"tasks[{k}] ({t.name!r}) has an empty goal")
    return list(tasks)


def solve_fixed_point(
    model: RefinementModel,
    tasks: Sequence[Task],
    *,
    feedbacks: Sequence[Sequence[str]] | None = None,
    drafts: Sequence[str | None] | None = None,
    max_iters: int = 10,
    first_top_k: int = 10,
    generator: torch.Generator | None = None,
) -> Solve:
    """Refine each plan to an equilibrium ``x* = f(x*, c)``.

    The first step from the draft (``Null`` or a warm start) samples with ``first_top_k``; all
    later steps are greedy (``top_k=1``). An item stops when ``x_{t+1} == x_t`` exactly; after
    ``max_iters`` steps beyond the first the previous iterate is returned (official protocol).

    Parameters
    ----------
    model
        Any :class:`~icml25.equilibrium_planner.model.RefinementModel`.
    tasks
        The items (context ``c``).
    feedbacks
        Feedback strings per item for the prompt (default none: ``Null``).
    drafts
        Starting drafts (default ``None`` = ``Null``).
    max_iters
        Refinement steps beyond the first (10 in training, 20 at test in the official code).
    first_top_k
        Top-k of the first, sampled step.
    generator
        Randomness of the first step.
    """
    tasks = _check_tasks(tasks)
    n = len(tasks)
    max_iters = V.integer("max_iters", max_iters, low=0)
    first_top_k = V.integer("first_top_k", first_top_k, low=1)
    fbs = [list(f) for f in feedbacks] if feedbacks is not None else [[] for _ in range(n)]
    cur: list[str | None] = list(drafts) if drafts is not None else [None] * n
    if len(fbs) != n or len(cur) != n:
        raise ValueError(f"feedbacks and drafts must have one entry per task ({n})")
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    first = model.propose(tasks, fbs, cur, top_k=first_top_k, generator=gen)
    traj = [[p] for p in first]
    plans = list(first)
    converged = [False] * n
    iters = [1] * n
    active = list(range(n))
    for _ in range(max_iters):
        if not active:
            break
        new = model.propose(
            [tasks[k] for k in active],
            [fbs[k] for k in active],
            [plans[k] for k in active],
            top_k=1,
            generator=gen,
        )
        still = []
        for k, p in zip(active, new, strict=True):
            iters[k] += 1
            traj[k].append(p)
            if p == plans[k]:
                converged[k] = True
            else:
                still.append(k)
                # on hitting the cap the previous iterate is returned
                if iters[k] <= max_iters:
                    plans[k] = p
        active = still
    return Solve(plans, converged, iters, traj)


# --------------------------------------------------------------------------- world model
class WorldModel:
    """A learned feedback model: (scene graph with states, task, plan) -> feedback text.

    A separate :class:`PlanTransformer` (not the planner) trained on the (fixed point,
    environment feedback) pairs met during planner training; it sees object states, which the
    planner does not. Decoding samples with ``top_k`` (2 in the official code) and keeps the
    known feedback lines only; success only when ``Task success`` is the only line.
    """

    def __init__(self, model: PlanTransformer, *, top_k: int = 2) -> None:
        if not isinstance(model, PlanTransformer):
            raise TypeError(f"model must be a PlanTransformer, got {type(model).__name__}")
        self.model = model
        self.top_k = V.integer("top_k", top_k, low=1)
        fb = [VOCAB.index[w] for w in VOCAB.words if w.startswith("fb:")]
        other = [
            VOCAB.index[w]
            for w in VOCAB.words
            if w.isdigit() or w in ("OPEN", "CLOSED", "ON", "OFF")
        ]
        names = [int(t) for t in VOCAB.plan_tokens if not VOCAB.words[int(t)].startswith("[")]
        # the last allowed token ends a sequence (decode's convention with ``restrict``)
        self._allowed = torch.tensor([*sorted(set(fb + other + names)), VOCAB.end])

    @staticmethod
    def prompt(task: Task, plan: str) -> Prompt:
        return build_prompt(task, [], plan, with_states=True)

    @staticmethod
    def target(fb: str) -> list[int]:
        return [*feedback_to_tokens(fb, max_len=40), VOCAB.end]

    def fit(
        self,
        pairs: Sequence[tuple[Task, str, str]],
        *,
        steps: int,
        batch_size: int = 32,
        lr: float = 2e-3,
        generator: torch.Generator | None = None,
    ) -> WorldModel:
        """Train on ``(task, plan, environment feedback)`` triples for ``steps`` steps."""
        steps = V.integer("steps", steps, low=0)
        lr = V.positive("lr", lr)
        if not pairs:
            raise ValueError("pairs must be a non-empty sequence of (task, plan, feedback)")
        ex = [(self.prompt(t, p), self.target(f)) for t, p, f in pairs]
        opt = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=1e-3)
        gen = generator if generator is not None else torch.Generator().manual_seed(0)
        train_steps(
            self.model, ex, steps=steps, batch_size=batch_size, optimizer=opt, generator=gen
        )
        return self

    def feedback(
        self, tasks: Sequence[Task], plans: Sequence[str], *, generator: torch.Generator
    ) -> list[str]:
        """Predicted feedback text per plan (``"Task success!"`` or a ``Feedback:`` body)."""
        prompts = [self.prompt(t, p) for t, p in zip(tasks, plans, strict=True)]
        toks = decode(
            self.model,
            prompts,
            top_k=self.top_k,
            generator=generator,
            max_new=40,
            restrict=self._allowed,
        )
        out = []
        for p, t in zip(plans, toks, strict=True):
            text = tokens_to_feedback([x for x in t if x != VOCAB.end])
            if text == SUCCESS:
                out.append(SUCCESS)
            else:
                echo = ", ".join(ln.strip() for ln in p.splitlines() if ln.strip())
                out.append(f"Action sequence: {echo}\n{text}")
        return out


# --------------------------------------------------------------------------- closed loop
@dataclass(frozen=True)
class Episode:
    """The closed loop on one item: the final plan, its score, and the loop's history."""

    plan: str
    success: bool
    gcr: float
    executable: bool
    rounds: int
    converged: bool
    first_success: bool
    history: tuple[str, ...] = field(default=())


def closed_loop(
    model: RefinementModel,
    tasks: Sequence[Task],
    *,
    mode: str = "environment",
    max_depth: int = 4,
    max_iters: int = 20,
    history: int = 4,
    world_model: WorldModel | None = None,
    self_refine: bool = False,
    first_top_k: int = 10,
    generator: torch.Generator | None = None,
) -> list[Episode]:
    """The nested closed loop of the official ``generate``: outer rounds of (inner fixed-point
    solve warm-started from the last fixed point with the last ``history`` feedback strings,
    then feedback); stop on success, on an outer fixed point, or after ``max_depth`` feedback
    rounds (each failed round is followed by a correction, so at most ``max_depth``
    corrections; ``Episode.rounds`` counts feedback queries). ``mode``: ``"none"`` (one
    solve, open loop), ``"environment"``, ``"world_model"``,
    ``"mixed"`` (a world-model round then an environment round, alternating; world-model
    feedback is shown to the next round only, and only environment rounds count).
    ``self_refine=True`` is the SELF-REFINE baseline: one generation per round instead of an
    inner fixed-point solve. ``first_top_k`` is the top-k of the first step of every solve
    (10 in the official code; 1 makes the whole loop greedy). Scores are of the last plan.
    """
    tasks = _check_tasks(tasks)
    V.choice("mode", mode, FEEDBACK_MODES)
    max_depth = V.integer("max_depth", max_depth, low=0)
    history = V.integer("history", history, low=1)
    if mode in ("world_model", "mixed") and not isinstance(world_model, WorldModel):
        raise ValueError(
            f"mode={mode!r} needs world_model to be a WorldModel, got {world_model!r:.40}"
        )
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    n = len(tasks)
    inner = 0 if self_refine else max_iters

    def replan(idx: list[int], shown: list[list[str]]) -> list[tuple[int, str, bool]]:
        if not idx:
            return []
        res = solve_fixed_point(
            model,
            [tasks[k] for k in idx],
            feedbacks=[f[-history:] for f in shown],
            drafts=[plans[k] for k in idx],
            max_iters=inner,
            first_top_k=first_top_k,
            generator=gen,
        )
        return list(zip(idx, res.plans, res.converged, strict=True))

    def env_feedback(idx: list[int]) -> list[str]:
        return [feedback(tasks[k].scene, tasks[k].goal, plans[k]) for k in idx]

    first = solve_fixed_point(model, tasks, max_iters=inner, first_top_k=first_top_k, generator=gen)
    plans, conv = list(first.plans), list(first.converged)
    first_success = [score(t.scene, t.goal, p).success for t, p in zip(tasks, plans, strict=True)]
    hist: list[list[str]] = [[] for _ in range(n)]
    rounds = [0] * n
    active = [] if mode == "none" else list(range(n))
    while active:
        if mode == "mixed":
            # a world-model round: its feedback is shown to the next solve only
            assert world_model is not None
            wm = world_model.feedback(
                [tasks[k] for k in active], [plans[k] for k in active], generator=gen
            )
            redo = [(k, f) for k, f in zip(active, wm, strict=True) if f != SUCCESS]
            for k, p, c in replan([k for k, _ in redo], [[*hist[k], f] for k, f in redo]):
                plans[k], conv[k] = p, c
            fbs = env_feedback(active)
        elif mode == "world_model":
            assert world_model is not None
            fbs = world_model.feedback(
                [tasks[k] for k in active], [plans[k] for k in active], generator=gen
            )
        else:
            fbs = env_feedback(active)
        nxt = []
        for k, f in zip(active, fbs, strict=True):
            rounds[k] += 1
            if f == SUCCESS:
                continue
            hist[k].append(f)
            nxt.append(k)
        active = []
        for k, p, c in replan(nxt, [hist[k] for k in nxt]):
            if p == plans[k]:
                conv[k] = c
                continue  # outer fixed point: x*_k == x*_{k-1}
            plans[k], conv[k] = p, c
            if rounds[k] < max_depth:  # the plan after the last allowed round is not checked
                active.append(k)
    out = []
    for k, t in enumerate(tasks):
        sc = score(t.scene, t.goal, plans[k])
        out.append(
            Episode(
                plans[k],
                sc.success,
                sc.gcr,
                sc.executable,
                rounds[k],
                conv[k],
                first_success[k],
                tuple(hist[k]),
            )
        )
    return out


# --------------------------------------------------------------------------- training
@dataclass
class TrainLog:
    """What a training run records: per-round data sizes, losses, and the fixed points met."""

    losses: list[float] = field(default_factory=list)
    round_sizes: list[int] = field(default_factory=list)
    round_success: list[float] = field(default_factory=list)
    round_converged: list[float] = field(default_factory=list)
    pairs: list[tuple[Task, str, str]] = field(default_factory=list)


def _example(task: Task, fbs: Sequence[str], draft: str | None) -> tuple[Prompt, list[int]]:
    return build_prompt(task, fbs, draft), plan_to_tokens(task.gold)


def train_supervised(
    model: PlanTransformer,
    tasks: Sequence[Task],
    *,
    steps: int,
    batch_size: int = 32,
    lr: float = 2e-3,
    generator: torch.Generator | None = None,
) -> TrainLog:
    """The supervised / SELF-REFINE baseline: ``(c, Null feedback, Null draft) -> y``."""
    tasks = _check_tasks(tasks)
    steps = V.integer("steps", steps, low=0)
    batch_size = V.integer("batch_size", batch_size, low=1)
    lr = V.positive("lr", lr)
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-3)
    log = TrainLog()
    log.losses = train_steps(
        model,
        [_example(t, [], None) for t in tasks],
        steps=steps,
        batch_size=batch_size,
        optimizer=opt,
        generator=gen,
    )
    return log


def train_equilibrium(
    model: PlanTransformer,
    tasks: Sequence[Task],
    *,
    steps: int,
    rounds: int = 6,
    batch_size: int = 32,
    lr: float = 2e-3,
    max_iters: int = 10,
    feedback_ratios: Sequence[float] = (0.3, 0.4, 0.5),
    feedback_history: int = 3,
    replay: float = 0.5,
    generator: torch.Generator | None = None,
    on_round: Callable[[int, TrainLog], None] | None = None,
) -> TrainLog:
    """Equilibrium training (official ``run_finetune.py`` outer loop), ``steps`` in total.

    Each round: solve every training task from ``Null`` with the current model and take
    environment feedback on its fixed point; then, for each ratio of ``feedback_ratios``, re-solve
    a random subset of the items still failing (at most that share of the previous level's
    count) from a ``Null`` draft with their latest ``feedback_history`` feedback strings in the
    prompt, and take feedback again. Training examples are ``(c, all feedback so far, draft =
    last fixed point) -> y`` (never a ``Null`` draft); a round trains on its examples plus
    ``replay`` of round t-1's, ``replay**2`` of t-2's, ... for ``steps // rounds`` steps. The
    drafts are the model's own outputs, regenerated every round and detached (tokens in the
    prompt): the gold plan never enters them.
    """
    tasks = _check_tasks(tasks)
    steps = V.integer("steps", steps, low=0)
    rounds = V.integer("rounds", rounds, low=1)
    batch_size = V.integer("batch_size", batch_size, low=1)
    lr = V.positive("lr", lr)
    ratios = [V.probability("feedback_ratios", r) for r in feedback_ratios]
    replay = V.probability("replay", replay)
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    rng = random.Random(int(torch.randint(2**31 - 1, (1,), generator=gen)))
    planner = TransformerPlanner(model)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-3)
    log = TrainLog()
    files: list[list[tuple[Prompt, list[int]]]] = []
    per_round = [steps // rounds + (1 if r < steps % rounds else 0) for r in range(rounds)]
    for r in range(rounds):
        sol = solve_fixed_point(planner, tasks, max_iters=max_iters, generator=gen)
        fbs = [[feedback(t.scene, t.goal, p)] for t, p in zip(tasks, sol.plans, strict=True)]
        last = list(sol.plans)
        log.round_success.append(sum(f[-1] == SUCCESS for f in fbs) / len(tasks))
        log.round_converged.append(sum(sol.converged) / len(tasks))
        log.pairs += [(t, p, f[-1]) for t, p, f in zip(tasks, last, fbs, strict=True)]
        prev = len(tasks)
        for ratio in ratios:
            failing = [k for k in range(len(tasks)) if fbs[k][-1] != SUCCESS]
            cap = int(ratio * prev)
            pick = rng.sample(failing, min(cap, len(failing)))
            prev = len(pick)
            if not pick:
                break
            res = solve_fixed_point(
                planner,
                [tasks[k] for k in pick],
                feedbacks=[fbs[k][-feedback_history:] for k in pick],
                max_iters=max_iters,
                generator=gen,
            )
            for k, p in zip(pick, res.plans, strict=True):
                f = feedback(tasks[k].scene, tasks[k].goal, p)
                fbs[k].append(f)
                last[k] = p
                log.pairs.append((tasks[k], p, f))
        files.append([_example(t, fbs[k], last[k]) for k, t in enumerate(tasks)])
        data = list(files[-1])
        for back, old in enumerate(reversed(files[:-1]), start=1):
            share = replay**back
            data += rng.sample(old, int(share * len(old)))
        log.round_sizes.append(len(data))
        log.losses += train_steps(
            model, data, steps=per_round[r], batch_size=batch_size, optimizer=opt, generator=gen
        )
        if on_round is not None:
            on_round(r, log)
    return log
