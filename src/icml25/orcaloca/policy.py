"""The decision maker behind the agent: a language model, or an explicit seeded scoring policy.

OrcaLoca asks an LLM three things: a relevance score 0..100 for a piece of code ("how likely
does this code need modifying to solve the issue"), a step reply (observation, potential bug
locations, new search actions) and a conclusion (the bug locations). :class:`LLMPolicy` asks
any :class:`icml25.core.llm.LanguageModel` (a local Hugging Face model or an OpenAI-compatible
endpoint) with the official prompts' structure and parses its JSON.

:class:`RetrievalPolicy` is the embedded default: no language model, every decision an explicit
function of the issue text and the reproducer's real trace, plus seeded Gaussian noise of a
chosen size so that a reproduction can make the scorer worse on purpose:

- code score: ``100 sigmoid(1.2 z + 1.5 [node in trace] + 1.5 [tracer seed] - 1 + noise eps)``,
  ``z`` the TF-IDF cosine of issue and code standardised over the repository's functions, the
  seeds being what the trace step put in the queue and named to the agent (``Issue.seeds``);
- name score (for proposing a search it has not read yet): ``100 sigmoid(3 overlap +
  1.5 [name in trace] - 1 + noise eps)``, ``overlap`` the share of the name's word pieces that
  the issue contains;
- a step proposes searches for the names it reads in the new result whose name score > 50
  (at most ``max_new_actions``, best first) and re-proposes up to two queued ones scoring > 60;
  its potential bug locations are the code it can see scoring > 50 (best three);
- it reads its context in the order given until ``context_chars`` characters are used (a
  finite window: this is where pruning matters to it); the conclusion returns the best
  ``max_locations`` nodes it can see.

``eps`` is a standard normal drawn from ``(seed, node or name)``: the same question always gets
the same answer, as from a model decoding greedily.

Long by design: the three policies (retrieval, reading, LLM) implement one Policy protocol over
shared indexing helpers (word pieces, BM25), which the agent treats as interchangeable.
"""

from __future__ import annotations

import ast
import builtins
import functools
import json
import math
import re
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from icml25.core import validate as V
from icml25.orcaloca.actions import SearchAction, SearchResult
from icml25.orcaloca.graph import CodeGraph
from icml25.orcaloca.trace import TraceCall


@dataclass(frozen=True)
class Issue:
    """An issue: its text and, when a reproducer ran, the calls it made (:func:`trace_calls`).

    ``seeds``: the node ids the trace step put in the search queue, best first. The agent sets
    them for the search (OrcaLoca's search prompt names them after the problem statement as
    "more likely to be related to the bug, since they are called by reproducer code")."""

    text: str
    trace: tuple[TraceCall, ...] = ()
    seeds: tuple[str, ...] = ()


@dataclass(frozen=True)
class Location:
    """A predicted bug location (the official output's ``file_path``, ``class_name``,
    ``method_name``; a top-level function has an empty ``class_name``)."""

    file_path: str
    class_name: str = ""
    method_name: str = ""

    @property
    def node_id(self) -> str:
        q = ".".join(p for p in (self.class_name, self.method_name) if p)
        return f"{self.file_path}::{q}" if q else self.file_path

    @classmethod
    def of_node(cls, graph: CodeGraph, node_id: str) -> Location:
        n = graph.nodes[node_id]
        if n.kind == "method":
            c, m = n.qualname.split(".", 1)
            return cls(n.file, c, m)
        if n.kind == "class":
            return cls(n.file, n.name, "")
        if n.kind in ("function", "global"):
            return cls(n.file, "", n.name)
        return cls(n.file or node_id)


@dataclass(frozen=True)
class StepOutput:
    """One step's reply: observation, potential bug locations, new search actions."""

    observation: str
    locations: tuple[Location, ...] = ()
    actions: tuple[SearchAction, ...] = ()


class Policy(Protocol):
    """What the agent asks its decision maker (an LLM or :class:`RetrievalPolicy`).

    ``prepare`` is called twice per issue: before the trace step (whose re-ranking asks
    ``score``) with the issue as given, then before the search with ``Issue.seeds`` set to the
    trace step's seeds. A policy may also define ``score_traced(node_id, code, chain)``, the
    trace step's scorer, told the reproducer's call chain into the function (``chain``: the
    qualified names from the function the issue names down to it); without it ``score`` is
    asked."""

    def prepare(self, issue: Issue, graph: CodeGraph) -> None: ...

    def score(self, node_id: str, code: str) -> int: ...

    def step(
        self,
        *,
        new: SearchResult | None,
        context: Sequence[SearchResult],
        queue: Sequence[SearchAction],
    ) -> StepOutput: ...

    def conclude(
        self, *, context: Sequence[SearchResult], last: StepOutput | None
    ) -> tuple[Location, ...]: ...


