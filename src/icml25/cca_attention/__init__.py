"""Core Context Aware attention (Chen, You, Zhang, Li, Li, Wang & Tan, ICML 2025).

Library: :func:`cca_attention` (SDPA-shaped causal attention, chunked), the dense reference
:func:`dense_cca_attention`, :func:`core_tokens`, :func:`visible_groups`, :func:`reach`,
the Hugging Face drop-in :func:`icml25.cca_attention.hf.use_cca` with its compressed KV cache
:class:`icml25.cca_attention.hf.CCACache`, and :class:`TinyLM` (a small causal LM with
switchable attention). Reproduction: ``icml25 reproduce cca_attention``.
"""

from icml25.cca_attention.attention import (
    cca_attention,
    core_tokens,
    dense_cca_attention,
    reach,
    visible_groups,
)
from icml25.cca_attention.model import TinyLM
from icml25.core.registry import register

__all__ = [
    "TinyLM",
    "cca_attention",
    "core_tokens",
    "dense_cca_attention",
    "reach",
    "visible_groups",
]

register(
    slug="cca_attention",
    title="Core Context Aware Transformers for Long Context Language Modeling",
    authors="Yaofo Chen, Zeng You, Shuhai Zhang, Haokun Li, Yirui Li, Yaowei Wang, Mingkui Tan",
    venue="ICML 2025 (arXiv:2412.12465)",
    url="https://arxiv.org/abs/2412.12465",
    summary="Groups of tokens pooled into core tokens by significance, plus a local window, "
    "under one softmax: long-range context at O(L (L/g + s)) cost.",
    quick_seconds=168,  # measured: 168 s CPU on one thread, empty model cache (issue 57)
    module="icml25.cca_attention.reproduce",
)
