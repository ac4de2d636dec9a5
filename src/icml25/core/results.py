"""``results.json``, the contract other tools read: its schema, writing and loading, the
verdict tally, collecting several runs into one, and the text of a measurement.

``results.json`` (schema 2)::

    {"schema": 2, "created": ISO time, "command": str,
     "environment": {"python", "platform", "cpu" (model), "cores", "packages", "git_commit",
                     "device" (asked for)},
     "methods": [{"method", "paper", "budget", "seeds" (run), "requested_seeds",
                  "device" (where it ran), "wall_s", "cpu_s" (user + system, with children),
                  "claims": [{"id", "kind": "claim" | "control", "statement", "where",
                              "metric", "paper_value",
                              "measured": {"mean", "std", "n", "values"} | null,
                              "interval": {"level", "low", "high", "method"} | null,
                              "rule", "rule_verdict", "verdict", "reason": str | null,
                              "null": {"arm", "measured", "interval", "verdict"}
                                      | {"exempt": reason} | null,
                              "contrast": {"mean", "values", "interval", "verdict":
                                           "for" | "against" | "undecided", "why"}
                                          (method minus null arm; where computed),
                              "sensitivity": {"arm", "measured", "interval", "verdict"}
                                             (only where declared),
                              "gate": {"check", "rule", "measured", "interval",
                                       "passed": bool | null}   (only where declared)}],
                  "figures": [paths relative to the report folder], "notes": [str],
                  "error": traceback | null}]}

Verdicts are ``reproduced``, ``partial``, ``not reproduced``, ``inconclusive`` (the interval
straddles a threshold, or the null arm passes the rule) and ``out of scale`` (nothing a laptop
can test, or a failed gate), or ``error`` when the reproduction crashed. ``rule_verdict`` is the
rule on the claim's interval alone; ``reason`` says why ``verdict`` differs from it (or why it
is inconclusive). ``interval`` is two-sided at ``level`` (0.9): ``method`` is ``t`` (Student's t
over seeds), ``bootstrap (...)`` over items, ``exact``, ``none`` (too few values: unbounded,
written as ``"-inf"`` / ``"inf"``) or a reproduction's own. The rules are in
:mod:`icml25.core.claims`.

Schema 1 files (written before intervals, null arms and gates) still load: their claims have no
``interval``, ``null``, ``gate``, ``rule_verdict`` or ``reason``, and render without them.
``kind`` was added within schema 1: an entry without it is a claim. Controls (checks a
reproduction adds) have verdicts but are listed apart and never counted in the tally.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, cast

from icml25.core.claims import VERDICTS, Claim, Interval, Measurement, Rule
from icml25.core.registry import Method
from icml25.core.results_schema import SCHEMA, check_results
from icml25.core.runner import BUDGETS, atomic_copy

_PACKAGES = ("icml25", "numpy", "scipy", "torch", "scikit-learn", "matplotlib", "rich")


def cpu_model() -> str:
    """The processor's model name (Linux's ``/proc/cpuinfo``; elsewhere ``platform``'s)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def environment(device: str | None = None) -> dict[str, Any]:
    """Package versions, Python, platform, the git commit of the source tree (if any) and, where
    given, the torch ``device`` the run asked for."""
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    commit = None
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        if out.returncode == 0:
            commit = out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "packages": versions,
        "git_commit": commit,
    }
    if device is not None:
        env["device"] = device
    return env


def build_results(
    methods: list[dict[str, Any]], command: str, device: str | None = None
) -> dict[str, Any]:
    """A run's ``results.json``: its entries, command and environment (with the ``device`` it
    asked for, where given; each entry's ``device`` is where it ran)."""
    return {
        "schema": SCHEMA,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "environment": environment(device),
        "methods": methods,
    }


def write_results(results: dict[str, Any], out_dir: Path) -> Path:
    """Write ``out_dir/results.json`` through a temporary file and a rename: a write that fails
    (a full disk) leaves the earlier file whole."""
    from icml25.core.runner import atomic_write_bytes

    path = out_dir / "results.json"
    atomic_write_bytes(path, json.dumps(results, indent=2).encode())
    return path


