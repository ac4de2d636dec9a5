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
