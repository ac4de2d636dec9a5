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

Long by design: the fixed-point solver, the closed loop and the two trainings use the same
Solve/Episode records and are the paper's one method.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import torch

from icml25.core import validate as V
from icml25.equilibrium_planner.env import SUCCESS, Task, content_free, feedback, gold_plan, score
from icml25.equilibrium_planner.model import (
    VOCAB,
    PlanTransformer,
    Prompt,
    RefinementModel,
    TransformerPlanner,
    build_prompt,
    decode,
    feedback_to_tokens,
    lora_steps,
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
        # the last allowed token ends a sequence (decode's convention with ``restrict``); a
        # host-side constant that decode moves to the model's device
        self._allowed = torch.tensor([*sorted(set(fb + other + names)), VOCAB.end], device="cpu")

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
            self.model,
            ex,
            steps=steps,
            batch_size=batch_size,
            optimizer=opt,
            generator=gen,
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
            out.append(SUCCESS if text == SUCCESS else f"Action sequence:\n{p}\n{text}")
        return out


class FeedbackModel(Protocol):
    """What the closed loop asks of a world model: feedback text per plan."""

    def feedback(
        self, tasks: Sequence[Task], plans: Sequence[str], *, generator: torch.Generator
    ) -> list[str]: ...


class ConstantWorldModel:
    """A world model that ignores its input: every plan fails, with content-free feedback
    (:func:`~icml25.equilibrium_planner.env.content_free`). The null arm of the claims that
    credit a learned world model."""

    def feedback(
        self, tasks: Sequence[Task], plans: Sequence[str], *, generator: torch.Generator
    ) -> list[str]:
        if len(tasks) != len(plans):
            raise ValueError(
                f"tasks and plans must have the same length, got {len(tasks)} and {len(plans)}"
            )
        return [content_free(f"Action sequence:\n{p}\nFeedback:\n") for p in plans]


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
    world_model: FeedbackModel | None = None,
    self_refine: bool = False,
    first_top_k: int = 10,
    env_feedback: Callable[[Task, str], str] | None = None,
    generator: torch.Generator | None = None,
) -> list[Episode]:
    """The nested closed loop of the official ``generate``.

    Each outer round solves every active item (an inner fixed-point solve warm-started from
    its last fixed point, with its last ``history`` feedback strings in the prompt) and then
    asks for feedback on the new plan. An item stops on success, on an outer fixed point (the
    new plan equals the previous checked one), or after ``max_depth`` checked plans: at most
    ``max_depth`` solves, each of them checked, and the last plan is scored. ``mode``:
    ``"none"`` (one solve, open loop), ``"environment"``, ``"world_model"`` (the world model's
    verdict decides when to stop), ``"mixed"`` (a world-model round, whose feedback is shown to
    the next solve only and never stops the loop, then an environment round; only environment
    rounds count toward ``max_depth``). ``self_refine=True`` is the SELF-REFINE baseline: one
    generation per round instead of an inner solve, sampled with ``first_top_k`` from ``Null``
    and greedy from a previous plan. ``first_top_k`` is the top-k of the first step of every
    inner solve (10 in the official code; 1 makes the whole loop greedy). ``env_feedback``
    replaces the environment's feedback (``(task, plan) -> text``; default
    :func:`~icml25.equilibrium_planner.env.feedback`), e.g. by its content-free form.
    """
    tasks = _check_tasks(tasks)
    V.choice("mode", mode, FEEDBACK_MODES)
    max_depth = V.integer("max_depth", max_depth, low=1)
    history = V.integer("history", history, low=1)
    if mode in ("world_model", "mixed") and not callable(getattr(world_model, "feedback", None)):
        raise ValueError(
            f"mode={mode!r} needs world_model to be a WorldModel (an object with feedback), "
            f"got {world_model!r:.40}"
        )
    if env_feedback is not None and not callable(env_feedback):
        raise TypeError(f"env_feedback must be callable, got {type(env_feedback).__name__}")
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    n = len(tasks)
    inner = 0 if self_refine else max_iters

    def env(k: int) -> str:
        t = tasks[k]
        if env_feedback is None:
            return feedback(t.scene, t.goal, plans[k])
        return env_feedback(t, plans[k])

    plans: list[str] = [""] * n
    drafts: list[str | None] = [None] * n
    conv = [False] * n
    hist: list[list[str]] = [[] for _ in range(n)]  # feedback kept across rounds
    shown: list[list[str]] = [[] for _ in range(n)]  # mixed: world-model feedback, next solve
    checked: list[list[str]] = [[] for _ in range(n)]  # plans that got environment feedback
    rounds = [0] * n
    first_success = [False] * n
    active = list(range(n))
    wm_turn = mode == "mixed"
    first = True
    while active:
        top_k = 1 if (self_refine and not first) else first_top_k
        sol = solve_fixed_point(
            model,
            [tasks[k] for k in active],
            feedbacks=[(hist[k] + shown[k])[-history:] for k in active],
            drafts=[drafts[k] for k in active],
            max_iters=inner,
            first_top_k=top_k,
            generator=gen,
        )
        for k, p, c in zip(active, sol.plans, sol.converged, strict=True):
            plans[k], conv[k], drafts[k] = p, c, p
            if first:
                first_success[k] = score(tasks[k].scene, tasks[k].goal, p).success
        first = False
        if mode == "none":
            break
        if wm_turn:  # mixed: a world-model round, shown to the next solve only
            assert world_model is not None
            wm = world_model.feedback(
                [tasks[k] for k in active], [plans[k] for k in active], generator=gen
            )
            for k, f in zip(active, wm, strict=True):
                shown[k].append(f)
            wm_turn = False
            continue
        if mode == "world_model":
            assert world_model is not None
            fbs = world_model.feedback(
                [tasks[k] for k in active], [plans[k] for k in active], generator=gen
            )
        else:
            fbs = [env(k) for k in active]
        nxt = []
        for k, f in zip(active, fbs, strict=True):
            rounds[k] += 1
            hist[k].append(f)
            shown[k] = []
            checked[k].append(plans[k])
            outer_fixed = len(checked[k]) >= 2 and checked[k][-1] == checked[k][-2]
            if f != SUCCESS and not outer_fixed and rounds[k] < max_depth:
                nxt.append(k)
        active = nxt
        wm_turn = mode == "mixed"
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
    lora_rank: int | None = None,
    generator: torch.Generator | None = None,
) -> TrainLog:
    """The supervised / SELF-REFINE baseline: ``(c, Null feedback, Null draft) -> y``.

    ``lora_rank``: train through one LoRA on the query and value projections, merged at the
    end (the official fine-tuning; :func:`~icml25.equilibrium_planner.model.lora_steps`);
    ``None``: every weight."""
    tasks = _check_tasks(tasks)
    steps = V.integer("steps", steps, low=0)
    batch_size = V.integer("batch_size", batch_size, low=1)
    lr = V.positive("lr", lr)
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    log = TrainLog()
    examples = [_example(t, [], None) for t in tasks]
    if lora_rank is not None:
        log.losses = lora_steps(
            model,
            examples,
            steps=steps,
            batch_size=batch_size,
            lr=lr,
            generator=gen,
            rank=lora_rank,
            alpha=2.0 * lora_rank,
        )
        return log
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-3)
    log.losses = train_steps(
        model, examples, steps=steps, batch_size=batch_size, optimizer=opt, generator=gen
    )
    return log