def load_results(out_dir: Path) -> dict[str, Any]:
    """The results in ``out_dir/results.json`` (or the file ``out_dir``), checked
    (:func:`check_results`). Raises ``FileNotFoundError`` when there is none, ``ValueError``
    naming the file and what is wrong for anything else (unreadable, not JSON, a damaged or
    foreign file)."""
    path = out_dir / "results.json" if out_dir.is_dir() else out_dir
    if not path.exists():
        raise FileNotFoundError(f"no results.json in {out_dir} (run `icml25 reproduce` first)")
    if path.is_dir():
        raise ValueError(f"{path}: is a folder, not a results file")
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot be read ({exc})") from None
    if not text.strip():
        raise ValueError(f"{path}: is empty (a run killed while writing it? rerun it)")
    try:
        results = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: is not valid JSON, maybe cut short ({exc})") from None
    check_results(results, path)
    return cast(dict[str, Any], results)


def measured_text(measured: dict[str, Any] | None, interval: dict[str, Any] | None = None) -> str:
    """``mean ± std (n=3)``, with the interval where there is one: ``0.8 [0.7, 0.9] t``."""
    if measured is None:
        return "—"
    text = str(Measurement.from_json(measured))
    if interval:
        iv = Interval.from_json(interval)
        method = iv.method.split(" ")[0]
        text += f" {iv} {method}" if iv.bounded or method != "none" else " (no interval)"
    return text


def null_text(claim: dict[str, Any]) -> str:
    """The null arm in a cell: its value and verdict, an exemption, or a dash."""
    null = claim.get("null")
    if not null:
        return f"— ; sensitivity {sensitivity_text(claim)}" if claim.get("sensitivity") else "—"
    if "exempt" in null:
        text = f"exempt: {null['exempt']}"
        return text + (
            f"; sensitivity {sensitivity_text(claim)}" if claim.get("sensitivity") else ""
        )
    value = measured_text(null.get("measured"), null.get("interval"))
    text = f"{null['arm']}: {value} → {null.get('verdict') or 'not measured'}"
    text += f"; {contrast_text(claim)}" if claim.get("contrast") else ""
    return text + (f"; sensitivity {sensitivity_text(claim)}" if claim.get("sensitivity") else "")


def contrast_text(claim: dict[str, Any]) -> str:
    """The paired contrast (method minus null arm) in a cell, or a dash."""
    c = claim.get("contrast")
    if not c:
        return "—"
    iv = c.get("interval") or {}
    shown = measured_text({"values": c.get("values") or [c["mean"]]}, iv)
    return f"method − null {shown}: {c['verdict']}"


def sensitivity_text(claim: dict[str, Any]) -> str:
    """The sensitivity arm in a cell, or a dash."""
    s = claim.get("sensitivity")
    if not s:
        return "—"
    value = measured_text(s.get("measured"), s.get("interval"))
    return f"{s['arm']}: {value} → {s.get('verdict') or 'not measured'}"


def gate_text(claim: dict[str, Any]) -> str:
    gate = claim.get("gate")
    if not gate:
        return "—"
    state = {True: "passed", False: "FAILED", None: "not measured"}[gate.get("passed")]
    value = measured_text(gate.get("measured"))
    return f"{state}: {gate['check']} = {value} (needs {gate.get('rule')})"


def verdict_text(claim: dict[str, Any]) -> str:
    """The verdict, with its reason where the gate, the null arm or the interval set it."""
    reason = claim.get("reason")
    return (
        f"{claim['verdict']} ({reason})"
        if reason and claim["verdict"] != "error"
        else claim["verdict"]
    )


def kind_of(claim: dict[str, Any]) -> str:
    """``"claim"`` or ``"control"`` (entries written before controls existed are claims)."""
    return str(claim.get("kind", "claim"))


_RULE = re.compile(r"^mean (>=|<=|>|<) (\S+)(?: \(partial if (?:>=|<=|>|<) (\S+)\))?$")


PRE_AUDIT = "null arm not measured (a schema-1 run, made before the power audit)"


REJUDGED_NOTE = (
    "Re-judged from a schema-1 run (before the power audit of issue 48): intervals from its "
    "per-seed values; its null arms were not measured, so none of its claims counts as "
    "reproduced."
)


