"""The code graph of a Python repository, built from ``ast``.

Nodes are directories, ``.py`` files, classes, functions, methods and module-level global
variables. Edges are directed:

- *contains*: directory -> subdirectory or file -> class / function / global; class -> method;
- *references*: caller -> callee for calls written as a bare name ``f(...)`` inside a ``def``
  (builtins and attribute calls such as ``self.f()`` add no edge). Callees are ``def``s only --
  functions and methods, never classes (a call that creates an object adds no edge). Among the
  ``def``s with that name the callee is the one whose official node name
  (``file::Class::method``) is most similar (``difflib`` ratio) to the import it came from
  (``pkg/mod::name``) or, if the name was not imported, to the caller's file path.

This follows OrcaLoca's ``Orcar/search/build_graph.py`` (read, not copied): every non-async
``def`` and every ``class`` is a node wherever it is written (nested in a ``def``, under
``if``/``try``); a ``def`` in a class body or nested in a method is a method of the innermost
class, any other is a function of its file; the calls of a ``def`` after a nested ``def`` in it
are not attributed to anything (the official visitor resets its caller there); ``async def`` is
not a node; module-level ``x = ...`` assignments, also under ``if``/``try``, are globals
(annotated assignments are not). Paths under top-level ``tests/``, ``testing/`` and ``doc/`` are
skipped. Files that do not parse are skipped and listed in :attr:`CodeGraph.skipped` rather than
stopping the build. Node ids that collide (a nested ``def`` named like a top-level one) are one
node: the first definition in the file.

Node ids: ``"pkg/sub"`` (directory, ``""`` for the root), ``"pkg/mod.py"`` (file),
``"pkg/mod.py::Name"`` (class, function, global) and ``"pkg/mod.py::Class.method"``.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import os
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

SKIP_TOP = ("tests", "testing", "doc")
NO_PATH = 999_999
"""The distance of two nodes that no directed path joins (as in the official code)."""
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class Node:
    """A vertex of the code graph: ``kind`` is one of ``dir``, ``file``, ``class``,
    ``function``, ``method``, ``global``; ``lineno``/``end_lineno`` are 1-based, inclusive
    (0 for directories and files)."""

    id: str
    kind: str
    file: str
    name: str
    qualname: str = ""
    lineno: int = 0
    end_lineno: int = 0

    @property
    def class_name(self) -> str:
        return self.qualname.split(".")[0] if self.kind in ("class", "method") else ""


@dataclass
class _FileInfo:
    nodes: list[Node]
    contains: list[tuple[str, str]]
    calls: list[tuple[str, str]]  # (caller id, bare callee name)
    imports: dict[str, str]  # imported name -> module path guess ("pkg/mod.py")
    lines: list[str]


class _FileVisitor(ast.NodeVisitor):
    """Nodes, contains edges and bare-name calls of one file, in the official visitors' order.

    Every (non-async) ``def`` is a node wherever it sits, as every ``class`` is: nested defs,
    defs under ``if``/``try`` and defs inside ``async def`` bodies. A ``def`` inside a class
    body, or nested in a method, is a *method* of the innermost enclosing class (id
    ``file::Class.name``), any other ``def`` is a *function* of the file (``file::name``); a
    class nested anywhere is a class of the file. Module-level ``x = ...`` assignments (also
    under ``if``/``try``) are globals. A bare-name call belongs to the ``def`` being visited;
    as in the official reference visitor, that owner is cleared when a nested ``def`` ends, so
    the enclosing ``def``'s later calls add no edge."""

    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.nodes: list[Node] = []
        self.contains: list[tuple[str, str]] = []
        self.calls: list[tuple[str, str]] = []
        self.imports: dict[str, str] = {}
        self.cls: str | None = None  # innermost enclosing class name
        self.in_def = 0  # depth of enclosing defs (for globals)
        self.owner: str | None = None  # the def that bare-name calls belong to
        self._seen: set[tuple[str, str]] = set()

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:  # "a.b" -> "a::b", as the official reference visitor
            mod, _, last = alias.name.rpartition(".")
            self.imports[alias.asname or alias.name] = f"{mod.replace('.', '/')}::{last}"

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            mod = (node.module or "").replace(".", "/")
            self.imports[alias.asname or alias.name] = f"{mod}::{alias.name}"

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        end = node.end_lineno or node.lineno
        if self.cls is None:
            nid, kind, q, parent = f"{self.rel}::{node.name}", "function", node.name, self.rel
        else:
            q = f"{self.cls}.{node.name}"
            nid, kind, parent = f"{self.rel}::{q}", "method", f"{self.rel}::{self.cls}"
        self.nodes.append(Node(nid, kind, self.rel, node.name, q, start, end))
        self.contains.append((parent, nid))
        self.owner = nid
        self.in_def += 1
        self.generic_visit(node)
        self.in_def -= 1
        self.owner = None  # official quirk: not restored to the enclosing def

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        cid = f"{self.rel}::{node.name}"
        end = node.end_lineno or start
        self.nodes.append(Node(cid, "class", self.rel, node.name, node.name, start, end))
        self.contains.append((self.rel, cid))
        outer, self.cls = self.cls, node.name
        self.generic_visit(node)
        self.cls = outer

    def visit_Assign(self, node: ast.Assign) -> None:
        if self.cls is None and self.in_def == 0:
            for t in node.targets:
                if isinstance(t, ast.Name):
                    gid = f"{self.rel}::{t.id}"
                    end = node.end_lineno or node.lineno
                    self.nodes.append(Node(gid, "global", self.rel, t.id, t.id, node.lineno, end))
                    self.contains.append((self.rel, gid))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if self.owner is not None and isinstance(f, ast.Name) and f.id not in _BUILTINS:
            if (self.owner, f.id) not in self._seen:
                self._seen.add((self.owner, f.id))
                self.calls.append((self.owner, f.id))
        self.generic_visit(node)


