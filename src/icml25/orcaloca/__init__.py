"""OrcaLoca: an LLM agent for software issue localization (Yu et al., ICML 2025).

Library: :func:`build_graph` / :class:`CodeGraph` (the ``ast`` code graph with "contains" and
"references" edges), :class:`SearchTools` and :class:`SearchAction` (the five search actions),
:class:`SearchQueue` (priority scheduling with re-sorting and redundancy control),
:class:`OrcaLoca` / :func:`localize` (the agent: trace seeding, decomposition with relevance
scoring, distance-aware pruning, stop rule, conclusion), the policies (:class:`RetrievalPolicy`,
the embedded seeded non-LLM default; :class:`ReadingPolicy`, an embedded judge whose belief
changes when it reads code; :class:`LLMPolicy` around any ``icml25.core.llm`` model),
:func:`trace_calls` (a reproducer's real trace) and the metrics (:func:`gold_from_patch`,
:func:`match`). Benchmark: :func:`make_benchmark` (bugs injected into standard-library modules).
Reproduction: ``icml25 reproduce orcaloca``; command line: ``icml25 localize ISSUE_FILE --repo
PATH [--model ...] [--json]``.
"""

from icml25.core.registry import register
from icml25.orcaloca.actions import SearchAction, SearchResult, SearchTools
from icml25.orcaloca.agent import (
    AgentConfig,
    LocalizationResult,
    OrcaLoca,
    StepRecord,
    localize,
    tracer_seed_nodes,
    tracer_seeds,
)
from icml25.orcaloca.bench import Benchmark, Bug, make_benchmark
from icml25.orcaloca.graph import CodeGraph, Node, build_graph
from icml25.orcaloca.metrics import Gold, MatchScores, auc, gold_from_patch, match
from icml25.orcaloca.policy import (
    Issue,
    LLMPolicy,
    Location,
    ReadingPolicy,
    RetrievalPolicy,
    StepOutput,
)
from icml25.orcaloca.scheduler import SearchQueue
from icml25.orcaloca.trace import TraceCall, trace_calls

__all__ = [
    "AgentConfig",
    "Benchmark",
    "Bug",
    "CodeGraph",
    "Gold",
    "Issue",
    "LLMPolicy",
    "LocalizationResult",
    "Location",
    "MatchScores",
    "Node",
    "OrcaLoca",
    "ReadingPolicy",
    "RetrievalPolicy",
    "SearchAction",
    "SearchQueue",
    "SearchResult",
    "SearchTools",
    "StepOutput",
    "StepRecord",
    "TraceCall",
    "auc",
    "build_graph",
    "gold_from_patch",
    "localize",
    "make_benchmark",
    "match",
    "trace_calls",
    "tracer_seed_nodes",
    "tracer_seeds",
]

register(
    slug="orcaloca",
    title="OrcaLoca: An LLM Agent Framework for Software Issue Localization",
    authors="Zhongming Yu, Hejia Zhang, Yujie Zhao, Hanxian Huang, Matrix Yao, Ke Ding, "
    "Jishen Zhao",
    venue="ICML 2025 (arXiv:2502.00350)",
    url="https://arxiv.org/abs/2502.00350",
    summary="Issue localization by an agent with a priority queue of search actions, "
    "relevance-scored decomposition and distance-aware context pruning over a code graph.",
    quick_seconds=15,
    module="icml25.orcaloca.reproduce",
)
