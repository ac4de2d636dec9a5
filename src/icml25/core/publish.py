"""``icml25 report DIR --publish``: the repository's record of the latest full results.

It writes, under the repository root,

- ``docs/reproduction/``: the run's ``results.json``, its figures and ``report.html`` (every
  claim in full: statement, metric, interval plot, null arm, gate, reason, notes, figures);
- ``REPRODUCTION.md``: a lean index of the same: the tally, where each method comes from, the
  verdicts that moved since the previous publication, and one line per claim linking into
  ``report.html``.

The moved verdicts are computed against the results published before (read before they are
replaced) and stored in the new ``results.json`` under ``"published"``, so that republishing
the same run shows the same moves without keeping a copy of the old results in the tree: the
old results stay in git history.

Paths of the machine that made a run (``/home/...``, ``/work/runs/x``) never reach the
published files: a path inside the repository becomes relative to it, any other absolute
path keeps only its part from a ``runs/`` folder on, or its last component.

The new folder is assembled beside the old one and swapped in by renames, after every figure
was found, so that a failing publish leaves the previous publication whole (a publish killed
between the two renames leaves it as ``docs/.reproduction.old``, which the next publish puts
back before it reads it).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any

from icml25.core.html import claim_anchor, write_html
from icml25.core.report import md_cell, sources_text
from icml25.core.results import (
    kind_of,
    load_results,
    measured_text,
    moved_verdicts,
    tally_text,
    verdict_counts,
)
from icml25.core.runner import atomic_write_bytes

_ABSOLUTE = re.compile(r"(?<![\w.~-])/(?:[\w.+-]+/)*[\w.+-]+")


def portable_path(path: str, root: Path) -> str:
    """``path`` as the published files show it: relative to ``root`` where it lies inside,
    else from its last ``runs`` component on (``runs/pub24``), else its last component."""
    p = Path(path)
    if not p.is_absolute():
        return path
    try:
        return str(p.relative_to(root.resolve()))
    except ValueError:
        pass
    parts = p.parts
    if "runs" in parts:
        return str(Path(*parts[parts.index("runs") :]))
    return p.name or path


def portable_text(text: str, root: Path) -> str:
    """Every absolute path in ``text`` through :func:`portable_path` (Debian's data folders
    under ``/usr/share`` stay: they name where a package installs its data, on any machine)."""

    def one(m: re.Match[str]) -> str:
        s = m.group(0)
        return s if s.startswith("/usr/") else portable_path(s, root)

    return _ABSOLUTE.sub(one, text)


def _portable(results: dict[str, Any], root: Path) -> dict[str, Any]:
    out = copy.deepcopy(results)
    out.pop("published_from", None)  # a run's comparison with an older publication
    for m in out["methods"]:
        for c in m["claims"]:
            c.pop("published", None)
    out["command"] = portable_text(str(out.get("command", "")), root)
    for s in out.get("sources") or []:
        for k in ("source", "command"):
            if isinstance(s.get(k), str):
                s[k] = portable_text(s[k], root)
    previous = (out.get("published") or {}).get("previous")
    if isinstance(previous, dict) and isinstance(previous.get("command"), str):
        previous["command"] = portable_text(previous["command"], root)
    for m in out["methods"]:
        m["notes"] = [portable_text(n, root) for n in m.get("notes", [])]
        if m.get("error"):
            m["error"] = portable_text(m["error"], root)
    return out


def _published(docs: Path) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The results published now, and the results they replaced where an older publication
    kept a copy (``previous.json``); ``None`` for what is absent or unreadable."""
    found: list[dict[str, Any] | None] = []
    for name in ("results.json", "previous.json"):
        try:
            found.append(load_results(docs / name) if (docs / name).is_file() else None)
        except (ValueError, OSError):
            found.append(None)
    return found[0], found[1]


def _same_run(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a.get("created"), a.get("command")) == (b.get("created"), b.get("command"))