def parse_rule(text: str) -> Rule | None:
    """The :class:`Rule` that :meth:`Rule.describe` wrote as ``text`` (None for any other
    text, such as an out-of-scale reason)."""
    m = _RULE.match(text.strip())
    if m is None:
        return None
    op, threshold, partial = m.groups()
    return Rule(op, float(threshold), None if partial is None else float(partial))  # type: ignore[arg-type]


def rejudge_schema1(entry: dict[str, Any]) -> dict[str, Any]:
    """A schema-1 method entry judged by today's engine, without re-running anything.

    Each claim's interval comes from its per-seed values (Student's t; unbounded for fewer than
    3 seeds). Schema-1 runs measured no null arm, so a claim whose rule passes cannot be
    reproduced: it is inconclusive with :data:`PRE_AUDIT` as the reason. Claims out of scale,
    crashed or with a rule this code did not write keep their verdict."""
    out = dict(entry)
    claims = []
    for c in entry["claims"]:
        row = dict(c)
        row.setdefault("kind", "claim")
        rule = parse_rule(c.get("rule", ""))
        measured = c.get("measured")
        if rule is None or not measured or c.get("verdict") in ("out of scale", "error"):
            row.update(interval=None, rule_verdict=c.get("verdict"), reason=None, null=None)
            claims.append(row)
            continue
        claim = Claim(c["id"], c["statement"], c["where"], c["metric"], rule, kind=row["kind"])
        m = Measurement.from_json(measured)
        j = claim.judge(m)
        reason = j.reason
        if reason == "no null arm declared":
            reason = PRE_AUDIT
        row.update(
            interval=m.interval.to_json(),
            rule_verdict=j.rule_verdict,
            verdict=j.verdict,
            reason=reason,
            null=None,
        )
        claims.append(row)
    out["claims"] = claims
    out["notes"] = [*entry.get("notes", []), REJUDGED_NOTE]
    return out


def rejudged(entry: dict[str, Any]) -> bool:
    """Whether ``entry`` is a schema-1 run re-judged by :func:`rejudge_schema1` (its note says
    so, also after it was collected into a schema-2 file)."""
    return REJUDGED_NOTE in entry.get("notes", [])


def collect(
    sources: list[Path], out_dir: Path, command: str, methods: Mapping[str, Method]
) -> dict[str, Any]:
    """One results file from several runs (nothing is re-run): each method's entry from the
    last source that has it, schema-1 entries re-judged (:func:`rejudge_schema1`), schema-2
    entries' claim texts rebuilt from today's code where the claim is unchanged
    (:func:`retext`), figures copied. ``results["sources"]`` records where each method came
    from and how many claim texts were rebuilt. ``methods`` (by slug, in the order to list
    them) are today's registered methods, handed in by the caller (``core`` imports none)."""

    target = out_dir.resolve()
    for src in sources:
        if (src if src.is_dir() or not src.exists() else src.parent).resolve() == target:
            raise ValueError(
                f"{out_dir}: the collected folder is also a SOURCE ({src}): collecting into "
                "it would overwrite the run it reads; give a new folder"
            )
    loaded = [load_results(src) for src in sources]  # every source checked before any copy
    entries: dict[str, dict[str, Any]] = {}
    origin: dict[str, dict[str, Any]] = {}
    for src, results in zip(sources, loaded, strict=True):
        src_dir = src if src.is_dir() else src.parent
        # a collected file (a published one) keeps the run each method came from
        carried = {s["method"]: s for s in results.get("sources") or []}
        for m in results["methods"]:
            entry = m if results["schema"] >= 2 else rejudge_schema1(m)
            # texts are rebuilt only for runs made under the audited engine: a re-judged
            # schema-1 run's sizes and protocol may not be today's
            run_schema = 1 if rejudged(entry) else results["schema"]
            retexted = retext(entry, methods) if run_schema >= 2 else 0
            for fig in entry.get("figures", []):
                if (src_dir / fig).is_file():
                    atomic_copy(src_dir / fig, out_dir / fig)
            entries[m["method"]] = entry
            origin[m["method"]] = dict(carried.get(m["method"]) or {
                "method": m["method"],
                "source": str(src),
                "command": results.get("command"),
                "commit": results.get("environment", {}).get("git_commit"),
                "created": results.get("created"),
                "schema": results["schema"],
            })  # fmt: skip
            origin[m["method"]].update(schema=run_schema, texts_from_code=retexted)
    order = [slug for slug in methods if slug in entries]
    order += [slug for slug in entries if slug not in order]
    collected = build_results([entries[s] for s in order], command)
    collected["sources"] = [origin[s] for s in order]
    write_results(collected, out_dir)
    return collected


