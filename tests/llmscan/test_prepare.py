"""``prepare`` (issue 71): the set-up fine-tunes exactly the models the reproduction would, so
that the reproduction only loads them and its numbers cannot move."""

from __future__ import annotations

import pytest

from icml25.core.runner import RunContext
from icml25.llmscan import experiments as E


def _recorder(monkeypatch: pytest.MonkeyPatch, cached: bool) -> list[tuple]:
    calls: list[tuple] = []

    def fake_tuned(b, seed, pairs, steps, blocks):
        calls.append((b, seed, tuple(pairs), steps, blocks))
        return object()

    monkeypatch.setattr(E, "tuned_model", fake_tuned)
    monkeypatch.setattr(E, "is_cached", lambda *a: cached)
    return calls


def test_prepare_makes_the_same_fine_tune_calls_as_the_reproduction(monkeypatch, tmp_path):
    calls = _recorder(monkeypatch, cached=False)
    assert E.prepare("quick", seeds=(0, 1, 2), progress=lambda _m: None) == 2  # 1 seed, 2 models
    prepared = list(calls)
    calls.clear()
    b = E.BUDGETS["quick"]
    ctx = RunContext(budget="quick", seeds=(0,), out_dir=tmp_path, progress=lambda _m: None)
    E.implant(ctx, b, 0, E.draw_sets(b, 0))
    assert prepared == calls and len(calls) == 2


def test_prepare_skips_what_is_cached_and_the_tiny_budget(monkeypatch):
    calls = _recorder(monkeypatch, cached=True)
    assert E.prepare("quick", progress=lambda _m: None) == 0
    assert E.prepare("tiny", progress=lambda _m: None) == 0  # the tiny model is never cached
    assert calls == []


def test_prepare_refuses_an_unknown_budget():
    with pytest.raises(ValueError, match="budget must be one of"):
        E.prepare("huge")
