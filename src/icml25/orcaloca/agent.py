"""The OrcaLoca search loop: trace seeding, priority scheduling, action decomposition with
relevance scoring, distance-aware context pruning, the stop rule and the conclusion.

Step order (official ``Orcar/search_agent.py``): ask the policy -> queue its new actions at
priority 1 and bump their history counts -> stop check -> re-sort -> pop and execute one action
(discarding it and popping again if it resolves to a node already returned) -> decompose it and
queue its file -> store the result -> recompute the top-``k`` context with this step's
potential bug locations -> next step. Distance-aware pruning keeps the ``top_k_search`` stored
results with the smallest

.. math:: h(r) = \\frac{1}{|B|} \\sum_{b \\in B} \\min(\\mathrm{hops}(r \\to b),
          \\mathrm{hops}(b \\to r))

(999999 without a path, ``h = 0`` when ``B`` is empty), dropping file contents, class
skeletons, disambiguation lists and results that are not graph nodes.

References
----------
Yu, Zhang, Zhao, Huang, Yao, Ding, Zhao. "OrcaLoca: An LLM Agent Framework for Software Issue
Localization." ICML 2025, arXiv:2502.00350.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from icml25.core import validate as V
from icml25.orcaloca.actions import SearchAction, SearchResult, SearchTools
from icml25.orcaloca.graph import NO_PATH, CodeGraph, build_graph
from icml25.orcaloca.policy import Issue, Location, Policy, RetrievalPolicy, StepOutput
from icml25.orcaloca.scheduler import (
    PRIORITY_BASIC,
    PRIORITY_DECOMPOSITION,
    PRIORITY_RELATED_FILE,
    SearchQueue,
)

PRUNED_KINDS = frozenset(
    {"file", "file_skeleton", "class_skeleton", "disambiguation", "source", "error"}
)


@dataclass(frozen=True)
class AgentConfig:
    """OrcaLoca's switches and constants (official ``search.cfg`` defaults).

    ``max_steps`` caps the executed search actions (``None``: no cap, as in the official code;
    the reproduction uses a fixed budget for every arm)."""

    priority: bool = True
    decomposition: bool = True
    pruning: bool = True
    redundancy_control: bool = True
    max_steps: int | None = None
    top_k_search: int = 12
    score_threshold: int = 75
    top_k_methods: int = 3
    top_k_functions: int = 2
    top_k_disambiguation: int = 3
    sliding_window: int = 15
    similarity_threshold: float = 0.97
    tracer_candidates: int = 25
    tracer_threshold: int = 50
    tracer_seeds: int = 5
    class_full_lines: int = 100

    def __post_init__(self) -> None:
        for name in ("priority", "decomposition", "pruning", "redundancy_control"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.max_steps is not None:
            V.integer("max_steps", self.max_steps, low=1)
        for name in (
            "top_k_search",
            "top_k_methods",
            "top_k_functions",
            "top_k_disambiguation",
            "sliding_window",
            "tracer_candidates",
            "tracer_seeds",
            "class_full_lines",
        ):
            V.integer(name, getattr(self, name), low=1)
        V.integer("score_threshold", self.score_threshold, low=0, high=100)
        V.integer("tracer_threshold", self.tracer_threshold, low=0, high=100)
        V.probability("similarity_threshold", self.similarity_threshold)


@dataclass(frozen=True)
class StepRecord:
    """One executed search: the step, the action, what it returned, the queue length after it,
    and the potential bug locations of the reply that chose it."""

    step: int
    action: str
    kind: str
    node: str | None
    queue_length: int
    locations: tuple[str, ...]


@dataclass(frozen=True)
class LocalizationResult:
    """The conclusion (``locations``), the trace of the search and its costs."""

    locations: tuple[Location, ...]
    steps: tuple[StepRecord, ...]
    seeds: tuple[str, ...]
    stopped: str
    policy_calls: int
    scorer_calls: int
    skipped: dict[str, str] = field(default_factory=dict)
    context: tuple[tuple[str, str | None], ...] = ()
    """The final context the conclusion was drawn from, in the order shown: (kind, node)."""

    @property
    def tool_calls(self) -> int:
        return len(self.steps)


# --------------------------------------------------------------------------- helpers
def _action_for(graph: CodeGraph, node_id: str) -> SearchAction:
    n = graph.nodes[node_id]
    if n.kind == "method":
        c, m = n.qualname.split(".", 1)
        return SearchAction.make(
            "search_method_in_class", class_name=c, method_name=m, file_path=n.file
        )
    if n.kind == "class":
        return SearchAction.make("search_class", class_name=n.name, file_path=n.file)
    if n.kind == "file":
        d = node_id.rsplit("/", 1)[0] if "/" in node_id else ""
        return SearchAction.make("search_file_contents", file_name=n.name, directory_path=d)
    return SearchAction.make("search_callable", query_name=n.name, file_path=n.file)


def tracer_seeds(
    issue: Issue, graph: CodeGraph, policy: Policy, config: AgentConfig | None = None
) -> list[SearchAction]:
    """The trace step: the traced calls of functions the issue names, and the frames of the
    traceback the reproducer ended with (OrcaLoca's keywords from the issue and from the
    reproducer's log), are key parents; they and their traced descendants are the candidates,
    ranked by (other file than the nearest key parent, layers below it, depth, call order); the
    first ``tracer_candidates`` are re-ranked by ``(100 - score) + 40 [other file] + 20 layers``
    among those the policy scores above ``tracer_threshold`` (the scorer is told the call chain
    from the key parent, as officially); the best ``tracer_seeds`` become searches. Empty
    without a trace."""
    return [_action_for(graph, node) for node in tracer_seed_nodes(issue, graph, policy, config)]


def tracer_seed_nodes(
    issue: Issue, graph: CodeGraph, policy: Policy, config: AgentConfig | None = None
) -> list[str]:
    """The node ids of :func:`tracer_seeds`' searches, best first (what the agent sets as
    ``Issue.seeds`` for the search)."""
    if not isinstance(issue, Issue):
        raise TypeError(f"issue must be an Issue, got {type(issue).__name__}")
    if not isinstance(graph, CodeGraph):
        raise TypeError(f"graph must be a CodeGraph, got {type(graph).__name__}")
    if config is not None and not isinstance(config, AgentConfig):
        raise TypeError(f"config must be an AgentConfig, got {type(config).__name__}")
    return _tracer(issue, graph, policy, config or AgentConfig())[0]


def _tracer(
    issue: Issue, graph: CodeGraph, policy: Policy, cfg: AgentConfig
) -> tuple[list[str], int]:
    """The seeds' node ids, best first, and the number of scorer calls."""
    calls = [c for c in issue.trace if graph.node_for(c.file, c.qualname)]
    if not calls:
        return [], 0
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", issue.text))
    by_idx = {c.index: c for c in issue.trace}
    key = {
        c.index
        for c in calls
        if c.raised or c.qualname.split(".")[-1] in words or c.qualname in words
    }
    ranked: dict[str, tuple[Any, ...]] = {}
    chains: dict[str, list[str]] = {}
    for c in calls:
        chain = [c.qualname]
        p = c if c.index in key else by_idx.get(c.parent)  # a key parent is its own (layer 0)
        while p is not None and p.index not in key:
            chain.append(p.qualname)
            p = by_idx.get(p.parent)
        if key and p is None:
            continue
        if p is not None and p is not c:
            chain.append(p.qualname)
        kp_file, kp_depth = (p.file, p.depth) if p is not None else (c.file, 0)
        node = f"{c.file}::{c.qualname}"
        rank = (c.file != kp_file, c.depth - kp_depth, c.depth, c.index)
        if node not in ranked or rank < ranked[node]:
            ranked[node] = rank
            chains[node] = chain[::-1]
    cands = sorted(ranked, key=lambda n: ranked[n])[: cfg.tracer_candidates]
    traced_scorer = getattr(policy, "score_traced", None)
    rerank = []
    for node in cands:
        code = graph.source(node)
        s = (
            traced_scorer(node, code, chains[node])
            if callable(traced_scorer)
            else policy.score(node, code)
        )
        if s > cfg.tracer_threshold:
            other, layers = ranked[node][0], ranked[node][1]
            rerank.append(((100 - s) + 40 * other + 20 * layers, ranked[node], node))
    rerank.sort()
    return [node for _r, _k, node in rerank[: cfg.tracer_seeds]], len(cands)