def retext(entry: dict[str, Any], methods: Mapping[str, Method]) -> int:
    """Claim texts of a saved entry rebuilt, in place, from today's code for the entry's
    budget (its sizes filled: issue 56); returns how many claims' texts changed.

    Only texts move (statement, where, metric, a string paper value, the null arm or exemption,
    the gate check), and only for a claim whose id, kind, rule, and kind of null arm and gate
    are today's: a claim whose rule or design changed since the run keeps the run's texts.
    """
    method = methods.get(entry.get("method", ""))
    if method is None or entry.get("budget") not in BUDGETS:
        return 0
    try:
        claims = {c.id: c for c in method.claims(entry["budget"])}
    except Exception:  # a method that no longer loads keeps its saved texts
        return 0
    changed = 0
    for row in entry.get("claims", []):
        c = claims.get(row.get("id"))
        if c is None or row.get("kind") != c.kind or row.get("rule") != c.rule_text():
            continue
        null, gate = row.get("null"), row.get("gate")
        null_kind = None if null is None else ("exempt" if "exempt" in null else "arm")
        want_null = None if c.null is None else ("exempt" if c.null.exempt is not None else "arm")
        if null_kind != want_null or (gate is None) != (c.gate is None):
            continue
        before = json.dumps(row, sort_keys=True)
        row.update(statement=c.statement, where=c.where, metric=c.metric)
        if isinstance(row.get("paper_value"), str) and isinstance(c.paper_value, str):
            row["paper_value"] = c.paper_value
        if null is not None and c.null is not None:
            null[null_kind] = c.null.exempt if null_kind == "exempt" else c.null.arm
        if gate is not None and c.gate is not None:
            gate["check"] = c.gate.check
        changed += json.dumps(row, sort_keys=True) != before
    return changed


def why_moved(claim: dict[str, Any]) -> str:
    """What set a (new) verdict: ``gate``, ``null`` (the null arm, or none declared),
    ``interval`` (straddles the rule) or ``measurement`` (the value or the rule itself)."""
    reason = claim.get("reason") or ""
    if reason.startswith("gate"):
        return "gate"
    if "null" in reason:
        return "null"
    if claim.get("rule_verdict") == "inconclusive" or reason.startswith("interval"):
        return "interval"
    return "measurement"


def moved_verdicts(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, str]]:
    """Claims and controls whose verdict differs between two results files (by method and id),
    each with the new verdict's cause (:func:`why_moved`) and reason."""
    before = {(m["method"], c["id"]): c for m in old["methods"] for c in m["claims"]}
    moved = []
    for m in new["methods"]:
        for c in m["claims"]:
            o = before.get((m["method"], c["id"]))
            old_verdict = "absent" if o is None else o["verdict"]
            if old_verdict != c["verdict"]:
                moved.append(
                    {
                        "method": m["method"],
                        "id": c["id"],
                        "kind": kind_of(c),
                        "old": old_verdict,
                        "new": c["verdict"],
                        "why": why_moved(c),
                        "reason": c.get("reason") or "",
                    }
                )
    return moved


PASSING = ("reproduced", "partial")
UNDECIDED = ("inconclusive", "out of scale")


