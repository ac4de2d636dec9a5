"""Bad input at OrcaLoca's public entry points: a clear error naming the argument."""

from __future__ import annotations

import io

import pytest

from icml25.orcaloca import (
    AgentConfig,
    CodeGraph,
    Issue,
    LLMPolicy,
    OrcaLoca,
    ReadingPolicy,
    RetrievalPolicy,
    SearchAction,
    SearchQueue,
    SearchTools,
    auc,
    build_graph,
    gold_from_patch,
    localize,
    make_benchmark,
    match,
    trace_calls,
    tracer_seeds,
)
from icml25.orcaloca.cli import run_localize

# not entry points: Benchmark, Bug, Gold, Issue, LocalizationResult, Location
# not entry points: MatchScores, Node, SearchResult, StepOutput, StepRecord, TraceCall

CASES = [
    ("AgentConfig max_steps", lambda: AgentConfig(max_steps=0), ValueError, "max_steps"),
    ("AgentConfig flag", lambda: AgentConfig(priority="yes"), TypeError, "priority"),
    ("AgentConfig thr", lambda: AgentConfig(score_threshold=101), ValueError, "score_threshold"),
    ("CodeGraph", lambda: CodeGraph.from_sources(["a.py"]), TypeError, "sources"),
    ("LLMPolicy", lambda: LLMPolicy(object()), TypeError, "lm must have a generate"),
    ("OrcaLoca policy", lambda: OrcaLoca(policy=object()), TypeError, "policy must have"),
    ("OrcaLoca option", lambda: OrcaLoca(bogus=1), TypeError, "unknown OrcaLoca options"),
    ("OrcaLoca config", lambda: OrcaLoca(config={}), TypeError, "config must be"),
    ("ReadingPolicy blind", lambda: ReadingPolicy(blind="yes"), TypeError, "blind must be a bool"),
    ("RetrievalPolicy", lambda: RetrievalPolicy(noise=-1.0), ValueError, "noise"),
    ("RetrievalPolicy ctx", lambda: RetrievalPolicy(context_chars=0), ValueError, "context_chars"),
    ("SearchAction name", lambda: SearchAction.make("grep", q="x"), ValueError, "name must be"),
    ("SearchAction arg", lambda: SearchAction.make("search_class"), ValueError, "class_name"),
    ("SearchQueue flag", lambda: SearchQueue(priority="yes"), TypeError, "priority"),
    (
        "SearchQueue prio",
        lambda: SearchQueue().push(SearchAction.make("search_class", class_name="C"), 0),
        ValueError,
        "priority must be an integer >= 1",
    ),
    ("SearchQueue pop", lambda: SearchQueue().pop(), IndexError, "empty"),
    ("SearchTools", lambda: SearchTools("graph"), TypeError, "graph must be a CodeGraph"),
    ("auc empty", lambda: auc([], [1.0]), ValueError, "positives"),
    ("auc nan", lambda: auc([1.0], [float("nan")]), ValueError, "negatives"),
    ("build_graph", lambda: build_graph("/no/such/repo"), FileNotFoundError, "repo must be"),
    ("gold syntax", lambda: gold_from_patch("def f(:", "", "a.py"), ValueError, "old_source"),
    ("gold path", lambda: gold_from_patch("", "", ""), ValueError, "file_path"),
    ("localize repo", lambda: localize("bug", "/no/such/repo"), FileNotFoundError, "repo must be"),
    ("localize type", lambda: localize(3, "."), TypeError, "issue must be"),
    ("make_benchmark n", lambda: make_benchmark(0), ValueError, "n_bugs"),
    ("make_benchmark mod", lambda: make_benchmark(2, modules=["json.py"]), ValueError, "modules"),
    ("make_benchmark none", lambda: make_benchmark(2, modules=[]), ValueError, "modules"),
    ("match", lambda: match("gold", []), TypeError, "gold must be a Gold"),
    ("trace_calls", lambda: trace_calls(5, files={}), TypeError, "fn must be callable"),
    (
        "tracer_seeds",
        lambda: tracer_seeds("x", None, RetrievalPolicy()),
        TypeError,
        "issue must be an Issue",
    ),
]


@pytest.mark.parametrize("name,call,exc,words", CASES, ids=[c[0] for c in CASES])
def test_bad_input(name, call, exc, words):
    with pytest.raises(exc, match=words):
        call()


def test_empty_issue(repo):
    with pytest.raises(ValueError, match="issue must have a non-empty text"):
        OrcaLoca().localize(Issue("   "), repo)


def test_cli_bad_input_and_syntax_errors(repo, tmp_path):
    err, out = io.StringIO(), io.StringIO()
    issue = tmp_path / "issue.txt"
    issue.write_text("area() is wrong: _mul")
    assert run_localize(issue, tmp_path / "missing", out=out, err=err) == 2
    assert "--repo must be an existing directory" in err.getvalue()
    (tmp_path / "empty.txt").write_text("\n")
    assert run_localize(tmp_path / "empty.txt", repo, out=out, err=err) == 2
    assert "is empty" in err.getvalue()
    (repo / "pkg" / "bad.py").write_text("def f(:\n")
    out, err = io.StringIO(), io.StringIO()
    assert run_localize(issue, repo, out=out, err=err) == 0
    assert "skipped pkg/bad.py: SyntaxError" in err.getvalue()
    assert "Bug locations" in out.getvalue() and "Search trace" in out.getvalue()
    assert "pkg/shapes.py::_mul" in out.getvalue()


def test_tracer_seed_nodes_refuses_non_issues_by_name() -> None:
    from icml25.orcaloca import tracer_seed_nodes

    with pytest.raises(TypeError, match="issue must be an Issue"):
        tracer_seed_nodes("text", None, None)  # type: ignore[arg-type]
