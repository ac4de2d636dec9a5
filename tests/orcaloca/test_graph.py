"""The code graph: nodes, contains and reference edges, hops against hand counts and networkx."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.orcaloca import CodeGraph, build_graph
from icml25.orcaloca.graph import NO_PATH


def test_nodes_and_skips(repo):
    g = build_graph(repo)
    kinds = {i: n.kind for i, n in g.nodes.items()}
    assert kinds["pkg"] == "dir" and kinds["pkg/shapes.py"] == "file"
    assert kinds["pkg/shapes.py::area"] == "function"
    assert kinds["pkg/shapes.py::Box"] == "class"
    assert kinds["pkg/shapes.py::Box.volume"] == "method"
    assert kinds["pkg/shapes.py::LIMIT"] == "global"
    assert "pkg/shapes.py::fetch" not in g.nodes  # async defs are not nodes
    assert not any(i.startswith("tests") for i in g.nodes)  # top-level tests/ skipped


def test_reference_edges_bare_names_only(repo):
    g = build_graph(repo)
    refs = set(g.references)
    assert ("pkg/shapes.py::area", "pkg/shapes.py::_mul") in refs  # same file wins
    assert ("pkg/shapes.py::_mul", "pkg/util.py::helper") in refs  # imported name
    assert ("pkg/shapes.py::Box.volume", "pkg/shapes.py::area") in refs
    # self.volume() / self._suffix() are attribute calls: no edge; builtins (str, abs) skipped
    assert ("pkg/shapes.py::Box.label", "pkg/shapes.py::Box.volume") not in refs
    assert not any(b.endswith("::str") or b.endswith("::abs") for _a, b in refs)


def test_hops_by_hand(repo):
    g = build_graph(repo)
    s = "pkg/shapes.py"
    assert g.hops(f"{s}::Box", f"{s}::Box.volume") == 1  # contains
    assert g.hops(f"{s}::Box.volume", f"{s}::Box") == 1  # min of both directions
    assert g.hops(s, f"{s}::Box.volume") == 2
    assert g.hops("pkg", f"{s}::Box.volume") == 3
    assert g.hops(f"{s}::Box.volume", f"{s}::_mul") == 2  # volume -> area -> _mul
    assert g.hops(f"{s}::Box.label", f"{s}::Box._suffix") == NO_PATH  # siblings, no call edge
    assert g.hops(f"{s}::_mul", "pkg/util.py::helper") == 1
    assert g.hops("pkg/util.py::_mul", f"{s}::area") == NO_PATH


def test_syntax_error_skipped_and_reported(repo):
    (repo / "pkg" / "broken.py").write_text("def f(:\n")
    g = build_graph(repo)
    assert "pkg/broken.py" in g.skipped and "SyntaxError" in g.skipped["pkg/broken.py"]
    assert "pkg/broken.py" not in g.nodes
    assert "pkg/shapes.py::area" in g.nodes


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), max_size=20))
def test_hops_match_networkx(calls):
    """Random call graphs among 8 functions of two files: hops = networkx shortest path,
    min over both directions."""
    bodies = {i: [] for i in range(8)}
    for a, b in calls:
        bodies[a].append(b)
    files = {}
    for f in range(2):
        src = []
        for i in range(f * 4, f * 4 + 4):
            body = "".join(f"    f{j}()\n" for j in bodies[i]) or "    pass\n"
            src.append(f"def f{i}():\n{body}")
        files[f"m{f}.py"] = "from m0 import *\nfrom m1 import *\n" + "\n".join(src)
    g = CodeGraph.from_sources(files)
    G = nx.DiGraph()
    for a, succ in g.succ.items():
        for b in succ:
            G.add_edge(a, b)
    ids = [f"m{i // 4}.py::f{i}" for i in range(8)]
    for a in ids:
        for b in ids:
            want = min(
                nx.shortest_path_length(G, a, b) if nx.has_path(G, a, b) else NO_PATH,
                nx.shortest_path_length(G, b, a) if nx.has_path(G, b, a) else NO_PATH,
            )
            assert g.hops(a, b) == want


# ------------------------------------------------------------------ the official graph (issue 51)
OFFICIAL = """import os
from pkg.shapes import Box

