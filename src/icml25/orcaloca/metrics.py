"""Localization metrics as in OrcaLoca's ``artifact/parse_output.py`` and
``dataset/parse_golden_patch.py``.

Gold locations come from an AST diff of the patched file against the base file: each changed
line range of the base file maps to the chain of enclosing ``def``/``class`` (outermost ``def``
only): ``"file:func"``, ``"file:Class.method"``, or ``"file:Class"`` for an edit in a class body
outside its methods; a module-level edit gives the file only. A predicted class and method count
as both ``"file:Class"`` and ``"file:Class.method"``. Function match: gold functions are a
subset of the predicted ones (an empty gold set matches); file match likewise on files;
precision: ``|gold & predicted| / |predicted|`` on function keys (1 with no prediction).
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from icml25.core import validate as V
from icml25.orcaloca.policy import Location


@dataclass(frozen=True)
class Gold:
    """The files and function keys a patch touches."""

    files: frozenset[str]
    functions: frozenset[str]


@dataclass(frozen=True)
class MatchScores:
    """One prediction against one gold: function match, file match, precision."""

    function_match: bool
    file_match: bool
    precision: float


def _enclosing(tree: ast.Module, line: int) -> str | None:
    """The key (without the file) of the outermost definition holding ``line``."""
    for stmt in tree.body:
        lo = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
        hi = stmt.end_lineno or stmt.lineno
        if not lo <= line <= hi:
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return stmt.name
        if isinstance(stmt, ast.ClassDef):
            for item in stmt.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    ilo = min([item.lineno, *(d.lineno for d in item.decorator_list)])
                    if ilo <= line <= (item.end_lineno or item.lineno):
                        return f"{stmt.name}.{item.name}"
            return stmt.name
        return None
    return None


_TREES: dict[str, ast.Module] = {}


def _parse(source: str) -> ast.Module:
    tree = _TREES.get(source)
    if tree is None:
        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            raise ValueError(
                f"old_source must be valid Python: {exc.msg} (line {exc.lineno})"
            ) from exc
        if len(_TREES) > 64:
            _TREES.clear()
        _TREES[source] = tree
    return tree


def gold_from_patch(old_source: str, new_source: str, file_path: str) -> Gold:
    """Gold locations of the edit ``old_source -> new_source`` of ``file_path``."""
    for name, v in (("old_source", old_source), ("new_source", new_source)):
        if not isinstance(v, str):
            raise TypeError(f"{name} must be a string, got {type(v).__name__}")
    if not isinstance(file_path, str) or not file_path:
        raise ValueError(f"file_path must be a non-empty string, got {file_path!r}")
    tree = _parse(old_source)
    a, b = old_source.splitlines(), new_source.splitlines()
    # common head and tail first (exact, and fast for the usual one-hunk patch)
    lo = 0
    while lo < min(len(a), len(b)) and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < min(len(a), len(b)) - lo and a[-1 - hi] == b[-1 - hi]:
        hi += 1
    lines: set[int] = set()
    ma, mb = a[lo : len(a) - hi], b[lo : len(b) - hi]
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(
        None, ma, mb, autojunk=False
    ).get_opcodes():
        if tag == "equal":
            continue
        lines.update(range(lo + i1 + 1, lo + i2 + 1) if i2 > i1 else [max(lo + i1, 1)])
    if not lines:
        return Gold(frozenset(), frozenset())
    funcs = {f"{file_path}:{k}" for k in (_enclosing(tree, ln) for ln in lines) if k}
    return Gold(frozenset({file_path}), frozenset(funcs))


def prediction_keys(locations: Iterable[Location]) -> Gold:
    """Files and function keys credited to a list of predicted locations."""
    files, funcs = set(), set()
    for loc in locations:
        if not isinstance(loc, Location):
            raise TypeError(f"locations must hold Location objects, got {type(loc).__name__}")
        files.add(loc.file_path)
        if loc.class_name:
            funcs.add(f"{loc.file_path}:{loc.class_name}")
            if loc.method_name:
                funcs.add(f"{loc.file_path}:{loc.class_name}.{loc.method_name}")
        elif loc.method_name:
            funcs.add(f"{loc.file_path}:{loc.method_name}")
    return Gold(frozenset(files), frozenset(funcs))


def match(gold: Gold, locations: Sequence[Location]) -> MatchScores:
    """Function match, file match and precision of ``locations`` against ``gold``."""
    if not isinstance(gold, Gold):
        raise TypeError(f"gold must be a Gold, got {type(gold).__name__}")
    pred = prediction_keys(locations)
    precision = (
        len(gold.functions & pred.functions) / len(pred.functions) if pred.functions else 1.0
    )
    return MatchScores(gold.functions <= pred.functions, gold.files <= pred.files, precision)


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """Area under the ROC curve: P(positive > negative) + P(tie) / 2 (Mann-Whitney)."""
    pos = V.finite_array("positives", positives, ndim=1)
    neg = V.finite_array("negatives", negatives, ndim=1)
    allv = np.concatenate([pos, neg])
    order = allv.argsort(kind="mergesort")
    ranks = np.empty(len(allv))
    sorted_v = allv[order]
    i = 0
    while i < len(allv):
        j = i
        while j + 1 < len(allv) and sorted_v[j + 1] == sorted_v[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    r = ranks[: len(pos)].sum()
    return float((r - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))
