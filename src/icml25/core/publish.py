"""``icml25 report DIR --publish``: the repository's record of the latest full results
(``REPRODUCTION.md`` and ``docs/reproduction/``), from a finished run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from icml25.core.html import write_html
from icml25.core.report import moved_section, render_markdown, sources_text
from icml25.core.results import load_results


def publish(results: dict[str, Any], run_dir: Path, root: Path) -> Path:
    """Write ``root/REPRODUCTION.md`` from a finished run, with its figures and results.json
    copied to ``root/docs/reproduction/`` (the repository's record of the latest full run)."""
    docs = root / "docs" / "reproduction"
    previous = None
    for name in ("results.json", "previous.json"):
        if not (docs / name).exists():
            continue
        try:
            previous = load_results(docs / name)
        except (ValueError, json.JSONDecodeError):
            previous = None
            continue
        same = (previous.get("created"), previous.get("command")) == (
            results.get("created"),
            results.get("command"),
        )
        if not same:  # republishing the same run compares with what it replaced
            break
        previous = None
    if docs.exists():
        shutil.rmtree(docs)
    docs.mkdir(parents=True)
    if previous is not None:  # kept, so that a republish of this run shows the same moves
        (docs / "previous.json").write_text(json.dumps(previous, indent=2))
    for m in results["methods"]:
        for fig in m.get("figures", []):
            (docs / fig).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(run_dir / fig, docs / fig)
    (docs / "results.json").write_text(json.dumps(results, indent=2))

    write_html(results, run_dir, docs / "report.html")
    body = render_markdown(results).split("\n", 1)[1]
    for m in results["methods"]:
        for fig in m.get("figures", []):
            body = body.replace(f"]({fig})", f"](docs/reproduction/{fig})")
    env = results["environment"]
    if results.get("sources"):
        head = (
            "# Reproduction results\n\n"
            f"The latest full results, collected with `{results['command']}` (nothing re-run) "
            f"at commit `{env.get('git_commit')}`, and published with "
            f"`icml25 report {run_dir} --publish`. Each method comes from the run below; "
            "schema-1 runs were made before the power audit (issue 48) and are re-judged "
            "with intervals from their per-seed values, without null arms, so none of their "
            "claims counts as reproduced. Its results.json is kept in "
            "[docs/reproduction/results.json](docs/reproduction/results.json); the same "
            "results as one page with interval plots: "
            "[docs/reproduction/report.html](docs/reproduction/report.html).\n\n"
            + sources_text(results)
            + "\n"
        )
        if previous is not None:
            head += "\n" + moved_section(previous, results) + "\n"
        path = root / "REPRODUCTION.md"
        path.write_text(head + body)
        return path
    head = (
        "# Reproduction results\n\n"
        f"The latest full run, made with `{results['command']}` at commit "
        f"`{env.get('git_commit')}` on {env['platform']}, and published with "
        f"`icml25 report {run_dir} --publish`. Its results.json is kept in "
        "[docs/reproduction/results.json](docs/reproduction/results.json); the same "
        "results as one page with interval plots: "
        "[docs/reproduction/report.html](docs/reproduction/report.html).\n"
    )
    if previous is not None:
        head += "\n" + moved_section(previous, results) + "\n"
    path = root / "REPRODUCTION.md"
    path.write_text(head + body)
    return path
