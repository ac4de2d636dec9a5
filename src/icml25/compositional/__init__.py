"""Compositional generalisation: diversity vs scale (Uselis, Dittadi & Oh, ICML 2025).

Library: designs that set the number of seen combinations per value (``k``) independently of
the number of images (:func:`cyclic_design`, :func:`check_design`, :func:`full_grid`,
:func:`seen_mask`), controlled compositional image sets built from real grey images
(:func:`make_compositional_images`, :func:`colour_palette`; :func:`disjoint_channel_pairs` and
:class:`ChannelWarning` flag palettes whose order decides the result), linear-factorisation
metrics of any encoder's embeddings (:func:`embed`, :func:`linear_factorization`,
:func:`factorization_r2`, :func:`whitened_r2`, :func:`orthogonality`, :func:`concept_ranks`,
:func:`combination_means`), probes trained on a few combinations and scored on unseen ones
(:func:`unseen_combination_accuracy`), and a multi-head network (:class:`MultiHeadNet`).
Reproduction: ``icml25 reproduce compositional``.
"""

from icml25.compositional.data import (
    ChannelWarning,
    CompositionalImages,
    colour_palette,
    disjoint_channel_pairs,
    lit_channels,
    make_compositional_images,
)
from icml25.compositional.designs import (
    check_design,
    cyclic_design,
    design_components,
    design_is_connected,
    full_grid,
    seen_mask,
)
from icml25.compositional.encoders import embed
from icml25.compositional.metrics import (
    Factorization,
    combination_means,
    concept_ranks,
    concept_value_means,
    factorization_r2,
    linear_factorization,
    orthogonality,
    whitened_r2,
)
from icml25.compositional.probes import MultiHeadNet, ProbeResult, unseen_combination_accuracy
from icml25.core.registry import register

__all__ = [
    "ChannelWarning",
    "CompositionalImages",
    "Factorization",
    "MultiHeadNet",
    "ProbeResult",
    "check_design",
    "colour_palette",
    "combination_means",
    "concept_ranks",
    "concept_value_means",
    "cyclic_design",
    "design_components",
    "design_is_connected",
    "disjoint_channel_pairs",
    "embed",
    "factorization_r2",
    "full_grid",
    "linear_factorization",
    "lit_channels",
    "make_compositional_images",
    "orthogonality",
    "seen_mask",
    "unseen_combination_accuracy",
    "whitened_r2",
]

register(
    slug="compositional",
    title="Does Data Scaling Lead to Visual Compositional Generalization?",
    authors="Arnas Uselis, Andrea Dittadi, Seong Joon Oh",
    venue="ICML 2025 (OpenReview M2WMUuwoh5)",
    url="https://arxiv.org/abs/2507.07102",
    summary="Compositional generalisation is driven by the diversity of seen combinations (k), "
    "not data scale (N); linearly factored representations (high additive R^2) generalise "
    "from few combinations.",
    quick_seconds=60,
    module="icml25.compositional.reproduce",
)
