"""Claims as data, measurements with intervals, and the rules that turn them into a verdict.

A :class:`Claim` is written down before any experiment runs: what the paper says, where, the
paper's number, the metric a reproduction measures, a :class:`Rule`, a :class:`Null` arm and,
where the setting might be unable to show the effect, a :class:`Gate`. Rules are plain
comparisons with fixed thresholds applied to a two-sided 90% interval, so that a verdict can be
recomputed from ``results.json`` by anybody.

Verdicts with power
-------------------
For a rule ``≥ threshold (partial if ≥ p)`` and a measurement with interval ``[low, high]``:

* **reproduced** when ``low ≥ threshold``;
* **not reproduced** when ``high < p`` (``high < threshold`` without a partial band);
* **partial** when ``low ≥ p`` (and not reproduced);
* **inconclusive** otherwise: the interval straddles a threshold.

``≤`` rules are mirrored (reproduced when ``high ≤ threshold``, ...); strict ``>`` / ``<``
compare strictly in the same places. A non-finite mean is *not reproduced*.

Then, in this order (see :meth:`Claim.judge`):

1. a **gate** (a measured precondition that the setting can pass the rule: a ceiling arm, the
   model learning in context at all) that fails makes the verdict **out of scale**, with the
   gate's value as the reason;
2. a **null arm** (the same measurement on the method without its mechanism) is compared with
   the method as a **paired contrast**: per seed (or per item, when the reproduction returns
   the contrast itself under :func:`contrast_key`), method minus null, with a t interval. It
   is *for* the mechanism when its interval excludes 0 in the rule's direction, *against* it
   when the interval lies on the wrong side of 0 (or, with ``Null(margin=m)``, inside
   ``[-m, m]``: the mechanism adds nothing), *undecided* otherwise. A passing claim (reproduced
   or partial) whose contrast is *against* becomes **not reproduced** (the effect is there but
   the mechanism does not carry it). A passing claim whose null arm also passes the rule keeps
   its verdict only when the contrast is *for*; otherwise it is **inconclusive**. A claim
   whose null arm was not measured (or that declares none and no exemption) cannot be
   reproduced;
3. a **sensitivity arm** (:class:`Sensitivity`: a deliberately damaged method) is judged by the
   claim's own rule and must fail it; when it does not, the measurement cannot tell a broken
   method from a working one and a passing claim is **inconclusive**. Equivalence claims
   ("matches", "no loss") use ``Rule("within", margin)`` (the interval inside ``[-margin,
   margin]``, two one-sided tests at 95% each) and need a sensitivity arm.

Intervals (:class:`Interval`) come from Student's t over seeds (n ≥ 3), from a bootstrap over
items that the reproduction supplies (:meth:`Measurement.bootstrap`: test prompts, bugs,
queries), from the reproduction itself (:meth:`Measurement.with_interval`), or are ``exact`` for
quantities without sampling noise (:meth:`Measurement.exact`). A measurement with fewer than 3
values and no items has an unbounded interval: its verdict is inconclusive, which is what one
seed can honestly say.

Long by design: claims, rules, nulls, gates, intervals and the judgement that combines them are
one vocabulary, read top to bottom before any method's claims.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

NOT_MEASURED = "not measured in this run (the run's notes say why)"
"""The reason of a ruled claim that the reproduction did not measure at its budget."""

Verdict = Literal["reproduced", "partial", "not reproduced", "inconclusive", "out of scale"]
VERDICTS: tuple[Verdict, ...] = (
    "reproduced",
    "partial",
    "not reproduced",
    "inconclusive",
    "out of scale",
)
Kind = Literal["claim", "control"]
KINDS: tuple[Kind, ...] = ("claim", "control")
"""A *claim* is something the paper states; a *control* is a check the reproduction adds (a
shuffled-label run, an ensemble baseline, a sanity bound). Both get a rule and a verdict, but
only claims count in the tally; controls are reported in a section of their own."""
Op = Literal[">=", "<=", ">", "<", "within"]
_OPS: dict[str, Any] = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    "within": lambda a, b: abs(a) <= b,
}
LEVEL = 0.90
"""The two-sided level of every interval a verdict reads."""
MIN_T_VALUES = 3
"""Seeds needed for a t interval; fewer (and no items) give an unbounded interval."""


SIZE_FIELD = re.compile(r"\{\{(\w+)\}\}")
"""A size named in a claim's text, ``{{n_test}}``, filled per budget by :meth:`Claim.sized`."""


