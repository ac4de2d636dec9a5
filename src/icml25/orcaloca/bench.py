"""An offline localization benchmark: bugs injected into pure-Python standard-library modules.
The modules are copied into a work folder (the real standard library is never touched) and form
the "repository". Each candidate bug is one single-line edit inside a function or method: flip a
comparison, add one to an integer constant, swap the first two arguments of a call, or negate a
condition. Each edit changes one token only (the comparison operator, the digit, the two
arguments, or one ``not`` added to or deleted from a condition that needs no parentheses), so
the mutant carries no mark of the edit. The mutated module is executed from its text under its
own name, and the module's reproducers (public-API calls, :mod:`icml25.orcaloca.reproducers`)
run on it with a cap on executed lines; a bug is kept only when a reproducer's result changes or
it raises, and when the mutated function is neither the API that reproducer calls nor called
directly by its code (per the trace: a helper at least one call below). Outcomes and issue texts
name the module by its public name, never the work copy's internal one. The issue is written
from that reproducer: its code, the output it gave (or its real traceback) and the output
expected; the reproducer's real trace (:func:`trace_calls`) goes with it. Gold is the mutated
function, from the AST diff (:func:`gold_from_patch`). Candidates are drawn in a seeded order,
round robin over the modules, so the same arguments give the same bugs.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import linecache
import re
import sys
import tempfile
import traceback
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from icml25.core import validate as V
from icml25.orcaloca.graph import CodeGraph, build_graph
from icml25.orcaloca.metrics import Gold, gold_from_patch
from icml25.orcaloca.policy import Issue
from icml25.orcaloca.reproducers import REPRODUCERS
from icml25.orcaloca.trace import LineBudgetExceeded, TraceCall, trace_calls

MODULES: tuple[str, ...] = tuple(REPRODUCERS)
OPERATORS = ("compare", "off_by_one", "swap_args", "negate")
_FLIP = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_OP_TEXT: dict[type[ast.cmpop], str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}
_OP_RE: dict[type[ast.cmpop], re.Pattern[bytes]] = {
    ast.Lt: re.compile(rb"<(?!=)"),
    ast.LtE: re.compile(rb"<="),
    ast.Gt: re.compile(rb">(?!=)"),
    ast.GtE: re.compile(rb">="),
    ast.Eq: re.compile(rb"=="),
    ast.NotEq: re.compile(rb"!="),
    ast.In: re.compile(rb"(?<![A-Za-z0-9_])in(?![A-Za-z0-9_])"),
    ast.NotIn: re.compile(rb"(?<![A-Za-z0-9_])not\s+in(?![A-Za-z0-9_])"),
    ast.Is: re.compile(rb"(?<![A-Za-z0-9_])is(?![A-Za-z0-9_])"),
    ast.IsNot: re.compile(rb"(?<![A-Za-z0-9_])is\s+not(?![A-Za-z0-9_])"),
}
_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)
"""Conditions that ``not`` negates without parentheses."""
_REPRO = "reproducer.py"


@dataclass(frozen=True)
class Bug:
    """One injected bug: the mutated file's text, its gold, the issue and the trace."""

    id: str
    file: str
    operator: str
    gold: Gold
    gold_node: str
    source: str
    issue: Issue
    raises: bool


@dataclass
class Benchmark:
    """The work folder holding the original modules, their code graph, and the bugs."""

    root: Path
    graph: CodeGraph
    bugs: list[Bug]
    tried: int
    originals: dict[str, str]
    _tmp: Any = field(default=None, repr=False)

    def graph_for(self, bug: Bug) -> CodeGraph:
        """The code graph of the repository with ``bug`` applied."""
        return self.graph.with_source(bug.file, bug.source)


# --------------------------------------------------------------------------- mutation sites
@dataclass(frozen=True)
class _Site:
    qualname: str
    op: str
    line: int  # 1-based
    edits: tuple[tuple[int, int, str], ...]  # byte columns [start, end) -> text, on `line`