# --------------------------------------------------------------------------- text retrieval
_STOP = frozenset(
    "self cls the and for not none true false return if else elif def class import from as "
    "with in is or of to be it this that a an on at by we raise try except while pass break "
    "continue lambda yield assert del global nonlocal args kwargs str int len list dict".split()
)
_BUILTINS = frozenset(dir(builtins))
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def word_pieces(text: str) -> list[str]:
    """Identifiers split at ``_`` and camel case, lower-cased, plus each whole identifier;
    keywords and one-letter pieces dropped."""
    out: list[str] = []
    for ident in _IDENT.findall(text):
        low = ident.lower().strip("_")
        pieces = [p.lower() for part in ident.split("_") for p in _CAMEL.findall(part)]
        if len(pieces) > 1 and low and low not in _STOP:
            out.append(low)
        out.extend(p for p in pieces if len(p) > 1 and p not in _STOP)
    return out


_DOC_CACHE: dict[str, Counter[str]] = {}


def _doc(code: str) -> Counter[str]:
    hit = _DOC_CACHE.get(code)
    if hit is None:
        if len(_DOC_CACHE) > 50_000:
            _DOC_CACHE.clear()
        hit = _DOC_CACHE[code] = Counter(word_pieces(code))
    return hit


@dataclass
class _Index:
    n: int
    idf: dict[str, float]
    postings: dict[str, list[tuple[int, float]]]
    norms: np.ndarray
    by_name: dict[str, list[str]]


_INDEX: dict[int, tuple[Any, _Index]] = {}


def _index(graph: CodeGraph) -> _Index:
    """TF-IDF index of a graph's functions, methods and classes, shared by the graphs that
    :meth:`CodeGraph.with_source` derives from one base (same nodes; the statistics come from
    the base text)."""
    hit = _INDEX.get(id(graph.nodes))
    if hit is not None and hit[0] is graph.nodes:
        return hit[1]
    ids = [n.id for n in graph.nodes.values() if n.kind in ("function", "method", "class")]
    docs = [_doc(graph.source(i)) for i in ids]
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    n = len(docs)
    idf = {t: math.log((n + 1) / (c + 1)) + 1.0 for t, c in df.items()}
    postings: dict[str, list[tuple[int, float]]] = {}
    norms = np.ones(max(n, 1))
    for k, d in enumerate(docs):
        sq = 0.0
        for t, c in d.items():
            w = (1.0 + math.log(c)) * idf[t]
            postings.setdefault(t, []).append((k, w))
            sq += w * w
        norms[k] = math.sqrt(sq) or 1.0
    by_name: dict[str, list[str]] = {}
    for node in graph.nodes.values():
        by_name.setdefault(node.name, []).append(node.id)
    if len(_INDEX) > 8:
        _INDEX.clear()
    index = _Index(max(n, 1), idf, postings, norms, by_name)
    _INDEX[id(graph.nodes)] = (graph.nodes, index)
    return index


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _eps(seed: int, key: str) -> float:
    """A standard normal that is a fixed function of ``(seed, key)`` (Box-Muller on two
    CRC-32 hashes)."""
    raw = f"{seed}:{key}".encode()
    u1 = (zlib.crc32(raw) + 0.5) / 2**32
    u2 = (zlib.crc32(raw, 0x9E3779B9) + 0.5) / 2**32
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