def null_key(claim_id: str) -> str:
    """The key under which ``reproduce`` returns a claim's null-arm measurement."""
    return f"{claim_id}/null"


def gate_key(claim_id: str) -> str:
    """The key under which ``reproduce`` returns a claim's gate measurement."""
    return f"{claim_id}/gate"


def contrast_key(claim_id: str) -> str:
    """The key under which ``reproduce`` may return a claim's paired contrast (method minus
    null arm) itself, e.g. with a paired bootstrap over items; without it the contrast is
    computed from the two measurements' per-seed values."""
    return f"{claim_id}/contrast"


def sensitivity_key(claim_id: str) -> str:
    """The key under which ``reproduce`` returns a claim's sensitivity-arm measurement."""
    return f"{claim_id}/sensitivity"


@dataclass(frozen=True)
class Interval:
    """A two-sided interval for the quantity a rule compares.

    ``method`` says where it comes from: ``"t"`` (Student's t over seeds), ``"bootstrap ..."``
    (percentile bootstrap over items), ``"exact"`` (no sampling noise), ``"none"`` (too few
    values: unbounded) or a reproduction's own description.
    """

    low: float
    high: float
    level: float = LEVEL
    method: str = "t"

    def __post_init__(self) -> None:
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"Interval.level must be in (0, 1), got {self.level!r}")
        if math.isnan(self.low) or math.isnan(self.high):
            return  # a NaN measurement: judged not reproduced before the interval is read
        if self.low > self.high:
            raise ValueError(f"Interval low must be <= high, got [{self.low}, {self.high}]")

    @classmethod
    def unbounded(cls, why: str = "none") -> Interval:
        return cls(-math.inf, math.inf, LEVEL, why)

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def to_json(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "low": _finite_or_str(self.low),
            "high": _finite_or_str(self.high),
            "method": self.method,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Interval:
        return cls(float(data["low"]), float(data["high"]), float(data["level"]), data["method"])

    def __str__(self) -> str:
        if not self.bounded and self.method.startswith("none"):
            return "no interval"
        return f"[{_fmt(self.low)}, {_fmt(self.high)}]"


def t_interval(values: Sequence[float], level: float = LEVEL) -> Interval:
    """Student's t interval for the mean of ``values`` (``mean ± t_{(1+level)/2, n-1} s/√n``).

    Fewer than :data:`MIN_T_VALUES` values give an unbounded interval.
    """
    from scipy import stats

    vals = np.asarray(values, dtype=float)
    n = vals.size
    if n < MIN_T_VALUES:
        return Interval.unbounded(f"none (n={n} < {MIN_T_VALUES} seeds, no items)")
    mean = float(vals.mean())
    if not np.all(np.isfinite(vals)):
        return Interval(mean, mean, level, f"t (n={n})")
    half = float(stats.t.ppf((1 + level) / 2, n - 1) * vals.std(ddof=1) / math.sqrt(n))
    return Interval(mean - half, mean + half, level, f"t (n={n})")


Statistic = Callable[[np.ndarray], float]


def bootstrap_interval(
    groups: Sequence[Any],
    statistic: Statistic | None = None,
    *,
    level: float = LEVEL,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[tuple[float, ...], Interval]:
    """Per-group statistics and a percentile-bootstrap interval for their mean.

    Each group (one per seed) is an array of items, one item per row (a 1-D array of scores,
    or a 2-D array whose rows are paired items such as ``(score, label)``). Every resample
    draws each group's rows with replacement, applies ``statistic`` (the mean by default) to
    each group and averages over groups: a bootstrap stratified by seed. The interval is the
    ``(1 ± level) / 2`` quantiles of the resampled means.

    Returns the per-group statistics of the data (the measurement's values) and the interval.
    """
    if not groups:
        raise ValueError("bootstrap needs at least one group of items, got none")
    if n_boot < 100:
        raise ValueError(f"n_boot must be >= 100, got {n_boot}")
    arrays = [np.asarray(g, dtype=float) for g in groups]
    for i, a in enumerate(arrays):
        if a.ndim not in (1, 2) or a.shape[0] < 2:
            raise ValueError(
                f"bootstrap group {i} must be a 1-D or 2-D array of >= 2 items (rows), "
                f"got shape {a.shape}"
            )
    rng = np.random.default_rng(seed)
    values = []
    resampled = np.zeros(n_boot)
    for a in arrays:
        idx = rng.integers(0, a.shape[0], size=(n_boot, a.shape[0]))
        if statistic is None:
            if a.ndim != 1:
                raise ValueError("the default statistic (mean) needs 1-D groups; pass statistic=")
            values.append(float(a.mean()))
            resampled += a[idx].mean(axis=1)
        else:
            values.append(float(statistic(a)))
            resampled += np.array([float(statistic(a[row])) for row in idx])
    resampled /= len(arrays)
    items = sum(a.shape[0] for a in arrays)
    if not np.all(np.isfinite(resampled)):
        finite = resampled[np.isfinite(resampled)]
        if finite.size < n_boot * 0.99:
            raise ValueError(
                f"the bootstrap statistic was not finite on {n_boot - finite.size} of {n_boot} "
                "resamples (too few items of a kind?)"
            )
        resampled = finite
    alpha = (1 - level) / 2
    low, high = np.quantile(resampled, [alpha, 1 - alpha])
    where = f"{items} items" if len(arrays) == 1 else f"{items} items in {len(arrays)} seeds"
    return tuple(values), Interval(float(low), float(high), level, f"bootstrap ({where})")


@dataclass(frozen=True)
class Measurement:
    """A measured quantity: one value per seed (or a single value), and its interval.

    ``Measurement.of(values)`` takes a t interval over the values (unbounded for fewer than 3);
    :meth:`exact`, :meth:`bootstrap` and :meth:`with_interval` give other intervals.
    """

    values: tuple[float, ...]
    given_interval: Interval | None = field(default=None, compare=True)

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError("a Measurement needs at least one value, got an empty sequence")

    @classmethod
    def of(cls, value: float | Sequence[float] | Measurement) -> Measurement:
        if isinstance(value, Measurement):
            return value
        if isinstance(value, (int, float, np.floating, np.integer)):
            return cls((float(value),))
        vals = tuple(float(v) for v in value)
        if not vals:
            raise ValueError("a Measurement needs at least one value, got an empty sequence")
        return cls(vals)

    @classmethod
    def exact(cls, value: float | Sequence[float]) -> Measurement:
        """A quantity without sampling noise (a theorem checked on enumerated instances, a
        deterministic count): the interval is the mean itself."""
        m = cls.of(value)
        return cls(m.values, Interval(m.mean, m.mean, LEVEL, "exact"))

    @classmethod
    def with_interval(
        cls,
        value: float | Sequence[float],
        low: float,
        high: float,
        method: str,
        level: float = LEVEL,
    ) -> Measurement:
        """Values with an interval the reproduction computed itself (say how in ``method``)."""
        return cls(cls.of(value).values, Interval(float(low), float(high), level, method))

    @classmethod
    def bootstrap(
        cls,
        groups: Sequence[Any],
        statistic: Statistic | None = None,
        *,
        n_boot: int = 2000,
        seed: int = 0,
        level: float = LEVEL,
    ) -> Measurement:
        """One value per group (seed) of items, with a bootstrap interval over the items (see
        :func:`bootstrap_interval`)."""
        values, interval = bootstrap_interval(
            groups, statistic, level=level, n_boot=n_boot, seed=seed
        )
        return cls(values, interval)

    @property
    def mean(self) -> float:
        n = len(self.values)
        try:
            return math.fsum(self.values) / n
        except OverflowError:  # finite values whose sum overflows: sum the n-ths instead
            return math.fsum(v / n for v in self.values)
        except ValueError:  # both +inf and -inf: no mean
            return math.nan

    @property
    def std(self) -> float:
        """Sample standard deviation (0 for a single value)."""
        n = len(self.values)
        if n < 2:
            return 0.0
        m = self.mean
        try:
            return math.sqrt(math.fsum((v - m) ** 2 for v in self.values) / (n - 1))
        except OverflowError:  # squares beyond float range: scale by the largest deviation
            scale = max(abs(v - m) for v in self.values)
            var = math.fsum(((v - m) / scale) ** 2 for v in self.values) / (n - 1)
            return scale * math.sqrt(var)

    @property
    def interval(self) -> Interval:
        if self.given_interval is not None:
            return self.given_interval
        return t_interval(self.values)

    def to_json(self) -> dict[str, Any]:
        return {
            "mean": _finite_or_str(self.mean),
            "std": _finite_or_str(self.std),
            "n": len(self.values),
            "values": [_finite_or_str(v) for v in self.values],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], interval: dict[str, Any] | None = None) -> Measurement:
        given = Interval.from_json(interval) if interval else None
        return cls(tuple(float(v) for v in data["values"]), given)

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
    """``measured <op> threshold`` gives *reproduced*; ``measured <op> partial`` *partial*.

    The comparison reads the measurement's interval (see the module docstring): the whole
    interval must clear a threshold for that verdict, the whole interval must miss the loosest
    threshold for *not reproduced*, and an interval that straddles is *inconclusive*.
    """

    op: Op
    threshold: float
    partial: float | None = None

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"Rule.op must be one of {sorted(_OPS)}, got {self.op!r}")
        if not math.isfinite(self.threshold):
            raise ValueError(f"Rule.threshold must be finite, got {self.threshold!r}")
        if self.op == "within" and not self.threshold > 0:
            raise ValueError(f"Rule('within', margin): margin must be > 0, got {self.threshold!r}")
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

    def holds(self, value: float, threshold: float | None = None) -> bool:
        """``value <op> threshold`` (the rule's own threshold by default)."""
        return bool(_OPS[self.op](value, self.threshold if threshold is None else threshold))

    def verdict(self, measured: Measurement | float | Sequence[float]) -> Verdict:
        m = Measurement.of(measured)
        if not math.isfinite(m.mean):
            return "not reproduced"
        iv = m.interval
        if self.op == "within":  # equivalence: two one-sided tests, the interval inside +-margin
            loosest = self.threshold if self.partial is None else self.partial
            if -self.threshold <= iv.low and iv.high <= self.threshold:
                return "reproduced"
            if iv.high < -loosest or iv.low > loosest:
                return "not reproduced"
            if self.partial is not None and -self.partial <= iv.low and iv.high <= self.partial:
                return "partial"
            return "inconclusive"
        upward = self.op in (">=", ">")
        worst, best = (iv.low, iv.high) if upward else (iv.high, iv.low)
        loosest = self.threshold if self.partial is None else self.partial
        if self.holds(worst):
            return "reproduced"
        if not self.holds(best, loosest):
            return "not reproduced"
        if self.partial is not None and self.holds(worst, self.partial):
            return "partial"
        return "inconclusive"

    def describe(self) -> str:
        if self.op == "within":
            text = f"|mean| <= {_fmt(self.threshold)} (equivalence)"
            if self.partial is not None:
                text += f" (partial if <= {_fmt(self.partial)})"
            return text
        text = f"mean {self.op} {_fmt(self.threshold)}"
        if self.partial is not None:
            text += f" (partial if {self.op} {_fmt(self.partial)})"
        return text


