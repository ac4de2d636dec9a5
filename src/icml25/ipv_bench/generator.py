"""Procedurally rendered plausible and impossible clips, and a physics check per clip.

Every clip is the same small world, drawn by one renderer: a 32 x 32 RGB scene, 16 frames, a
ball under gravity with a reflective floor, a wall in the ball's path, an occluding screen on
its path and a tank of liquid on the floor. A plausible clip obeys the world's laws (gravity
``G`` down, restitution ``E_PLAUSIBLE`` < 1 at every impact, rolling friction ``MU``, the ball
persists, keeps its colour, moves continuously, bounces off the wall; the reflection is below
the ball; the tank rests on the floor with a level liquid surface). An impossible clip breaks
exactly one law, mapped to a category of the IPV-Bench taxonomy (:data:`VIOLATIONS`):
seven *temporal* violations (visible only across frames) and three *spatial* ones (visible in a
single frame). The props are placed from the plausible trajectory of the same initial state,
so both classes share the layout statistics; colours, noise and sizes come from the same
distributions.

:func:`physics_check` recomputes, from a clip's recorded state track alone (never from its
label), which laws the motion and the scene break: the estimated acceleration, the
restitution at each impact, rolling speed-ups, jumps larger than the velocities allow,
crossing the wall, disappearance, colour changes and the static layout.

References
----------
Bai, Ci & Shou, "Impossible Videos", ICML 2025, arXiv:2503.14378 (taxonomy and task).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from icml25.core import validate as V

SIZE = 32
FRAMES = 16
FLOOR = 22.0
"""Row of the floor surface; rows below it are the reflective floor."""
RADIUS = 2.2
G = 0.3
"""Gravity in pixels per frame squared (downwards)."""
E_PLAUSIBLE = 0.8
E_IMPOSSIBLE = 1.35
MU = 0.03
"""Rolling friction: speed lost per frame on the floor."""
WALL_HALF = 1.0
REST_SPEED = 0.6
TANK_W, TANK_H = 7, 8
PALETTE = np.array(
    [[0.9, 0.15, 0.15], [0.15, 0.75, 0.2], [0.95, 0.85, 0.1], [0.8, 0.3, 0.85]], dtype=np.float64
)
LIQUID = np.array([0.2, 0.45, 0.95])


@dataclass(frozen=True)
class Violation:
    """An impossible event of the generator: its taxonomy label, whether it is visible in one
    frame (``spatial``) or only over time (``temporal``), a one-line description (the MCQA
    option and the open-ended answer) and phrases that identify it in free text."""

    name: str
    label: str
    spatial_temporal: str
    description: str
    keywords: tuple[str, ...]


VIOLATIONS: tuple[Violation, ...] = (
    Violation(
        "gravity_up",
        "Physical Laws - Mechanics - Gravity",
        "temporal",
        "The ball accelerates upward, falling towards the sky instead of the ground.",
        ("upward", "towards the sky", "falls up"),
    ),
    Violation(
        "energy_gain",
        "Physical Laws - Conservation Laws - Energy",
        "temporal",
        "The ball rebounds faster after every impact, gaining energy from nothing.",
        ("gaining energy", "rebounds faster", "bounces higher"),
    ),
    Violation(
        "vanish",
        "Physical Laws - Conservation Laws - Object Persistence",
        "temporal",
        "The ball goes behind the screen and never comes out again.",
        ("never comes out", "vanish", "disappear"),
    ),
    Violation(
        "teleport",
        "Physical Laws - Mechanics - Kinematics - Impossible Trajectories",
        "temporal",
        "The ball jumps instantly to a distant spot in mid-motion.",
        ("jumps instantly", "teleport"),
    ),
    Violation(
        "through_wall",
        "Physical Laws - Material Properties - Object Interaction - Solid-Solid",
        "temporal",
        "The ball passes straight through the solid wall.",
        ("through the solid wall", "through the wall"),
    ),
    Violation(
        "friction_speedup",
        "Physical Laws - Mechanics - Friction",
        "temporal",
        "The ball rolling on the flat floor speeds up by itself.",
        ("speeds up", "accelerates on the floor"),
    ),
    Violation(
        "colour_change",
        "Physical Laws - Optics - Color and Spectrum",
        "temporal",
        "The ball suddenly changes its colour.",
        ("changes its colour", "changes color", "changes colour"),
    ),
    Violation(
        "reflection_offset",
        "Physical Laws - Optics - Reflection and Refraction",
        "spatial",
        "The ball's reflection on the floor is shifted sideways away from the ball.",
        ("reflection",),
    ),
    Violation(
        "tilted_liquid",
        "Physical Laws - Fluid Dynamics - Abnormal Flow",
        "spatial",
        "The liquid in the resting tank has a tilted surface.",
        ("tilted surface", "tilted liquid", "liquid is tilted"),
    ),
    Violation(
        "floating_tank",
        "Physical Laws - Mechanics - Gravity",
        "spatial",
        "The tank hangs in mid-air without any support.",
        ("mid-air", "hangs", "without any support"),
    ),
)
PLAUSIBLE = "plausible"
CLASS_NAMES: tuple[str, ...] = (PLAUSIBLE, *(v.name for v in VIOLATIONS))
"""Class index -> name; index 0 is the plausible class."""
BY_NAME: dict[str, Violation] = {v.name: v for v in VIOLATIONS}


@dataclass
class Track:
    """A clip's recorded state, one entry per frame, and its static layout."""

    x: np.ndarray
    y: np.ndarray
    vx: np.ndarray
    vy: np.ndarray
    exists: np.ndarray
    colour: np.ndarray
    wall_x: float
    occluder: tuple[int, int, int, int]
    tank_x: int
    tank_bottom: float
    tank_tilt: float
    reflection_dx: float