def _seg(lines: list[bytes], node: ast.AST) -> tuple[int, int] | None:
    lo, hi = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    if lo is None or lo != hi:
        return None
    return node.col_offset, node.end_col_offset  # type: ignore[attr-defined]


def _op_token(lines: list[bytes], node: ast.Compare) -> tuple[int, int] | None:
    """Byte columns of a one-line comparison's operator token (``None`` when it is not found
    exactly once between the operands)."""
    left, right = node.left, node.comparators[0]
    sl, sr = _seg(lines, left), _seg(lines, right)
    if not sl or not sr or left.lineno != right.lineno or left.lineno != node.lineno:
        return None
    gap = lines[node.lineno - 1][sl[1] : sr[0]]
    hits = list(_OP_RE[type(node.ops[0])].finditer(gap))
    if len(hits) != 1 or (type(node.ops[0]) is ast.In and re.search(rb"\bnot\b", gap)):
        return None
    if type(node.ops[0]) is ast.Is and re.search(rb"\bnot\b", gap):
        return None
    return sl[1] + hits[0].start(), sl[1] + hits[0].end()


def _sites(source: str) -> list[_Site]:
    tree = ast.parse(source)
    lines = [ln.encode() for ln in source.splitlines()]
    out: list[_Site] = []

    def scan(q: str, fn: ast.FunctionDef) -> None:
        for stmt in fn.body:
            for node in ast.walk(stmt):
                line = getattr(node, "lineno", 0)
                if isinstance(node, ast.Compare) and len(node.ops) == 1:
                    flip = _FLIP.get(type(node.ops[0]))
                    tok = _op_token(lines, node) if flip else None
                    if flip and tok:
                        out.append(_Site(q, "compare", line, ((*tok, _OP_TEXT[flip]),)))
                elif (
                    isinstance(node, ast.Constant)
                    and type(node.value) is int
                    and 0 <= node.value <= 64
                ):
                    seg = _seg(lines, node)
                    text = lines[line - 1][seg[0] : seg[1]].decode() if seg else ""
                    if seg and text.isdigit():
                        out.append(_Site(q, "off_by_one", line, ((*seg, str(node.value + 1)),)))
                elif isinstance(node, ast.Call) and len(node.args) >= 2:
                    a, b = node.args[0], node.args[1]
                    sa, sb = _seg(lines, a), _seg(lines, b)
                    if (
                        sa
                        and sb
                        and a.lineno == b.lineno
                        and not isinstance(a, ast.Starred)
                        and not isinstance(b, ast.Starred)
                    ):
                        ta = lines[a.lineno - 1][sa[0] : sa[1]].decode()
                        tb = lines[a.lineno - 1][sb[0] : sb[1]].decode()
                        if ta != tb:
                            out.append(_Site(q, "swap_args", a.lineno, ((*sb, ta), (*sa, tb))))
                elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
                    # negate by adding or deleting one ``not`` token, where no parentheses
                    # are needed: ``if x.y:`` -> ``if not x.y:``, ``if not f(x):`` -> ``if f(x):``
                    t = node.test
                    seg = _seg(lines, t)
                    if seg and isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not):
                        inner = _seg(lines, t.operand)
                        if inner and isinstance(t.operand, _ATOMS):
                            out.append(_Site(q, "negate", t.lineno, ((seg[0], inner[0], ""),)))
                    elif seg and isinstance(t, _ATOMS):
                        out.append(_Site(q, "negate", t.lineno, ((seg[0], seg[0], "not "),)))

    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef):
            scan(stmt.name, stmt)
        elif isinstance(stmt, ast.ClassDef):
            for item in stmt.body:
                if isinstance(item, ast.FunctionDef):
                    scan(f"{stmt.name}.{item.name}", item)
    return out


def _apply(source: str, site: _Site) -> str:
    lines = source.splitlines(keepends=True)
    raw = lines[site.line - 1].encode()
    for lo, hi, text in sorted(site.edits, key=lambda e: -e[0]):  # right to left
        raw = raw[:lo] + text.encode() + raw[hi:]
    lines[site.line - 1] = raw.decode()
    return "".join(lines)