@dataclass(frozen=True)
class Null:
    """The claim's null arm: the same measurement on the method without its mechanism.

    Give ``arm`` (what is removed: "no weight update", "content-free feedback", "the baseline
    given the same coder") and return its measurement under :func:`null_key` from
    ``reproduce``; the claim's rule must fail on it. Where no arm without the mechanism exists,
    give ``exempt`` instead: the reason, which a reader checks.
    """

    arm: str | None = None
    exempt: str | None = None
    margin: float | None = None
    """With a margin ``m`` (fixed before the run), a paired contrast whose interval contains 0
    and lies inside ``[-m, m]`` says the mechanism adds nothing: *against* it."""

    def __post_init__(self) -> None:
        if (self.arm is None) == (self.exempt is None):
            raise ValueError("Null: give exactly one of arm (measured) or exempt (the reason)")
        text = self.arm if self.arm is not None else self.exempt
        if not (text or "").strip():
            raise ValueError("Null: arm / exempt must say something, got an empty string")
        if self.margin is not None and not (math.isfinite(self.margin) and self.margin > 0):
            raise ValueError(f"Null.margin must be a finite number > 0, got {self.margin!r}")


@dataclass(frozen=True)
class Sensitivity:
    """A deliberately damaged method (a too-coarse quantiser, a counter whose error grows like
    sqrt(T)) measured the same way, under :func:`sensitivity_key`: the claim's rule must fail
    on it (*not reproduced*), or the measurement cannot tell a broken method from a working
    one and a passing claim is *inconclusive*."""

    arm: str

    def __post_init__(self) -> None:
        if not self.arm.strip():
            raise ValueError("Sensitivity.arm must say what is damaged, got an empty string")


