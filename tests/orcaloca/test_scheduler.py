"""The priority queue: heap order, re-sort by history counts, redundancy control, FIFO mode."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.orcaloca import SearchAction, SearchQueue


def act(name: str) -> SearchAction:
    return SearchAction.make("search_callable", query_name=name)


def test_priority_then_fifo():
    q = SearchQueue()
    q.push(act("a"), 1)
    q.push(act("b"), 2)
    q.push(act("c"), 1)
    q.push(act("d"), 2)
    assert [q.pop().arg("query_name") for _ in range(4)] == ["b", "d", "a", "c"]


def test_resort_raises_repeated_proposals():
    q = SearchQueue()
    for n in "abc":
        q.push(act(n), 1, llm=True)
    q.push(act("x"), 2)
    assert not q.push(act("c"), 1, llm=True)  # re-proposal: count 2, not queued again
    assert not q.push(act("c"), 1, llm=True)  # count 3
    q.resort()
    assert [a.arg("query_name") for _p, a in q.items()] == ["c", "x", "a", "b"]
    assert q.items()[0][0] == 3


def test_non_llm_duplicate_does_not_bump():
    q = SearchQueue()
    q.push(act("a"), 1)
    q.push(act("b"), 1)
    q.push(act("b"), 2)  # decomposition again: no bump, no re-entry
    q.resort()
    assert [a.arg("query_name") for _p, a in q.items()] == ["a", "b"]


def test_class_and_callable_are_duplicates():
    q = SearchQueue()
    assert q.push(SearchAction.make("search_class", class_name="C", file_path="f.py"))
    assert not q.push(SearchAction.make("search_callable", query_name="C", file_path="f.py"))
    assert q.push(SearchAction.make("search_callable", query_name="C"))  # other file_path


def test_fifo_mode_ignores_priority():
    q = SearchQueue(priority=False)
    q.push(act("a"), 1)
    q.push(act("b"), 2)
    q.push(act("a"), 1, llm=True)
    q.resort()
    assert [q.pop().arg("query_name") for _ in range(2)] == ["a", "b"]


def test_without_redundancy_control_duplicates_requeue():
    q = SearchQueue(redundancy_control=False)
    q.push(act("a"))
    assert q.push(act("a"))
    assert len(q) == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 2), st.booleans()), max_size=30))
def test_pop_order_matches_reference(ops):
    """Pop order = sort by (-max(priority, history count), first insertion)."""
    q = SearchQueue()
    first: dict[int, tuple[int, int]] = {}
    count: dict[int, int] = {}
    for name, prio, llm in ops:
        if name in count:
            count[name] += llm
        else:
            count[name] = 1
            first[name] = (prio, len(first))
        q.push(act(str(name)), prio, llm=llm)
    q.resort()
    want = sorted(first, key=lambda n: (-max(first[n][0], count[n]), first[n][1]))
    assert [int(q.pop().arg("query_name")) for _ in range(len(q))] == want
