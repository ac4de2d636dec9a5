"""``icml25 localize ISSUE_FILE --repo PATH``: run OrcaLoca on a user's repository and write the
ranked locations and the agent's trace, as text or as JSON (the command layer; the library
itself never prints).

``--model`` picks the decision maker: ``embedded`` (default, :class:`RetrievalPolicy`, no
language model), ``reading`` (:class:`ReadingPolicy`: embedded, its belief updated by what it
reads), ``hf`` / ``hf:NAME_OR_PATH`` (a local Hugging Face causal LM through
:class:`icml25.core.llm.HFLanguageModel`; plain ``hf`` is the cached SmolLM2) or
``openai:MODEL`` with ``--base-url URL`` (any OpenAI-compatible endpoint through
:class:`icml25.core.llm.OpenAICompatibleLM`; the key, if any, is read from the environment
variable named by ``--api-key-env``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any, TextIO

EXIT_USAGE = 2
JSON_SCHEMA = 1
"""Version of the ``--json`` document (keys: schema, issue_file, repo, model, locations, seeds,
steps, stopped, searches, policy_calls, scorer_calls, skipped, reproducer_exception)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``localize`` sub-command's arguments (used by ``icml25``'s parser)."""
    p.add_argument("issue_file", type=Path, help="a text file with the issue")
    p.add_argument("--repo", type=Path, required=True, help="the repository to search")
    p.add_argument(
        "--reproducer",
        type=Path,
        default=None,
        help="a Python script that reproduces the issue; its call trace seeds the search",
    )
    p.add_argument("--max-steps", type=int, default=30, help="searches at most (default 30)")
    p.add_argument(
        "--model",
        default="embedded",
        help="embedded (default, no LLM) | reading (no LLM, belief updated on reading) | hf | "
        "hf:NAME_OR_PATH | openai:MODEL (with --base-url)",
    )
    p.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (openai:MODEL)")
    p.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        help="environment variable holding the endpoint's key (default OPENAI_API_KEY)",
    )
    p.add_argument("--json", action="store_true", help="write one JSON document to stdout")


def run_from_args(args: argparse.Namespace) -> int:
    """Run the sub-command from parsed arguments."""
    return run_localize(
        args.issue_file,
        args.repo,
        reproducer=args.reproducer,
        max_steps=args.max_steps,
        model=args.model,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        as_json=args.json,
    )


def make_policy(
    model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY"
) -> Any:
    """The decision maker a ``--model`` spec names (raises ValueError for a bad spec)."""
    from icml25.orcaloca.policy import LLMPolicy, ReadingPolicy, RetrievalPolicy

    if not isinstance(model, str) or not model.strip():
        raise ValueError(
            f"--model must be embedded, reading, hf, hf:NAME_OR_PATH or openai:MODEL, got {model!r}"
        )
    kind, _, rest = model.partition(":")
    if kind != "openai" and base_url is not None:
        raise ValueError(f"--base-url goes with --model openai:MODEL, got --model {model!r}")
    if model == "embedded":
        return RetrievalPolicy()
    if model == "reading":
        return ReadingPolicy()
    if kind == "hf":
        from icml25.core.llm import HFLanguageModel

        return LLMPolicy(HFLanguageModel.load(rest or None))
    if kind == "openai":
        if not rest:
            raise ValueError("--model openai:MODEL needs a model name after 'openai:', got none")
        if base_url is None:
            raise ValueError("--model openai:MODEL needs --base-url URL (http:// or https://)")
        from icml25.core.llm import OpenAICompatibleLM

        return LLMPolicy(OpenAICompatibleLM(base_url, rest, api_key=os.environ.get(api_key_env)))
    raise ValueError(
        f"--model must be embedded, reading, hf, hf:NAME_OR_PATH or openai:MODEL, got {model!r}"
    )


def _top_level_names(root: Path) -> set[str]:
    """Importable top-level names a repository defines (packages and modules at its root,
    and under ``src/``)."""
    names = set()
    for base in (root, root / "src"):
        if base.is_dir():
            for p in base.iterdir():
                if p.suffix == ".py":
                    names.add(p.stem)
                elif p.is_dir() and (p / "__init__.py").exists():
                    names.add(p.name)
    return names


def _run_reproducer(script: Path, root: Path, files: dict[str, str]) -> tuple[Any, Any]:
    """Run ``script`` against the repository's own code (modules of the same names that are
    already imported, e.g. an installed copy, are set aside meanwhile) and trace it."""
    from icml25.orcaloca.trace import trace_calls

    names = _top_level_names(root)
    saved = {k: m for k, m in sys.modules.items() if k.split(".")[0] in names and k != "__main__"}
    for k in saved:
        del sys.modules[k]
    paths = [str(root.resolve()), str((root / "src").resolve())]
    sys.path[:0] = paths
    out, err = io.StringIO(), io.StringIO()  # the script's prints stay out of the results
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            _v, exc, trace = trace_calls(
                lambda: runpy.run_path(str(script), run_name="__main__"), files=files
            )
    finally:
        for p in paths:
            sys.path.remove(p)
        for k in [k for k in sys.modules if k.split(".")[0] in names]:
            del sys.modules[k]
        sys.modules.update(saved)
    return exc, trace


def run_localize(
    issue_file: str | os.PathLike[str],
    repo: str | os.PathLike[str],
    *,
    reproducer: str | os.PathLike[str] | None = None,
    max_steps: int | None = 30,
    model: str = "embedded",
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    as_json: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Localize the issue in ``issue_file`` within ``repo``; with ``reproducer`` (a Python
    script) its real trace seeds the search. Returns the exit status (2: a usage error,
    explained on ``err``)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err

    def usage(msg: str) -> int:
        print(f"icml25 localize: {msg}", file=err)
        return EXIT_USAGE

    issue_path, root = Path(issue_file), Path(repo)
    if not root.is_dir():
        return usage(f"--repo must be an existing directory, got {str(root)!r}")
    if not issue_path.is_file():
        return usage(f"ISSUE_FILE must be a readable file, got {str(issue_path)!r}")
    if max_steps is not None and (
        isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1
    ):
        return usage(f"--max-steps must be a positive integer, got {max_steps!r}")
    if reproducer is not None and not Path(reproducer).is_file():
        return usage(f"--reproducer must be an existing Python script, got {str(reproducer)!r}")
    text = issue_path.read_text(encoding="utf-8", errors="replace")
    if not text.strip():
        return usage(f"the issue file {str(issue_path)!r} is empty")
    try:
        policy = make_policy(model, base_url=base_url, api_key_env=api_key_env)
    except ValueError as bad:
        return usage(str(bad))

    from icml25.orcaloca.agent import OrcaLoca
    from icml25.orcaloca.graph import build_graph
    from icml25.orcaloca.policy import Issue
    from icml25.orcaloca.trace import TraceCall

    graph = build_graph(root)
    trace: tuple[TraceCall, ...] = ()
    exc_text = None
    if reproducer is not None:
        files = {str((root / f).resolve()): f for f in graph.files}
        raised, trace = _run_reproducer(Path(reproducer), root, files)
        if raised is not None:
            exc_text = f"{type(raised).__name__}: {raised}"
            text += f"\n\nThe reproducer ended with: {exc_text}"
            frames = [f"{c.file}::{c.qualname}" for c in trace if c.raised]
            if frames:  # the traceback's repository frames, outermost first, as an issue has
                text += "\nTraceback through the repository: " + " -> ".join(frames)
    res = OrcaLoca(policy, max_steps=max_steps).localize(Issue(text, trace), graph)
    for path, why in sorted(res.skipped.items()):
        print(f"skipped {path}: {why}", file=err)
    if as_json:
        doc = {
            "schema": JSON_SCHEMA,
            "issue_file": str(issue_path),
            "repo": str(root),
            "model": model,
            "locations": [
                {
                    "file_path": loc.file_path,
                    "class_name": loc.class_name,
                    "method_name": loc.method_name,
                    "node": loc.node_id,
                }
                for loc in res.locations
            ],
            "seeds": list(res.seeds),
            "steps": [
                {
                    "step": st.step,
                    "action": st.action,
                    "kind": st.kind,
                    "node": st.node,
                    "queue_length": st.queue_length,
                    "suspects": list(st.locations),
                }
                for st in res.steps
            ],
            "stopped": res.stopped,
            "searches": res.tool_calls,
            "policy_calls": res.policy_calls,
            "scorer_calls": res.scorer_calls,
            "skipped": dict(sorted(res.skipped.items())),
            "reproducer_exception": exc_text,
        }
        json.dump(doc, out, indent=2)
        out.write("\n")
        return 0
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
