"""The claims table of a method's README, generated from its ``CLAIMS`` and the published
full results (``docs/reproduction/results.json``), between two marker lines::

    <!-- claims-table:start -->
    <!-- claims-table:end -->

``icml25 readme`` rewrites every method's table; a test checks that each is current, so a
claim changed in code and a republished verdict reach the README in the same commit.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from icml25.core.registry import Method
from icml25.core.report import md_cell
from icml25.core.results import measured_text
from icml25.core.runner import atomic_write_bytes

START = "<!-- claims-table:start -->"
END = "<!-- claims-table:end -->"


def readme_path(method: Method) -> Path:
    """The README beside a method's package ``__init__``."""
    package = importlib.import_module(method.module.rsplit(".", 1)[0])
    return Path(str(package.__file__)).parent / "README.md"


def claims_table(method: Method, published: Mapping[str, Any] | None) -> str:
    """A Markdown table of the method's claims and controls (as the full budget states them)
    with the published full run's measurement and verdict of each."""
    rows: dict[str, dict[str, Any]] = {}
    if published is not None:
        for m in published.get("methods", []):
            if m.get("method") == method.slug:
                rows = {c["id"]: c for c in m.get("claims", [])}
    lines = [
        "| id | kind | the paper (where) | paper | rule | full run: measured [90% interval] "
        "| verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in method.claims("full"):
        got = rows.get(c.id)
        measured = "—" if got is None else measured_text(got.get("measured"), got.get("interval"))
        verdict = "not published" if got is None else got["verdict"]
        paper = "—" if c.paper_value is None else str(c.paper_value)
        cells = (c.id, c.kind, f"{c.statement} ({c.where})", paper, c.rule_text(), measured)
        lines.append("| " + " | ".join(md_cell(x) for x in cells) + f" | **{verdict}** |")
    return "\n".join(lines)


def with_table(text: str, table: str, where: str = "README") -> str:
    """``text`` with the lines between the markers replaced by ``table``."""
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise ValueError(f"{where} must hold the lines {START} and {END} once each, in order")
    head, rest = text.split(START)
    _, tail = rest.split(END)
    return f"{head}{START}\n{table}\n{END}{tail}"


def update_readmes(
    methods: Mapping[str, Method], published: Mapping[str, Any] | None, *, check: bool = False
) -> list[Path]:
    """Rewrite (or with ``check`` only compare) the tables; returns the READMEs that were
    (or would be) changed."""
    changed = []
    for method in methods.values():
        path = readme_path(method)
        text = path.read_text()
        new = with_table(text, claims_table(method, published), str(path.name))
        if new != text:
            changed.append(path)
            if not check:
                atomic_write_bytes(path, new.encode())  # never a half-written README
    return changed