ContrastVerdict = Literal["for", "against", "undecided"]


@dataclass(frozen=True)
class Contrast:
    """The paired contrast of a claim: method minus null arm, per seed or per item."""

    measured: Measurement
    verdict: ContrastVerdict
    why: str

    def to_json(self) -> dict[str, Any]:
        return {
            "mean": _finite_or_str(self.measured.mean),
            "values": [_finite_or_str(v) for v in self.measured.values],
            "interval": self.measured.interval.to_json(),
            "verdict": self.verdict,
            "why": self.why,
        }


def paired_contrast(
    rule: Rule,
    measured: Measurement,
    null: Measurement,
    *,
    given: Measurement | None = None,
    margin: float | None = None,
) -> Contrast | None:
    """Method minus null arm: ``given`` (a reproduction's own paired contrast, e.g. a paired
    bootstrap over items), else, where both are per-seed values with t intervals, the per-seed
    differences with a t interval; ``None`` otherwise (a bootstrap over items must be paired
    by the reproduction, which has the items) or when the rule has no direction
    (equivalence)."""
    if rule.op == "within":
        return None
    per_seed = measured.given_interval is None and null.given_interval is None
    if given is not None:
        diff = given
    elif per_seed and len(measured.values) == len(null.values) >= 2:
        diff = Measurement(tuple(a - b for a, b in zip(measured.values, null.values, strict=True)))
    else:
        return None
    iv = diff.interval
    up = rule.op in (">=", ">")
    shown = f"{_fmt(diff.mean)} {iv}"
    if not (math.isfinite(diff.mean) and iv.bounded):
        return Contrast(diff, "undecided", f"contrast {shown}: no interval")
    if (iv.low > 0) if up else (iv.high < 0):
        return Contrast(diff, "for", f"contrast {shown} excludes 0: the method beats its null")
    if (iv.high < 0) if up else (iv.low > 0):
        return Contrast(diff, "against", f"contrast {shown}: the null arm does better")
    if margin is not None and -margin <= iv.low and iv.high <= margin:
        return Contrast(
            diff, "against", f"contrast {shown} inside +-{_fmt(margin)}: the mechanism adds nothing"
        )
    return Contrast(diff, "undecided", f"contrast {shown} straddles 0")