def pretrain_base(
    model: PlanTransformer,
    tasks: Sequence[Task],
    *,
    steps: int,
    copy_share: float = 0.5,
    copies: int = 2,
    batch_size: int = 32,
    lr: float = 2e-3,
    generator: torch.Generator | None = None,
) -> TrainLog:
    """A base planner that can write and copy plans: a stand-in for the pretrained LLM that the
    official round 0 starts from.

    Supervised learning on plans of ``tasks`` (the training items) for ``steps`` steps, a
    ``copy_share`` of the examples copying a draft and the rest writing a plan:

    * write: ``(c, Null feedback, Null draft) -> y``, the gold plan of the item;
    * copy: ``(c, Null feedback, draft = d) -> d``, where ``d`` is the gold plan of another
      training task in the item's scene (``copies`` of them per item): whatever the draft is,
      the base reproduces it, as a pretrained LLM asked to refine a plan mostly does.

    Every arm (supervised, SELF-REFINE, equilibrium) starts from the same base. Copy drafts use
    training task names only, so no plan of a held-out task enters the base.
    """
    tasks = _check_tasks(tasks)
    steps = V.integer("steps", steps, low=0)
    share = V.probability("copy_share", copy_share)
    copies = V.integer("copies", copies, low=0)
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    rng = random.Random(int(torch.randint(2**31 - 1, (1,), generator=gen, device=gen.device)))
    names = sorted({t.name for t in tasks})
    write = [_example(t, [], None) for t in tasks]
    copy: list[tuple[Prompt, list[int]]] = []
    for t in tasks:
        others = [x for x in rng.sample(names, len(names)) if x != t.name]
        got = 0
        for name in others:
            if got >= copies:
                break
            d = gold_plan(t.scene, name)
            if d is not None:
                copy.append((build_prompt(t, [], d), plan_to_tokens(d)))
                got += 1
    opt = torch.optim.AdamW(model.parameters(), lr=V.positive("lr", lr), weight_decay=1e-3)
    log = TrainLog()
    if not copy:
        share = 0.0
    weights = [(1 - share) / len(write)] * len(write) + [share / max(1, len(copy))] * len(copy)
    log.losses = train_steps(
        model,
        write + copy,
        steps=steps,
        batch_size=V.integer("batch_size", batch_size, low=1),
        optimizer=opt,
        generator=gen,
        weights=weights,
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
    lora_rank: int | None = None,
    generator: torch.Generator | None = None,
    on_round: Callable[[int, TrainLog], None] | None = None,
) -> TrainLog:
    """Equilibrium training (official ``run_finetune.py`` outer loop), ``steps`` in total.

    Each round writes data files as the official loop does:

    * depth file 0 (``finetune_data``): solve every training task from ``Null`` (draft and
      feedback) with the current model and take environment feedback on its fixed point; one
      example per item;
    * depth files 1..len(feedback_ratios) (``feedback_data_d``): from the items of the previous
      file whose last feedback is not success, a random subset of at most ``ratio`` times that
      file's size is re-solved from a ``Null`` draft with its latest ``feedback_history``
      feedback strings in the prompt, and gets feedback again; one example per re-solved item.

    An example is ``(c, every feedback string of the item so far, draft = its last fixed point)
    -> y`` (never a ``Null`` draft). A round trains on its own files plus ``replay`` of every
    file of round t-1, ``replay**2`` of every file of t-2, ..., for ``steps // rounds`` steps.
    The drafts are the model's own outputs, regenerated every round and detached (tokens in
    the prompt): the gold plan never enters them. ``lora_rank``: each round trains a fresh LoRA
    on the query and value projections and merges it into the weights, as the official loop
    does (:func:`~icml25.equilibrium_planner.model.lora_steps`); ``None``: one optimiser over
    every weight across rounds.
    """
    tasks = _check_tasks(tasks)
    steps = V.integer("steps", steps, low=0)
    rounds = V.integer("rounds", rounds, low=1)
    batch_size = V.integer("batch_size", batch_size, low=1)
    lr = V.positive("lr", lr)
    ratios = [V.probability("feedback_ratios", r) for r in feedback_ratios]
    replay = V.probability("replay", replay)
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    rng = random.Random(int(torch.randint(2**31 - 1, (1,), generator=gen, device=gen.device)))
    planner = TransformerPlanner(model)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-3)
    log = TrainLog()
    past: list[list[list[tuple[Prompt, list[int]]]]] = []  # per round, its data files
    per_round = [steps // rounds + (1 if r < steps % rounds else 0) for r in range(rounds)]
    for r in range(rounds):
        sol = solve_fixed_point(planner, tasks, max_iters=max_iters, generator=gen)
        fbs = [[feedback(t.scene, t.goal, p)] for t, p in zip(tasks, sol.plans, strict=True)]
        last = list(sol.plans)
        log.round_success.append(sum(f[-1] == SUCCESS for f in fbs) / len(tasks))
        log.round_converged.append(sum(sol.converged) / len(tasks))
        log.pairs += [(t, p, f[-1]) for t, p, f in zip(tasks, last, fbs, strict=True)]
        files = [[_example(t, fbs[k], last[k]) for k, t in enumerate(tasks)]]
        level = list(range(len(tasks)))
        for ratio in ratios:
            failing = [k for k in level if fbs[k][-1] != SUCCESS]
            level = rng.sample(failing, min(int(ratio * len(level)), len(failing)))
            if not level:
                break
            res = solve_fixed_point(
                planner,
                [tasks[k] for k in level],
                feedbacks=[fbs[k][-feedback_history:] for k in level],
                max_iters=max_iters,
                generator=gen,
            )
            for k, p in zip(level, res.plans, strict=True):
                f = feedback(tasks[k].scene, tasks[k].goal, p)
                fbs[k].append(f)
                last[k] = p
                log.pairs.append((tasks[k], p, f))
            files.append([_example(tasks[k], fbs[k], last[k]) for k in level])
        data = [ex for f in files for ex in f]
        share = replay
        for old in reversed(past):  # round t-1 first
            for file in old:
                data += rng.sample(file, int(share * len(file)))
            share *= replay
        past.append(files)
        log.round_sizes.append(len(data))
        if lora_rank is None:
            log.losses += train_steps(
                model,
                data,
                steps=per_round[r],
                batch_size=batch_size,
                optimizer=opt,
                generator=gen,
            )
        else:
            log.losses += lora_steps(
                model,
                data,
                steps=per_round[r],
                batch_size=batch_size,
                lr=lr,
                generator=gen,
                rank=lora_rank,
                alpha=2.0 * lora_rank,
            )
        if on_round is not None:
            on_round(r, log)
    return log
