"""The five search actions of OrcaLoca over a :class:`~icml25.orcaloca.graph.CodeGraph`.

``search_class(class_name, file_path?)``, ``search_method_in_class(class_name, method_name,
file_path?)``, ``search_callable(query_name, file_path?)``, ``search_file_contents(file_name,
directory_path?)`` and ``search_source_code(file_path, source_code)``, with the official tool
outputs: a class's full text if it spans at most 100 lines, else its skeleton; a file's full
text if at most 200 lines, else its skeleton; a disambiguation list for an ambiguous name.
Without ``file_path`` a name is ambiguous if it is defined more than once anywhere, as any kind
(function, method, class, file name, global); with ``file_path``, more than once in that file.
``search_callable`` on a class falls back to ``search_class``. One departure: with
``file_path``, a name with exactly one top-level ``def``/``class`` in that file resolves to it
even if methods of the same name exist there (officially the answer would be a disambiguation
list again, leaving such a function unreachable).
"""

from __future__ import annotations

from dataclasses import dataclass

from icml25.orcaloca.graph import CodeGraph

ACTIONS: tuple[str, ...] = (
    "search_class",
    "search_method_in_class",
    "search_callable",
    "search_file_contents",
    "search_source_code",
)
_ARGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # required, optional
    "search_class": (("class_name",), ("file_path",)),
    "search_method_in_class": (("class_name", "method_name"), ("file_path",)),
    "search_callable": (("query_name",), ("file_path",)),
    "search_file_contents": (("file_name",), ("directory_path",)),
    "search_source_code": (("file_path", "source_code"), ()),
}
CLASS_FULL_LINES = 100
FILE_FULL_LINES = 200


@dataclass(frozen=True)
class SearchAction:
    """One call of a search action: its name and keyword arguments (strings)."""

    name: str
    args: tuple[tuple[str, str], ...]

    @classmethod
    def make(cls, name: str, **kwargs: str | None) -> SearchAction:
        """``SearchAction.make("search_callable", query_name="f", file_path="a.py")``; arguments
        that are ``None`` or empty are left out."""
        if name not in _ARGS:
            raise ValueError(f"name must be one of {list(ACTIONS)}, got {name!r}")
        required, optional = _ARGS[name]
        kw = {k: v for k, v in kwargs.items() if v is not None and v != ""}
        for k in required:
            if k not in kw:
                raise ValueError(f"{name} needs the argument {k!r}, got {sorted(kw)}")
        unknown = set(kw) - set(required) - set(optional)
        if unknown:
            raise ValueError(f"{name} takes {[*required, *optional]}, got {sorted(unknown)}")
        for k, v in kw.items():
            if not isinstance(v, str):
                raise TypeError(f"{name}: argument {k} must be a string, got {type(v).__name__}")
        return cls(name, tuple(sorted(kw.items())))

    def arg(self, key: str, default: str | None = None) -> str | None:
        return dict(self.args).get(key, default)

    @property
    def key(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        """The redundancy key: ``search_class`` and ``search_callable`` on the same name and
        ``file_path`` are the same action."""
        if self.name in ("search_class", "search_callable"):
            name = self.arg("class_name") or self.arg("query_name") or ""
            return ("callable", (("name", name), ("file_path", self.arg("file_path") or "")))
        return (self.name, self.args)

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.args)
        return f"{self.name}({inner})"


@dataclass(frozen=True)
class SearchResult:
    """What an action returned. ``kind``: ``class``, ``class_skeleton``, ``function``,
    ``method``, ``file``, ``file_skeleton``, ``disambiguation``, ``source`` or ``error``;
    ``node`` the graph node it resolved to (``None`` for lists, snippets and errors)."""

    action: SearchAction
    kind: str
    text: str
    node: str | None = None
    candidates: tuple[str, ...] = ()


