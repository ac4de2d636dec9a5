"""Seed counts from a power calculation on a pilot run (``icml25 power``).

Adding seeds until an interval clears a threshold is optional stopping. Instead, an earlier
(pilot) run's per-seed spread fixes, before the confirmatory run, how many seeds would decide
each claim, and the confirmatory run uses fresh seeds.

For a claim measured per seed (a t interval) with pilot mean ``m`` and standard deviation
``s``, the verdict is decided once the two-sided 90% interval no longer straddles a threshold
of its rule: its half-width ``t(0.95, n - 1) s / sqrt(n)`` must fall below the distance ``d``
from ``m`` to the nearest threshold (the rule's, or its partial band's). Where the null arm
also passes the rule, the paired contrast (method minus null per seed, pilot mean ``c`` and
spread ``s_c``) must exclude 0 as well: the same condition with ``d = |c|``. The seed count of
a method is the largest count its undecided per-seed claims need, at least the pilot's, and at
most what a full run affords (``budget_seconds``, default an hour, at the pilot's cost per
seed); a claim that needs more is reported as not decidable by seeds within that budget. Claims
decided by a bootstrap over items, by a gate, or out of scale are not a question of seeds and
are listed apart.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from scipy import stats

from icml25.core.results import parse_rule

LEVEL = 0.90
MAX_SEEDS = 200


def half_width(sd: float, n: int, level: float = LEVEL) -> float:
    """The half-width of the two-sided t interval of a mean of ``n`` values with spread ``sd``."""
    if n < 2:
        return math.inf
    return float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)


def seeds_needed(sd: float, distance: float, *, at_least: int = 2) -> int | None:
    """The smallest ``n >= at_least`` whose interval half-width is below ``distance``
    (``None`` when even :data:`MAX_SEEDS` do not suffice or the distance is 0)."""
    if not distance > 0 or not math.isfinite(sd):
        return None
    for n in range(max(2, at_least), MAX_SEEDS + 1):
        if half_width(sd, n) < distance:
            return n
    return None


@dataclass(frozen=True)
class ClaimPower:
    method: str
    claim: str
    verdict: str
    what: str
    """What must clear: ``rule`` (the interval against the nearest threshold) or ``contrast``."""
    mean: float
    sd: float
    distance: float
    needed: int | None


def _values(block: dict[str, Any] | None) -> list[float] | None:
    if not block or not block.get("values"):
        return None
    return [float(v) for v in block["values"]]


def claim_power(method: str, row: dict[str, Any]) -> ClaimPower | None:
    """The seeds one undecided per-seed claim needs (``None`` for a claim that is decided, or
    not measured per seed with a t interval)."""
    if row.get("kind", "claim") != "claim" or row.get("verdict") != "inconclusive":
        return None
    iv = row.get("interval") or {}
    values = _values(row.get("measured"))
    if not values or not str(iv.get("method", "")).startswith("t") or len(values) < 2:
        return None
    mean = math.fsum(values) / len(values)
    sd = statistics.stdev(values)
    rule = parse_rule(str(row.get("rule", "")))
    if rule is None:
        return None
    thresholds = [rule.threshold] + ([] if rule.partial is None else [rule.partial])
    distance = min(abs(mean - t) for t in thresholds)
    rule_n = seeds_needed(sd, distance, at_least=len(values))
    rule_decided = row.get("rule_verdict") != "inconclusive"
    null = row.get("null") or {}
    null_values = _values(null.get("measured"))
    null_iv = null.get("interval") or {}
    passing = null.get("verdict") in ("reproduced", "partial")
    if (
        passing
        and null_values
        and len(null_values) == len(values)
        and str(null_iv.get("method", "")).startswith("t")
    ):
        diffs = [a - b for a, b in zip(values, null_values, strict=True)]
        c = math.fsum(diffs) / len(diffs)
        sc = statistics.stdev(diffs)
        contrast_n = seeds_needed(sc, abs(c), at_least=len(values))
        if rule_decided:
            needed = contrast_n
        else:  # both the rule's interval and the contrast must clear
            needed = None if rule_n is None or contrast_n is None else max(rule_n, contrast_n)
        return ClaimPower(method, row["id"], row["verdict"], "contrast", c, sc, abs(c), needed)
    return ClaimPower(method, row["id"], row["verdict"], "rule", mean, sd, distance, rule_n)


@dataclass(frozen=True)
class MethodPower:
    method: str
    pilot_seeds: int
    seconds_per_seed: float
    cap: int
    seeds: int
    claims: tuple[ClaimPower, ...]
    undecided_other: tuple[str, ...]


def method_power(entry: dict[str, Any], budget_seconds: float = 3600.0) -> MethodPower:
    """The committed seed count of one method from its pilot entry of ``results.json``."""
    n0 = max(1, len(entry.get("seeds") or [0]))
    per_seed = float(entry.get("wall_s", 0.0)) / n0
    cap = max(n0, int(budget_seconds // per_seed)) if per_seed > 0 else MAX_SEEDS
    found, other = [], []
    for row in entry["claims"]:
        p = claim_power(entry["method"], row)
        if p is not None:
            found.append(p)
        elif row.get("kind", "claim") == "claim" and row.get("verdict") in (
            "inconclusive",
            "out of scale",
        ):
            other.append(row["id"])
    wanted = [p.needed for p in found if p.needed is not None and p.needed <= cap]
    seeds = max([n0, *wanted])
    return MethodPower(entry["method"], n0, per_seed, cap, seeds, tuple(found), tuple(other))


FRESH = 1000
"""Confirmatory runs take seeds from here on, never the pilot's."""