def _similar(a: str, b: str) -> float:
    ca, cb = Counter(a.lower().split()), Counter(b.lower().split())
    num = sum(ca[t] * cb[t] for t in ca)
    den = math.sqrt(sum(v * v for v in ca.values()) * sum(v * v for v in cb.values()))
    return num / den if den else 0.0


class OrcaLoca:
    """OrcaLoca's issue-localization agent over a Python repository.

    Parameters
    ----------
    policy
        The decision maker: :class:`~icml25.orcaloca.policy.RetrievalPolicy` (default, no LLM)
        or :class:`~icml25.orcaloca.policy.LLMPolicy` around any ``core.llm`` model.
    config
        An :class:`AgentConfig`; keyword arguments override its fields
        (``OrcaLoca(priority=False)``).

    Examples
    --------
    >>> agent = OrcaLoca(max_steps=10)                       # doctest: +SKIP
    >>> res = agent.localize(Issue("fill() drops a word"), "path/to/repo")  # doctest: +SKIP
    >>> [loc.node_id for loc in res.locations]              # doctest: +SKIP
    """

    def __init__(
        self, policy: Policy | None = None, *, config: AgentConfig | None = None, **overrides: Any
    ) -> None:
        if config is not None and not isinstance(config, AgentConfig):
            raise TypeError(f"config must be an AgentConfig, got {type(config).__name__}")
        fields = set(AgentConfig.__dataclass_fields__)
        unknown = set(overrides) - fields
        if unknown:
            raise TypeError(f"unknown OrcaLoca options {sorted(unknown)}; known: {sorted(fields)}")
        self.config = replace(config or AgentConfig(), **overrides)
        if policy is not None and not all(
            callable(getattr(policy, m, None)) for m in ("prepare", "score", "step", "conclude")
        ):
            raise TypeError(
                "policy must have prepare, score, step and conclude methods, got "
                f"{type(policy).__name__}"
            )
        self.policy: Policy = policy if policy is not None else RetrievalPolicy()

    # ------------------------------------------------------------------ pieces
    def decompose(self, result: SearchResult, graph: CodeGraph, queue: SearchQueue) -> int:
        """Queue the best-scoring parts of a class, file or disambiguation result (priority
        2); returns the number of scorer calls."""
        cfg, g, pol = self.config, graph, self.policy
        calls = 0

        def survivors(ids: list[str]) -> list[str]:
            """The candidates scoring above the threshold, best first."""
            nonlocal calls
            scored = []
            for i in ids:
                calls += 1
                s = pol.score(i, g.source(i))
                if s > cfg.score_threshold:
                    scored.append((-s, i))
            return [i for _s, i in sorted(scored)]

        def best(ids: list[str], k: int) -> list[str]:
            return survivors(ids)[:k]

        if result.kind in ("class", "class_skeleton") and result.node:
            picks = best(g.children(result.node, "method"), cfg.top_k_methods)
        elif result.kind in ("file", "file_skeleton") and result.node:
            cands = [
                c
                for c in g.children(result.node)
                if g.nodes[c].kind == "function"
                or (
                    g.nodes[c].kind == "class"
                    and g.nodes[c].end_lineno - g.nodes[c].lineno + 1 <= cfg.class_full_lines
                )
            ]
            picks = best(cands, cfg.top_k_functions)
        elif result.kind == "disambiguation":
            spread = [c for c in result.candidates if g.nodes[c].kind in ("class", "file")]
            picks = list(spread)
            funcs = [c for c in result.candidates if g.nodes[c].kind in ("function", "method")]
            if funcs:  # official: at most top-k survivors -> only the best one
                kept = survivors(funcs)
                k = 1 if len(kept) <= cfg.top_k_disambiguation else cfg.top_k_disambiguation
                picks += kept[:k]
        else:
            return 0
        for p in picks:
            queue.push(_action_for(g, p), PRIORITY_DECOMPOSITION)
        return calls

    def context(
        self,
        results: list[SearchResult],
        bug_nodes: list[str],
        graph: CodeGraph,
        cache: dict[tuple[str, bool], dict[str, int]],
    ) -> list[SearchResult]:
        """The results the policy sees next: pruned by distance to ``bug_nodes`` (top
        ``top_k_search``), or, without pruning, every result, oldest first (the official
        search cache is appended to)."""
        if not self.config.pruning:
            return list(results)
        seen: set[str] = set()
        keep: list[tuple[float, int, SearchResult]] = []
        for i, r in enumerate(results):
            if r.kind in PRUNED_KINDS or r.node is None or r.node in seen:
                continue
            seen.add(r.node)
            if bug_nodes:
                tot = 0.0
                for b in bug_nodes:
                    for rev in (False, True):
                        if (b, rev) not in cache:
                            cache[(b, rev)] = graph.distances_from(b, reverse=rev)
                    tot += min(
                        cache[(b, False)].get(r.node, NO_PATH),
                        cache[(b, True)].get(r.node, NO_PATH),
                    )
                h = tot / len(bug_nodes)
            else:
                h = 0.0
            keep.append((h, i, r))
        keep.sort(key=lambda t: (t[0], t[1]))
        return [r for _h, _i, r in keep[: self.config.top_k_search]]

    # ------------------------------------------------------------------ the loop
    def localize(
        self, issue: Issue | str, repo: CodeGraph | str | os.PathLike[str]
    ) -> LocalizationResult:
        """Search ``repo`` (a folder or a :class:`CodeGraph`) for the code that ``issue``
        (an :class:`Issue` or its text) is about, and conclude with bug locations."""
        if isinstance(issue, str):
            issue = Issue(issue)
        if not isinstance(issue, Issue):
            raise TypeError(f"issue must be an Issue or a string, got {type(issue).__name__}")
        if not issue.text.strip():
            raise ValueError("issue must have a non-empty text, got an empty issue")
        if isinstance(repo, CodeGraph):
            graph = repo
        elif isinstance(repo, (str, os.PathLike)):
            graph = build_graph(Path(repo))
        else:
            raise TypeError(f"repo must be a folder path or a CodeGraph, got {type(repo).__name__}")
        cfg, pol = self.config, self.policy
        pol.prepare(issue, graph)
        tools = SearchTools(graph)
        queue = SearchQueue(priority=cfg.priority, redundancy_control=cfg.redundancy_control)
        scorer_calls = 0
        seed_nodes, scored = _tracer(issue, graph, pol, cfg)
        scorer_calls += scored
        seeds = [_action_for(graph, n) for n in seed_nodes]
        for a in seeds:
            queue.push(a, PRIORITY_BASIC)
        # the search is told the seeds (officially a note after the problem statement)
        pol.prepare(replace(issue, seeds=tuple(seed_nodes)), graph)
        returned: set[str] = set()
        results: list[SearchResult] = []
        context: list[SearchResult] = []
        steps: list[StepRecord] = []
        cache: dict[tuple[str, bool], dict[str, int]] = {}
        new: SearchResult | None = None
        last: StepOutput | None = None
        observations: list[str] = []
        similar_run = 0
        policy_calls = 0
        stopped = "queue empty"
        while True:
            out = pol.step(new=new, context=context, queue=[a for _p, a in queue.items()])
            policy_calls += 1
            last = out
            for a in out.actions:
                queue.push(a, PRIORITY_BASIC, llm=True)
            bug_nodes = list(
                dict.fromkeys(loc.node_id for loc in out.locations if loc.node_id in graph.nodes)
            )
            if observations and _similar(observations[-1], out.observation) >= (
                cfg.similarity_threshold
            ):
                similar_run += 1
            else:
                similar_run = 0
            observations.append(out.observation)
            if similar_run >= cfg.sliding_window:
                stopped = "similar observations"
                break
            if cfg.max_steps is not None and len(steps) >= cfg.max_steps:
                stopped = "step budget"
                break
            queue.resort()
            result = None
            while queue:
                a = queue.pop()
                r = tools.execute(a)
                if r.node is not None and r.node in returned:
                    continue
                result = r
                break
            if result is None:
                stopped = "queue empty"
                break
            if result.node is not None:
                returned.add(result.node)
            if cfg.decomposition:
                scorer_calls += self.decompose(result, graph, queue)
            if result.node is not None:
                f = graph.nodes[result.node].file
                if f:
                    queue.push(_action_for(graph, f), PRIORITY_RELATED_FILE)
            results.append(result)
            steps.append(
                StepRecord(
                    len(steps) + 1,
                    str(result.action),
                    result.kind,
                    result.node,
                    len(queue),
                    tuple(loc.node_id for loc in out.locations),
                )
            )
            context = self.context(results, bug_nodes, graph, cache)
            new = result
        locations = pol.conclude(context=context, last=last)
        policy_calls += 1
        kept = []
        for loc in locations:  # official: a class+method pair not in the graph loses its method
            if loc.class_name and loc.method_name and loc.node_id not in graph.nodes:
                loc = Location(loc.file_path, loc.class_name, "")
            kept.append(loc)
        return LocalizationResult(
            tuple(kept),
            tuple(steps),
            tuple(str(a) for a in seeds),
            stopped,
            policy_calls,
            scorer_calls,
            dict(graph.skipped),
            tuple((r.kind, r.node) for r in context),
        )


def localize(
    issue: Issue | str,
    repo: CodeGraph | str | os.PathLike[str],
    *,
    policy: Policy | None = None,
    **config: Any,
) -> LocalizationResult:
    """Functional form of :meth:`OrcaLoca.localize` (``config``: :class:`AgentConfig` fields)."""
    return OrcaLoca(policy, **config).localize(issue, repo)
