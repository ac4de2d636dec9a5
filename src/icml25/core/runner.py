"""Run a method's reproduction: time it, catch its crash, judge its claims, save for resume."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from icml25.core.claims import (
    Claim,
    Measurement,
    Rule,
    contrast_key,
    gate_key,
    null_key,
    sensitivity_key,
)
from icml25.core.registry import Method

T = TypeVar("T")

Budget = Literal["tiny", "quick", "full"]
BUDGETS: tuple[Budget, ...] = ("tiny", "quick", "full")
"""``tiny`` is for smoke tests (seconds, numbers meaningless); ``quick`` is the main job
(one to three minutes per method on 2 cores); ``full`` is the longer run (at most ~15 min)."""


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run the block (or, as ``@one_thread()``, a reproduction) with one torch thread and one
    BLAS/OpenMP thread, restoring both after. For reproductions whose small models' training
    depends on the thread count through float rounding (on an AVX512 Xeon a two-thread run of
    it3's CNN flipped one test image in 128, enough to move a borderline control's verdict):
    pinned, a serial run gives the numbers of the main job's one-thread workers."""
    import torch
    from threadpoolctl import threadpool_limits

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        torch.set_num_threads(threads)


@dataclass
class RunContext:
    """What a reproduction receives: its budget, seeds, figure folder and a progress callback."""

    budget: Budget
    seeds: tuple[int, ...]
    out_dir: Path
    progress: Callable[[str], None] = lambda _msg: None
    figures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ran_seeds: set[int] = field(default_factory=set)
    """Seeds a reproduction said it ran (:meth:`seeds_run`); ``results.json`` records these
    when any were given, else ``seeds``."""

    def seeds_run(self, at_least: int = 0, at_most: int | None = None) -> tuple[int, ...]:
        """The run's seeds as a budget uses them: the first ``at_most`` of ``seeds``, extended
        by the next integers to ``at_least``; recorded, so the report names the seeds run."""
        if at_most is not None and at_most < 1:
            raise ValueError(f"at_most must be >= 1 or None, got {at_most!r}")
        seeds = list(self.seeds[:at_most])
        if not seeds and at_least > 0:
            raise ValueError("seeds must hold at least one seed to extend, got none")
        while len(seeds) < at_least:
            seeds.append(max(seeds) + 1)
        self.ran_seeds.update(seeds)
        return tuple(seeds)

    def save_figure(self, fig: Any, name: str) -> Path:
        """Save a matplotlib figure as ``<out_dir>/<name>.png`` and close it."""
        import matplotlib.pyplot as plt

        self.out_dir.mkdir(parents=True, exist_ok=True)
        path = self.out_dir / f"{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        self.figures.append(f"{self.out_dir.name}/{path.name}")
        return path

    def note(self, text: str) -> None:
        """A line for the report (a per-instance table, a caveat measured during the run)."""
        self.notes.append(text)

    def checkpoint(
        self,
        name: str,
        key: str,
        compute: Callable[[], T],
        *,
        codec: Literal["json", "pickle"] = "json",
        encode: Callable[[T], Any] = lambda r: r,
        decode: Callable[[Any], T] = lambda r: r,
    ) -> T:
        """``compute()``, saved as ``<out_dir>/<name>.<codec>`` so that an interrupted run
        resumes: a saved result is reused only when its ``key`` (the budget, data and anything
        else the result depends on, as a string) equals ``key``; an unreadable or foreign file
        is recomputed. ``encode``/``decode`` map the result to and from what the codec stores
        (JSON keys are strings). The file is written to a temporary name and renamed, so a
        killed run never leaves a half-written checkpoint that loads."""
        path = self.out_dir / f"{name}.{'json' if codec == 'json' else 'pkl'}"
        if path.is_file():
            try:
                raw = path.read_bytes()
                saved = json.loads(raw) if codec == "json" else pickle.loads(raw)
            except Exception:  # damaged or foreign: recompute
                saved = None
            if isinstance(saved, dict) and saved.get("key") == key and "result" in saved:
                self.progress(f"{name}: reusing {path.name}")
                return decode(saved["result"])
        result = compute()
        payload = {"key": key, "result": encode(result)}
        data = json.dumps(payload).encode() if codec == "json" else pickle.dumps(payload)
        atomic_write_bytes(path, data)
        return result


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename, so
    that a failing or killed write leaves the earlier file (or none), never a truncated one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def run_method(
    method: Method,
    *,
    budget: Budget,
    seeds: Sequence[int],
    out_dir: Path,
    progress: Callable[[str], None] = lambda _msg: None,
) -> dict[str, Any]:
    """Run one reproduction and return its entry of ``results.json`` (never raises for a crash)."""
    if budget not in BUDGETS:
        raise ValueError(f"budget must be one of {BUDGETS}, got {budget!r}")
    seeds = tuple(int(s) for s in seeds)
    ctx = RunContext(budget=budget, seeds=seeds, out_dir=out_dir / method.slug, progress=progress)
    start = time.perf_counter()
    measured: dict[str, Measurement] = {}
    error: str | None = None
    claims: tuple[Claim, ...] = ()
    try:
        claims = method.claims(budget)
        raw = method.reproducer()(ctx)
        unknown = set(raw) - expected_keys(claims)
        if unknown:
            raise KeyError(
                f"reproduce() returned values for unknown claims, null arms or gates: "
                f"{sorted(unknown)} (a null arm or gate must be declared on its Claim)"
            )
        measured = {k: Measurement.of(v) for k, v in raw.items()}
    except KeyboardInterrupt:
        raise
    except Exception:
        error = traceback.format_exc()
    entry = make_entry(
        method,
        budget=budget,
        seeds=sorted(ctx.ran_seeds) or seeds,
        wall_s=time.perf_counter() - start,
        claims=claims,
        measured=measured,
        error=error,
        figures=ctx.figures,
        notes=ctx.notes,
    )
    entry["requested_seeds"] = list(seeds)  # what resume compares (seeds: what ran)
    return entry