class SearchTools:
    """Executes :class:`SearchAction` s against a code graph."""

    def __init__(self, graph: CodeGraph) -> None:
        if not isinstance(graph, CodeGraph):
            raise TypeError(f"graph must be a CodeGraph, got {type(graph).__name__}")
        self.graph = graph
        self.by_name: dict[str, list[str]] = {}
        for n in graph.nodes.values():
            if n.kind != "dir":
                self.by_name.setdefault(n.name, []).append(n.id)

    # ------------------------------------------------------------------ outputs
    def class_output(self, action: SearchAction, cid: str) -> SearchResult:
        n = self.graph.nodes[cid]
        if n.end_lineno - n.lineno + 1 <= CLASS_FULL_LINES:
            return SearchResult(action, "class", self.graph.source(cid), cid)
        return SearchResult(action, "class_skeleton", self.skeleton(cid), cid)

    def file_output(self, action: SearchAction, fid: str) -> SearchResult:
        if len(self.graph.lines[fid]) <= FILE_FULL_LINES:
            return SearchResult(action, "file", self.graph.source(fid), fid)
        return SearchResult(action, "file_skeleton", self.skeleton(fid), fid)

    def skeleton(self, nid: str) -> str:
        """Header lines of a class or a file: the ``class``/``def`` lines it contains."""
        g = self.graph
        n = g.nodes[nid]
        lines = g.lines[n.file]
        out = [f"# {nid}"]
        todo = [nid] if n.kind == "class" else g.children(nid)
        for c in todo:
            cn = g.nodes[c]
            if cn.kind == "global":
                out.append(lines[cn.lineno - 1])
                continue
            out.append(_header(lines, cn.lineno))
            if cn.kind == "class":
                for m in g.children(c, "method"):
                    out.append(_header(lines, g.nodes[m].lineno))
        return "\n".join(out)

    def disambiguation(self, action: SearchAction, ids: list[str]) -> SearchResult:
        text = "Multiple matches, add a file_path:\n" + "\n".join(
            f"{self.graph.nodes[i].kind} {i}" for i in ids
        )
        return SearchResult(action, "disambiguation", text, None, tuple(ids))

    def _ambiguous(self, name: str, file_path: str | None) -> list[str]:
        defs = self.by_name.get(name, [])
        if file_path:
            defs = [d for d in defs if self.graph.nodes[d].file == file_path]
        return defs if len(defs) > 1 else []

    # ------------------------------------------------------------------ execution
    def execute(self, action: SearchAction) -> SearchResult:
        """Run one action; never raises for a missing name (an ``error`` result instead)."""
        if not isinstance(action, SearchAction):
            raise TypeError(f"action must be a SearchAction, got {type(action).__name__}")
        g, a = self.graph, action
        fp = a.arg("file_path")
        if a.name in ("search_class", "search_callable"):
            name = a.arg("class_name") or a.arg("query_name") or ""
            kinds = ("class",) if a.name == "search_class" else ("class", "function", "method")
            hits = [
                i
                for i in self.by_name.get(name, [])
                if g.nodes[i].kind in kinds and (not fp or g.nodes[i].file == fp)
            ]
            if not hits:
                return SearchResult(a, "error", f"No {'/'.join(kinds)} named {name!r} found.")
            top = [i for i in hits if g.nodes[i].kind in ("function", "class")]
            amb = self._ambiguous(name, fp)
            if fp and len(top) == 1:
                amb = []  # deviation: a unique top-level def in the named file wins
            if amb:
                return self.disambiguation(a, amb)
            if len(hits) > 1:  # e.g. one name as two methods and nothing else
                return self.disambiguation(a, hits)
            (hit,) = top if fp and len(top) == 1 else hits
            if g.nodes[hit].kind == "class":
                return self.class_output(a, hit)
            return SearchResult(a, g.nodes[hit].kind, g.source(hit), hit)
        if a.name == "search_method_in_class":
            cls, meth = a.arg("class_name") or "", a.arg("method_name") or ""
            hits = [
                i
                for i in self.by_name.get(meth, [])
                if g.nodes[i].kind == "method"
                and g.nodes[i].qualname == f"{cls}.{meth}"
                and (not fp or g.nodes[i].file == fp)
            ]
            if not hits:
                return SearchResult(a, "error", f"No method {cls}.{meth} found.")
            if len(hits) > 1:
                return self.disambiguation(a, hits)
            return SearchResult(a, "method", g.source(hits[0]), hits[0])
        if a.name == "search_file_contents":
            fname, dpath = a.arg("file_name") or "", a.arg("directory_path")
            hits = [
                i
                for i in self.by_name.get(fname, [])
                if g.nodes[i].kind == "file"
                and (not dpath or (i.rsplit("/", 1)[0] if "/" in i else "") == dpath.strip("/"))
            ]
            if not hits:
                return SearchResult(a, "error", f"No file {fname!r} found.")
            if len(hits) > 1:
                return self.disambiguation(a, hits)
            return self.file_output(a, hits[0])
        # search_source_code
        path, code = a.arg("file_path") or "", (a.arg("source_code") or "").strip()
        if path not in g.lines or not code:
            return SearchResult(a, "error", f"No file {path!r} in the repository.")
        lines = g.lines[path]
        for i, line in enumerate(lines):
            if code in line:
                lo, hi = max(0, i - 5), min(len(lines), i + 6)
                return SearchResult(a, "source", "\n".join(lines[lo:hi]))
        return SearchResult(a, "error", f"{code!r} not found in {path}.")


def _header(lines: list[str], lineno: int) -> str:
    """The ``def``/``class`` line at ``lineno`` (past decorators), up to its colon."""
    i = lineno - 1
    while i < len(lines) and lines[i].lstrip().startswith("@"):
        i += 1
    out = [lines[i]] if i < len(lines) else []
    while out and not out[-1].rstrip().endswith(":") and i + 1 < len(lines) and len(out) < 6:
        i += 1
        out.append(lines[i])
    return "\n".join(out)