try:
    import fast
except ImportError:
    def fallback(x):
        return x

if os.name == "nt":
    FLAG = 1

    def guarded(x):
        return helper(x)


def helper(x):
    return x


def outer(x):
    helper(x)

    def inner(y):
        return tidy(y)

    return wrap(inner(x))


def tidy(y):
    return y


def wrap(y):
    return y


class Shape:
    def area(self):
        def _half(v):
            return v / 2

        return _half(side())

    class Meta:
        def flag(self):
            return 1


def side():
    return Box(1, 2)


def build():
    return Shape()


def call_method_name():
    return volume(3)
"""


def test_official_nodes_nested_and_guarded_defs():
    g = CodeGraph.from_sources({"pkg/official.py": OFFICIAL})
    f = "pkg/official.py"
    kinds = {i: n.kind for i, n in g.nodes.items()}
    assert kinds[f"{f}::fallback"] == "function"  # under except
    assert kinds[f"{f}::guarded"] == "function"  # under if
    assert kinds[f"{f}::FLAG"] == "global"  # guarded global
    assert kinds[f"{f}::inner"] == "function"  # nested in a function: a function of the file
    assert f"{f}::inner" in g.children(f)
    assert kinds[f"{f}::Shape.area"] == "method"
    assert kinds[f"{f}::Shape._half"] == "method"  # nested in a method: the class's method
    assert f"{f}::Shape._half" in g.children(f"{f}::Shape", "method")
    assert kinds[f"{f}::Meta"] == "class"  # nested class: a class of the file
    assert kinds[f"{f}::Meta.flag"] == "method"
    assert g.source(f"{f}::inner").strip().startswith("def inner")


def test_official_references_no_class_callees_methods_as_callees():
    g = CodeGraph.from_sources(
        {
            "pkg/official.py": OFFICIAL,
            "pkg/shapes.py": "class Box:\n    def volume(self, d):\n        return d\n",
        }
    )
    f = "pkg/official.py"
    refs = set(g.references)
    # calls that create objects (Box(...), Shape()) add no edge: classes are never callees
    assert not any(g.nodes[b].kind == "class" for _a, b in refs)
    assert not any(a in (f"{f}::side", f"{f}::build") for a, _b in refs)
    # a bare name that only a method defines is a callee (the official def table has methods)
    assert (f"{f}::call_method_name", "pkg/shapes.py::Box.volume") in refs
    # calls inside a nested def belong to it; the enclosing def's calls before it are its own,
    # the ones after it are dropped (the official visitor resets its caller)
    assert (f"{f}::outer", f"{f}::helper") in refs
    assert (f"{f}::inner", f"{f}::tidy") in refs
    assert (f"{f}::outer", f"{f}::wrap") not in refs
    assert (f"{f}::outer", f"{f}::inner") not in refs
    assert (f"{f}::Shape.area", f"{f}::side") not in refs  # after the nested _half
    assert (f"{f}::Shape.area", f"{f}::Shape._half") not in refs
    assert (f"{f}::guarded", f"{f}::helper") in refs


def test_callee_is_most_similar_to_the_import():
    """Two defs named ``run``: the import path picks the callee; without an import, the one
    whose node name is closest to the caller's file."""
    g = CodeGraph.from_sources(
        {
            "a/jobs.py": "def run():\n    return 1\n",
            "b/tasks.py": "def run():\n    return 2\n",
            "b/main.py": "from a.jobs import run\n\n\ndef go():\n    return run()\n",
            "b/task2.py": "def go():\n    return run()\n",
        }
    )
    refs = set(g.references)
    assert ("b/main.py::go", "a/jobs.py::run") in refs
    assert ("b/task2.py::go", "b/tasks.py::run") in refs
