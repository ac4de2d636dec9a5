"""Claims as data, measurements over seeds, and the rules that turn one into a verdict.

A :class:`Claim` is written down before any experiment runs: what the paper says, where, the
paper's number, the metric a reproduction measures, and a :class:`Rule` that maps the measured
value to one of the four verdicts. Rules are plain comparisons with fixed thresholds, so that a
verdict can be recomputed from ``results.json`` by anybody.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

Verdict = Literal["reproduced", "partial", "not reproduced", "out of scale"]
VERDICTS: tuple[Verdict, ...] = ("reproduced", "partial", "not reproduced", "out of scale")
Kind = Literal["claim", "control"]
KINDS: tuple[Kind, ...] = ("claim", "control")
"""A *claim* is something the paper states; a *control* is a check the reproduction adds (a
shuffled-label run, an ensemble baseline, a sanity bound). Both get a rule and a verdict, but
only claims count in the tally; controls are reported in a section of their own."""
Op = Literal[">=", "<=", ">", "<"]
_OPS: dict[str, Any] = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
}


@dataclass(frozen=True)
class Measurement:
    """A measured quantity: one value per seed (or a single deterministic value)."""

    values: tuple[float, ...]

    @classmethod
    def of(cls, value: float | Sequence[float] | Measurement) -> Measurement:
        if isinstance(value, Measurement):
            return value
        if isinstance(value, (int, float)):
            return cls((float(value),))
        vals = tuple(float(v) for v in value)
        if not vals:
            raise ValueError("a Measurement needs at least one value, got an empty sequence")
        return cls(vals)

    @property
    def mean(self) -> float:
        return math.fsum(self.values) / len(self.values)

    @property
    def std(self) -> float:
        """Sample standard deviation (0 for a single value)."""
        n = len(self.values)
        if n < 2:
            return 0.0
        m = self.mean
        return math.sqrt(math.fsum((v - m) ** 2 for v in self.values) / (n - 1))

    def to_json(self) -> dict[str, Any]:
        return {
            "mean": _finite_or_str(self.mean),
            "std": _finite_or_str(self.std),
            "n": len(self.values),
            "values": [_finite_or_str(v) for v in self.values],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Measurement:
        return cls(tuple(float(v) for v in data["values"]))

    def __str__(self) -> str:
        if len(self.values) == 1:
            return _fmt(self.mean)
        return f"{_fmt(self.mean)} ± {_fmt(self.std)} (n={len(self.values)})"


def _finite_or_str(x: float) -> float | str:
    # JSON has no NaN/inf; keep them readable and round-trippable through float().
    return x if math.isfinite(x) else str(x)


def _fmt(x: float) -> str:
    """Three significant-looking digits, scientific only for very large or small values."""
    if not math.isfinite(x):
        return str(x)
    if x != 0 and (abs(x) >= 1e4 or abs(x) < 1e-3):
        return f"{x:.3g}"
    return f"{x:.3f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Rule:
    """``measured <op> threshold`` gives *reproduced*; ``measured <op> partial`` gives *partial*.

    The comparison is applied to the mean over seeds. ``partial`` is optional; when absent a
    failed comparison is *not reproduced*. A non-finite measurement is never reproduced.
    """

    op: Op
    threshold: float
    partial: float | None = None

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"Rule.op must be one of {sorted(_OPS)}, got {self.op!r}")
        if not math.isfinite(self.threshold):
            raise ValueError(f"Rule.threshold must be finite, got {self.threshold!r}")
        if self.partial is not None:
            looser = (
                self.partial <= self.threshold
                if self.op in (">=", ">")
                else (self.partial >= self.threshold)
            )
            if not looser:
                raise ValueError(
                    f"Rule.partial must be looser than threshold for op {self.op!r}: "
                    f"got threshold={self.threshold}, partial={self.partial}"
                )

    def verdict(self, measured: Measurement | float | Sequence[float]) -> Verdict:
        value = Measurement.of(measured).mean
        if not math.isfinite(value):
            return "not reproduced"
        if _OPS[self.op](value, self.threshold):
            return "reproduced"
        if self.partial is not None and _OPS[self.op](value, self.partial):
            return "partial"
        return "not reproduced"

    def describe(self) -> str:
        text = f"mean {self.op} {_fmt(self.threshold)}"
        if self.partial is not None:
            text += f" (partial if {self.op} {_fmt(self.partial)})"
        return text


@dataclass(frozen=True)
class Claim:
    """One central claim of a paper, with the rule that decides it.

    Parameters
    ----------
    id
        Short identifier, unique within a method (``"lower_bound"``).
    statement
        The paper's claim in one sentence.
    where
        Where the paper makes it (``"Thm. 1"``, ``"Table 2"``).
    metric
        What the reproduction measures, in words, with units.
    rule
        The verdict rule, or ``None`` for a claim declared *out of scale* (then say why in
        ``out_of_scale``).
    paper_value
        The paper's number, if it states one (a float or a short string such as ``"60-90%"``).
    kind
        ``"claim"`` (the paper states it; counted in the tally) or ``"control"`` (a check this
        reproduction adds; reported apart and never counted).
    """

    id: str
    statement: str
    where: str
    metric: str
    rule: Rule | None
    paper_value: float | str | None = None
    out_of_scale: str | None = None
    kind: Kind = "claim"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Claim {self.id!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if (self.rule is None) == (self.out_of_scale is None):
            raise ValueError(
                f"Claim {self.id!r}: give exactly one of rule (a testable claim) or "
                "out_of_scale (the reason it cannot be tested at laptop scale)"
            )

    def judge(self, measured: Measurement | None) -> Verdict:
        if self.rule is None or measured is None:
            return "out of scale"
        return self.rule.verdict(measured)

    def rule_text(self) -> str:
        return (
            self.rule.describe() if self.rule is not None else f"out of scale: {self.out_of_scale}"
        )
