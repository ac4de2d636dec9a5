"""A symbolic household simulator with VirtualHome's action vocabulary and metrics.

A :class:`Scene` is a graph in VirtualHome's shape: rooms, objects with an id, a class name,
properties (``GRABBABLE``, ``CAN_OPEN``, ``HAS_SWITCH``, ``CONTAINERS``, ``SURFACES``), states
(``OPEN``/``CLOSED``, ``ON``/``OFF``) and relations (``INSIDE``/``ON`` edges, the agent's
``HOLDS``). A plan is text, one ``[ACTION] <name> (id)`` line per step (two objects for
``PUTIN``/``PUTBACK``), ending in ``[END]``. :func:`execute` runs it with the protocol of the
official code (Li et al., 2025; ``evolving_graph/test.py``):

* parsing (``split_action`` then ``read_script_from_list_string`` of the official code) starts
  at the first line beginning with ``[`` and stops at a line containing ``END`` or not
  beginning with ``[`` (lines are not stripped: an empty line ends the plan too), or at the
  first line it cannot parse; an unknown action, or a wrong number of arguments on a line that
  starts with ``[`` and ends with ``)``, is an *invalid command* (an Exec error); any other
  unparseable line just ends the plan;
* ``WALK``/``FIND`` resolve their object by id alone, and an unknown id there (or an empty plan)
  is an *execution error* (an Exec error; SR and GCR are then 0, as the official code scores an
  exception);
* every other action needs the same ``(name, id)`` to have been reached by an earlier
  ``WALK``/``FIND``; a failed precondition halts execution silently and the state reached so far
  is scored (not an Exec error).

Metrics (:func:`goal_diffs`, :func:`score`): the goal is the set of node-state triples
``(id, class, state)`` and edges ``(id, class, relation, target)`` present in the gold final
graph but not in the initial one; GCR is the share of goal atoms in the simulated final graph
(1 when there are none), SR = 1 iff GCR = 1, Exec = 1 iff neither error occurred.
:class:`HouseholdEnv` wraps all this in a Gymnasium-style ``reset``/``step`` interface.

References
----------
Li, Sun, Mu et al. "Closed-Loop Long-Horizon Robotic Planning via Equilibrium Sequence
Modeling." ICML 2025 (arXiv:2410.01440). Puig et al. "VirtualHome." CVPR 2018.

Long by design: the simulator's scene graph, plan parser, executor, metrics and feedback text
all read one state representation; they are the environment of a single interface
(HouseholdEnv).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from icml25.core import validate as V

ACTIONS: dict[str, int] = {
    "WALK": 1,
    "FIND": 1,
    "GRAB": 1,
    "OPEN": 1,
    "CLOSE": 1,
    "SWITCHON": 1,
    "SWITCHOFF": 1,
    "PUTIN": 2,
    "PUTBACK": 2,
}
"""VirtualHome action names used here and their number of object arguments."""

ROOMS: tuple[str, ...] = ("kitchen", "livingroom", "bedroom", "bathroom")
STATES: tuple[str, ...] = ("OPEN", "CLOSED", "ON", "OFF")
RELATIONS: tuple[str, ...] = ("INSIDE", "ON")

# class name -> (properties, rooms it may stand in)
CATALOGUE: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "fridge": (frozenset({"CONTAINERS", "CAN_OPEN"}), ("kitchen",)),
    "microwave": (frozenset({"CONTAINERS", "CAN_OPEN", "HAS_SWITCH"}), ("kitchen",)),
    "dishwasher": (frozenset({"CONTAINERS", "CAN_OPEN", "HAS_SWITCH"}), ("kitchen",)),
    "washingmachine": (frozenset({"CONTAINERS", "CAN_OPEN", "HAS_SWITCH"}), ("bathroom",)),
    "cabinet": (frozenset({"CONTAINERS", "CAN_OPEN"}), ("kitchen", "bathroom", "bedroom")),
    "tv": (frozenset({"HAS_SWITCH"}), ("livingroom", "bedroom")),
    "lamp": (frozenset({"HAS_SWITCH"}), ROOMS),
    "computer": (frozenset({"HAS_SWITCH"}), ("livingroom", "bedroom")),
    "radio": (frozenset({"HAS_SWITCH"}), ("livingroom", "bedroom", "kitchen")),
    "kitchentable": (frozenset({"SURFACES"}), ("kitchen",)),
    "desk": (frozenset({"SURFACES"}), ("bedroom", "livingroom")),
    "sofa": (frozenset({"SURFACES"}), ("livingroom",)),
    "bed": (frozenset({"SURFACES"}), ("bedroom",)),
    "shelf": (frozenset({"SURFACES"}), ROOMS),
    "apple": (frozenset({"GRABBABLE"}), ("kitchen", "livingroom")),
    "milk": (frozenset({"GRABBABLE"}), ("kitchen",)),
    "cup": (frozenset({"GRABBABLE"}), ("kitchen", "livingroom", "bedroom")),
    "plate": (frozenset({"GRABBABLE"}), ("kitchen", "livingroom")),
    "book": (frozenset({"GRABBABLE"}), ("livingroom", "bedroom")),
    "remotecontrol": (frozenset({"GRABBABLE"}), ("livingroom", "bedroom")),
    "towel": (frozenset({"GRABBABLE"}), ("bathroom", "bedroom")),
    "clothes": (frozenset({"GRABBABLE"}), ("bedroom", "bathroom")),
    "phone": (frozenset({"GRABBABLE"}), ("livingroom", "bedroom", "kitchen")),
}
HEATABLE = ("apple", "milk", "cup", "plate")
WASHERS = {
    "cup": "dishwasher",
    "plate": "dishwasher",
    "towel": "washingmachine",
    "clothes": "washingmachine",
}
MAX_ID = 64
"""Object ids are drawn from 1..MAX_ID (the agent is id 0)."""
HELD_OUT_SCENE = 6
"""The held-out scene (the official split holds out ``TrimmedTestScene6_graph``)."""


@dataclass(frozen=True)
class Obj:
    """One node of a scene: id, class name, room, properties."""

    id: int
    name: str
    room: str
    properties: frozenset[str] = frozenset()


@dataclass
class State:
    """Mutable simulator state: node states, object relations, agent room/reach/hands."""

    states: dict[tuple[int, str], str]
    """``(id, "open" | "power") -> state``."""
    relations: dict[int, tuple[str, int]]
    rooms: dict[int, str]
    agent_room: str
    reached: set[int] = field(default_factory=set)
    held: list[int] = field(default_factory=list)

    def copy(self) -> State:
        return State(
            dict(self.states),
            dict(self.relations),
            dict(self.rooms),
            self.agent_room,
            set(self.reached),
            list(self.held),
        )


@dataclass(frozen=True)
class Scene:
    """A household: rooms and objects by id, and the initial state."""

    index: int
    objects: dict[int, Obj]
    room_ids: dict[str, int]
    init_states: dict[tuple[int, str], str]
    init_relations: dict[int, tuple[str, int]]
    agent_room: str

    def by_name(self, name: str) -> Obj | None:
        for o in self.objects.values():
            if o.name == name:
                return o
        return None

    def initial_state(self) -> State:
        return State(
            dict(self.init_states),
            dict(self.init_relations),
            {i: o.room for i, o in self.objects.items()},
            self.agent_room,
        )

    def context(self) -> dict[str, list[tuple[str, int]]]:
        """Per-room ``(name, id)`` lists: what the planner sees (no states, no relations)."""
        out: dict[str, list[tuple[str, int]]] = {}
        for room in ROOMS:
            if room in self.room_ids:
                out[room] = sorted(
                    (
                        (o.name, o.id)
                        for o in self.objects.values()
                        if o.room == room and o.name != room
                    ),
                    key=lambda t: t[1],
                )
        return out


def make_scene(index: int, *, seed: int = 0) -> Scene:
    """A random household; ``(index, seed)`` fixes it. Every grabbable starts ``ON`` a surface of
    its room, containers start ``CLOSED``, switches ``OFF``; one object per class."""
    index = V.integer("index", index, low=0)
    seed = V.integer("seed", seed, low=0)
    rng = random.Random(1_000_003 * seed + index)
    ids = rng.sample(range(1, MAX_ID + 1), len(ROOMS) + len(CATALOGUE))
    objects: dict[int, Obj] = {}
    room_ids: dict[str, int] = {}
    for room in ROOMS:
        rid = ids.pop()
        room_ids[room] = rid
        objects[rid] = Obj(rid, room, room, frozenset({"ROOM"}))
    surfaces_in: dict[str, list[int]] = {r: [] for r in ROOMS}
    order = sorted(CATALOGUE, key=lambda n: "GRABBABLE" in CATALOGUE[n][0])  # furniture first
    states: dict[tuple[int, str], str] = {}
    relations: dict[int, tuple[str, int]] = {}
    for name in order:
        props, rooms = CATALOGUE[name]
        if "GRABBABLE" in props:
            rooms = tuple(r for r in rooms if surfaces_in[r]) or rooms
        if rng.random() > 0.85 and name not in ("shelf",):
            continue
        room = rng.choice(rooms)
        if "GRABBABLE" in props and not surfaces_in[room]:
            continue
        oid = ids.pop()
        objects[oid] = Obj(oid, name, room, props)
        if "SURFACES" in props:
            surfaces_in[room].append(oid)
        if "CAN_OPEN" in props:
            states[(oid, "open")] = "CLOSED"
        if "HAS_SWITCH" in props:
            states[(oid, "power")] = "OFF"
        if "GRABBABLE" in props:
            relations[oid] = ("ON", rng.choice(surfaces_in[room]))
    return Scene(index, objects, room_ids, states, relations, rng.choice(ROOMS))


def relabel(scene: Scene, rng: random.Random) -> Scene:
    """The same household with fresh object ids: every room and object gets a new id drawn
    from ``1..MAX_ID`` (states and relations follow their objects). Items that share a layout
    but not ids force a planner to read ids from its context instead of memorising a scene's."""
    if not isinstance(scene, Scene):
        raise TypeError(f"scene must be a Scene, got {type(scene).__name__}")
    new = rng.sample(range(1, MAX_ID + 1), len(scene.objects))
    m = dict(zip(sorted(scene.objects), new, strict=True))
    return Scene(
        scene.index,
        {m[i]: Obj(m[i], o.name, o.room, o.properties) for i, o in scene.objects.items()},
        {r: m[i] for r, i in scene.room_ids.items()},
        {(m[i], k): v for (i, k), v in scene.init_states.items()},
        {m[i]: (rel, m[t]) for i, (rel, t) in scene.init_relations.items()},
        scene.agent_room,
    )


