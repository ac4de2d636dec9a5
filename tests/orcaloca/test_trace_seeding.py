"""The reproducer's trace enters the search as in OrcaLoca (issue 69 item 5): the traceback's
frames and the functions the issue names are key parents and candidates themselves (layer
0), the re-ranking scorer is told the call chain, and the search is told the seeds."""

from __future__ import annotations

import importlib.util
import json
import math

import pytest

from icml25.orcaloca import (
    CodeGraph,
    Issue,
    LLMPolicy,
    OrcaLoca,
    ReadingPolicy,
    RetrievalPolicy,
    TraceCall,
    build_graph,
    trace_calls,
    tracer_seeds,
)
from icml25.orcaloca.bench import issue_text
from icml25.orcaloca.policy import _doc

# one line of statistics._ss (the sum of squares variance() calls) changed: count += 2
SS_GOOD = "            count += 1\n            sx_partials[d] += n\n"
SS_BAD = "            count += 2\n            sx_partials[d] += n\n"
DATA = [2.75, 1.75, 1.25, 0.25, 0.5, 1.25, 3.5]


def _buggy_statistics(tmp_path):
    """A copy of the standard library's statistics with the bug in ``_ss``, imported from the
    copy under a private name, and its code graph."""
    src = importlib.util.find_spec("statistics").origin
    text = open(src, encoding="utf-8").read()
    assert text.count(SS_GOOD) == 1, "statistics._ss changed; update the planted bug"
    path = tmp_path / "statistics.py"
    path.write_text(text.replace(SS_GOOD, SS_BAD), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("orcaloca_test_statistics_copy", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, path, build_graph(tmp_path)


def test_a_callee_bug_is_found_through_the_trace(tmp_path):
    mod, path, graph = _buggy_statistics(tmp_path)
    value, exc, trace = trace_calls(lambda: mod.variance(DATA), files={str(path): "statistics.py"})
    assert exc is None and not math.isclose(value, 1.3720238095238095)
    by = {c.index: c for c in trace}
    ss = [c for c in trace if c.qualname == "_ss"]
    assert ss and all(by[c.parent].qualname == "variance" for c in ss)  # one call below
    snippet = f"result = statistics.variance({DATA})"
    text = issue_text(
        "import statistics", snippet, "statistics.variance", repr(value), "1.3720238095238095", None
    )
    assert "_ss" not in text  # the issue names variance only
    for policy in (RetrievalPolicy(), ReadingPolicy()):
        res = OrcaLoca(policy, max_steps=10).localize(Issue(text, trace), graph)
        found = [loc.node_id for loc in res.locations]
        assert len(found) <= 3  # the README's promise: at most 3 locations
        assert "statistics.py::_ss" in found, (type(policy).__name__, found)
        # the trace step seeds the named function (layer 0), then its callee _ss
        assert res.seeds[:2] == (
            "search_callable(file_path='statistics.py', query_name='variance')",
            "search_callable(file_path='statistics.py', query_name='_ss')",
        )


LAYERS = {
    "app.py": (
        "def api(x):\n"
        "    try:\n        noisy()\n    except ValueError:\n        pass\n"
        "    return middle(x)\n\n\n"
        "def noisy():\n    raise ValueError('caught')\n\n\n"
        "def middle(x):\n    return leaf(x)\n\n\n"
        "def leaf(x):\n    return 1 / x\n"
    )
}


def test_trace_marks_the_frames_of_the_final_traceback(tmp_path):
    path = tmp_path / "app.py"
    path.write_text(LAYERS["app.py"])
    spec = importlib.util.spec_from_file_location("orcaloca_test_layers", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    _v, exc, trace = trace_calls(lambda: mod.api(0), files={str(path): "app.py"})
    assert isinstance(exc, ZeroDivisionError)
    # noisy() raised too, but its exception was caught: not a frame of the final traceback
    assert [(c.qualname, c.raised) for c in trace] == [
        ("api", True),
        ("noisy", False),
        ("middle", True),
        ("leaf", True),
    ]
    _v, exc, trace = trace_calls(lambda: mod.api(2), files={str(path): "app.py"})
    assert exc is None and not any(c.raised for c in trace)


def test_key_parents_are_candidates_and_traceback_frames_are_key_parents(repo, FixedScore):
    g = build_graph(repo)
    s, u = "pkg/shapes.py", "pkg/util.py"
    calls = [
        TraceCall(s, "Box.volume", 0, 0, -1),  # named in the issue: a key parent
        TraceCall(s, "area", 1, 1, 0),
        TraceCall(s, "_mul", 2, 2, 1),
        TraceCall(u, "helper", 3, 3, 2),
    ]
    pol = FixedScore({"Box.volume": 90, "area": 70, "_mul": 95, "helper": 100})
    pol.prepare(Issue("volume() is wrong"), g)

    def names(trace):
        got = tracer_seeds(Issue("volume() is wrong", tuple(trace)), g, pol)
        return [a.arg("method_name") or a.arg("query_name") for a in got]

    # rerank = (100 - score) + 40 [other file] + 20 layers below the nearest key parent:
    # volume 10 + 0 + 0 = 10 (a key parent is a candidate, layer 0), area 30 + 20 = 50,
    # _mul 5 + 40 = 45, helper 0 + 40 + 60 = 100
    assert names(calls) == ["volume", "_mul", "area", "helper"]
    # the reproducer's traceback passed through _mul: a key parent too (OrcaLoca's keywords
    # from the reproducer's log), so _mul is at layer 0 (5) and helper one below it (0 + 40 + 20)
    calls[2] = TraceCall(s, "_mul", 2, 2, 1, raised=True)
    assert names(calls) == ["_mul", "volume", "area", "helper"]


class RecordingLM:
    """Scores every code 90; step replies propose nothing; remembers every prompt."""

    def __init__(self):
        self.prompts = []

    def generate(self, prompts, max_new_tokens=32, *, chat=True):
        self.prompts += prompts
        out = []
        for p in prompts:
            if "single integer" in p:
                out.append("90")
            else:
                out.append(json.dumps({"observation_feedback": "", "bug_locations": []}))
        return out


def test_the_scorer_sees_the_call_chain_and_the_search_the_seeds(repo):
    s = "pkg/shapes.py"
    trace = (
        TraceCall(s, "Box.volume", 0, 0, -1),
        TraceCall(s, "area", 1, 1, 0),
        TraceCall(s, "_mul", 2, 2, 1),
    )
    lm = RecordingLM()
    res = OrcaLoca(LLMPolicy(lm), max_steps=1, decomposition=False).localize(
        Issue("volume() is wrong", trace), repo
    )
    assert len(res.seeds) == 3
    scorer = [p for p in lm.prompts if "single integer" in p]
    assert any("call chain is: 'volume' -> 'area' -> '_mul'" in p for p in scorer)
    assert not any("Suspicious keywords" in p for p in scorer)
    steps = [p for p in lm.prompts if "single integer" not in p]
    # every score 90: rerank volume 10, area 10 + 20, _mul 10 + 40
    note = f"already in the search queue: {s}::Box.volume, {s}::area, {s}::_mul"
    assert steps and all(note in p for p in steps)


def test_the_judge_weighs_a_seed_by_its_closed_form():
    src = {
        "calc.py": "def total(items):\n    return summed(items)\n\n\n"
        "def summed(items):\n    return sum(price for price in items)\n\n\n"
        "def other(text):\n    return text.upper()\n"
    }
    g = CodeGraph.from_sources(src)
    trace = (TraceCall("calc.py", "total", 0, 0, -1), TraceCall("calc.py", "summed", 1, 1, 0))
    issue = Issue("total() of the prices is wrong", trace)
    pol = ReadingPolicy()
    pol.prepare(issue, g)
    index = pol.bm
    pol.prepare(Issue(issue.text, trace, seeds=("calc.py::summed",)), g)
    assert pol.bm is index  # the second call (the agent's, with the seeds) reuses the index

    def logit(node):
        z = (pol._bm25(_doc(g.source(node))) - pol.bm_mu) / pol.bm_sd
        return 1.2 * z - 1.0

    def want(x):
        return round(100 / (1 + math.exp(-x)))

    # seeded and traced: + 1.5 + 1.5; traced only: + 1.5; neither: + 0
    assert pol.posterior("calc.py::summed", g.source("calc.py::summed")) == want(
        logit("calc.py::summed") + 3.0
    )
    assert pol.posterior("calc.py::total", g.source("calc.py::total")) == want(
        logit("calc.py::total") + 1.5
    )
    assert pol.posterior("calc.py::other", g.source("calc.py::other")) == want(
        logit("calc.py::other")
    )


def test_seed_bonus_is_a_non_negative_number_and_zero_ignores_the_note():
    for bad in (-1.0, float("nan"), "1"):
        with pytest.raises((ValueError, TypeError), match="seed_bonus"):
            RetrievalPolicy(seed_bonus=bad)
    g = CodeGraph.from_sources({"calc.py": "def total(items):\n    return sum(items)\n"})
    trace = (TraceCall("calc.py", "total", 0, 0, -1),)
    code = g.source("calc.py::total")
    scores = []
    for bonus, seeds in ((0.0, ("calc.py::total",)), (1.5, ())):
        pol = ReadingPolicy(seed_bonus=bonus)
        pol.prepare(Issue("total() is wrong", trace, seeds=seeds), g)
        scores.append(pol.posterior("calc.py::total", code))
    assert scores[0] == scores[1]  # no bonus with the note = the note absent