class RetrievalPolicy:
    """The embedded, explicit, seeded decision maker (see the module docstring).

    Parameters
    ----------
    noise
        Standard deviation of the Gaussian noise added to every score's logit (0: none).
    seed
        Seed of the noise.
    context_chars
        How many characters of context it reads per step (its window).
    max_locations
        Cap on the conclusion's locations.
    max_new_actions
        Cap on the new searches it proposes per step.
    seed_bonus
        Logit its scores add for a function the trace step seeded (``Issue.seeds``: the
        official search prompt names them as likely related to the bug); 0 ignores the note.
    """

    def __init__(
        self,
        *,
        noise: float = 0.0,
        seed: int = 0,
        context_chars: int = 12_000,
        max_locations: int = 3,
        max_new_actions: int = 4,
        seed_bonus: float = 1.5,
    ) -> None:
        self.noise = V.number("noise", noise, low=0.0)
        self.seed_bonus = V.number("seed_bonus", seed_bonus, low=0.0)
        self.seed = V.integer("seed", seed, low=0)
        self.context_chars = V.integer("context_chars", context_chars, low=1)
        self.max_locations = V.integer("max_locations", max_locations, low=1)
        self.max_new_actions = V.integer("max_new_actions", max_new_actions, low=0)
        self.graph: CodeGraph | None = None
        self.calls = 0

    TRACE_BONUS = 1.5
    """Logit added for a function the reproducer ran."""

    # ------------------------------------------------------------------ setup
    def prepare(self, issue: Issue, graph: CodeGraph) -> None:
        """Index the repository's functions and the issue; the same issue again with its seeds
        set (the agent's second call) reuses the index and only resets the scores."""
        if not isinstance(issue, Issue):
            raise TypeError(f"issue must be an Issue, got {type(issue).__name__}")
        if not isinstance(graph, CodeGraph):
            raise TypeError(f"graph must be a CodeGraph, got {type(graph).__name__}")
        prev = getattr(self, "_prepared", None)
        same = (
            prev is not None
            and prev[0] is graph.nodes
            and prev[1] == issue.text
            and prev[2] == issue.trace
        )
        self.graph, self.issue = graph, issue
        self.seeds = frozenset(issue.seeds)
        self._memo: dict[tuple[str, str], int] = {}
        if not same:
            self._index_issue(issue, graph)
            self._prepared = (graph.nodes, issue.text, issue.trace)

    def _index_issue(self, issue: Issue, graph: CodeGraph) -> None:
        """The issue's query against the repository's index (the costly part of prepare)."""
        index = _index(graph)
        self.idf, self._by_name = index.idf, index.by_name
        q = Counter(word_pieces(issue.text))
        self.issue_words = set(q)
        unseen = math.log(index.n + 1) + 1.0
        self.qvec = {t: c * self.idf.get(t, unseen) for t, c in q.items()}
        self.qnorm = math.sqrt(sum(v * v for v in self.qvec.values())) or 1.0
        cos = np.zeros(index.n)
        for t, qw in self.qvec.items():
            for d, w in index.postings.get(t, ()):
                cos[d] += qw * w
        cos /= index.norms * self.qnorm
        self.mu, self.sd = float(cos.mean()), float(cos.std()) or 1.0
        self.traced = {f"{c.file}::{c.qualname}" for c in issue.trace}
        self.traced_names = {c.qualname.split(".")[-1] for c in issue.trace} | {
            c.qualname.split(".")[0] for c in issue.trace
        }

    def _cosine(self, doc: Counter[str]) -> float:
        num, den = 0.0, 0.0
        for t, c in doc.items():
            w = (1.0 + math.log(c)) * self.idf.get(t, 1.0)
            den += w * w
            if t in self.qvec:
                num += w * self.qvec[t]
        return num / (math.sqrt(den) * self.qnorm) if den else 0.0

    # ------------------------------------------------------------------ scores
    def _trace(self, node_id: str) -> float:
        """The trace's evidence about a location: it ran in the reproducer, and the trace step
        seeded it."""
        return self.TRACE_BONUS * (node_id in self.traced) + self.seed_bonus * (
            node_id in self.seeds
        )

    def _to_score(self, evidence: float, trace: float, tag: str) -> int:
        """0..100 from a score's evidence term, the trace's term and the seeded noise: the one
        formula behind every score and belief (``tag`` keys the noise draw)."""
        logit = evidence + trace - 1.0
        if self.noise:
            logit += self.noise * _eps(self.seed, tag)
        return round(100 * _sigmoid(logit))

    def score(self, node_id: str, code: str) -> int:
        """Relevance 0..100 of ``code`` (the text of ``node_id``) to the issue."""
        key = ("code", node_id + "\0" + code)
        hit = self._memo.get(key)
        if hit is None:
            self.calls += 1
            z = (self._cosine(_doc(code)) - self.mu) / self.sd
            hit = self._memo[key] = self._to_score(1.2 * z, self._trace(node_id), "code:" + node_id)
        return hit

    def score_traced(self, node_id: str, code: str, chain: Sequence[str]) -> int:
        """The trace step's scorer: :meth:`score` (the trace's term already says the function
        ran; the call chain adds nothing this policy reads)."""
        return self.score(node_id, code)

    def name_score(self, name: str) -> int:
        """Relevance 0..100 of a name it has not read the code of."""
        key = ("name", name)
        hit = self._memo.get(key)
        if hit is None:
            pieces = set(word_pieces(name)) or {name.lower()}
            overlap = len(pieces & self.issue_words) / len(pieces)
            hit = self._memo[key] = self._to_score(
                3.0 * overlap, self.TRACE_BONUS * (name in self.traced_names), "name:" + name
            )
        return hit

    # ------------------------------------------------------------------ reading
    def _visible(self, new: SearchResult | None, context: Sequence[SearchResult]) -> list[str]:
        """Code nodes whose text it reads: the new result, then context in order, within its
        window; a full class or file text shows the functions inside it."""
        assert self.graph is not None
        g, seen, out, used = self.graph, set(), [], 0
        for r in ([new] if new is not None else []) + list(context):
            if r is not new:
                used += len(r.text)
                if used > self.context_chars:
                    break
            if r.node is None:
                continue
            ids = [r.node]
            if r.kind == "class":
                ids += g.children(r.node, "method")
            elif r.kind == "file":
                ids += [c for c in g.children(r.node) if g.nodes[c].kind != "global"]
                ids += [m for c in list(ids) for m in g.children(c, "method")]
            for i in ids:
                if i not in seen and g.nodes[i].kind in ("function", "method"):
                    seen.add(i)
                    out.append(i)
        return out

    def _names_in(self, r: SearchResult) -> list[SearchAction]:
        """Searches a reader of ``r`` could ask for: the calls in a function, the methods and
        functions of a class or file, the candidates of a disambiguation list."""
        assert self.graph is not None
        g = self.graph
        out: list[SearchAction] = []
        if r.kind == "disambiguation":
            for c in r.candidates:
                n = g.nodes[c]
                if n.kind == "method":
                    cl, m = n.qualname.split(".", 1)
                    out.append(
                        SearchAction.make(
                            "search_method_in_class", class_name=cl, method_name=m, file_path=n.file
                        )
                    )
                elif n.kind in ("function", "class"):
                    out.append(
                        SearchAction.make("search_callable", query_name=n.name, file_path=n.file)
                    )
            return out
        if r.node is None:
            return out
        n = g.nodes[r.node]
        if r.kind in ("function", "method"):
            calls = _calls_in(r.text)
            if calls is None:  # not parseable
                return out
            for kind, name in calls:
                if kind == "self" and n.class_name:
                    out.append(
                        SearchAction.make(
                            "search_method_in_class",
                            class_name=n.class_name,
                            method_name=name,
                            file_path=n.file,
                        )
                    )
                elif name not in _BUILTINS:  # f(...), x.f(...), or self.f(...) outside a class
                    out.append(SearchAction.make("search_callable", query_name=name))
        elif r.kind in ("class", "class_skeleton"):
            for m in g.children(r.node, "method"):
                out.append(
                    SearchAction.make(
                        "search_method_in_class",
                        class_name=n.name,
                        method_name=g.nodes[m].name,
                        file_path=n.file,
                    )
                )
        elif r.kind in ("file", "file_skeleton"):
            for c in g.children(r.node):
                if g.nodes[c].kind in ("function", "class"):
                    out.append(
                        SearchAction.make(
                            "search_callable", query_name=g.nodes[c].name, file_path=n.file
                        )
                    )
        return out

    @staticmethod
    def _action_name(a: SearchAction) -> str:
        return (
            a.arg("method_name")
            or a.arg("query_name")
            or a.arg("class_name")
            or a.arg("file_name")
            or ""
        )

    def step(
        self,
        *,
        new: SearchResult | None,
        context: Sequence[SearchResult],
        queue: Sequence[SearchAction],
    ) -> StepOutput:
        """Observation, potential locations and new searches after reading ``new``."""
        if self.graph is None:
            raise RuntimeError("call prepare(issue, graph) before step")
        g = self.graph
        proposals: dict[Any, tuple[int, SearchAction]] = {}
        if new is not None:
            for a in self._names_in(new):
                s = self.name_score(self._action_name(a))
                if s > 50 and a.key not in proposals:
                    proposals[a.key] = (s, a)
        else:  # first step: the names the issue mentions that the repository defines
            for w in dict.fromkeys(_IDENT.findall(self.issue.text)):
                if any(g.nodes[i].kind in ("function", "class", "method") for i in self._defs(w)):
                    s = self.name_score(w)
                    if s > 50:
                        proposals[w] = (s, SearchAction.make("search_callable", query_name=w))
        best = sorted(proposals.values(), key=lambda t: -t[0])[: self.max_new_actions]
        again = sorted(
            ((self.name_score(self._action_name(a)), a) for a in queue),
            key=lambda t: -t[0],
        )
        actions = [a for _s, a in best] + [a for s, a in again[:2] if s > 60]
        visible = self._visible(new, context)
        scored = sorted(((self.score(i, g.source(i)), i) for i in visible), key=lambda t: -t[0])
        locs = tuple(Location.of_node(g, i) for s, i in scored[:3] if s > 50)
        obs = (
            f"read {new.action if new else 'the issue'}; "
            f"suspects: {', '.join(loc.node_id for loc in locs) or 'none'}"
        )
        return StepOutput(obs, locs, tuple(actions))

    def _defs(self, name: str) -> list[str]:
        return self._by_name.get(name, [])

    def conclude(
        self, *, context: Sequence[SearchResult], last: StepOutput | None
    ) -> tuple[Location, ...]:
        """The best ``max_locations`` code nodes it can see (and last step's suspects)."""
        if self.graph is None:
            raise RuntimeError("call prepare(issue, graph) before conclude")
        g = self.graph
        ids = set(self._visible(None, context))
        if last is not None:
            ids |= {loc.node_id for loc in last.locations if loc.node_id in g.nodes}
        ranked = sorted(ids, key=lambda i: (-self.score(i, g.source(i)), i))
        return tuple(Location.of_node(g, i) for i in ranked[: self.max_locations])


