"""Core Context Aware attention (Chen, You, Zhang, Li, Li, Wang & Tan, ICML 2025).

Library: :func:`cca_attention` (SDPA-shaped causal attention, chunked), the dense reference
:func:`dense_cca_attention`, :func:`core_tokens`, :func:`visible_groups`, :func:`reach`,
and the Hugging Face drop-in :func:`icml25.cca_attention.hf.use_cca`. No reproduction is
registered yet (issue 7 is open): see the README.
"""

from icml25.cca_attention.attention import (
    cca_attention,
    core_tokens,
    dense_cca_attention,
    reach,
    visible_groups,
)

__all__ = ["cca_attention", "core_tokens", "dense_cca_attention", "reach", "visible_groups"]