def _moves(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    return {
        "previous": {
            "command": old.get("command", "?"),
            "created": old.get("created"),
            "tally": tally_text(old),
        },
        "moved": moved_verdicts(old, new),
    }


def publish(results: dict[str, Any], run_dir: Path, root: Path) -> Path:
    """Publish ``results`` (a finished run in ``run_dir``, figures included) under ``root``;
    returns the path of ``REPRODUCTION.md``. Raises ``FileNotFoundError`` naming the missing
    figures before anything is replaced."""
    docs = root / "docs" / "reproduction"
    retired = docs.with_name(".reproduction.old")
    if not docs.exists() and retired.is_dir():  # a publish killed between its two renames
        retired.rename(docs)
    new = _portable(results, root)
    current, legacy = (None if r is None else _portable(r, root) for r in _published(docs))
    if current is not None and _same_run(current, new):
        # republishing the same run: the moves it showed when first published
        if current.get("published") is not None:
            new["published"] = current["published"]
        elif legacy is not None:
            new["published"] = _moves(new, legacy)
    elif current is not None:
        new["published"] = _moves(new, current)
    figures = [fig for m in new["methods"] for fig in m.get("figures", [])]
    missing = [fig for fig in figures if not (run_dir / fig).is_file()]
    if missing:
        raise FileNotFoundError(
            f"cannot publish {run_dir}: figures listed in its results.json are missing: "
            + ", ".join(missing)
        )
    staging = docs.with_name(".reproduction.new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for fig in figures:
        (staging / fig).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(run_dir / fig, staging / fig)
    (staging / "results.json").write_text(json.dumps(new, indent=2))
    write_html(new, run_dir, staging / "report.html")
    shutil.rmtree(retired, ignore_errors=True)
    if docs.exists():
        docs.rename(retired)
    staging.rename(docs)
    shutil.rmtree(retired, ignore_errors=True)
    path = root / "REPRODUCTION.md"
    atomic_write_bytes(path, render_index(new, portable_path(str(run_dir), root)).encode())
    return path


def render_index(results: dict[str, Any], run_dir: str) -> str:
    """``REPRODUCTION.md``: tally, provenance, moved verdicts, one line per claim."""
    env = results["environment"]
    controls = sum(kind_of(c) == "control" for m in results["methods"] for c in m["claims"])
    what = (
        f"collected with `{results['command']}` (nothing re-run)"
        if results.get("sources")
        else f"made with `{results['command']}` on {env.get('platform', '?')}"
    )
    lines = [
        "# Reproduction results",
        "",
        f"The latest full results, {what} at commit `{(env.get('git_commit') or '?')[:9]}`, "
        f"published with `icml25 report {run_dir} --publish`. This page is an index: each "
        "claim in full (statement, metric, interval against the rule, null arm, gate, the "
        "reason for its verdict), each method's notes and figures are in "
        "[docs/reproduction/report.html](docs/reproduction/report.html); the data in "
        "[docs/reproduction/results.json](docs/reproduction/results.json).",
        "",
        f"**Verdicts of the papers' claims:** {tally_text(results)} "
        f"({sum(verdict_counts(results).values())} claims). {controls} controls (our own "
        "checks) are listed apart and not counted.",
        "",
    ]
    if results.get("sources"):
        lines += ["## Where each method comes from", "", sources_text(results), ""]
    pub = results.get("published")
    if pub is not None:
        moved = pub["moved"]
        lines += [
            "## Moved verdicts",
            "",
            f"Before (`{pub['previous']['command']}`): {pub['previous']['tally']}. "
            f"Now: {tally_text(results)}.",
            "",
        ]
        if moved:
            lines += [
                f"{len(moved)} verdicts moved (why: `interval` straddles the rule, `null` "
                "the null arm passes or none was declared, `gate` the setting failed its "
                "precondition, `measurement` the value or the rule itself):",
                "",
                "| method | id | kind | before | now | why |",
                "|---|---|---|---|---|---|",
            ]
            lines += [
                "| "
                + " | ".join(
                    md_cell(x) for x in (r["method"], r["id"], r["kind"], r["old"], r["new"])
                )
                + f" | {md_cell(r['why'])} |"
                for r in moved
            ]
        else:
            lines.append("No verdict moved.")
        lines.append("")
    for kind, title in (("claim", "Claims"), ("control", "Controls (not counted)")):
        rows = [
            (m["method"], c) for m in results["methods"] for c in m["claims"] if kind_of(c) == kind
        ]
        if not rows:
            continue
        lines += [f"## {title}", "", "| method | id | measured [90% interval] | verdict |"]
        lines.append("|---|---|---|---|")
        for slug, c in rows:
            link = f"docs/reproduction/report.html#{claim_anchor(slug, c['id'])}"
            lines.append(
                f"| {slug} | [{md_cell(c['id'])}]({link}) | "
                f"{md_cell(measured_text(c.get('measured'), c.get('interval')))} | "
                f"{md_cell(c['verdict'])} |"
            )
        lines.append("")
    return "\n".join(lines)
