"""The agent loop on a small repository, pruning, decomposition, trace, LLM policy parsing."""

from __future__ import annotations

import json

from icml25.orcaloca import (
    Issue,
    LLMPolicy,
    OrcaLoca,
    RetrievalPolicy,
    SearchAction,
    SearchQueue,
    SearchResult,
    SearchTools,
    build_graph,
    trace_calls,
)
from icml25.orcaloca.graph import NO_PATH


def test_localizes_the_named_helper(repo):
    issue = Issue("area(3, 4) returns the wrong value: _mul multiplies wrongly via helper")
    res = OrcaLoca(RetrievalPolicy(), max_steps=8).localize(issue, repo)
    assert res.tool_calls <= 8 and res.steps
    assert "pkg/shapes.py::_mul" in [loc.node_id for loc in res.locations]
    assert len(res.locations) <= 3


def test_budget_and_stop(repo):
    res = OrcaLoca(RetrievalPolicy(), max_steps=2).localize("area is wrong in _mul", repo)
    assert res.tool_calls == 2 and res.stopped == "step budget"
    res = OrcaLoca(RetrievalPolicy()).localize("area is wrong in _mul", repo)
    assert res.stopped == "queue empty"


def test_pruning_keeps_nearest_and_drops_files(repo):
    g = build_graph(repo)
    tools = SearchTools(g)
    s = "pkg/shapes.py"
    acts = [
        SearchAction.make("search_method_in_class", class_name="Box", method_name="_suffix"),
        SearchAction.make("search_callable", query_name="area", file_path=s),
        SearchAction.make("search_file_contents", file_name="util.py"),
        SearchAction.make("search_callable", query_name="helper"),
        SearchAction.make("search_method_in_class", class_name="Box", method_name="volume"),
    ]
    results = [tools.execute(a) for a in acts]
    agent = OrcaLoca(top_k_search=3)
    ctx = agent.context(results, [f"{s}::_mul"], g, {})
    # h: area 1, helper 1, volume 2, _suffix NO_PATH; util.py is a file result: dropped
    assert [r.node for r in ctx] == [f"{s}::area", "pkg/util.py::helper", f"{s}::Box.volume"]
    assert g.hops(f"{s}::Box._suffix", f"{s}::_mul") == NO_PATH
    # no potential locations: h = 0 for all, insertion order; unpruned: every result, oldest
    # first (the official search cache is appended to)
    assert agent.context(results, [], g, {})[0].node == f"{s}::Box._suffix"
    assert OrcaLoca(pruning=False).context(results, [], g, {}) == results


def test_decomposition_thresholds(repo, FixedScore):
    g = build_graph(repo)
    tools = SearchTools(g)
    pol = FixedScore({"Box.__init__": 90, "Box.volume": 80, "Box.label": 75, "Box._suffix": 99})
    pol.prepare(Issue("x"), g)
    agent = OrcaLoca(pol, top_k_methods=2)
    q = SearchQueue()
    res = tools.execute(SearchAction.make("search_class", class_name="Box"))
    agent.decompose(res, g, q)
    got = [(p, a.arg("method_name")) for p, a in q.items()]
    assert got == [(2, "_suffix"), (2, "__init__")]  # > 75 strictly, top 2, priority 2


def test_disambiguation_and_fallback(repo):
    tools = SearchTools(build_graph(repo))
    r = tools.execute(SearchAction.make("search_callable", query_name="_mul"))
    assert r.kind == "disambiguation" and len(r.candidates) == 2
    r = tools.execute(SearchAction.make("search_callable", query_name="Box"))
    assert r.kind == "class" and r.node == "pkg/shapes.py::Box"  # callable -> class
    r = tools.execute(SearchAction.make("search_callable", query_name="nothing"))
    assert r.kind == "error" and r.node is None


def test_trace_calls_records_repository_frames(repo, monkeypatch):
    import importlib
    import sys

    monkeypatch.syspath_prepend(str(repo))
    for m in ("pkg", "pkg.shapes", "pkg.util"):
        monkeypatch.delitem(sys.modules, m, raising=False)

    shapes = importlib.import_module("pkg.shapes")
    files = {shapes.__file__: "pkg/shapes.py"}
    value, exc, calls = trace_calls(lambda: shapes.Box(2, 3).volume(4), files=files)
    assert value == 24 and exc is None
    names = [(c.qualname, c.depth) for c in calls]
    assert names == [("Box.__init__", 0), ("Box.volume", 0), ("area", 1), ("_mul", 2)]


class FakeLM:
    def __init__(self, replies):
        self.replies = list(replies)

    def generate(self, prompts, max_new_tokens=32, *, chat=True):
        return [self.replies.pop(0) if self.replies else "not json" for _ in prompts]