def _parse_file(rel: str, source: str) -> _FileInfo:
    """Nodes, contains edges and bare-name calls of one file (raises SyntaxError)."""
    v = _FileVisitor(rel)
    v.visit(ast.parse(source, filename=rel))
    return _FileInfo(v.nodes, v.contains, v.calls, v.imports, source.splitlines())


def _official_id(node: Node) -> str:
    """A node's name as the official graph spells it (``file::Class::method``)."""
    return f"{node.file}::{node.qualname.replace('.', '::')}"


_PARSE_CACHE: dict[tuple[str, str], _FileInfo | SyntaxError] = {}


def _parse_cached(rel: str, source: str) -> _FileInfo:
    key = (rel, source)
    hit = _PARSE_CACHE.get(key)
    if hit is None:
        try:
            hit = _parse_file(rel, source)
        except (SyntaxError, ValueError) as exc:  # ValueError: null bytes
            hit = exc if isinstance(exc, SyntaxError) else SyntaxError(str(exc))
        if len(_PARSE_CACHE) > 4096:
            _PARSE_CACHE.clear()
        _PARSE_CACHE[key] = hit
    if isinstance(hit, SyntaxError):
        raise hit
    return hit


@dataclass
class CodeGraph:
    """A directed code graph with "contains" and "references" edges (see the module doc).

    Build it with :func:`build_graph` (a folder on disk) or :meth:`from_sources` (a mapping of
    relative path to source text)."""

    nodes: dict[str, Node]
    succ: dict[str, list[str]]
    pred: dict[str, list[str]]
    lines: dict[str, list[str]]
    references: list[tuple[str, str]] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    """Files left out, with the reason (a syntax error in the user's repository)."""

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_sources(cls, sources: Mapping[str, str]) -> CodeGraph:
        """The graph of files given as ``{relative/path.py: source}``."""
        if not isinstance(sources, Mapping):
            raise TypeError(
                f"sources must be a mapping of path to source text, got {type(sources).__name__}"
            )
        nodes: dict[str, Node] = {"": Node("", "dir", "", "")}
        edges: list[tuple[str, str]] = []
        calls: list[tuple[str, str, str]] = []  # caller, name, file
        imports: dict[str, dict[str, str]] = {}
        lines: dict[str, list[str]] = {}
        skipped: dict[str, str] = {}
        for rel in sorted(sources):
            src = sources[rel]
            if not isinstance(rel, str) or not isinstance(src, str):
                raise TypeError("sources must map str paths to str source text")
            rel = rel.replace(os.sep, "/").lstrip("/")
            if not rel.endswith(".py") or rel.split("/")[0] in SKIP_TOP:
                continue
            try:
                info = _parse_cached(rel, src)
            except SyntaxError as exc:
                skipped[rel] = f"SyntaxError: {exc.msg} (line {exc.lineno})"
                continue
            parts = rel.split("/")
            parent = ""
            for i in range(1, len(parts)):
                d = "/".join(parts[:i])
                if d not in nodes:
                    nodes[d] = Node(d, "dir", "", parts[i - 1])
                    edges.append((parent, d))
                parent = d
            nodes[rel] = Node(rel, "file", rel, parts[-1])
            edges.append((parent, rel))
            for n in info.nodes:
                nodes.setdefault(n.id, n)
            edges.extend(info.contains)
            calls.extend((c, name, rel) for c, name in info.calls)
            imports[rel] = info.imports
            lines[rel] = info.lines
        defs: dict[str, list[str]] = {}  # def name -> function and method nodes (no classes)
        for n in nodes.values():
            if n.kind in ("function", "method"):
                defs.setdefault(n.name, []).append(n.id)
        refs: list[tuple[str, str]] = []
        for caller, name, rel in calls:
            cands = defs.get(name)
            if not cands:
                continue
            target = imports.get(rel, {}).get(name, rel)
            callee = max(
                cands,
                key=lambda c: (
                    difflib.SequenceMatcher(None, target, _official_id(nodes[c])).ratio(),
                    _official_id(nodes[c]),
                ),
            )
            if callee != caller:
                refs.append((caller, callee))
        succ: dict[str, list[str]] = {k: [] for k in nodes}
        pred: dict[str, list[str]] = {k: [] for k in nodes}
        for a, b in [*edges, *refs]:
            if b not in succ[a]:
                succ[a].append(b)
                pred[b].append(a)
        return cls(nodes, succ, pred, lines, refs, skipped)

    def with_source(self, path: str, source: str) -> CodeGraph:
        """The same graph with one file's text replaced by ``source`` whose definitions sit on
        the same lines (a single-line edit): structure shared, text swapped."""
        if path not in self.lines:
            raise ValueError(f"path must be a file of the graph, got {path!r}")
        new_lines = dict(self.lines)
        new_lines[path] = source.splitlines()
        if len(new_lines[path]) != len(self.lines[path]):
            raise ValueError("with_source needs an edit that keeps every line in place")
        return CodeGraph(self.nodes, self.succ, self.pred, new_lines, self.references, self.skipped)

    # ------------------------------------------------------------------ queries
    def source(self, node_id: str) -> str:
        """The text of a node (a whole file for a file node, ``""`` for a directory)."""
        n = self.nodes[node_id]
        if n.kind == "dir":
            return ""
        lines = self.lines[n.file]
        if n.kind == "file":
            return "\n".join(lines)
        return "\n".join(lines[n.lineno - 1 : n.end_lineno])

    def children(self, node_id: str, kind: str | None = None) -> list[str]:
        """Nodes ``node_id`` contains (not the ones it references), optionally of one kind."""
        out = [c for c in self.succ[node_id] if self._contains(node_id, c)]
        return [c for c in out if kind is None or self.nodes[c].kind == kind]

    def _contains(self, a: str, b: str) -> bool:
        na, nb = self.nodes[a], self.nodes[b]
        if na.kind == "dir":
            return nb.kind in ("dir", "file") and (b.rsplit("/", 1)[0] if "/" in b else "") == a
        if na.kind == "file":
            return nb.file == a and nb.kind in ("class", "function", "global")
        if na.kind == "class":
            return (
                nb.kind == "method"
                and nb.qualname.split(".")[0] == na.name
                and nb.file == (na.file)
            )
        return False

    def distances_from(self, node_id: str, *, reverse: bool = False) -> dict[str, int]:
        """Hop counts of every node reachable from ``node_id`` along the edges (against them
        with ``reverse``), by breadth-first search."""
        adj = self.pred if reverse else self.succ
        dist = {node_id: 0}
        todo = deque([node_id])
        while todo:
            u = todo.popleft()
            for v in adj[u]:
                if v not in dist:
                    dist[v] = dist[u] + 1
                    todo.append(v)
        return dist

    def hops(self, a: str, b: str) -> int:
        """``min(hops(a -> b), hops(b -> a))`` along directed edges, :data:`NO_PATH` if none."""
        for x in (a, b):
            if x not in self.nodes:
                raise KeyError(f"{x!r} is not a node of the graph")
        fwd = self.distances_from(a).get(b, NO_PATH)
        back = self.distances_from(b).get(a, NO_PATH)
        return min(fwd, back)

    def find(self, name: str, kinds: Iterable[str]) -> list[str]:
        """Ids of nodes named ``name`` (a method's own name) of the given kinds, sorted."""
        ks = set(kinds)
        return sorted(n.id for n in self.nodes.values() if n.kind in ks and n.name == name)

    def node_for(self, file: str, qualname: str) -> str | None:
        """The node of ``qualname`` (``"f"``, ``"C"``, ``"C.m"``) in ``file``, if any."""
        nid = f"{file}::{qualname}" if qualname else file
        return nid if nid in self.nodes else None

    @property
    def files(self) -> list[str]:
        return sorted(self.lines)


def build_graph(repo: str | os.PathLike[str]) -> CodeGraph:
    """Read every ``.py`` file under ``repo`` (skipping top-level ``tests/``, ``testing/``,
    ``doc/`` and hidden folders) and build its :class:`CodeGraph`. Files that do not parse
    or decode are listed in ``graph.skipped``.

    Raises
    ------
    FileNotFoundError
        if ``repo`` is not an existing directory.
    """
    if not isinstance(repo, (str, os.PathLike)):
        raise TypeError(f"repo must be a path, got {type(repo).__name__}")
    root = Path(repo)
    if not root.is_dir():
        raise FileNotFoundError(f"repo must be an existing directory, got {str(repo)!r}")
    sources: dict[str, str] = {}
    bad: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d != "__pycache__"
            and not (rel_dir == "." and d in SKIP_TOP)
        )
        for fname in sorted(filenames):
            if not fname.endswith(".py"):
                continue
            rel = fname if rel_dir == "." else f"{rel_dir}/{fname}"
            try:
                sources[rel] = (Path(dirpath) / fname).read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError) as exc:
                bad[rel] = f"{type(exc).__name__}: {exc}"
    graph = CodeGraph.from_sources(sources)
    graph.skipped.update(bad)
    return graph