def render(pilot: dict[str, Any], budget_seconds: float = 3600.0) -> str:
    """The power calculation as Markdown (``docs/power.md``)."""
    lines = [
        "# Seed counts for the confirmatory full runs",
        "",
        "Generated by `icml25 power` from the pilot (the published full results, "
        f"`{pilot.get('command', '?')}`), by the rule in `src/icml25/core/power.py`: for each "
        "claim the pilot left inconclusive and measured per seed (t interval), the seeds at "
        "which the pilot's spread gives a 90% interval narrower than the distance from its mean "
        "to the nearest threshold (or, where the null arm also passes, narrower than the "
        "paired contrast's distance from 0); a method's count is the largest such need, at "
        f"least the pilot's seeds and at most what {budget_seconds / 60:.0f} minutes afford at "
        f"the pilot's cost per seed. Confirmatory runs use fresh seeds ({FRESH}, {FRESH + 1}, "
        "…), never the pilot's. Claims undecided for other reasons (a bootstrap over items, a "
        "gate, out of scale) are listed; seeds do not decide them.",
        "",
        "| method | pilot seeds | s per seed | affordable | **seeds** | claims (what, pilot "
        "mean ± sd, distance → seeds needed) | undecided otherwise |",
        "|---|---|---|---|---|---|---|",
    ]
    for entry in pilot["methods"]:
        mp = method_power(entry, budget_seconds)
        claims = "; ".join(
            f"{p.claim} ({p.what}, {p.mean:.3g} ± {p.sd:.2g}, d {p.distance:.2g} → "
            + (
                f"{p.needed})"
                if p.needed is not None and p.needed <= mp.cap
                else f"{p.needed or '>' + str(MAX_SEEDS)}: beyond the budget)"
            )
            for p in mp.claims
        )
        lines.append(
            f"| {mp.method} | {mp.pilot_seeds} | {mp.seconds_per_seed:.0f} | {mp.cap} | "
            f"**{mp.seeds}** | {claims or '—'} | {', '.join(mp.undecided_other) or '—'} |"
        )
    lines += [
        "",
        "The confirmatory command of a method with N seeds: `icml25 reproduce METHOD --budget "
        f"full --seeds {FRESH},{FRESH + 1},…,{FRESH}+N-1 --out runs/confirm/METHOD` (a "
        "budget that caps its seeds at its own `seeds` field takes that field raised to N).",
        "",
    ]
    return "\n".join(lines)
