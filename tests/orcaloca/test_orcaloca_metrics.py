"""Gold locations from an AST diff, the subset match, precision, AUC."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score

from icml25.orcaloca import Gold, Location, auc, gold_from_patch, match

BASE = """X = 1


def f(a):
    return a + 1


class C:
    k = 2

    def m(self):
        def inner():
            return 3
        return inner()
"""


def edit(old: str, new: str) -> str:
    assert old in BASE
    return BASE.replace(old, new)


def test_gold_function_method_class_module():
    assert gold_from_patch(BASE, edit("a + 1", "a + 2"), "p.py") == Gold(
        frozenset({"p.py"}), frozenset({"p.py:f"})
    )
    # an edit in a nested def counts for the outermost def (the method)
    assert gold_from_patch(BASE, edit("return 3", "return 4"), "p.py").functions == {"p.py:C.m"}
    assert gold_from_patch(BASE, edit("k = 2", "k = 3"), "p.py").functions == {"p.py:C"}
    module = gold_from_patch(BASE, edit("X = 1", "X = 2"), "p.py")
    assert module.functions == frozenset() and module.files == {"p.py"}
    both = gold_from_patch(BASE, edit("a + 1", "a + 2").replace("k = 2", "k = 5"), "p.py")
    assert both.functions == {"p.py:f", "p.py:C"}


def test_match_subset_and_class_credit():
    gold = Gold(frozenset({"p.py"}), frozenset({"p.py:C.m"}))
    hit = match(gold, [Location("p.py", "C", "m")])
    assert hit.function_match and hit.file_match and hit.precision == 0.5  # C and C.m
    miss = match(gold, [Location("p.py", "", "f")])
    assert not miss.function_match and miss.file_match and miss.precision == 0.0
    # a class-body gold is matched by any method of that class (both keys credited)
    cls_gold = Gold(frozenset({"p.py"}), frozenset({"p.py:C"}))
    assert match(cls_gold, [Location("p.py", "C", "other")]).function_match
    # empty prediction: no match, precision 1; empty gold functions: a match
    assert match(gold, []).precision == 1.0 and not match(gold, []).function_match
    assert match(Gold(frozenset({"p.py"}), frozenset()), [Location("q.py")]).function_match


def test_auc_matches_sklearn():
    rng = np.random.default_rng(0)
    pos = rng.integers(0, 5, 7).astype(float)
    neg = rng.integers(0, 5, 30).astype(float)
    want = roc_auc_score(np.r_[np.ones(7), np.zeros(30)], np.r_[pos, neg])
    assert abs(auc(pos, neg) - want) < 1e-12
