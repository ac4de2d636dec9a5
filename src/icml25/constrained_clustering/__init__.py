"""Constrained graph clustering with signed Laplacians (Fabila-Carrasco & Sun, ICML 2025).

Library: :class:`ConstrainedSpectralClustering` (scikit-learn style; ``constraints="enforce"``
keeps every pair), :func:`count_violations`, :func:`constrained_kmeans`, :func:`constrained_cut`
(function form), :func:`cut_ratio`, :func:`brute_force` (exact, small graphs) and the
signed-graph Cheeger quantities. Reproduction: ``icml25 reproduce constrained_clustering``.
"""

from icml25.constrained_clustering.algorithm import (
    ConstrainedCut,
    cc_eigenpair,
    constrained_cut,
    cut_ratio,
    laplacian,
    signed_eigenpair,
    signed_laplacian,
    sweep,
)
from icml25.constrained_clustering.bounds import (
    brute_force,
    conductance,
    generalized_cheeger_bound,
    signed_bipartiteness,
    signed_cheeger_constant,
    signed_threshold_sweep,
)
from icml25.constrained_clustering.enforce import constrained_kmeans, count_violations
from icml25.constrained_clustering.estimator import ConstrainedSpectralClustering
from icml25.core.registry import register

__all__ = [
    "ConstrainedCut",
    "ConstrainedSpectralClustering",
    "brute_force",
    "cc_eigenpair",
    "conductance",
    "constrained_cut",
    "constrained_kmeans",
    "count_violations",
    "cut_ratio",
    "generalized_cheeger_bound",
    "laplacian",
    "signed_bipartiteness",
    "signed_cheeger_constant",
    "signed_eigenpair",
    "signed_laplacian",
    "signed_threshold_sweep",
    "sweep",
]

register(
    slug="constrained_clustering",
    title="Signed Laplacians for Constrained Graph Clustering",
    authors="John Stewart Fabila-Carrasco, He Sun",
    venue="ICML 2025 (Spotlight), PMLR 267:6794-6810",
    url="https://proceedings.mlr.press/v267/carrasco25a.html",
    summary="A signed-Laplacian eigenproblem + sweep solves min w_G(S)/w_H(S) where spectral "
    "clustering on G alone fails, with a Cheeger-type guarantee.",
    quick_seconds=30,
    module="icml25.constrained_clustering.reproduce",
)