def test_llm_policy_parses_json_and_survives_garbage(repo):
    step = {
        "observation_feedback": "look at _mul",
        "potential_bug_locations": [{"file_path": "pkg/shapes.py", "method_name": "_mul"}],
        "new_search_actions": [
            {
                "action": "search_callable",
                "action_input": {"query_name": "_mul", "file_path": "pkg/shapes.py"},
            },
            {"action": "bogus", "action_input": {}},
        ],
    }
    final = {
        "bug_locations": [{"file_path": "/pkg/shapes.py", "class_name": "", "method_name": "_mul"}]
    }
    lm = FakeLM([json.dumps(step), "Sure! " + json.dumps(step), json.dumps(final)])
    pol = LLMPolicy(lm)
    res = OrcaLoca(pol, max_steps=1, decomposition=False).localize("area wrong", repo)
    assert [s.node for s in res.steps] == ["pkg/shapes.py::_mul"]
    assert [loc.node_id for loc in res.locations] == ["pkg/shapes.py::_mul"]
    garbage = OrcaLoca(LLMPolicy(FakeLM([])), max_steps=3).localize("area wrong", repo)
    assert garbage.locations == () and garbage.stopped == "queue empty"
    assert isinstance(
        SearchResult(SearchAction.make("search_callable", query_name="x"), "error", ""),
        SearchResult,
    )


def test_llm_scorer_parses_integers(repo):
    pol = LLMPolicy(FakeLM(["  87 because", "no idea", "250"]))
    pol.prepare(Issue("x"), build_graph(repo))
    assert [pol.score("n", "code") for _ in range(3)] == [87, 0, 100]
    assert pol.failures == 1


def test_cli_main_localize(repo, tmp_path, capsys):
    from icml25.cli import main

    issue = tmp_path / "issue.txt"
    issue.write_text("Box.volume gives the wrong result because _mul adds")
    assert main(["localize", str(issue), "--repo", str(repo), "--max-steps", "5"]) == 0
    out = capsys.readouterr().out
    assert "Bug locations" in out and "1." in out


def test_tracer_seeds_rerank_formula(repo, FixedScore):
    from icml25.orcaloca import TraceCall, tracer_seeds

    g = build_graph(repo)
    s, u = "pkg/shapes.py", "pkg/util.py"
    trace = (
        TraceCall(s, "Box.volume", 0, 0, -1),  # key parent: named in the issue
        TraceCall(s, "area", 1, 1, 0),
        TraceCall(s, "_mul", 2, 2, 1),
        TraceCall(u, "helper", 3, 3, 2),
        TraceCall(s, "Box.label", 0, 4, -1),  # not below a key parent: ignored
    )
    # rerank = (100 - score) + 40 [other file] + 20 layers: area 30+0+20 = 50,
    # _mul 5+0+40 = 45, helper 0+40+60 = 100; label is never a candidate
    pol = FixedScore({"area": 70, "_mul": 95, "helper": 100, "Box.label": 100})
    pol.prepare(Issue("volume() is wrong"), g)
    got = tracer_seeds(Issue("volume() is wrong", trace), g, pol)
    assert [a.arg("query_name") for a in got] == ["_mul", "area", "helper"]
    assert all(a.arg("file_path") for a in got)
    # scores at or below 50 are dropped
    pol.fixed["area"] = 50
    got = tracer_seeds(Issue("volume() is wrong", trace), g, pol)
    assert [a.arg("query_name") for a in got] == ["_mul", "helper"]


def test_disambiguation_keeps_top_one_unless_more_than_top_k_survive():
    """Official rule: > 75 survivors sorted; if at most ``top_k_disambiguation`` survive only
    the best is queued, else the top k (the old code truncated first, so it always kept one)."""
    from icml25.orcaloca import CodeGraph

    src = {f"m{i}.py": "def run():\n    return 1\n" for i in range(5)}
    g = CodeGraph.from_sources(src)
    tools = SearchTools(g)
    res = tools.execute(SearchAction.make("search_callable", query_name="run"))
    assert res.kind == "disambiguation" and len(res.candidates) == 5

    class ByFile(RetrievalPolicy):
        def __init__(self, scores):
            super().__init__()
            self.fixed = scores

        def score(self, node_id, code):
            return self.fixed[node_id.split(".py")[0]]

    def queued(scores):
        pol = ByFile(scores)
        pol.prepare(Issue("x"), g)
        q = SearchQueue()
        OrcaLoca(pol).decompose(res, g, q)
        return [a.arg("file_path") for _p, a in q.items()]

    # 3 survivors (<= top 3): only the best
    assert queued({"m0": 80, "m1": 90, "m2": 76, "m3": 10, "m4": 75}) == ["m1.py"]
    # 4 survivors (> top 3): the top 3
    assert queued({"m0": 80, "m1": 90, "m2": 76, "m3": 99, "m4": 75}) == ["m3.py", "m1.py", "m0.py"]
    assert queued({"m0": 1, "m1": 2, "m2": 3, "m3": 4, "m4": 5}) == []