@functools.lru_cache(maxsize=4096)
def _calls_in(code: str) -> tuple[tuple[str, str], ...] | None:
    """The calls in ``code`` in :func:`ast.walk` order: ``("name", f)`` for ``f(...)``,
    ``("self", m)`` for ``self.m(...)``, ``("attr", m)`` for any other ``x.m(...)``; ``None``
    when it does not parse. Memoised: the main job's agents read the same bodies thousands of
    times (21,000 parses in orcaloca's quick run)."""
    try:
        tree = ast.parse(_dedent(code))
    except SyntaxError:
        return None
    out: list[tuple[str, str]] = []
    for sub in ast.walk(tree):
        if not isinstance(sub, ast.Call):
            continue
        f = sub.func
        if isinstance(f, ast.Name):
            out.append(("name", f.id))
        elif isinstance(f, ast.Attribute):
            is_self = isinstance(f.value, ast.Name) and f.value.id == "self"
            out.append(("self" if is_self else "attr", f.attr))
    return tuple(out)


# --------------------------------------------------------------------------- reading policy
@dataclass
class _BM25:
    n: int
    avgdl: float
    df: Counter[str]
    docs: list[Counter[str]]
    ids: list[str]
    lengths: list[int]  # each document's length, sum(doc.values())
    postings: dict[str, list[tuple[int, int]]]  # term -> (document index, tf), in order