@dataclass
class Clip:
    """A rendered clip ``frames`` ``(T, 3, H, W)`` in [0, 1], what it shows and its track."""

    frames: np.ndarray
    violation: str
    track: Track = field(repr=False)

    @property
    def impossible(self) -> bool:
        return self.violation != PLAUSIBLE

    @property
    def class_index(self) -> int:
        return CLASS_NAMES.index(self.violation)


# ----------------------------------------------------------------------------- simulation
@dataclass
class _Init:
    x: float
    y: float
    vx: float
    vy: float
    floor_mode: bool


def _simulate(
    init: _Init,
    wall_x: float,
    *,
    g: float = G,
    e: float = E_PLAUSIBLE,
    friction: float = -MU,
    through_wall: bool = False,
    jump: tuple[int, float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Semi-implicit Euler with reflecting impacts; returns x, y, vx, vy and the number of
    impacts. ``friction`` is the change of rolling speed per frame (-MU is plausible);
    ``jump = (t, dx, dy)`` moves the ball by ``(dx, dy)`` at frame ``t`` (a teleport)."""
    x, y, vx, vy = init.x, init.y, init.vx, init.vy
    rest_floor, rest_ceiling = FLOOR - RADIUS, RADIUS
    xs, ys, vxs, vys = [x], [y], [vx], [vy]
    impacts = 0
    for _ in range(FRAMES - 1):
        on_floor = g > 0 and vy == 0.0 and y >= rest_floor - 1e-9
        on_ceiling = g < 0 and vy == 0.0 and y <= rest_ceiling + 1e-9
        if on_floor:
            speed = max(abs(vx) + friction, 0.0)
            vx = math.copysign(speed, vx)
        elif not on_ceiling:
            vy += g
        x_prev = x
        x += vx
        y += vy
        if y > rest_floor:
            y, vy = 2 * rest_floor - y, -e * vy
            impacts += 1
            if g > 0 and abs(vy) < REST_SPEED:
                y, vy = rest_floor, 0.0
        if y < rest_ceiling:
            y, vy = 2 * rest_ceiling - y, -e * vy
            impacts += 1
            if g < 0 and abs(vy) < REST_SPEED:
                y, vy = rest_ceiling, 0.0
        if not through_wall:
            side = 1.0 if x_prev >= wall_x else -1.0
            contact = wall_x + side * (RADIUS + WALL_HALF)
            if side * (x - contact) < 0:
                x, vx = 2 * contact - x, -e * vx
                impacts += 1
        for bound in (RADIUS, SIZE - RADIUS):
            if (x - bound) * (SIZE / 2 - bound) < 0:  # beyond the frame edge
                x, vx = 2 * bound - x, -e * vx
                impacts += 1
        if jump is not None and len(xs) == jump[0]:
            x, y = x + jump[1], y + jump[2]
            if g > 0 and vy == 0.0 and y < rest_floor:
                vy = 1e-12  # lifted off the floor: free flight from here
        xs.append(x)
        ys.append(y)
        vxs.append(vx)
        vys.append(vy)
    return np.array(xs), np.array(ys), np.array(vxs), np.array(vys), impacts


def _sample_init(rng: np.random.Generator, floor_mode: bool) -> tuple[_Init, float]:
    direction = 1.0 if rng.random() < 0.5 else -1.0
    speed = rng.uniform(0.9, 1.5)
    x0 = rng.uniform(4.0, 9.0)
    if direction < 0:
        x0 = SIZE - x0
    if floor_mode:
        y0, vy0 = FLOOR - RADIUS, 0.0
    else:
        y0, vy0 = rng.uniform(5.0, 12.0), rng.uniform(-1.5, 1.0)
    t_hit = rng.uniform(6.0, 10.0)
    wall_x = x0 + direction * (speed * t_hit + RADIUS + WALL_HALF)
    wall_x = float(np.clip(wall_x, RADIUS + 6, SIZE - RADIUS - 6))
    return _Init(x0, y0, direction * speed, vy0, floor_mode), wall_x


def generate_clip(violation: str = PLAUSIBLE, *, seed: int = 0, noise: float = 0.03) -> Clip:
    """One clip showing ``violation`` (a name in :data:`CLASS_NAMES`).

    The same ``seed`` gives the same clip. ``noise`` is the per-pixel Gaussian noise level.
    """
    V.choice("violation", violation, CLASS_NAMES)
    seed = V.integer("seed", seed, low=0)
    noise = V.number("noise", noise, low=0.0, high=0.5)
    rng = np.random.default_rng([seed, CLASS_NAMES.index(violation), 5150])
    for _ in range(200):
        track = _try_track(violation, rng)
        if track is not None:
            return Clip(render(track, rng=rng, noise=noise), violation, track)
    raise RuntimeError(f"could not place a {violation!r} clip after 200 tries (seed {seed})")


def _try_track(violation: str, rng: np.random.Generator) -> Track | None:
    floor_mode = violation == "friction_speedup" or rng.random() < 0.4
    init, wall_x = _sample_init(rng, floor_mode)
    px, py, _, _, _ = _simulate(init, wall_x)
    # the screen sits on the plausible path at a frame away from the wall
    cand = [t for t in range(3, 12) if abs(px[t] - wall_x) > 7.0 and py[t] < FLOOR - 4]
    if floor_mode:
        cand = [t for t in range(3, 12) if abs(px[t] - wall_x) > 7.0]
    if not cand:
        return None
    t_occ = int(rng.choice(cand))
    cx, cy = px[t_occ], min(py[t_occ], FLOOR - 5.0)
    occluder = (
        int(max(0, round(cx - 4))),
        int(max(0, round(cy - 5))),
        int(min(SIZE, round(cx + 4))),
        int(min(FLOOR, round(cy + 5))),
    )
    tank_side = -1.0 if init.vx > 0 else 1.0  # behind the ball's start, away from the wall
    tank_x = int(np.clip(round(init.x + tank_side * 7 - TANK_W / 2), 0, SIZE - TANK_W))
    colour0 = int(rng.integers(len(PALETTE)))
    kw: dict[str, float | bool] = {}
    if violation == "gravity_up":
        kw["g"] = -G
    elif violation == "energy_gain":
        kw["e"] = E_IMPOSSIBLE
    elif violation == "through_wall":
        kw["through_wall"] = True
    elif violation == "friction_speedup":
        kw["friction"] = MU
    if violation == "teleport":
        jump = _teleport(*_simulate(init, wall_x)[:4], wall_x, rng)
        if jump is None:
            return None
        kw["jump"] = jump  # type: ignore[assignment]
    x, y, vx, vy, impacts = _simulate(init, wall_x, **kw)  # type: ignore[arg-type]
    exists = np.ones(FRAMES, dtype=bool)
    colour = np.full(FRAMES, colour0)
    if violation == "energy_gain" and impacts == 0:
        return None
    if violation == "through_wall" and not np.any(np.diff(np.sign(x - wall_x)) != 0):
        return None
    if violation == "gravity_up" and floor_mode and rng.random() < 0.5:
        return None  # keep most gravity clips airborne, like the plausible ones
    if violation == "vanish":
        exists[t_occ:] = False
    if violation == "colour_change":
        t_c = int(rng.integers(4, 12))
        colour[t_c:] = (colour0 + int(rng.integers(1, len(PALETTE)))) % len(PALETTE)
    return Track(
        x=x,
        y=y,
        vx=vx,
        vy=vy,
        exists=exists,
        colour=colour,
        wall_x=wall_x,
        occluder=occluder,
        tank_x=tank_x,
        tank_bottom=FLOOR - (rng.uniform(5.0, 8.0) if violation == "floating_tank" else 0.0),
        tank_tilt=float(rng.choice([-1, 1]) * rng.uniform(0.5, 0.8))
        if violation == "tilted_liquid"
        else 0.0,
        reflection_dx=float(rng.choice([-1, 1]) * rng.uniform(5.0, 7.0))
        if violation == "reflection_offset"
        else 0.0,
    )


def _teleport(
    x: np.ndarray,
    y: np.ndarray,
    vx: np.ndarray,
    vy: np.ndarray,
    wall_x: float,
    rng: np.random.Generator,
) -> tuple[int, float, float] | None:
    """A jump ``(t, dx, dy)`` larger than the ball's motion allows, landing inside the scene on
    the same side of the wall (None if none fits)."""
    for t in rng.permutation(np.arange(4, 12)):
        speed = math.hypot(vx[t - 1], vy[t - 1]) + math.hypot(vx[t], vy[t])
        size = max(9.0, 2 * speed + 2 * G + 3.0)
        for angle in rng.permutation(np.linspace(0, 2 * np.pi, 12, endpoint=False)):
            dx, dy = size * math.cos(angle), size * math.sin(angle)
            nx, ny = x[t] + dx, y[t] + dy
            ok = (
                RADIUS + 1 < nx < SIZE - RADIUS - 1
                and RADIUS + 1 < ny <= FLOOR - RADIUS
                and np.sign(nx - wall_x) == np.sign(x[t] - wall_x)
                and abs(nx - wall_x) > RADIUS + WALL_HALF + 1
            )
            if ok:
                return int(t), dx, dy
    return None


# ----------------------------------------------------------------------------- rendering
def render(track: Track, *, rng: np.random.Generator, noise: float = 0.03) -> np.ndarray:
    """Draw a track as frames ``(T, 3, H, W)`` float32 in [0, 1] (one renderer for all)."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float64) + 0.5
    sky = np.array([0.55, 0.7, 0.85]) + rng.uniform(-0.08, 0.08, 3)
    floor_c = np.array([0.3, 0.28, 0.25]) + rng.uniform(-0.05, 0.05, 3)
    wall_c = np.array([0.5, 0.33, 0.2]) + rng.uniform(-0.05, 0.05, 3)
    occ_c = np.array([0.42, 0.42, 0.42]) + rng.uniform(-0.05, 0.05)
    base = np.empty((SIZE, SIZE, 3))
    base[:] = sky
    base[yy >= FLOOR] = floor_c
    # the tank: outline and liquid (surface tilted by tank_tilt px per px from its centre)
    x0, bottom = track.tank_x, track.tank_bottom
    inside_x = (xx >= x0) & (xx < x0 + TANK_W)
    inside = inside_x & (yy >= bottom - TANK_H) & (yy < bottom)
    level = bottom - TANK_H * 0.55 + track.tank_tilt * (xx - (x0 + TANK_W / 2))
    base[inside & (yy >= level)] = LIQUID
    rim = inside & ((xx < x0 + 1) | (xx >= x0 + TANK_W - 1) | (yy >= bottom - 1))
    base[rim] = 0.85
    wall = (np.abs(xx - track.wall_x) <= WALL_HALF) & (yy >= 2) & (yy < FLOOR)
    base[wall] = wall_c
    ox0, oy0, ox1, oy1 = track.occluder
    occ = (xx >= ox0) & (xx < ox1) & (yy >= oy0) & (yy < oy1)
    live = track.exists[:, None, None, None].astype(np.float64)
    colours = PALETTE[track.colour][:, None, None, :]
    bx, by = track.x[:, None, None], track.y[:, None, None]
    d_ref = np.hypot(xx - (bx + track.reflection_dx), yy - (2 * FLOOR - by))
    cov_ref = (np.clip(RADIUS + 0.5 - d_ref, 0, 1) * (yy >= FLOOR) * 0.6)[..., None] * live
    cov = np.clip(RADIUS + 0.5 - np.hypot(xx - bx, yy - by), 0, 1)[..., None] * live
    frames = base * (1 - cov_ref) + colours * cov_ref
    frames = frames * (1 - cov) + colours * cov
    frames[:, occ] = occ_c
    frames += rng.normal(0.0, noise, frames.shape) if noise > 0 else 0.0
    return np.clip(frames, 0.0, 1.0).transpose(0, 3, 1, 2).astype(np.float32)


# ----------------------------------------------------------------------------- physics check
def physics_check(track: Track, *, tol: float = 1e-6) -> set[str]:
    """The laws a track breaks, recomputed from its states (names of :data:`VIOLATIONS`).

    Motion (frames where the ball exists): the gravity estimate from free steps (those whose
    displacement equals the new velocity) must be ``+G`` and the ball must not rest in the
    air (``gravity_up``); at each impact the rebound speed must not exceed the incoming speed
    (``energy_gain``); rolling on the floor must not speed up (``friction_speedup``); no step
    may move farther than the velocities allow (``teleport``); the ball never changes side
    of the wall (``through_wall``), never stops existing (``vanish``) and keeps its colour
    (``colour_change``). Layout: reflection below the ball, level liquid, tank on the floor.
    """
    out: set[str] = set()
    live = np.flatnonzero(track.exists)
    if len(live) < len(track.exists) and len(live) > 0:
        out.add("vanish")
    if len(np.unique(track.colour[live])) > 1:
        out.add("colour_change")
    if abs(track.reflection_dx) > tol:
        out.add("reflection_offset")
    if abs(track.tank_tilt) > tol:
        out.add("tilted_liquid")
    if abs(track.tank_bottom - FLOOR) > tol:
        out.add("floating_tank")
    x, y, vx, vy = track.x, track.y, track.vx, track.vy
    steps = [t for t in live[:-1] if track.exists[t + 1]]
    jumps, free_y, impacts_x, impacts_y = set(), [], [], []
    for t in steps:
        dx, dy = x[t + 1] - x[t], y[t + 1] - y[t]
        bound = math.hypot(vx[t], vy[t]) + math.hypot(vx[t + 1], vy[t + 1]) + 2 * G + 0.5
        if math.hypot(dx, dy) > bound:
            jumps.add(t)
            continue
        resting = vy[t] == 0.0 and vy[t + 1] == 0.0
        if abs(dy - vy[t + 1]) < tol:
            if resting:
                if FLOOR - RADIUS - y[t] > tol:  # at rest but not on the floor
                    out.add("gravity_up")
            else:
                free_y.append(vy[t + 1] - vy[t])
        else:
            impacts_y.append(t)
        if abs(dx - vx[t + 1]) > tol:
            impacts_x.append(t)
        elif resting and abs(vx[t + 1]) > abs(vx[t]) + tol:
            out.add("friction_speedup")
    if jumps:
        out.add("teleport")
    g_hat = float(np.median(free_y)) if free_y else G
    if free_y and (g_hat < 0 or np.any(np.asarray(free_y) < -tol)):
        out.add("gravity_up")
    for t in impacts_y:
        v_in = abs(vy[t] + g_hat)
        if v_in > tol and abs(vy[t + 1]) / v_in > 1.1:
            out.add("energy_gain")
    for t in impacts_x:
        if abs(vx[t]) > tol and abs(vx[t + 1]) / abs(vx[t]) > 1.1:
            out.add("energy_gain")
    sides = np.sign(x[live] - track.wall_x)
    if np.any(sides[1:] != sides[:-1]):
        out.add("through_wall")
    return out


# ----------------------------------------------------------------------------- data sets
@dataclass
class ClipSet:
    """Many clips: ``frames`` ``(N, T, 3, H, W)`` float32, ``labels`` class indices into
    :data:`CLASS_NAMES`, and the tracks."""

    frames: np.ndarray
    labels: np.ndarray
    tracks: list[Track]

    @property
    def violations(self) -> list[str]:
        return [CLASS_NAMES[i] for i in self.labels]


def generate_clips(
    n: int,
    *,
    seed: int = 0,
    impossible_fraction: float = 0.5,
    violations: tuple[str, ...] | None = None,
    noise: float = 0.03,
    as_uint8: bool = False,
) -> ClipSet:
    """``n`` clips: a share ``impossible_fraction`` impossible, spread evenly over
    ``violations`` (default: all ten), the rest plausible, in a seeded random order.
    ``as_uint8`` stores frames as bytes (4x less memory; the models accept both)."""
    n = V.integer("n", n, low=1)
    seed = V.integer("seed", seed, low=0)
    frac = V.probability("impossible_fraction", impossible_fraction)
    names = tuple(v.name for v in VIOLATIONS) if violations is None else tuple(violations)
    if not names:
        raise ValueError("violations must name at least one violation, got ()")
    for v in names:
        V.choice("violations", v, [w.name for w in VIOLATIONS])
    rng = np.random.default_rng([seed, 77])
    n_imp = round(n * frac)
    kinds = [names[i % len(names)] for i in range(n_imp)] + [PLAUSIBLE] * (n - n_imp)
    kinds = [kinds[i] for i in rng.permutation(n)]
    seeds = rng.integers(0, 2**31 - 1, size=n)
    clips = [generate_clip(k, seed=int(s), noise=noise) for k, s in zip(kinds, seeds, strict=False)]
    conv = (lambda f: (f * 255).round().astype(np.uint8)) if as_uint8 else (lambda f: f)
    return ClipSet(
        frames=np.stack([conv(c.frames) for c in clips]),
        labels=np.array([c.class_index for c in clips], dtype=np.int64),
        tracks=[c.track for c in clips],
    )
