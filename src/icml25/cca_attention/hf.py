"""CCA-Attention as a drop-in for Hugging Face Llama-architecture models (same weights).

:func:`use_cca` registers an attention function with ``transformers``' ``AttentionInterface``
(and the SDPA mask builder under the same name) and switches the loaded model to it;
:func:`use_full` switches back. Every attention layer then runs
:func:`~icml25.cca_attention.attention.cca_attention` on its queries, keys and values.

- **RoPE.** The function receives keys *after* rotary embedding, as SDPA does. Core keys
  are therefore significance-weighted averages of rotated keys: each core token carries a
  blend of its group's positions, and no new position is assigned. The paper does not
  document its choice; this one needs no change to the model.
- **Decoding with a KV cache.** Prefill computes every layer's core tokens and keeps them on
  the layer (``module._cca_cores``). Each decoding step attends to the visible cores and to
  the raw window read from the ordinary KV cache. The last group stays incomplete, and in
  the raw window, until its last token arrives. That token's query then pools the group into
  a new core token, the paper's scheme. The KV cache itself is not compressed here: it
  stores every raw key, as the model's own cache does.
- **Limits.** Padding masks are refused (CCA's groups assume aligned sequences): pass
  unpadded batches. A decoding step must add one token.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from icml25.cca_attention.attention import cca_attention, core_tokens, expand_kv


def _attention_fn(group_size: int, window: int, pool: str) -> Any:
    def attention(
        module: torch.nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        dropout: float = 0.0,
        scaling: float | None = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, None]:
        if attention_mask is not None and not _is_causal_only(attention_mask):
            raise ValueError("CCA attention does not support padding masks: pass unpadded inputs")
        scale = scaling if scaling is not None else 1.0 / math.sqrt(query.shape[-1])
        k_full, v_full = expand_kv(query, key, value)
        if query.shape[2] == key.shape[2]:  # prefill (or no cache): the whole sequence
            out = cca_attention(
                query, k_full, v_full, group_size=group_size, window=window, scale=scale, pool=pool
            )
            cores = core_tokens(query, k_full, v_full, group_size, scale, pool)
            setattr(module, "_cca_cores", cores)  # noqa: B010 - not a registered buffer
            return out.transpose(1, 2).contiguous(), None
        if query.shape[2] != 1:
            raise NotImplementedError("CCA decoding adds one token per step")
        return _decode_step(module, query, k_full, v_full, scale, group_size, window, pool), None

    return attention


def _decode_step(
    module: Any,
    query: torch.Tensor,
    k_full: torch.Tensor,
    v_full: torch.Tensor,
    scale: float,
    g: int,
    s: int,
    pool: str,
) -> torch.Tensor:
    """One new token at position ``t``: keys and values are the whole cache (heads expanded)."""
    t = k_full.shape[2] - 1
    kc, vc = module._cca_cores
    if (t + 1) % g == 0:  # this token completes a group: its query pools the group
        lo = t + 1 - g
        # core_tokens pools with the query at the group's last position: the new token's
        q_group = query.expand(-1, -1, g, -1)
        new_k, new_v = core_tokens(q_group, k_full[:, :, lo:], v_full[:, :, lo:], g, scale, pool)
        kc, vc = torch.cat([kc, new_k], dim=2), torch.cat([vc, new_v], dim=2)
        setattr(module, "_cca_cores", (kc, vc))  # noqa: B010 - not a registered buffer
    J = max(0, (t + 1 - s) // g)
    keys = torch.cat([kc[:, :, :J], k_full[:, :, g * J :]], dim=2)
    values = torch.cat([vc[:, :, :J], v_full[:, :, g * J :]], dim=2)
    probs = torch.softmax((query @ keys.transpose(-1, -2)) * scale, dim=-1)
    return (probs @ values).transpose(1, 2).contiguous()


def _is_causal_only(mask: torch.Tensor) -> bool:
    """Whether a materialised mask is the plain causal pattern (no padding)."""
    q_len, k_len = mask.shape[-2], mask.shape[-1]
    allowed = mask if mask.dtype == torch.bool else mask == 0
    causal = torch.ones(q_len, k_len, dtype=torch.bool).tril(k_len - q_len)
    return bool(torch.all(allowed == causal))


def use_cca(model: Any, *, group_size: int, window: int, pool: str = "attention") -> str:
    """Switch every attention layer of a loaded HF model to CCA; returns the name it is
    registered under. Same weights; :func:`use_full` switches back."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    if not (isinstance(group_size, int) and group_size >= 1):
        raise ValueError(f"group_size must be an integer >= 1, got {group_size!r}")
    if not (isinstance(window, int) and window >= 0):
        raise ValueError(f"window must be an integer >= 0, got {window!r}")
    if pool not in ("attention", "mean"):
        raise ValueError(f"pool must be 'attention' or 'mean', got {pool!r}")
    name = f"cca_g{group_size}_s{window}_{pool}"
    AttentionInterface.register(name, _attention_fn(group_size, window, pool))
    AttentionMaskInterface.register(name, sdpa_mask)
    model.set_attn_implementation(name)
    return name


def use_full(model: Any, implementation: str = "sdpa") -> None:
    """Back to full attention (PyTorch's SDPA by default)."""
    model.set_attn_implementation(implementation)
