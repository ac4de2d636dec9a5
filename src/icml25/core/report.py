"""``results.json`` (the contract other tools read), ``report.md`` and the terminal table.

``results.json``::

    {"schema": 1, "created": ISO time, "command": str, "environment": {...},
     "methods": [{"method", "paper", "budget", "seeds", "wall_s",
                  "claims": [{"id", "kind": "claim" | "control", "statement", "where",
                              "metric", "paper_value",
                              "measured": {"mean", "std", "n", "values"} | null,
                              "rule", "verdict"}],
                  "figures": [paths relative to the report folder], "notes": [str],
                  "error": traceback | null}]}

``kind`` was added later: an entry without it is a claim. Controls (checks a reproduction adds)
have verdicts but are listed apart and never counted in the tally.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from collections import Counter
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from icml25.core.claims import VERDICTS, Measurement

SCHEMA = 1
_PACKAGES = ("icml25", "numpy", "scipy", "torch", "scikit-learn", "matplotlib", "rich")


def environment() -> dict[str, Any]:
    """Package versions, Python, platform and the git commit of the source tree (if any)."""
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
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": versions,
        "git_commit": commit,
    }


def build_results(methods: list[dict[str, Any]], command: str) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "environment": environment(),
        "methods": methods,
    }


def write_results(results: dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "results.json"
    path.write_text(json.dumps(results, indent=2))
    return path


def load_results(out_dir: Path) -> dict[str, Any]:
    path = out_dir / "results.json" if out_dir.is_dir() else out_dir
    if not path.exists():
        raise FileNotFoundError(f"no results.json in {out_dir} (run `icml25 reproduce` first)")
    results: dict[str, Any] = json.loads(path.read_text())
    if results.get("schema") != SCHEMA or "methods" not in results:
        raise ValueError(f"{path} is not an icml25 results file (schema {SCHEMA})")
    return results


def measured_text(measured: dict[str, Any] | None) -> str:
    return "—" if measured is None else str(Measurement.from_json(measured))


def kind_of(claim: dict[str, Any]) -> str:
    """``"claim"`` or ``"control"`` (entries written before controls existed are claims)."""
    return str(claim.get("kind", "claim"))


def claim_rows(results: dict[str, Any], kind: str = "claim") -> list[list[str]]:
    """One row per claim (or per control, with ``kind="control"``): method, id, paper's value,
    measured, rule, verdict."""
    rows = []
    for m in results["methods"]:
        if kind == "claim" and m.get("error") and not m["claims"]:
            rows.append([m["method"], "—", "—", "—", "crashed before measuring", "error"])
        for c in m["claims"]:
            if kind_of(c) != kind:
                continue
            paper = "—" if c["paper_value"] is None else str(c["paper_value"])
            rows.append(
                [m["method"], c["id"], paper, measured_text(c["measured"]), c["rule"], c["verdict"]]
            )
    return rows


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
    return f"**Wall time:** {total:.0f} s in all ({total / 60:.1f} min): {per}."


def render_markdown(results: dict[str, Any]) -> str:
    env = results["environment"]
    lines = [
        "# icml25 reproduction report",
        "",
        f"- Command: `{results['command']}`",
        f"- Created: {results['created']}",
        f"- Commit: {env.get('git_commit') or 'not a git checkout'}",
        f"- Python {env['python']} on {env['platform']}; "
        + ", ".join(f"{k} {v}" for k, v in env["packages"].items() if v),
        "",
    ]
    counts = verdict_counts(results)
    order = [*VERDICTS, "error"]
    lines += ["**Verdicts:** " + ", ".join(f"{counts[v]} {v}" for v in order if counts[v]), ""]
    lines += [time_line(results), ""]
    lines += [
        "| method | claim | paper | measured | rule | verdict |",
        "|---|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(_md_cell(x) for x in row) + " |" for row in claim_rows(results)]
    controls = claim_rows(results, kind="control")
    if controls:
        lines += [
            "",
            "**Controls** (checks the reproductions add, not claims of the papers; not counted "
            "above):",
            "",
            "| method | control | paper | measured | rule | verdict |",
            "|---|---|---|---|---|---|",
        ]
        lines += ["| " + " | ".join(_md_cell(x) for x in row) + " |" for row in controls]
    for m in results["methods"]:
        paper = m["paper"]
        lines += [
            "",
            f"## {m['method']}: {paper['title']}",
            "",
            f"{paper['authors']}. *{paper['venue']}*. {paper['url']}",
            "",
            f"Budget `{m['budget']}`, seeds {m['seeds']}, {m['wall_s']:.1f} s.",
            "",
        ]
        for c in m["claims"]:
            control = " (control)" if kind_of(c) == "control" else ""
            lines.append(
                f"- **{c['id']}**{control} ({c['where']}): {c['statement']} — measured "
                f"{c['metric']}: {measured_text(c['measured'])}; rule {c['rule']} → "
                f"**{c['verdict']}**."
            )
        if m.get("notes"):
            lines += ["", *m["notes"]]
        for fig in m.get("figures", []):
            lines += ["", f"![{Path(fig).stem}]({fig})"]
        if m.get("error"):
            lines += ["", "The run crashed:", "", "```", m["error"].rstrip(), "```"]
    return "\n".join(lines) + "\n"


def publish(results: dict[str, Any], run_dir: Path, root: Path) -> Path:
    """Write ``root/REPRODUCTION.md`` from a finished run, with its figures and results.json
    copied to ``root/docs/reproduction/`` (the repository's record of the latest full run)."""
    import shutil

    docs = root / "docs" / "reproduction"
    if docs.exists():
        shutil.rmtree(docs)
    docs.mkdir(parents=True)
    for m in results["methods"]:
        for fig in m.get("figures", []):
            (docs / fig).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(run_dir / fig, docs / fig)
    (docs / "results.json").write_text(json.dumps(results, indent=2))
    body = render_markdown(results).split("\n", 1)[1]
    for m in results["methods"]:
        for fig in m.get("figures", []):
            body = body.replace(f"]({fig})", f"](docs/reproduction/{fig})")
    env = results["environment"]
    head = (
        "# Reproduction results\n\n"
        f"The latest full run, made with `{results['command']}` at commit "
        f"`{env.get('git_commit')}` on {env['platform']}, and published with "
        f"`icml25 report {run_dir} --publish`. Its results.json is kept in "
        "[docs/reproduction/results.json](docs/reproduction/results.json).\n"
    )
    path = root / "REPRODUCTION.md"
    path.write_text(head + body)
    return path


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_report(results: dict[str, Any], out_dir: Path) -> Path:
    path = out_dir / "report.md"
    path.write_text(render_markdown(results))
    return path


def wide_console() -> Any:
    """A rich Console; on a pipe or log file, 160 columns instead of squeezing into 80."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=160)


def print_table(results: dict[str, Any], console: Any = None) -> None:
    """The claims table in the terminal (rich)."""
    from rich.table import Table

    console = console or wide_console()
    style = {
        "reproduced": "green",
        "partial": "yellow",
        "not reproduced": "red",
        "out of scale": "dim",
        "error": "bold red",
    }
    for kind, title in (("claim", "icml25 claims"), ("control", "controls (not counted)")):
        rows = claim_rows(results, kind=kind)
        if not rows and kind == "control":
            continue
        table = Table(title=title, show_lines=False)
        for col in ("method", kind, "paper", "measured", "rule", "verdict"):
            table.add_column(col, overflow="fold")
        for row in rows:
            table.add_row(*row[:-1], f"[{style.get(row[-1], '')}]{row[-1]}[/]")
        console.print(table)