_BM25_INDEX: dict[int, tuple[Any, _BM25]] = {}


def _bm25_index(graph: CodeGraph) -> _BM25:
    """Identifier statistics of a graph's function and method bodies (shared, like
    :func:`_index`, by the graphs :meth:`CodeGraph.with_source` derives from one base)."""
    hit = _BM25_INDEX.get(id(graph.nodes))
    if hit is not None and hit[0] is graph.nodes:
        return hit[1]
    ids = [n.id for n in graph.nodes.values() if n.kind in ("function", "method")]
    docs = [_doc(graph.source(i)) for i in ids]
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    n = max(len(docs), 1)
    avgdl = (sum(sum(d.values()) for d in docs) / n) or 1.0
    if len(_BM25_INDEX) > 8:
        _BM25_INDEX.clear()
    postings: dict[str, list[tuple[int, int]]] = {}
    for j, d in enumerate(docs):
        for t, tf in d.items():
            postings.setdefault(t, []).append((j, tf))
    index = _BM25(n, avgdl, df, docs, ids, [sum(d.values()) for d in docs], postings)
    _BM25_INDEX[id(graph.nodes)] = (graph.nodes, index)
    return index


class ReadingPolicy(RetrievalPolicy):
    """An embedded decision maker whose belief about a location changes when it reads it.

    Before reading a function or method, its belief is a *prior* from what the agent knows
    without the body: ``100 sigmoid(3 overlap + t - 1)``, ``overlap`` the share of the word
    pieces of ``Class.name`` that the issue contains, ``t = 1.5 [traced] + 1.5 [seed]`` the
    trace's term (``traced``: the reproducer ran it; ``seed``: the trace step seeded it and
    named it to the agent, ``Issue.seeds``). Once its code has been shown to the agent (the new
    result, or the context within the window; a full class or file shows what it contains), the
    belief is the *posterior* ``100 sigmoid(1.2 z + t - 1)`` where ``z`` is the body's BM25 score
    (``k1 = 1.2``, ``b = 0.75``, over identifier word pieces) against the issue text plus the
    names of the functions the reproducer ran, standardised over the repository's function and
    method bodies. Read beliefs are remembered for the rest of the search.

    - step: proposals as :class:`RetrievalPolicy`; suspects = the best three read locations it
      sees now with belief > 50;
    - conclusion: the best ``max_locations`` by belief among what it sees now, every suspect it
      named during the search, and the functions the reproducer ran (unread ones at their
      prior);
    - ``score(node, code)`` (the scorer that decomposition and the tracer rerank ask, which is
      given the code) is the posterior of ``code``.

    ``blind=True`` is the content-free null: every score is seeded noise (sd 1.5 on the logit),
    independent of the issue, the trace and the code.
    """

    K1 = 1.2
    B = 0.75

    def __init__(self, *, blind: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(blind, bool):
            raise TypeError(f"blind must be a bool, got {blind!r}")
        self.blind = blind

    def prepare(self, issue: Issue, graph: CodeGraph) -> None:
        super().prepare(issue, graph)
        self.read: dict[str, int] = {}
        self.suspected: dict[str, None] = {}

    def _index_issue(self, issue: Issue, graph: CodeGraph) -> None:
        super()._index_issue(issue, graph)
        self.bm = _bm25_index(graph)
        trace_names = " ".join(sorted({c.qualname for c in issue.trace}))
        terms = set(word_pieces(issue.text)) | set(word_pieces(trace_names))
        bm = self.bm
        self.bm_idf = {
            t: math.log((bm.n - bm.df.get(t, 0) + 0.5) / (bm.df.get(t, 0) + 0.5) + 1.0)
            for t in terms
        }
        raw = np.array(self._bm25_all()) if bm.docs else np.zeros(1)
        self.bm_mu, self.bm_sd = float(raw.mean()), float(raw.std()) or 1.0

    def _bm25_all(self) -> list[float]:
        """:meth:`_bm25` of every indexed document, term by term over the postings: each
        document's terms are added in the same order with the same operations, so every
        score equals ``_bm25(doc)`` bit for bit, without visiting the documents that lack a
        query term (the main job scores every body once an issue: 1.76M calls before)."""
        bm = self.bm
        norms = [self._norm(dl) for dl in bm.lengths]
        out = [0.0] * len(bm.docs)
        for t, idf in self.bm_idf.items():
            for j, tf in bm.postings.get(t, ()):
                out[j] += idf * tf * (self.K1 + 1) / (tf + norms[j])
        return out

    def _norm(self, dl: int) -> float:
        """BM25's length normalisation of a document of ``dl`` terms."""
        return self.K1 * (1 - self.B + self.B * dl / self.bm.avgdl)

    def _bm25(self, doc: Counter[str]) -> float:
        norm = self._norm(sum(doc.values()))
        out = 0.0
        for t, idf in self.bm_idf.items():
            tf = doc.get(t, 0)
            if tf:
                out += idf * tf * (self.K1 + 1) / (tf + norm)
        return out

    def _blind(self, key: str) -> int:
        return round(100 * _sigmoid(1.5 * _eps(self.seed, "blind:" + key)))

    def prior(self, node_id: str) -> int:
        """Belief about a location whose code it has not read."""
        if self.blind:
            return self._blind("prior:" + node_id)
        assert self.graph is not None
        key = ("prior", node_id)
        hit = self._memo.get(key)
        if hit is None:
            n = self.graph.nodes[node_id]
            pieces = set(word_pieces(n.qualname or n.name)) or {n.name.lower()}
            overlap = len(pieces & self.issue_words) / len(pieces)
            hit = self._memo[key] = self._to_score(
                3.0 * overlap, self._trace(node_id), "prior:" + node_id
            )
        return hit

    def posterior(self, node_id: str, code: str) -> int:
        """Belief about a location after reading its code."""
        if self.blind:
            return self._blind("post:" + node_id)
        key = ("post", node_id + "\0" + code)
        hit = self._memo.get(key)
        if hit is None:
            self.calls += 1
            z = (self._bm25(_doc(code)) - self.bm_mu) / self.bm_sd
            hit = self._memo[key] = self._to_score(1.2 * z, self._trace(node_id), "code:" + node_id)
        return hit

    def belief(self, node_id: str) -> int:
        """Posterior if it has read ``node_id``, else prior."""
        return self.read.get(node_id, -1) if node_id in self.read else self.prior(node_id)

    def score(self, node_id: str, code: str) -> int:
        return self.posterior(node_id, code)

    def name_score(self, name: str) -> int:
        if self.blind:
            return self._blind("name:" + name)
        return super().name_score(name)

    def _read(self, ids: list[str]) -> None:
        assert self.graph is not None
        for i in ids:
            self.read[i] = self.posterior(i, self.graph.source(i))

    def step(
        self,
        *,
        new: SearchResult | None,
        context: Sequence[SearchResult],
        queue: Sequence[SearchAction],
    ) -> StepOutput:
        if self.graph is None:
            raise RuntimeError("call prepare(issue, graph) before step")
        visible = self._visible(new, context)
        self._read(visible)
        out = super().step(new=new, context=context, queue=queue)
        g = self.graph
        ranked = sorted(visible, key=lambda i: (-self.belief(i), i))
        locs = tuple(Location.of_node(g, i) for i in ranked[:3] if self.belief(i) > 50)
        for loc in locs:
            self.suspected[loc.node_id] = None
        obs = (
            f"read {new.action if new else 'the issue'}; "
            f"suspects: {', '.join(loc.node_id for loc in locs) or 'none'}"
        )
        return StepOutput(obs, locs, out.actions)

    def conclude(
        self, *, context: Sequence[SearchResult], last: StepOutput | None
    ) -> tuple[Location, ...]:
        if self.graph is None:
            raise RuntimeError("call prepare(issue, graph) before conclude")
        g = self.graph
        visible = self._visible(None, context)
        self._read(visible)
        ids = set(visible) | set(self.suspected)
        ids |= {
            t for t in self.traced if t in g.nodes and g.nodes[t].kind in ("function", "method")
        }
        if last is not None:
            ids |= {loc.node_id for loc in last.locations if loc.node_id in g.nodes}
        ranked = sorted(ids, key=lambda i: (-self.belief(i), i))
        return tuple(Location.of_node(g, i) for i in ranked[: self.max_locations])


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text)