def beside_published(results: dict[str, Any], published: dict[str, Any], source: str) -> None:
    """Put each claim's verdict in the published full results beside this run's, in place:
    ``claim["published"] = {"verdict", "measured", "interval", "disagrees"}`` where the
    published results have the claim, and ``results["published_from"]`` says where they came
    from. A claim *disagrees* only when both verdicts are decided and opposite (reproduced or
    partial against not reproduced): an undecided verdict on either side is no disagreement."""
    full = {(m["method"], c["id"]): c for m in published.get("methods", []) for c in m["claims"]}
    for m in results["methods"]:
        for c in m["claims"]:
            f = full.get((m["method"], c["id"]))
            if f is None:
                continue
            here, there = c["verdict"], f["verdict"]
            disagrees = (here in PASSING and there == "not reproduced") or (
                here == "not reproduced" and there in PASSING
            )
            c["published"] = {
                "verdict": there,
                "measured": f.get("measured"),
                "interval": f.get("interval"),
                "disagrees": disagrees,
            }
    results["published_from"] = {
        "source": source,
        "created": published.get("created"),
        "tally": tally_text(published),
    }


def published_text(claim: dict[str, Any]) -> str:
    """The published full run's verdict of a claim, flagged where it disagrees."""
    p = claim.get("published")
    if not p:
        return "—"
    return f"{p['verdict']}{' (disagrees)' if p.get('disagrees') else ''}"


def quick_summary(results: dict[str, Any]) -> str | None:
    """What a run that is not the full budget can decide, beside the published full results
    (``None`` for a full run or without published results)."""
    budgets = {m["budget"] for m in results["methods"]}
    pub = results.get("published_from")
    if budgets == {"full"} or pub is None:
        return None
    rows = [
        (m["method"], c) for m in results["methods"] for c in m["claims"] if kind_of(c) == "claim"
    ]
    undecided = sum(c["verdict"] in UNDECIDED for _, c in rows)
    confirmed = sum(
        1
        for _, c in rows
        if c.get("published")
        and c["verdict"] != "inconclusive"
        and c["verdict"] != "out of scale"
        and (c["verdict"] in PASSING) == (c["published"]["verdict"] in PASSING)
        and c["published"]["verdict"] not in UNDECIDED
    )
    bad = [
        f"{m['method']}.{c['id']} ({c['verdict']} here, {c['published']['verdict']} in the "
        "full run)"
        for m in results["methods"]
        for c in m["claims"]
        if c.get("published", {}).get("disagrees")
    ]
    text = (
        f"**This run's budget ({', '.join(sorted(budgets))}) is too small to decide most "
        f"claims:** {undecided} of {len(rows)} are inconclusive or out of scale here. Beside "
        f"each verdict stands the published full run's ({pub['source']}, {pub['tally']}); "
        f"{confirmed} claims are decided here the same way as there. "
    )
    if bad:
        return (
            text
            + f"**{len(bad)} disagree** (decided here opposite to there): "
            + ("; ".join(bad) + ".")
        )
    return text + "No decided verdict here contradicts a decided one there."


def tally_text(results: dict[str, Any]) -> str:
    counts = verdict_counts(results)
    return ", ".join(f"{counts[v]} {v}" for v in [*VERDICTS, "error"] if counts[v]) or "none"


def verdict_counts(results: dict[str, Any]) -> Counter[str]:
    """The tally: verdicts of the papers' claims only (controls are not counted)."""
    return Counter(
        c["verdict"] for m in results["methods"] for c in m["claims"] if kind_of(c) == "claim"
    )


def time_line(results: dict[str, Any]) -> str:
    """Where the time went: each method's wall time and the sum (the sum of the methods, which
    is the elapsed time of a serial run; parallel runs take less)."""
    times = [(m["method"], float(m.get("wall_s", 0.0))) for m in results["methods"]]
    total = sum(t for _, t in times)
    per = ", ".join(f"{slug} {t:.0f} s" for slug, t in times)
    line = f"**Wall time:** {total:.0f} s in all ({total / 60:.1f} min): {per}."
    cpus = [float(m["cpu_s"]) for m in results["methods"] if "cpu_s" in m]
    env = results.get("environment", {})
    if cpus and len(cpus) == len(times):
        line += f" **CPU time:** {sum(cpus):.0f} s (user + system)"
        if env.get("cpu"):
            line += f" on {env['cpu']} ({env.get('cores', '?')} cores)"
        line += "."
    return line
