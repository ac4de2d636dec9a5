"""The pan-privacy reproduction's budgets, its two experiments and their statistics.

- **Budgets**: :class:`Budget` (devices, horizons, intruder-game trials and horizon) and
  ``BUDGETS``.
- **Counting** (part 1): :func:`event_stream` draws a device's events; :func:`counting` runs
  ``n`` devices with real secp256k1 ElGamal over one horizon (or, as the null arm, devices
  that ignore their events) and decrypts and debiases their reports.
- **The damaged counters** (the T-ratio claims' sensitivity arms): :func:`damaged_counting`
  runs the information-theoretic switch (its error grows with T) or the per-step-budget
  counter (its error shrinks with T) on the same kind of streams and scores them the same way.
- **The intruder game** (part 2): :func:`game` reads a method's state at two unannounced times
  in each world; :func:`advantages` scores the three adversaries.
- **Per run**: :func:`run_seeds` runs both parts on every seed, :func:`pooled` pools the
  runs over seeds, :func:`measurements` gives the claims' measurements with their intervals,
  and :func:`report_lines` the report's tables.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml25.core.claims import Measurement, null_key, sensitivity_key
from icml25.core.runner import RunContext
from icml25.pan_privacy.baselines import (
    NoisySwitchDevice,
    OneShotPanPrivateBit,
    PerStepBudgetCounter,
    PlaintextCounter,
    RerandomizeOnEventDevice,
    switch_signal,
)
from icml25.pan_privacy.claims import CLAIMS
from icml25.pan_privacy.elgamal import keygen
from icml25.pan_privacy.protocol import (
    PanPrivateDevice,
    Server,
    estimate_count,
    keep_probability,
)

EPSILON = 1.0
GROUPS = 20
"""The devices of a counting run are split into this many groups (the T ratio's items)."""
METHODS = ("protocol", "rerandomize on event", "plaintext", "one-shot pan-private bit")
"""The intruder game's methods: the protocol, then the three naive controls."""
DAMAGED = {
    "error_independent_of_T": "noisy switch",
    "error_not_smaller_for_large_T": "per-step budget",
}
"""The sensitivity arm of each T-ratio claim (a counter of :mod:`.baselines`)."""


@dataclass(frozen=True, kw_only=True)
class Budget:
    n: int
    """Devices per counting run (one run per seed and horizon)."""
    horizons: tuple[int, ...]
    """The counting runs' horizons T (steps per device), shortest first."""
    trials: int
    """Intruder-game trials per world (event between the intrusions or not) and method."""
    game_T: int
    """The intruder game's horizon."""


BUDGETS = {
    "tiny": Budget(n=60, horizons=(3, 10), trials=40, game_T=4),
    "quick": Budget(n=800, horizons=(10, 100), trials=1000, game_T=10),
    "full": Budget(n=5000, horizons=(10, 100), trials=5000, game_T=10),
}


def event_stream(rng: random.Random, T: int) -> list[bool]:
    """Half the devices never see the event; the others see it at one uniform step and then at
    each later step with probability 0.05."""
    if rng.random() < 0.5:
        return [False] * T
    first = rng.randrange(T)
    return [t == first or (t > first and rng.random() < 0.05) for t in range(T)]


def counting(cfg: Budget, seed: int, T: int, *, ignore_events: bool = False) -> dict[str, Any]:
    # the null arm (a device that ignores its events) draws from its own stream
    rng = random.Random(f"pan-privacy{'-null' if ignore_events else ''}/{seed}/{T}")
    keys = keygen(rng)
    server = Server(keys.secret, EPSILON)
    truth, expected, reports = [], [], []
    for _ in range(cfg.n):
        rr: list[int] = []
        # the audit tap is called inside the constructor, before rr is rebound
        dev = PanPrivateDevice(
            keys.public,
            EPSILON,
            rng,
            audit=lambda a, b: rr.extend((a, b)),  # noqa: B023
        )
        stream = event_stream(rng, T)
        dev.run([False] * T if ignore_events else stream)
        seen = any(stream)
        truth.append(int(seen))
        expected.append(rr[1] if seen else rr[0])
        reports.append(dev.report())
    bits = [server.decrypt_report(r) for r in reports]
    est = estimate_count(bits, EPSILON)
    z = (est.count - sum(truth)) / est.stderr
    groups = []
    for idx in np.array_split(np.arange(cfg.n), GROUPS):
        g = estimate_count([bits[i] for i in idx], EPSILON)
        groups.append((g.count - sum(truth[i] for i in idx)) / g.stderr)
    return {
        "match": float(np.mean(np.array(bits) == np.array(expected))),
        "z": z,
        "groups": groups,
        "bits": bits,
        "truth": truth,
        "estimate": est,
    }


def damaged_counting(cfg: Budget, seed: int, T: int, arm: str) -> list[float]:
    """The standardised group errors of a damaged counter over ``cfg.n`` devices, scored as
    :func:`counting` scores the protocol: per group, ``(n_hat - truth) / se`` with ``se`` the
    protocol's randomized-response standard error for the group's size (so that a counter
    whose error grows with T shows it). ``arm``: ``"noisy switch"`` (the report keeps its seen
    bit w.p. ``(1 + s_T) / 2``, ``s_T`` = :func:`switch_signal`; ``n_hat = (sum y - m (1 -
    s_T) / 2) / s_T``) or ``"per-step budget"`` (each device's mean of ``T`` randomized
    responses, debiased like one)."""
    if arm not in DAMAGED.values():
        raise ValueError(f"arm must be one of {sorted(DAMAGED.values())}, got {arm!r}")
    rng = random.Random(f"pan-privacy-sensitivity/{arm}/{seed}/{T}")
    p = keep_probability(EPSILON)
    signal = switch_signal(T, EPSILON) if arm == "noisy switch" else 2 * p - 1
    if signal == 0.0:  # tanh(eps/2)^(T+1) underflows past T ~ 900 at eps = 1
        raise ValueError(f"the noisy switch's report carries no usable signal at T={T}")
    truth, values = [], []
    for _ in range(cfg.n):
        stream = event_stream(rng, T)
        truth.append(int(any(stream)))
        if arm == "noisy switch":
            dev = NoisySwitchDevice(EPSILON, rng)
            dev.run(stream)
            values.append(float(dev.report()))
        else:
            counter = PerStepBudgetCounter(EPSILON, rng)
            counter.run(stream)
            values.append(float(np.mean(counter.report())))
    out = []
    for idx in np.array_split(np.arange(cfg.n), GROUPS):
        m = len(idx)
        count = (sum(values[i] for i in idx) - m * (1 - signal) / 2) / signal
        se = estimate_count([0] * m, EPSILON).stderr
        out.append((count - sum(truth[i] for i in idx)) / se)
    return out


def advantages(views: dict[int, list[tuple[bytes, bytes]]]) -> dict[str, float]:
    def guess_changed(a: bytes, b: bytes) -> bool:
        return a != b

    def guess_byte(a: bytes, b: bytes) -> bool:
        return not any(x == y for x, y in zip(a, b, strict=True))

    def guess_bit(a: bytes, b: bytes) -> bool:
        return (a[-1] & 1) != (b[-1] & 1)

    out = {}
    for name, g in (
        ("changed", guess_changed),
        ("no equal byte", guess_byte),
        ("last bit", guess_bit),
    ):
        rate = {w: float(np.mean([g(a, b) for a, b in views[w]])) for w in (0, 1)}
        out[name] = rate[1] - rate[0]
    return out


def game(cfg: Budget, seed: int, method: str) -> dict[str, float]:
    rng = random.Random(f"pan-privacy-game/{seed}/{method}")
    keys = keygen(rng)
    T = cfg.game_T
    views: dict[int, list[tuple[bytes, bytes]]] = {0: [], 1: []}
    for world in (0, 1):
        for _ in range(cfg.trials):
            t1, t2 = sorted(rng.sample(range(1, T + 1), 2))
            at = rng.randrange(t1, t2) if world else -1  # event in step index (t1, t2]
            dev: Any
            if method == "protocol":
                dev = PanPrivateDevice(keys.public, EPSILON, rng)
            elif method == "rerandomize on event":
                dev = RerandomizeOnEventDevice(keys.public, EPSILON, rng)
            elif method == "plaintext":
                dev = PlaintextCounter(EPSILON, rng)
            else:
                dev = OneShotPanPrivateBit(EPSILON, rng)
            first = b""
            for t in range(T):
                dev.observe(t == at)
                if t + 1 == t1:
                    first = dev.state()
                if t + 1 == t2:
                    views[world].append((first, dev.state()))
                    break
    return advantages(views)


@dataclass
class Runs:
    """What :func:`run_seeds` measured: ``out`` holds the per-seed values of the claims and
    null arms, ``runs`` the counting runs by (seed, T), ``games`` the adversaries' advantages by
    (seed, method), the null arm's decrypted bits and truths per seed, and the damaged
    counters' standardised group errors by (arm, seed, T)."""

    out: dict[str, list[float]]
    runs: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    games: dict[tuple[int, str], dict[str, float]] = field(default_factory=dict)
    null_bits: list[list[int]] = field(default_factory=list)
    null_truth: list[list[int]] = field(default_factory=list)
    damaged: dict[tuple[str, int, int], list[float]] = field(default_factory=dict)


def run_seeds(ctx: RunContext, cfg: Budget) -> Runs:
    """Per seed: the counting runs at every horizon, the null arm (devices that ignore their
    events, at the shortest horizon), the damaged counters at every horizon and the intruder
    game of every method."""
    out: dict[str, list[float]] = {c.id: [] for c in CLAIMS if c.rule is not None}
    for key in ("reports_decrypt_to_rr_bit", "estimate_unbiased", "rr_ratio"):
        out[null_key(key)] = []
    out[null_key("intruder_protocol")], out[null_key("intruder_controls")] = [], []
    r = Runs(out)
    runs, games = r.runs, r.games
    for seed in ctx.seeds:
        zs = []
        for T in cfg.horizons:
            ctx.progress(f"seed {seed}: {cfg.n} devices, T={T} ({cfg.n * T} encrypted steps)")
            run = counting(cfg, seed, T)
            runs[(seed, T)] = run
            out["reports_decrypt_to_rr_bit"].append(run["match"])
            zs.append(abs(run["z"]))
        out["estimate_unbiased"].append(max(zs))
        T = cfg.horizons[0]
        ctx.progress(f"seed {seed}: null arm, {cfg.n} devices that ignore their events, T={T}")
        null = counting(cfg, seed, T, ignore_events=True)
        out[null_key("reports_decrypt_to_rr_bit")].append(null["match"])
        out[null_key("estimate_unbiased")].append(abs(null["z"]))
        r.null_bits.append(null["bits"])
        r.null_truth.append(null["truth"])
        for arm in DAMAGED.values():
            ctx.progress(f"seed {seed}: sensitivity arm, {arm}, {cfg.n} devices per horizon")
            for T in cfg.horizons:
                r.damaged[(arm, seed, T)] = damaged_counting(cfg, seed, T, arm)
        for method in METHODS:
            ctx.progress(f"seed {seed}: intruder game, {method} ({2 * cfg.trials} trials)")
            games[(seed, method)] = game(cfg, seed, method)
        adv = {m: max(abs(v) for v in games[(seed, m)].values()) for m in METHODS}
        out["intruder_protocol"].append(adv["protocol"])
        out[null_key("intruder_protocol")].append(adv["rerandomize on event"])
        out["intruder_controls"].append(min(adv[m] for m in METHODS[1:]))
        out[null_key("intruder_controls")].append(adv["protocol"])
    return r


def pooled(
    cfg: Budget, seeds: tuple[int, ...], r: Runs
) -> tuple[dict[int, float], float, np.ndarray, np.ndarray, float]:
    """Over all seeds: the RMS standardised group error per horizon, its ratio (longest /
    shortest horizon), every decrypted bit and truth, and the randomized-response ratio."""
    runs = r.runs
    rms = {
        T: math.sqrt(np.mean([g**2 for s in seeds for g in runs[(s, T)]["groups"]]))
        for T in cfg.horizons
    }
    ratio = rms[cfg.horizons[-1]] / rms[cfg.horizons[0]]
    bits = np.concatenate([runs[k]["bits"] for k in runs])
    truth = np.concatenate([runs[k]["truth"] for k in runs])
    rr = bits[truth == 1].mean() / bits[truth == 0].mean()
    return rms, ratio, bits, truth, rr


def measurements(cfg: Budget, seeds: tuple[int, ...], r: Runs) -> dict[str, Any]:
    """The claims' measurements. Intervals: exact for the deterministic match count; t over
    seeds for |z| and the advantages; item bootstraps for the pooled ratios (groups of
    devices, devices)."""
    out, runs = r.out, r.runs
    _, ratio, bits, truth, _ = pooled(cfg, seeds, r)
    res: dict[str, Any] = dict(out)
    for key in ("reports_decrypt_to_rr_bit", null_key("reports_decrypt_to_rr_bit")):
        res[key] = Measurement.exact(out[key])
    # rows: one group of devices, its standardised error at each horizon
    pairs = np.concatenate(
        [np.array([runs[(s, T)]["groups"] for T in cfg.horizons]).T for s in seeds]
    )

    def t_ratio(rows: np.ndarray) -> float:
        return float(np.sqrt(np.mean(rows[:, -1] ** 2) / np.mean(rows[:, 0] ** 2)))

    assert abs(t_ratio(pairs) - ratio) < 1e-9
    res["error_independent_of_T"] = Measurement.bootstrap([pairs], statistic=t_ratio)
    res["error_not_smaller_for_large_T"] = res["error_independent_of_T"]
    for claim_id, arm in DAMAGED.items():  # the same ratio, bootstrap and groups
        rows = np.concatenate(
            [np.array([r.damaged[(arm, s, T)] for T in cfg.horizons]).T for s in seeds]
        )
        res[sensitivity_key(claim_id)] = Measurement.bootstrap([rows], statistic=t_ratio)

    def rr_error(rows: np.ndarray) -> float:  # rows: (bit, truth) per device
        b, t = rows[:, 0], rows[:, 1]
        with np.errstate(divide="ignore", invalid="ignore"):  # a resample without a 1: inf
            return abs(float(b[t == 1].mean() / b[t == 0].mean()) / math.exp(EPSILON) - 1)

    res["rr_ratio"] = Measurement.bootstrap([np.stack([bits, truth], 1)], statistic=rr_error)
    null_rows = np.stack([np.concatenate(r.null_bits), np.concatenate(r.null_truth)], 1)
    res[null_key("rr_ratio")] = Measurement.bootstrap([null_rows], statistic=rr_error)
    return res


def report_lines(cfg: Budget, seeds: tuple[int, ...], r: Runs) -> list[str]:
    """The report's tables: each counting run, the pooled errors, each method's advantages."""
    runs, games = r.runs, r.games
    rms, _, _, _, rr = pooled(cfg, seeds, r)
    lines = [
        "| seed | T | truth | estimate ± se | z | reports matching RR bit |",
        "|---|---|---|---|---|---|",
    ]
    for (seed, T), run in runs.items():
        e = run["estimate"]
        lines.append(
            f"| {seed} | {T} | {sum(run['truth'])} | {e.count:.1f} ± {e.stderr:.1f} | "
            f"{run['z']:+.2f} | {run['match']:.4f} |"
        )
    lines.append("")
    lines.append(
        "- RMS standardised group error: "
        + ", ".join(f"T={T}: {v:.3f}" for T, v in rms.items())
        + f" (1 expected); randomized-response ratio {rr:.3f} vs e^eps = {math.exp(EPSILON):.3f}."
    )
    for arm in DAMAGED.values():
        arm_rms = {
            T: math.sqrt(np.mean([g**2 for s in seeds for g in r.damaged[(arm, s, T)]]))
            for T in cfg.horizons
        }
        lines.append(
            f"- Sensitivity arm ({arm}), same score: "
            + ", ".join(f"T={T}: {v:.4g}" for T, v in arm_rms.items())
            + "."
        )
    lines.append("")
    lines.append("| seed | method | " + " | ".join(next(iter(games.values()))) + " |")
    lines.append("|---|---|" + "---|" * len(next(iter(games.values()))))
    for (seed, method), adv in games.items():
        lines.append(
            f"| {seed} | {method} | " + " | ".join(f"{v:+.3f}" for v in adv.values()) + " |"
        )
    return lines


def figure_data(
    cfg: Budget, seeds: tuple[int, ...], r: Runs
) -> tuple[dict[int, list[float]], dict[int, float], dict[str, list[float]]]:
    """The figure's data: |z| per seed at each horizon, the RMS group error per horizon, and
    each method's best-adversary advantage per seed."""
    rms = pooled(cfg, seeds, r)[0]
    ordered = sorted({s for s, _ in r.runs})
    errs = {T: [abs(r.runs[(s, T)]["z"]) for s in ordered] for T in cfg.horizons}
    best = {m: [max(abs(v) for v in r.games[(s, m)].values()) for s in ordered] for m in METHODS}
    return errs, rms, best