def expected_keys(claims: Sequence[Claim]) -> set[str]:
    """The keys ``reproduce`` may return: claim ids, and the null arms (with their paired
    contrasts), gates and sensitivity arms they declare."""
    keys = {c.id for c in claims}
    with_null = [c.id for c in claims if c.null is not None and c.null.arm is not None]
    keys |= {null_key(i) for i in with_null} | {contrast_key(i) for i in with_null}
    keys |= {gate_key(c.id) for c in claims if c.gate is not None}
    keys |= {sensitivity_key(c.id) for c in claims if c.sensitivity is not None}
    return keys


def claim_entry(c: Claim, measured: dict[str, Measurement], error: str | None) -> dict[str, Any]:
    """One claim's row of ``results.json`` (schema in :mod:`icml25.core.results`)."""
    m, nm, gm = measured.get(c.id), measured.get(null_key(c.id)), measured.get(gate_key(c.id))
    cm, sm = measured.get(contrast_key(c.id)), measured.get(sensitivity_key(c.id))
    j = c.judge(m, nm, gm, cm, sm)
    row: dict[str, Any] = {
        "id": c.id,
        "kind": c.kind,
        "statement": c.statement,
        "where": c.where,
        "metric": c.metric,
        "paper_value": c.paper_value,
        "measured": m.to_json() if m is not None else None,
        "interval": m.interval.to_json() if m is not None else None,
        "rule": c.rule_text(),
        "rule_verdict": "error" if error else j.rule_verdict,
        "verdict": "error" if error else j.verdict,
        "reason": None if error else j.reason,
    }
    if c.null is None:
        row["null"] = None
    elif c.null.exempt is not None:
        row["null"] = {"exempt": c.null.exempt}
    else:
        row["null"] = {
            "arm": c.null.arm,
            "measured": nm.to_json() if nm is not None else None,
            "interval": nm.interval.to_json() if nm is not None else None,
            "verdict": j.null_verdict,
        }
        if j.contrast is not None:
            row["contrast"] = j.contrast.to_json()
    if c.sensitivity is not None:
        row["sensitivity"] = {
            "arm": c.sensitivity.arm,
            "measured": sm.to_json() if sm is not None else None,
            "interval": sm.interval.to_json() if sm is not None else None,
            "verdict": j.sensitivity_verdict,
        }
    if c.gate is not None:
        grule = c.gate_rule
        row["gate"] = {
            "check": c.gate.check,
            "rule": Rule(grule.op, grule.threshold).describe() if grule is not None else None,
            "measured": gm.to_json() if gm is not None else None,
            "interval": gm.interval.to_json() if gm is not None else None,
            "passed": j.gate_passed,
        }
        if c.gate.per_seed:
            row["gate"]["per_seed"] = True
    return row


def make_entry(
    method: Method,
    *,
    budget: str,
    seeds: Sequence[int],
    wall_s: float,
    claims: Sequence[Claim],
    measured: dict[str, Measurement],
    error: str | None,
    figures: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """A method's entry of ``results.json``; with ``error`` every claim's verdict is ``error``."""
    return {
        "method": method.slug,
        "paper": {
            "title": method.title,
            "authors": method.authors,
            "venue": method.venue,
            "url": method.url,
        },
        "budget": budget,
        "seeds": [int(s) for s in seeds],
        "wall_s": round(wall_s, 2),
        "claims": [claim_entry(c, measured, error) for c in claims],
        "figures": list(figures),
        "notes": list(notes),
        "error": error,
    }


def saved_entry(
    out_dir: Path, slug: str, budget: str, seeds: Sequence[int]
) -> dict[str, Any] | None:
    """A finished, crash-free entry saved by an earlier (interrupted) run with the same settings:
    the same budget and the same requested seeds (a budget may run fewer or more seeds than
    requested; ``requested_seeds`` records what was asked). A file that is damaged, not an
    entry, or from other settings is ignored: the method runs again."""
    path = out_dir / slug / "result.json"
    try:
        entry = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("claims"), list):
        return None
    asked = entry.get("requested_seeds", entry.get("seeds"))
    same = entry.get("budget") == budget and asked == [int(s) for s in seeds]
    return entry if same and not entry.get("error") else None


def save_entry(out_dir: Path, entry: dict[str, Any]) -> None:
    """Save a method's entry as ``out_dir/<method>/result.json``, atomically."""
    data = json.dumps(entry, indent=2).encode()
    atomic_write_bytes(out_dir / entry["method"] / "result.json", data)