@dataclass(frozen=True)
class Gate:
    """A measured precondition that the setting can show the effect at all.

    ``check`` says what is measured (returned under :func:`gate_key`); the gate passes when the
    gate measurement's mean satisfies ``rule`` (the claim's own rule and threshold by default: a
    ceiling or oracle arm must pass what the method is asked to pass). A failed gate makes the
    verdict *out of scale*. A gate asks whether the effect *can* show; how sure the claim's
    verdict is comes from the claim's own interval, so the gate reads the mean.
    """

    check: str
    rule: Rule | None = None
    per_seed: bool = False
    """Pass only when every value (each seed's) satisfies the rule, not the mean: for a claim
    made per seed, a mean that passes while one seed fails does not open the gate."""

    def __post_init__(self) -> None:
        if not self.check.strip():
            raise ValueError("Gate.check must say what is measured, got an empty string")


@dataclass(frozen=True)
class Judgement:
    """A claim's verdict and what it was made of."""

    verdict: Verdict
    rule_verdict: Verdict
    """The rule on the claim's interval alone, before the gate and the null arm."""
    reason: str | None = None
    null_verdict: Verdict | None = None
    gate_passed: bool | None = None
    contrast: Contrast | None = None
    sensitivity_verdict: Verdict | None = None


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
    null
        The null arm (:class:`Null`). Every measured claim needs one (or an exemption); a claim
        without it cannot be reproduced. Controls may declare one.
    gate
        A precondition (:class:`Gate`), where the setting might be unable to show the effect.
    sensitivity
        A damaged method the measurement must catch (:class:`Sensitivity`); required for an
        equivalence rule (``Rule("within", margin)``).
    """

    id: str
    statement: str
    where: str
    metric: str
    rule: Rule | None
    paper_value: float | str | None = None
    out_of_scale: str | None = None
    kind: Kind = "claim"
    null: Null | None = None
    gate: Gate | None = None
    sensitivity: Sensitivity | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Claim {self.id!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if (self.rule is None) == (self.out_of_scale is None):
            raise ValueError(
                f"Claim {self.id!r}: give exactly one of rule (a testable claim) or "
                "out_of_scale (the reason it cannot be tested at laptop scale)"
            )
        if "/" in self.id:
            raise ValueError(f"Claim id must not contain '/', got {self.id!r}")

    def sized(self, sizes: Mapping[str, Any]) -> Claim:
        """This claim with every ``{{name}}`` in its texts replaced by ``sizes[name]``.

        Claim texts name the sizes of the budget that ran ("d = {{d}}", "{{n_test}} test
        images"), so a tiny or full run does not describe itself with the quick budget's sizes
        (issue 56). A name missing from ``sizes`` raises ``KeyError`` naming it.
        """

        def fill(text: Any) -> Any:
            if not isinstance(text, str) or "{{" not in text:
                return text

            def one(m: re.Match[str]) -> str:
                name = m.group(1)
                if name not in sizes:
                    raise KeyError(
                        f"claim {self.id!r} names the size {{{{{name}}}}} but claim_sizes() "
                        f"gives only {sorted(sizes)}"
                    )
                v = sizes[name]
                return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)

            return SIZE_FIELD.sub(one, text)

        null, gate, sens = self.null, self.gate, self.sensitivity
        if null is not None:
            null = Null(arm=fill(null.arm), exempt=fill(null.exempt), margin=null.margin)
        if gate is not None:
            gate = Gate(fill(gate.check), gate.rule, gate.per_seed)
        if sens is not None:
            sens = Sensitivity(fill(sens.arm))
        return replace(
            self,
            statement=fill(self.statement),
            where=fill(self.where),
            metric=fill(self.metric),
            paper_value=fill(self.paper_value),
            out_of_scale=fill(self.out_of_scale),
            null=null,
            gate=gate,
            sensitivity=sens,
        )

    def size_names(self) -> set[str]:
        """The ``{{name}}`` placeholders its texts use."""
        texts = [self.statement, self.where, self.metric, self.paper_value, self.out_of_scale]
        if self.null is not None:
            texts += [self.null.arm, self.null.exempt]
        if self.gate is not None:
            texts.append(self.gate.check)
        if self.sensitivity is not None:
            texts.append(self.sensitivity.arm)
        return {n for t in texts if isinstance(t, str) for n in SIZE_FIELD.findall(t)}

    @property
    def gate_rule(self) -> Rule | None:
        if self.gate is None:
            return None
        return self.gate.rule if self.gate.rule is not None else self.rule

    def judge(
        self,
        measured: Measurement | None,
        null: Measurement | None = None,
        gate: Measurement | None = None,
        contrast: Measurement | None = None,
        sensitivity: Measurement | None = None,
    ) -> Judgement:
        """The verdict from the claim's, the null arm's, the gate's and the sensitivity arm's
        measurements (``contrast``: a reproduction's own paired contrast, if it gives one);
        the order of the module docstring."""
        if self.rule is None:
            return Judgement("out of scale", "out of scale", self.out_of_scale)
        if measured is None:
            return Judgement("out of scale", "out of scale", NOT_MEASURED)
        rule_verdict = self.rule.verdict(measured)
        null_verdict = None if null is None else self.rule.verdict(null)
        sens_verdict = None if sensitivity is None else self.rule.verdict(sensitivity)
        pair = None
        if null is not None and self.null is not None and self.null.arm is not None:
            pair = paired_contrast(
                self.rule, measured, null, given=contrast, margin=self.null.margin
            )
        gate_passed = None
        if self.gate is not None:
            grule = self.gate_rule
            assert grule is not None
            if gate is None:
                return Judgement(
                    "inconclusive", rule_verdict, "gate not measured", null_verdict, None, pair
                )
            values = gate.values if self.gate.per_seed else (gate.mean,)
            failing = [v for v in values if not (math.isfinite(v) and grule.holds(v))]
            gate_passed = not failing
            if not gate_passed:
                shown = (
                    f"{len(failing)} of {len(values)} seeds fail it (worst {_fmt(failing[0])})"
                    if self.gate.per_seed
                    else f"= {_fmt(gate.mean)}"
                )
                return Judgement(
                    "out of scale",
                    rule_verdict,
                    f"gate failed: {self.gate.check} {shown}, needs "
                    f"{grule.op} {_fmt(grule.threshold)}",
                    null_verdict,
                    False,
                    pair,
                    sens_verdict,
                )
        passing = rule_verdict in ("reproduced", "partial")
        reason = None
        verdict: Verdict = rule_verdict
        if rule_verdict == "inconclusive":
            iv = measured.interval
            reason = (
                f"interval {iv} straddles the rule"
                if iv.bounded
                else f"no interval: {iv.method.removeprefix('none ').strip('()')}"
            )
        if passing and self.kind == "claim" and self.null is None:
            verdict, reason = "inconclusive", "no null arm declared"
        elif passing and self.null is not None and self.null.arm is not None:
            null_passes = null_verdict in ("reproduced", "partial")
            if null is None:
                verdict, reason = "inconclusive", "null arm not measured"
            elif pair is not None and pair.verdict == "against":
                verdict = "not reproduced"
                reason = f"the effect is there but the mechanism does not carry it: {pair.why}"
            elif null_passes and pair is not None and pair.verdict == "for":
                reason = f"null arm ({self.null.arm}) is {null_verdict} too; {pair.why}"
            elif null_passes:
                verdict = "inconclusive"
                reason = f"null arm ({self.null.arm}) is {null_verdict}: {_fmt(null.mean)}" + (
                    f"; {pair.why}" if pair is not None else "; no paired contrast"
                )
        if verdict in ("reproduced", "partial"):
            if self.sensitivity is not None and sensitivity is None:
                verdict, reason = "inconclusive", "sensitivity arm not measured"
            elif self.sensitivity is not None and sens_verdict != "not reproduced":
                verdict = "inconclusive"
                reason = (
                    f"sensitivity arm ({self.sensitivity.arm}) is {sens_verdict}: the "
                    "measurement does not catch a damaged method"
                )
            elif self.sensitivity is None and self.rule.op == "within":
                verdict, reason = "inconclusive", "an equivalence claim needs a sensitivity arm"
        return Judgement(
            verdict, rule_verdict, reason, null_verdict, gate_passed, pair, sens_verdict
        )

    def rule_text(self) -> str:
        return (
            self.rule.describe() if self.rule is not None else f"out of scale: {self.out_of_scale}"
        )