# --------------------------------------------------------------------------- language model
SCORER_SYSTEM = (
    "You are a Python expert. Score how likely the given code needs to be modified to solve "
    "the issue, as one integer from 0 to 100."
)
STEP_SYSTEM = (
    "You localize the bug of an issue in a code repository by calling search APIs: "
    "search_class(class_name, file_path?), search_method_in_class(class_name, method_name, "
    "file_path?), search_callable(query_name, file_path?), search_file_contents(file_name, "
    "directory_path?), search_source_code(file_path, source_code). Read the new result against "
    "the earlier search results, list potential bug locations, and plan new actions (or none). "
    'Answer in JSON: {"observation_feedback": str, "potential_bug_locations": [{"file_path": '
    'str, "class_name": str, "method_name": str}], "new_search_actions": [{"action": str, '
    '"action_input": {...}}]}'
)
CONCLUDE_SYSTEM = (
    "Conclude the search: answer in JSON with the bug locations only: "
    '{"bug_locations": [{"file_path": str, "class_name": str, "method_name": str}]}'
)


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (``None`` if there is none)."""
    start = text.find("{")
    while start >= 0:
        depth = 0
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    try:
                        obj = json.loads(text[start : i + 1])
                    except json.JSONDecodeError:
                        break
                    return obj if isinstance(obj, dict) else None
        start = text.find("{", start + 1)
    return None


def _locations(items: Any) -> tuple[Location, ...]:
    out = []
    for it in items if isinstance(items, list) else []:
        if isinstance(it, dict) and isinstance(it.get("file_path"), str) and it["file_path"]:
            out.append(
                Location(
                    it["file_path"].lstrip("/"),
                    str(it.get("class_name") or ""),
                    str(it.get("method_name") or ""),
                )
            )
    return tuple(out)


class LLMPolicy:
    """The agent's decisions asked of a language model (OrcaLoca's prompts, shortened).

    Parameters
    ----------
    lm
        Any :class:`icml25.core.llm.LanguageModel`: ``HFLanguageModel`` or
        ``OpenAICompatibleLM``.
    max_new_tokens
        Tokens generated per step reply (the scorer generates 4).
    context_chars
        Characters of search results put in a prompt (the newest are kept).

    Replies that are not valid JSON give no locations and no actions; a score that is not an
    integer counts as 0 (``failures`` counts both; the official code raises instead).
    """

    def __init__(self, lm: Any, *, max_new_tokens: int = 256, context_chars: int = 6000) -> None:
        if not callable(getattr(lm, "generate", None)):
            raise TypeError(
                f"lm must have a generate(prompts, ...) method, got {type(lm).__name__}"
            )
        self.lm = lm
        self.max_new_tokens = V.integer("max_new_tokens", max_new_tokens, low=1)
        self.context_chars = V.integer("context_chars", context_chars, low=1)
        self.calls = 0
        self.failures = 0
        self.graph: CodeGraph | None = None

    def prepare(self, issue: Issue, graph: CodeGraph) -> None:
        """The scorer's prompt holds the issue; the search's prompts the issue and, once the
        trace step has seeded the queue (``issue.seeds``), the official note naming the seeds."""
        self.issue, self.graph = issue, graph
        self.problem_block = f"<issue>\n{issue.text}\n</issue>"
        self.issue_block = self.problem_block + (
            "\nSuspicious keywords from the tracer: the following functions are more likely "
            "to be related to the bug, since they are called by the reproducer code; they are "
            f"already in the search queue: {', '.join(issue.seeds)}"
            if issue.seeds
            else ""
        )

    def _ask(self, prompt: str, tokens: int) -> str:
        self.calls += 1
        return self.lm.generate([prompt], max_new_tokens=tokens)[0]

    def score(self, node_id: str, code: str) -> int:
        return self._score(code, "")

    def score_traced(self, node_id: str, code: str, chain: Sequence[str]) -> int:
        """The trace step's scorer: the code and the reproducer's call chain into it (the
        official re-ranking's second message)."""
        names = " -> ".join(f"'{c.split('.')[-1]}'" for c in chain)
        return self._score(
            code,
            f"This function is traced in an issue reproducer, and its captured call chain is: "
            f"{names}\n",
        )

    def _score(self, code: str, note: str) -> int:
        reply = self._ask(
            f"{SCORER_SYSTEM}\n{self.problem_block}\n<code>\n{code[:3000]}\n</code>\n{note}"
            "Answer with a single integer from 0 to 100.",
            4,
        )
        m = re.search(r"\d+", reply)
        if m is None:
            self.failures += 1
            return 0
        return max(0, min(100, int(m.group())))

    def _results(self, context: Sequence[SearchResult]) -> str:
        parts, used = [], 0
        for r in context:
            used += len(r.text)
            if used > self.context_chars:
                break
            parts.append(f"<Search Result {r.action}>\n{r.text}\n</Search Result>")
        return "\n".join(parts)

    def step(
        self,
        *,
        new: SearchResult | None,
        context: Sequence[SearchResult],
        queue: Sequence[SearchAction],
    ) -> StepOutput:
        new_block = f"<New Info {new.action}>\n{new.text[:3000]}\n</New Info>\n" if new else ""
        prompt = (
            f"{STEP_SYSTEM}\n{new_block}{self.issue_block}\n{self._results(context)}\n"
            f"Queue ({len(queue)}): "
            + "; ".join(str(a) for a in queue[:20])
            + "\nAnswer in strict JSON."
        )
        obj = parse_json_object(self._ask(prompt, self.max_new_tokens))
        if obj is None:
            self.failures += 1
            return StepOutput("invalid reply")
        actions = []
        for it in obj.get("new_search_actions") or []:
            if not isinstance(it, dict):
                continue
            raw = it.get("action_input")
            kw: dict[str, Any] = raw if isinstance(raw, dict) else {}
            try:
                actions.append(
                    SearchAction.make(
                        str(it.get("action")), **{str(k): str(v) for k, v in kw.items()}
                    )
                )
            except (ValueError, TypeError):
                continue
        return StepOutput(
            str(obj.get("observation_feedback", "")),
            _locations(obj.get("potential_bug_locations")),
            tuple(actions),
        )

    def conclude(
        self, *, context: Sequence[SearchResult], last: StepOutput | None
    ) -> tuple[Location, ...]:
        prompt = (
            f"{CONCLUDE_SYSTEM}\n{self.issue_block}\n{self._results(context)}\n"
            "Answer in strict JSON."
        )
        obj = parse_json_object(self._ask(prompt, self.max_new_tokens))
        if obj is None:
            self.failures += 1
            return ()
        return _locations(obj.get("bug_locations"))
