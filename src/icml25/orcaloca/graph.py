"""The code graph of a Python repository, built from ``ast``.

Nodes are directories, ``.py`` files, top-level classes, top-level functions, methods (the
direct ``def`` children of a class) and module-level global variables. Edges are directed:

- *contains*: directory -> subdirectory or file -> class / function / global -> method;
- *references*: caller -> callee for calls written as a bare name ``f(...)`` inside a ``def``
  (builtins and attribute calls such as ``self.f()`` add no edge). Among the definitions with
  that name the callee is the one in the same file, else the one whose file path is most
  similar to the module the name was imported from (or to the caller's file).

This follows OrcaLoca's ``Orcar/search/build_graph.py`` (read, not copied): ``async def`` is not
a node, nested ``def``s belong to their outermost ``def``, paths under top-level ``tests/``,
``testing/`` and ``doc/`` are skipped. Files that do not parse are skipped and listed in
:attr:`CodeGraph.skipped` rather than stopping the build.

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


def _module_path(module: str) -> str:
    return module.replace(".", "/") + ".py"


def _parse_file(rel: str, source: str) -> _FileInfo:
    """Nodes, contains edges and bare-name calls of one file (raises SyntaxError)."""
    tree = ast.parse(source, filename=rel)
    nodes: list[Node] = []
    contains: list[tuple[str, str]] = []
    calls: list[tuple[str, str]] = []
    imports: dict[str, str] = {}

    def bare_calls(owner: str, fn: ast.AST) -> None:
        seen: set[str] = set()
        for sub in ast.walk(fn):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
                name = sub.func.id
                if name not in _BUILTINS and name not in seen:
                    seen.add(name)
                    calls.append((owner, name))

    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module:
            for alias in stmt.names:
                imports[alias.asname or alias.name] = _module_path(stmt.module)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                imports[alias.asname or alias.name] = _module_path(alias.name)
        elif isinstance(stmt, ast.FunctionDef):
            nid = f"{rel}::{stmt.name}"
            end = stmt.end_lineno or stmt.lineno
            start = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
            nodes.append(Node(nid, "function", rel, stmt.name, stmt.name, start, end))
            contains.append((rel, nid))
            bare_calls(nid, stmt)
        elif isinstance(stmt, ast.ClassDef):
            cid = f"{rel}::{stmt.name}"
            start = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
            nodes.append(
                Node(cid, "class", rel, stmt.name, stmt.name, start, stmt.end_lineno or start)
            )
            contains.append((rel, cid))
            for item in stmt.body:
                if isinstance(item, ast.FunctionDef):
                    q = f"{stmt.name}.{item.name}"
                    mid = f"{rel}::{q}"
                    mstart = min([item.lineno, *(d.lineno for d in item.decorator_list)])
                    nodes.append(
                        Node(mid, "method", rel, item.name, q, mstart, item.end_lineno or mstart)
                    )
                    contains.append((cid, mid))
                    bare_calls(mid, item)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    gid = f"{rel}::{t.id}"
                    end = stmt.end_lineno or stmt.lineno
                    nodes.append(Node(gid, "global", rel, t.id, t.id, stmt.lineno, end))
                    contains.append((rel, gid))
    return _FileInfo(nodes, contains, calls, imports, source.splitlines())


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
        defs: dict[str, list[str]] = {}
        for n in nodes.values():
            if n.kind in ("function", "class"):
                defs.setdefault(n.name, []).append(n.id)
        refs: list[tuple[str, str]] = []
        for caller, name, rel in calls:
            cands = defs.get(name)
            if not cands:
                continue
            same = [c for c in cands if nodes[c].file == rel]
            if same:
                callee = same[0]
            else:
                target = imports.get(rel, {}).get(name, rel)
                callee = max(
                    cands,
                    key=lambda c: (
                        difflib.SequenceMatcher(None, nodes[c].file, target).ratio(),
                        c,
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