# --------------------------------------------------------------------------- plans
_HEAD = re.compile(r"^\[(\w+)\]")
_PARAM = re.compile(r"\<(.+?)\>\s*\((.+?)\)")
_ARG = re.compile(r"<([^<>]*)>\s*\((\d+)\)")


def format_step(action: str, *args: tuple[str, int]) -> str:
    """One plan line: ``format_step("PUTIN", ("apple", 3), ("fridge", 9))`` is
    ``[PUTIN] <apple> (3) <fridge> (9)``."""
    return " ".join([f"[{action}]", *(f"<{n}> ({i})" for n, i in args)])


def format_plan(steps: Sequence[str]) -> str:
    """Steps joined by newlines, followed by ``[END]``."""
    return "\n".join([*steps, "[END]"])


@dataclass(frozen=True)
class Parsed:
    """A parsed plan: the steps, and the first invalid line if any."""

    steps: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]
    invalid: str | None
    format_warning: bool


class _LineError(ValueError):
    """A line the official ``parse_script_line`` refuses; ``kind`` is why."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def _parse_line(line: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    """One script line, as the official ``parse_script_line``: ``^[ACTION]``, then every
    ``<name> (id)`` found by a non-greedy search (an id written ``a.b`` counts as ``b``)."""
    head = _HEAD.search(line.strip())
    if head is None:
        raise _LineError("cannot parse action")
    action = head.group(1).upper()
    if action not in ACTIONS:
        raise _LineError("unknown action")
    args: list[tuple[str, int]] = []
    rest = line.strip()[head.end(1) :]
    m = _PARAM.search(rest)
    while m:
        raw = m.group(2).split(".")[1] if "." in m.group(2) else m.group(2)
        try:
            oid = int(raw)
        except ValueError:
            raise _LineError("bad id") from None
        args.append((m.group(1).strip(), oid))
        rest = rest[m.end(2) :]
        m = _PARAM.search(rest)
    if len(args) != ACTIONS[action]:
        raise _LineError("wrong number of parameters")
    return action, tuple(args)


def parse_plan(text: str) -> Parsed:
    """Parse plan text with the official protocol (see the module docstring).

    The format warning is the official one: more than 30% of the lines (empty lines count in
    the denominator) are non-empty and do not start with ``[``.
    """
    if not isinstance(text, str):
        raise TypeError(f"plan must be a str, got {type(text).__name__}")
    lines = text.split("\n")
    bad = sum(1 for ln in lines if ln and not ln.startswith("["))
    warning = bad / len(lines) > 0.3
    seq: list[str] = []
    begun = False
    for ln in lines:  # split_action
        if ln.startswith("["):
            begun = True
            if "END" in ln:
                break
            seq.append(ln)
        elif begun:
            break
    steps: list[tuple[str, tuple[tuple[str, int], ...]]] = []
    invalid: str | None = None
    for ln in seq:  # read_script_from_list_string
        if "[END]" in ln:
            continue
        ln = ln.strip()
        if not ln or ln.startswith("#"):
            continue
        try:
            steps.append(_parse_line(ln))
        except _LineError as exc:
            wrong_count = exc.kind == "wrong number of parameters"
            if exc.kind == "unknown action" or (
                wrong_count and ln.startswith("[") and ln.endswith(")")
            ):
                invalid = ln
            break
    return Parsed(tuple(steps), invalid, warning)


class ExecutionError(RuntimeError):
    """The simulator's exception: an unknown id in WALK/FIND, or an empty plan."""


def _visible(scene: Scene, st: State, oid: int) -> bool:
    rel = st.relations.get(oid)
    if rel is not None and rel[0] == "INSIDE":
        return st.states.get((rel[1], "open")) != "CLOSED"
    return True


def _apply(scene: Scene, st: State, action: str, args: tuple[tuple[str, int], ...]) -> bool:
    """Apply one step in place; ``False`` if a precondition fails (execution then halts)."""
    _name, oid = args[0]
    if action in ("WALK", "FIND"):
        if oid not in scene.objects:
            raise ExecutionError(f"unknown object id {oid} in [{action}]")
        obj = scene.objects[oid]
        if "ROOM" in obj.properties:
            if action == "FIND":
                return False
            st.agent_room, st.reached = obj.name, set()
            _carry(st)
            return True
        if oid in st.held or not _visible(scene, st, oid):
            return False
        if action == "FIND" and st.rooms[oid] != st.agent_room:
            return False
        if action == "WALK":
            st.agent_room = st.rooms[oid]
            st.reached = set()
            _carry(st)
        st.reached.add(oid)
        return True
    for n, i in args:
        if i not in scene.objects or scene.objects[i].name != n:
            return False
    obj = scene.objects[oid]
    props = obj.properties
    if action == "GRAB":
        ok = (
            oid in st.reached
            and "GRABBABLE" in props
            and oid not in st.held
            and len(st.held) < 2
            and _visible(scene, st, oid)
        )
        if ok:
            st.held.append(oid)
            st.relations.pop(oid, None)
        return ok
    if action in ("OPEN", "CLOSE"):
        want, new = ("CLOSED", "OPEN") if action == "OPEN" else ("OPEN", "CLOSED")
        ok = oid in st.reached and "CAN_OPEN" in props and st.states.get((oid, "open")) == want
        # VirtualHome: a free hand is needed, and a running appliance is not opened
        ok = ok and len(st.held) < 2 and st.states.get((oid, "power")) != "ON"
        if ok:
            st.states[(oid, "open")] = new
        return ok
    if action in ("SWITCHON", "SWITCHOFF"):
        want, new = ("OFF", "ON") if action == "SWITCHON" else ("ON", "OFF")
        ok = oid in st.reached and "HAS_SWITCH" in props
        ok = ok and st.states.get((oid, "power")) == want
        # a switchable that opens runs only when closed (VirtualHome's precondition)
        ok = ok and st.states.get((oid, "open")) != "OPEN"
        if ok:
            st.states[(oid, "power")] = new
        return ok
    # PUTIN / PUTBACK: args[0] held, args[1] reached
    _target_name, tid = args[1]
    target = scene.objects[tid]
    if oid not in st.held or tid not in st.reached:
        return False
    if action == "PUTIN":
        ok = "CONTAINERS" in target.properties and st.states.get((tid, "open")) != "CLOSED"
        rel = "INSIDE"
    else:
        ok = "SURFACES" in target.properties
        rel = "ON"
    if ok:
        st.held.remove(oid)
        st.relations[oid] = (rel, tid)
        st.rooms[oid] = st.rooms[tid]
    return ok


def _carry(st: State) -> None:
    for h in st.held:
        st.rooms[h] = st.agent_room


@dataclass(frozen=True)
class Execution:
    """What :func:`execute` returns: the final state, steps run, and the error kinds."""

    state: State
    steps_run: int
    halted_at: int | None
    invalid: str | None
    error: str | None
    format_warning: bool

    @property
    def executable(self) -> bool:
        """Exec: no invalid command and no simulator exception."""
        return self.invalid is None and self.error is None


def execute(scene: Scene, plan: str) -> Execution:
    """Run plan text on ``scene`` from its initial state (official protocol, module docstring)."""
    if not isinstance(scene, Scene):
        raise TypeError(f"scene must be a Scene, got {type(scene).__name__}")
    parsed = parse_plan(plan)
    st = scene.initial_state()
    error: str | None = None
    halted: int | None = None
    k = 0
    try:
        if not parsed.steps and parsed.invalid is None:
            raise ExecutionError("empty plan")
        for k, (action, args) in enumerate(parsed.steps):
            if not _apply(scene, st, action, args):
                halted = k
                break
        else:
            k = len(parsed.steps)
    except ExecutionError as exc:
        error = str(exc)
    return Execution(st, k, halted, parsed.invalid, error, parsed.format_warning)


# --------------------------------------------------------------------------- goals, metrics
Atom = tuple[Any, ...]


def graph_atoms(scene: Scene, st: State) -> set[Atom]:
    """Node-state triples ``(id, class, state)`` and edges ``(id, class, rel, target)`` (the
    agent's edges and CLOSE edges are not part of a goal)."""
    atoms: set[Atom] = {(i, scene.objects[i].name, s) for (i, _), s in st.states.items()}
    atoms |= {(i, scene.objects[i].name, r, t) for i, (r, t) in st.relations.items()}
    return atoms


def goal_diffs(scene: Scene, gold_plan: str) -> frozenset[Atom]:
    """The goal: atoms of the gold plan's final graph that are not in the initial graph."""
    run = execute(scene, gold_plan)
    if not run.executable or run.halted_at is not None:
        raise ValueError(f"gold_plan does not execute on scene {scene.index}: {run}")
    return frozenset(graph_atoms(scene, run.state) - graph_atoms(scene, scene.initial_state()))


@dataclass(frozen=True)
class Score:
    """Exec, SR and GCR of one plan, and the unmet goal atoms (none listed after an execution
    error, as in the official feedback)."""

    executable: bool
    success: bool
    gcr: float
    unmet: tuple[Atom, ...]


def score(scene: Scene, goal: frozenset[Atom] | set[Atom], plan: str) -> Score:
    """Exec / SR / GCR of ``plan`` against ``goal`` (a set of atoms, see :func:`goal_diffs`)."""
    if not isinstance(goal, (set, frozenset)):
        raise TypeError(f"goal must be a set of atoms, got {type(goal).__name__}")
    run = execute(scene, plan)
    if run.error is not None:  # the official code scores a simulator exception as 0
        return Score(False, False, 0.0, ())
    final = graph_atoms(scene, run.state)
    unmet = tuple(sorted((a for a in goal if a not in final), key=str))
    gcr = 1.0 if not goal else 1.0 - len(unmet) / len(goal)
    return Score(run.executable, gcr == 1.0, gcr, unmet)


SUCCESS = "Task success!"


def feedback(scene: Scene, goal: frozenset[Atom] | set[Atom], plan: str) -> str:
    """The environment's feedback text on ``plan``, worded as the official
    ``utils/feedback.py``: ``"Task success!"`` when the goal is met with no format warning,
    invalid command or execution error.

    Otherwise ``Action sequence:`` and the plan, then ``Feedback:`` and any of: ``Your output
    does not conform to the required format.``, ``Your output has an invalid command:
    <line>.``, ``Your output is executed incorrectly in the environment.``, and ``You have not
    completed this task.`` followed by the unmet ``(id, name, state)`` atoms and the objects in
    a wrong relative position, ``(id, name) and (target id, target name)`` (the relation is not
    named).
    """
    if not isinstance(goal, (set, frozenset)) or not goal:
        raise ValueError(f"goal must be a non-empty set of goal atoms, got {goal!r}")
    run = execute(scene, plan)
    sc = score(scene, goal, plan)
    if sc.success and run.executable and not run.format_warning:
        return SUCCESS
    text = f"Action sequence:\n{plan}\nFeedback:\n"
    if run.format_warning:
        text += "Your output does not conform to the required format.\n"
    if run.invalid is not None:
        text += f"Your output has an invalid command: {run.invalid}.\n"
    if run.error is not None:
        text += "Your output is executed incorrectly in the environment.\n"
    if not sc.success:
        text += "You have not completed this task.\n"
        nodes = [f"({a[0]}, {a[1]}, {a[2]})" for a in sc.unmet if len(a) == 3]
        if nodes:
            text += (
                "The following objects and corresponding states do not meet the goals: "
                + ", ".join(nodes)
                + ".\n"
            )
        edges = [
            f"({a[0]}, {a[1]}) and ({a[3]}, {scene.objects[a[3]].name})"
            for a in sc.unmet
            if len(a) == 4
        ]
        if edges:
            text += "The following objects have wrong relative position: " + ", ".join(edges)
            text += ".\n"
    return text


def content_free(text: str) -> str:
    """The same feedback with its content removed: the success bit only.

    ``"Task success!"`` stays; any other feedback becomes ``You have not completed this
    task.`` with no error kind, atom or object (the plan echo is kept). The null arm of the
    claims that credit what the feedback says."""
    if not isinstance(text, str):
        raise TypeError(f"feedback must be a str, got {type(text).__name__}")
    if text == SUCCESS:
        return SUCCESS
    head = text.split("\nFeedback:\n", 1)[0] if "\nFeedback:\n" in text else "Action sequence:"
    return f"{head}\nFeedback:\nYou have not completed this task.\n"


# --------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class Task:
    """One item: a task name in a scene, its gold plan and goal atoms."""

    name: str
    description: str
    scene: Scene
    gold: str
    goal: frozenset[Atom]


def task_names() -> list[str]:
    """Every high-level task name (compositional: template x objects)."""
    names = []
    grab = [n for n, (p, _) in CATALOGUE.items() if "GRABBABLE" in p]
    cont = ["fridge", "cabinet", "microwave"]
    surf = [n for n, (p, _) in CATALOGUE.items() if "SURFACES" in p]
    names += [
        f"Turn on {n}"
        for n, (p, _) in CATALOGUE.items()
        if "HAS_SWITCH" in p and "CONTAINERS" not in p
    ]
    names += [f"Put {g} in {c}" for g in grab for c in cont]
    names += [f"Put {g} on {s}" for g in grab for s in surf]
    names += [f"Heat {g}" for g in HEATABLE]
    names += [f"Wash {g}" for g in WASHERS]
    return names


def _walk_to(scene: Scene, room_now: str, obj: Obj, steps: list[str]) -> str:
    if obj.room != room_now:
        steps.append(format_step("WALK", (obj.room, scene.room_ids[obj.room])))
    steps.append(format_step("FIND", (obj.name, obj.id)))
    return obj.room


def gold_plan(scene: Scene, name: str) -> str | None:
    """The canonical planner's plan for task ``name`` in ``scene`` (``None`` if the scene lacks
    an object it needs)."""
    if not isinstance(scene, Scene):
        raise TypeError(f"scene must be a Scene, got {type(scene).__name__}")
    if not isinstance(name, str) or name not in task_names():
        raise ValueError(f"name must be one of task_names() (e.g. 'Heat apple'), got {name!r}")
    words = name.split()
    steps: list[str] = []
    room = scene.agent_room

    def put_in(g: Obj, c: Obj) -> None:
        nonlocal room
        room = _walk_to(scene, room, g, steps)
        steps.append(format_step("GRAB", (g.name, g.id)))
        room = _walk_to(scene, room, c, steps)
        steps.append(format_step("OPEN", (c.name, c.id)))
        steps.append(format_step("PUTIN", (g.name, g.id), (c.name, c.id)))
        steps.append(format_step("CLOSE", (c.name, c.id)))

    def need(n: str) -> Obj:
        o = scene.by_name(n)
        if o is None:
            raise LookupError(n)
        return o

    try:
        if words[0] == "Turn":
            s = need(words[2])
            room = _walk_to(scene, room, s, steps)
            steps.append(format_step("SWITCHON", (s.name, s.id)))
        elif words[0] == "Put" and words[2] == "in":
            put_in(need(words[1]), need(words[3]))
        elif words[0] == "Put":
            g, s = need(words[1]), need(words[3])
            room = _walk_to(scene, room, g, steps)
            steps.append(format_step("GRAB", (g.name, g.id)))
            room = _walk_to(scene, room, s, steps)
            steps.append(format_step("PUTBACK", (g.name, g.id), (s.name, s.id)))
        elif words[0] == "Heat":
            m = need("microwave")
            put_in(need(words[1]), m)
            steps.append(format_step("SWITCHON", (m.name, m.id)))
        elif words[0] == "Wash":
            w = need(WASHERS[words[1]])
            put_in(need(words[1]), w)
            steps.append(format_step("SWITCHON", (w.name, w.id)))
        else:
            raise ValueError(f"unknown task template in {name!r}")
    except LookupError:
        return None
    return format_plan(steps)


def make_tasks(
    *,
    n_scenes: int = 7,
    seed: int = 0,
    held_out_fraction: float = 0.4,
    randomize_ids: bool = False,
) -> dict[str, list[Task]]:
    """Items and compositional splits, as in the official ``data_split.py``.

    Task names are shuffled with ``seed`` and the first ``held_out_fraction`` is held out;
    scene :data:`HELD_OUT_SCENE` is held out. Returns ``train`` (training tasks, other scenes),
    ``test_new_task`` (held-out tasks, other scenes), ``test_new_scene`` (training tasks, the
    held-out scene) and ``test_new_task_and_new_scene``. With ``randomize_ids`` every item gets
    its own object ids (:func:`relabel` of its scene, drawn from ``seed``, the scene and the
    task name), so that the ids of a held-out scene are no less familiar than a training
    scene's: only the layout is new.
    """
    n_scenes = V.integer("n_scenes", n_scenes, low=HELD_OUT_SCENE + 1)
    seed = V.integer("seed", seed, low=0)
    frac = V.probability("held_out_fraction", held_out_fraction, open_low=True, open_high=True)
    names = task_names()
    random.Random(42 + seed).shuffle(names)
    held = set(names[: round(frac * len(names))])
    splits: dict[str, list[Task]] = {
        "train": [],
        "test_new_task": [],
        "test_new_scene": [],
        "test_new_task_and_new_scene": [],
    }
    for si in range(n_scenes):
        base = make_scene(si, seed=seed)
        for name in names:
            scene = base
            if randomize_ids:
                scene = relabel(base, random.Random(f"{seed}/{si}/{name}"))
            plan = gold_plan(scene, name)
            if plan is None:
                continue
            goal = goal_diffs(scene, plan)
            if not goal:  # already done in this scene (e.g. the book is on the desk)
                continue
            task = Task(name, name + ".", scene, plan, goal)
            new_scene = si == HELD_OUT_SCENE
            key = (
                ("test_new_task_and_new_scene" if name in held else "test_new_scene")
                if new_scene
                else ("test_new_task" if name in held else "train")
            )
            splits[key].append(task)
    return splits


# --------------------------------------------------------------------------- gym-style env
class HouseholdEnv:
    """Gymnasium-style episodic interface: ``reset`` picks a task, ``step`` takes one plan line.

    ``observation`` is a dict with the task name, the per-room object lists and the steps taken;
    ``step(line)`` returns ``(observation, reward, terminated, truncated, info)`` where reward is
    1 on reaching the goal, ``terminated`` is set on success, on ``[END]``, on an invalid line or
    an execution error, and on a failed precondition (execution halts, as in the official code);
    ``truncated`` after ``max_steps`` lines. An unknown action or an object that is not in the
    scene raises ``ValueError`` here (whole plans given to :func:`execute` count these as Exec
    errors instead, as the official simulator does). ``info`` carries ``gcr``, ``success``,
    ``executable`` and the feedback text of the plan so far.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, tasks: Sequence[Task], *, max_steps: int = 40) -> None:
        if (
            not isinstance(tasks, Sequence)
            or not tasks
            or not all(isinstance(t, Task) for t in tasks)
        ):
            raise ValueError(f"tasks must be a non-empty sequence of Task, got {tasks!r:.80}")
        self.tasks = list(tasks)
        self.max_steps = V.integer("max_steps", max_steps, low=1)
        self._rng = random.Random(0)
        self.task: Task | None = None
        self._lines: list[str] = []
        self._done = True

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode; ``options={"task_index": k}`` picks a task, else a random one."""
        if seed is not None:
            self._rng = random.Random(V.integer("seed", seed, low=0))
        k = (options or {}).get("task_index")
        if k is None:
            k = self._rng.randrange(len(self.tasks))
        k = V.integer("options['task_index']", k, low=0, high=len(self.tasks) - 1)
        self.task, self._lines, self._done = self.tasks[k], [], False
        return self._obs(), {"task_index": k}

    def _obs(self) -> dict[str, Any]:
        assert self.task is not None
        return {
            "task": self.task.name,
            "objects": self.task.scene.context(),
            "steps": tuple(self._lines),
        }

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Take one plan line (``"[GRAB] <apple> (3)"`` or ``"[END]"``)."""
        if self.task is None or self._done:
            raise RuntimeError("call reset() before step() (the episode has ended)")
        if not isinstance(action, str) or not action.strip():
            raise ValueError(f"action must be a non-empty plan line, got {action!r}")
        line = action.strip()
        end = "END" in line
        if not end:
            head = _HEAD.match(line)
            if head is None or head.group(1).upper() not in ACTIONS:
                raise ValueError(
                    f"action must be a line '[ACTION] <name> (id)' with ACTION in "
                    f"{sorted(ACTIONS)}, got {action!r}"
                )
            for n, i in _ARG.findall(line):
                obj = self.task.scene.objects.get(int(i))
                if obj is None or obj.name != n.strip():
                    raise ValueError(
                        f"action must name an object of the scene as <name> (id), got "
                        f"<{n}> ({i}) in {action!r}"
                    )
            self._lines.append(line)
        plan = format_plan(self._lines)
        run = execute(self.task.scene, plan)
        sc = score(self.task.scene, self.task.goal, plan)
        terminated = end or sc.success or not run.executable or run.halted_at is not None
        truncated = not terminated and len(self._lines) >= self.max_steps
        self._done = terminated or truncated
        info = {
            "gcr": sc.gcr,
            "success": sc.success,
            "executable": run.executable,
            "feedback": feedback(self.task.scene, self.task.goal, plan),
        }
        return self._obs(), float(sc.success), terminated, truncated, info
