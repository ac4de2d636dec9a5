"""``report.md`` and the terminal table, rendered from a ``results.json``
(:mod:`icml25.core.results`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from icml25.core.results import (
    gate_text,
    kind_of,
    measured_text,
    null_text,
    published_text,
    quick_summary,
    tally_text,
    time_line,
    verdict_text,
)

COLUMNS = (
    "method",
    "id",
    "paper",
    "measured [90% interval]",
    "rule",
    "null arm",
    "gate",
    "verdict",
    "full run",
)


def claim_rows(results: dict[str, Any], kind: str = "claim") -> list[list[str]]:
    """One row per claim (or per control, with ``kind="control"``), in :data:`COLUMNS` order;
    the last cell is the verdict with its reason (:func:`verdict_text`)."""
    rows = []
    for m in results["methods"]:
        if kind == "claim" and m.get("error") and not m["claims"]:
            rows.append(
                [m["method"], "—", "—", "—", "crashed before measuring", "—", "—", "error", "—"]
            )
        for c in m["claims"]:
            if kind_of(c) != kind:
                continue
            paper = "—" if c["paper_value"] is None else str(c["paper_value"])
            rows.append(
                [
                    m["method"],
                    c["id"],
                    paper,
                    measured_text(c["measured"], c.get("interval")),
                    c["rule"],
                    null_text(c),
                    gate_text(c),
                    verdict_text(c),
                    published_text(c),
                ]
            )
    return rows


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
    if {m["budget"] for m in results["methods"]} == {"tiny"}:
        lines += [
            "**This is a smoke test (budget `tiny`): its numbers and verdicts mean nothing.** "
            "It checks that every reproduction runs end to end; use `--budget quick` or "
            "`full` for results.",
            "",
        ]
    summary = quick_summary(results)
    if summary is not None:
        lines += [summary, ""]
    lines += [f"**Verdicts:** {tally_text(results)}", ""]
    lines += [time_line(results), ""]
    lines += [
        "Each measurement carries a two-sided 90% interval (t over seeds, a bootstrap over "
        "items, or exact); a verdict needs the whole interval past a threshold; the method is "
        "compared with its null arm (the method without its mechanism) as a paired contrast, "
        "and a claim whose null arm also passes the rule is decided only when the contrast "
        "excludes 0; a failed gate (the setting cannot show the effect) makes it out of scale.",
        "",
    ]
    for kind in ("claim", "control"):
        rows = claim_rows(results, kind=kind)
        if kind == "control":
            if not rows:
                continue
            lines += [
                "",
                "**Controls** (checks the reproductions add, not claims of the papers; not "
                "counted above):",
                "",
            ]
        header = [kind if col == "id" else col for col in COLUMNS]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(md_cell(x) for x in row) + " |" for row in rows]
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
            extra = ""
            if c.get("null"):
                extra += f"; null arm {null_text(c)}"
            if c.get("gate"):
                extra += f"; gate {gate_text(c)}"
            lines.append(
                f"- **{c['id']}**{control} ({c['where']}): {c['statement']} — measured "
                f"{c['metric']}: {measured_text(c['measured'], c.get('interval'))}; rule "
                f"{c['rule']}{extra} → **{verdict_text(c)}**."
            )
        if m.get("notes"):
            lines += ["", *m["notes"]]
        for fig in m.get("figures", []):
            lines += ["", f"![{Path(fig).stem}]({fig})"]
        if m.get("error"):
            lines += ["", "The run crashed:", "", "```", m["error"].rstrip(), "```"]
    return "\n".join(lines) + "\n"


def sources_text(results: dict[str, Any]) -> str:
    """Where each method of a collected results file came from (a Markdown table)."""
    lines = [
        "| method | budget | seeds | command | commit | schema | texts rebuilt |",
        "|---|---|---|---|---|---|---|",
    ]
    budgets = {m["method"]: m for m in results["methods"]}
    for s in results.get("sources", []):
        m = budgets.get(s["method"], {})
        lines.append(
            "| "
            + " | ".join(
                md_cell(str(x))
                for x in (
                    s["method"],
                    m.get("budget", "?"),
                    ",".join(map(str, m.get("seeds", []))),
                    f"`{s['command']}`",
                    f"`{(s['commit'] or '?')[:9]}`",
                    s["schema"],
                    s.get("texts_from_code", 0),
                )
            )
            + " |"
        )
    return "\n".join(lines)


def md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


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
        "inconclusive": "magenta",
        "out of scale": "dim",
        "error": "bold red",
    }
    for kind, title in (("claim", "icml25 claims"), ("control", "controls (not counted)")):
        rows = claim_rows(results, kind=kind)
        if not rows and kind == "control":
            continue
        table = Table(title=title, show_lines=False)
        for col in COLUMNS:
            table.add_column(kind if col == "id" else col, overflow="fold")
        at = COLUMNS.index("verdict")
        for row in rows:
            verdict = row[at].split(" (")[0]
            cells = [*row[:at], f"[{style.get(verdict, '')}]{row[at]}[/]", *row[at + 1 :]]
            table.add_row(*cells)
        console.print(table)
