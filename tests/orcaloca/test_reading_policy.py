"""ReadingPolicy: a belief that changes when the code is read (issue 51 item 1)."""

from __future__ import annotations

import math
from collections import Counter

from icml25.orcaloca import CodeGraph, Issue, OrcaLoca, ReadingPolicy, SearchAction, SearchTools
from icml25.orcaloca.policy import word_pieces
from icml25.orcaloca.trace import TraceCall

SRC = {
    "calc.py": (
        "def total(items):\n    return summed(items)\n\n\n"
        "def summed(items):\n    acc = 0\n    for price in items:\n"
        "        acc = acc + price * quantity_factor(price)\n    return acc\n\n\n"
        "def quantity_factor(price):\n    return 1\n\n\n"
        "def unrelated(text):\n    return text.upper()\n"
    )
}
ISSUE = "total() gives a wrong result: the price times quantity sum is off"


def _policy(issue=ISSUE, trace=(), **kw):
    g = CodeGraph.from_sources(SRC)
    pol = ReadingPolicy(**kw)
    pol.prepare(Issue(issue, trace), g)
    return g, pol


def test_bm25_by_hand():
    g, pol = _policy()
    bodies = {i: Counter(word_pieces(g.source(i))) for i in pol.bm.ids}
    n = len(bodies)
    avgdl = sum(sum(d.values()) for d in bodies.values()) / n
    q = set(word_pieces(ISSUE))
    doc = bodies["calc.py::summed"]
    want = 0.0
    for t in q:
        df = sum(t in d for d in bodies.values())
        tf = doc.get(t, 0)
        idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
        want += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * sum(doc.values()) / avgdl))
    assert math.isclose(pol._bm25(doc), want, rel_tol=1e-12)


def test_bm25_of_every_body_equals_the_per_document_score_bit_for_bit():
    # the normalisation scores every body through the postings; a reordered or dropped term
    # would change the last bits or the values
    _g, pol = _policy(trace=(TraceCall("calc.py", "total", 0, 0, -1),))
    fast = pol._bm25_all()
    slow = [pol._bm25(d) for d in pol.bm.docs]
    assert fast == slow and any(v > 0 for v in fast) and any(v == 0 for v in fast)


def test_belief_changes_when_read():
    g, pol = _policy()
    node = "calc.py::summed"  # name shares nothing with the issue, body does (price, quantity)
    before = pol.belief(node)
    assert before == pol.prior(node) and before < 50
    res = SearchTools(g).execute(SearchAction.make("search_callable", query_name="summed"))
    pol.step(new=res, context=[res], queue=[])
    after = pol.belief(node)
    assert after == pol.posterior(node, g.source(node)) and after > before
    # an unread location keeps its prior
    assert pol.belief("calc.py::unrelated") == pol.prior("calc.py::unrelated")


def test_conclusion_names_unread_traced_functions_at_their_prior():
    trace = (TraceCall("calc.py", "total", 0, 0, -1), TraceCall("calc.py", "summed", 1, 1, 0))
    _g, pol = _policy(trace=trace)
    locs = pol.conclude(context=[], last=None)
    assert {loc.node_id for loc in locs} == {"calc.py::total", "calc.py::summed"}


def test_blind_policy_ignores_the_issue():
    g, a = _policy(blind=True)
    _g, b = _policy(issue="something else entirely, unrelated words", blind=True)
    for i in ("calc.py::summed", "calc.py::unrelated", "calc.py::total"):
        assert a.prior(i) == b.prior(i)
        assert a.posterior(i, g.source(i)) == b.posterior(i, g.source(i))
        assert a.posterior(i, g.source(i)) == a.posterior(i, "other code")
    _g, c = _policy()
    _g, d = _policy(issue="unrelated text words upper")
    assert c.prior("calc.py::unrelated") != d.prior("calc.py::unrelated")  # seeing differs


def test_agent_runs_with_reading_policy():
    g = CodeGraph.from_sources(SRC)
    res = OrcaLoca(ReadingPolicy(), max_steps=5).localize(Issue(ISSUE), g)
    assert res.locations and res.tool_calls <= 5
    assert all(loc.node_id in g.nodes for loc in res.locations)


def test_gold_shown_positions():
    from icml25.orcaloca.experiments import OracleReading, gold_shown

    g = CodeGraph.from_sources(
        {"m.py": "class C:\n    def f(self):\n        return 1\n\n\ndef h():\n    return 2\n"}
    )
    assert gold_shown(g, "m.py::C.f", (("function", "m.py::h"), ("class", "m.py::C"))) == 2
    assert gold_shown(g, "m.py::C.f", (("class_skeleton", "m.py::C"),)) == 0  # no code shown
    assert gold_shown(g, "m.py::h", (("error", None), ("file", "m.py"))) == 2
    assert gold_shown(g, "m.py::h", ()) == 0
    pol = OracleReading("m.py::h")
    pol.prepare(Issue("nothing relevant"), g)
    assert pol.posterior("m.py::h", g.source("m.py::h")) == 100
    assert pol.belief("m.py::h") == pol.prior("m.py::h") < 100  # an oracle only once read


def test_names_in_a_method_lists_its_calls_in_walk_order():
    # the memoised call extraction (issue 57) must give the searches the direct AST walk gave
    src = {
        "shop.py": (
            "class Cart:\n    def total(self, items):\n"
            "        x = self.summed(items) + price(len(items))\n"
            "        return helper.scale(x, print(x))\n\n"
            "    def summed(self, items):\n        return 0\n\n\n"
            "def price(n):\n    return n\n"
        )
    }
    g = CodeGraph.from_sources(src)
    pol = ReadingPolicy()
    pol.prepare(Issue("Cart.total is wrong"), g)
    res = SearchTools(g).execute(
        SearchAction.make("search_method_in_class", class_name="Cart", method_name="total")
    )
    assert res.kind == "method"
    want = [
        SearchAction.make("search_callable", query_name="scale"),
        SearchAction.make(
            "search_method_in_class", class_name="Cart", method_name="summed", file_path="shop.py"
        ),
        SearchAction.make("search_callable", query_name="price"),
    ]
    got = pol._names_in(res)
    assert got == want and pol._names_in(res) == want  # the second call from the memo
