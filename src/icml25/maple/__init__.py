"""MAPLE: many-shot adaptive pseudo-labelling for in-context learning (Chen, Wang, Tan, Li &
Shen, ICML 2025).

Library: :class:`MAPLE` (fit: relevance graph, influence-based choice of the items to
pseudo-label, pseudo-labelling by the learner; predict: per-query adaptive demonstrations and
prompt assembly; ``strategy`` gives the baselines zero-shot, few-shot, random, RAG and
RAG-adapt), the graph functions (:func:`knn_graph`, :func:`connect_components`,
:func:`shortest_path_counts`, :func:`influence_scores`, :func:`exact_influence`,
:func:`adaptive_scores`), and the models: :class:`LabelScorer` (an in-context learner from any
:mod:`icml25.core.llm` backend), :class:`SentenceEncoder` (offline all-MiniLM-L6-v2) and
:class:`HashingEmbedder` (a stand-in). Reproduction: ``icml25 reproduce maple``.
"""

from icml25.core.registry import register
from icml25.maple.graph import (
    average_degree,
    connect_components,
    exact_influence,
    influence_scores,
    knn_graph,
    shortest_path_counts,
)
from icml25.maple.learners import HashingEmbedder, LabelScorer, SentenceEncoder
from icml25.maple.pipeline import MAPLE, STRATEGIES, adaptive_scores
from icml25.maple.prompts import MultiTurnLM, Template

__all__ = [
    "MAPLE",
    "STRATEGIES",
    "HashingEmbedder",
    "LabelScorer",
    "MultiTurnLM",
    "SentenceEncoder",
    "Template",
    "adaptive_scores",
    "average_degree",
    "connect_components",
    "exact_influence",
    "influence_scores",
    "knn_graph",
    "shortest_path_counts",
]

register(
    slug="maple",
    title="MAPLE: Many-Shot Adaptive Pseudo-Labeling for In-Context Learning",
    authors="Zihan Chen, Song Wang, Zhen Tan, Jundong Li, Cong Shen",
    venue="ICML 2025 (arXiv:2505.16225)",
    url="https://arxiv.org/abs/2505.16225",
    summary="Pseudo-label the unlabeled items with the most graph influence on the labeled set, "
    "then pick demonstrations per query by shortest-path counts on a relevance graph.",
    quick_seconds=120,
    module="icml25.maple.reproduce",
)