# --------------------------------------------------------------------------- running
def _register(filename: str, source: str) -> None:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def _load(rel: str, source: str, tag: str) -> types.ModuleType:
    name = "orcabench_" + rel.replace("/", "_").removesuffix(".py") + "_" + tag
    mod = types.ModuleType(name)
    mod.__file__ = rel
    _register(rel, source)
    sys.modules[name] = mod
    try:
        exec(compile(source, rel, "exec"), mod.__dict__)
    finally:
        sys.modules.pop(name, None)
    return mod


def _outcome(value: Any, exc: BaseException | None) -> str:
    if exc is not None:
        return f"raises {type(exc).__name__}: {exc}"
    try:
        return repr(value)
    except Exception as e:
        return f"repr fails: {type(e).__name__}"


_CODE: dict[str, types.CodeType] = {}


def _run(
    rel: str, mod: types.ModuleType, bound: str, snippet: str, max_lines: int
) -> tuple[str, BaseException | None, tuple[TraceCall, ...]]:
    code = _CODE.get(snippet)
    if code is None:
        code = _CODE[snippet] = compile(snippet, _REPRO, "exec")
    _register(_REPRO, snippet)
    ns: dict[str, Any] = {bound: mod, "__name__": "__reproducer__"}

    def go() -> Any:
        sys.modules[mod.__name__] = mod
        try:
            exec(code, ns)
        finally:
            sys.modules.pop(mod.__name__, None)
        return ns.get("result")

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        value, exc, calls = trace_calls(go, files={rel: rel}, max_lines=max_lines)
    return _public(_outcome(value, exc), mod.__name__, rel), exc, calls


def _public(text: str, internal: str, rel: str) -> str:
    """``text`` with the work copy's internal module name replaced by the public one
    (``orcabench_html_parser_mut`` -> ``html.parser``): the issue never names it, and an
    outcome differing only by that name is not a bug."""
    return text.replace(internal, rel.removesuffix(".py").replace("/", "."))


