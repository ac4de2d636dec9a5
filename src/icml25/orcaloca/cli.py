"""``icml25 localize ISSUE_FILE --repo PATH``: run OrcaLoca on a user's repository and write the
ranked locations and the agent's trace (the command layer; the library itself never prints)."""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path
from typing import TextIO

from icml25.orcaloca.agent import OrcaLoca
from icml25.orcaloca.graph import build_graph
from icml25.orcaloca.policy import Issue, RetrievalPolicy
from icml25.orcaloca.trace import TraceCall, trace_calls

EXIT_USAGE = 2


def run_localize(
    issue_file: str | os.PathLike[str],
    repo: str | os.PathLike[str],
    *,
    reproducer: str | os.PathLike[str] | None = None,
    max_steps: int | None = 30,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Localize the issue in ``issue_file`` within ``repo``; with ``reproducer`` (a Python
    script) its real trace seeds the search. Returns the exit status."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    issue_path, root = Path(issue_file), Path(repo)
    if not root.is_dir():
        print(f"icml25 localize: --repo must be an existing directory, got {str(root)!r}", file=err)
        return EXIT_USAGE
    if not issue_path.is_file():
        print(
            f"icml25 localize: ISSUE_FILE must be a readable file, got {str(issue_path)!r}",
            file=err,
        )
        return EXIT_USAGE
    text = issue_path.read_text(encoding="utf-8", errors="replace")
    if not text.strip():
        print(f"icml25 localize: the issue file {str(issue_path)!r} is empty", file=err)
        return EXIT_USAGE
    graph = build_graph(root)
    trace: tuple[TraceCall, ...] = ()
    if reproducer is not None:
        files = {str((root / f).resolve()): f for f in graph.files}
        sys.path.insert(0, str(root.resolve()))
        try:
            _v, exc, trace = trace_calls(
                lambda: runpy.run_path(str(reproducer), run_name="__main__"), files=files
            )
        finally:
            sys.path.remove(str(root.resolve()))
        text += f"\n\nThe reproducer ended with: {type(exc).__name__}: {exc}" if exc else ""
    agent = OrcaLoca(RetrievalPolicy(), max_steps=max_steps)
    res = agent.localize(Issue(text, trace), graph)
    for path, why in sorted(res.skipped.items()):
        print(f"skipped {path}: {why}", file=err)
    print("Bug locations (most likely first):", file=out)
    for i, loc in enumerate(res.locations, 1):
        print(f"  {i}. {loc.node_id}", file=out)
    if not res.locations:
        print("  (none found)", file=out)
    print(
        f"\nSearch trace ({res.tool_calls} searches, stopped: {res.stopped}; "
        f"{res.scorer_calls} scorer calls):",
        file=out,
    )
    for s in res.seeds:
        print(f"  seed  {s}", file=out)
    for st in res.steps:
        print(f"  {st.step:>4}. {st.action} -> {st.kind} {st.node or ''}".rstrip(), file=out)
    return 0