def _short(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _traceback(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    start = next((i for i, f in enumerate(frames) if f.filename == _REPRO), 0)
    frames = traceback.StackSummary.from_list(frames[start:])
    stdlib = str(Path(ast.__file__).parent)
    body = traceback.format_list(frames if len(frames) <= 12 else [*frames[:4], *frames[-8:]])
    text = "Traceback (most recent call last):\n" + "".join(body)
    text += "".join(traceback.format_exception_only(type(exc), exc))
    return text.replace(stdlib, "<python>")


def issue_text(
    import_line: str, snippet: str, api: str, got: str, expected: str, exc: BaseException | None
) -> str:
    """The issue a user would file from a reproducer and what it did."""
    code = f"{import_line}\n{snippet}\nprint(repr(result))"
    head = f"{api}() gives a wrong result\n\nRunning this:\n\n```python\n{code}\n```\n\n"
    if exc is not None:
        head = head.replace("gives a wrong result", "raises an exception")
        what = f"raises:\n\n```\n{_short(_traceback(exc), 3000)}```\n\n"
    else:
        what = f"prints\n\n    {_short(got)}\n\n"
    return head + what + f"but I expected\n\n    {_short(expected)}\n"


# --------------------------------------------------------------------------- the generator
_CACHE: dict[tuple[Any, ...], Benchmark] = {}


def make_benchmark(
    n_bugs: int,
    *,
    seed: int = 0,
    modules: Sequence[str] | None = None,
    max_lines: int = 100_000,
    max_tries: int | None = None,
) -> Benchmark:
    """Generate ``n_bugs`` bugs (fewer if the candidates run out), deterministically.

    Parameters
    ----------
    n_bugs
        Bugs wanted.
    seed
        Seeds the order in which candidate edits are tried.
    modules
        Repository paths of the modules to use (default all of :data:`MODULES`).
    max_lines
        Executed-line cap per reproducer run (a mutant that loops is dropped).
    max_tries
        Cap on candidates tried (default ``20 * n_bugs``).

    The result is cached per process for the same arguments.
    """
    n_bugs = V.integer("n_bugs", n_bugs, low=1)
    seed = V.integer("seed", seed, low=0)
    max_lines = V.integer("max_lines", max_lines, low=100)
    mods = tuple(MODULES if modules is None else modules)
    if not mods:
        raise ValueError("modules must name at least one module, got an empty list")
    for m in mods:
        V.choice("modules", m, MODULES)
    tries_cap = V.integer("max_tries", 20 * n_bugs if max_tries is None else max_tries, low=1)
    key = (n_bugs, seed, mods, max_lines, tries_cap)
    if key in _CACHE:
        return _CACHE[key]

    tmp = tempfile.TemporaryDirectory(prefix="orcabench-")
    root = Path(tmp.name)
    originals: dict[str, str] = {}
    for rel in mods:
        spec = importlib.util.find_spec(rel.removesuffix(".py").replace("/", "."))
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            raise FileNotFoundError(f"{rel} is not a pure-Python module here")
        src = Path(spec.origin).read_text(encoding="utf-8")
        originals[rel] = src
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(src, encoding="utf-8")
    graph = build_graph(root)

    expected: dict[str, list[str]] = {}
    queues: dict[str, list[_Site]] = {}
    for i, rel in enumerate(mods):
        _imp, bound, snippets = REPRODUCERS[rel]
        mod = _load(rel, originals[rel], "orig")
        runs = [_run(rel, mod, bound, s, max_lines) for s, _api in snippets]
        expected[rel] = [r[0] for r in runs]
        ran = {c.qualname for r in runs for c in r[2]}  # a function no reproducer runs
        sites = [s for s in _sites(originals[rel]) if s.qualname in ran]  # cannot fail one
        order = np.random.default_rng([seed, i]).permutation(len(sites))
        queues[rel] = [sites[j] for j in order]
    bugs: list[Bug] = []
    tried = 0
    while len(bugs) < n_bugs and tried < tries_cap and any(queues.values()):
        for rel in mods:
            if len(bugs) >= n_bugs or tried >= tries_cap:
                break
            while queues[rel] and tried < tries_cap:
                site = queues[rel].pop(0)
                tried += 1
                bug = _try(rel, site, originals[rel], expected[rel], max_lines, len(bugs))
                if bug is not None:
                    bugs.append(bug)
                    break
    # the graph's text is the original's: register it back for tracebacks elsewhere
    for rel, src in originals.items():
        _register(rel, src)
    bench = Benchmark(root, graph, bugs, tried, originals, tmp)
    _CACHE[key] = bench
    return bench


def _try(
    rel: str, site: _Site, original: str, expected: list[str], max_lines: int, n: int
) -> Bug | None:
    imp, bound, snippets = REPRODUCERS[rel]
    source = _apply(original, site)
    if source == original:
        return None
    try:
        gold = gold_from_patch(original, source, rel)
        mod = _load(rel, source, "mut")
    except Exception:
        return None
    if gold.functions != {f"{rel}:{site.qualname}"}:
        return None
    for (snippet, apis), want in zip(snippets, expected, strict=True):
        if want.startswith("raises"):
            continue
        got, exc, calls = _run(rel, mod, bound, snippet, max_lines)
        if got == want:
            continue
        if isinstance(exc, LineBudgetExceeded) or site.qualname in apis:
            return None
        if any(c.parent < 0 and c.qualname == site.qualname for c in calls):
            return None  # the reproducer's own code calls the gold directly
        api = f"{bound}.{apis[0].split('.')[0]}" if apis else bound
        text = _public(issue_text(imp, snippet, api, got, want, exc), mod.__name__, rel)
        return Bug(
            id=f"{rel}:{site.qualname}:{site.op}:L{site.line}",
            file=rel,
            operator=site.op,
            gold=gold,
            gold_node=f"{rel}::{site.qualname}",
            source=source,
            issue=Issue(text, calls),
            raises=exc is not None,
        )
    return None
