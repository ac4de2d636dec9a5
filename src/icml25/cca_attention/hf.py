"""CCA-Attention as a drop-in for Hugging Face Llama-architecture models (same weights).

:func:`use_cca` registers an attention function with ``transformers``' ``AttentionInterface``
(and the SDPA mask builder under the same name) and switches the loaded model to it;
:func:`use_full` switches back. Every attention layer then runs
:func:`~icml25.cca_attention.attention.cca_attention`'s kernel on its queries, keys and
values, keeping the core tokens for decoding.

- **RoPE.** The function receives keys *after* rotary embedding, as SDPA does. Core keys
  are therefore significance-weighted averages of rotated keys: each core token carries a
  blend of its group's positions, and no new position is assigned. The paper does not
  document its choice; this one needs no change to the model.
- **Decoding with a KV cache.** Prefill computes every layer's core tokens and keeps them on
  the layer (``module._cca_cores``, with ``module._cca_seen`` tokens so far). Each decoding
  step attends to the visible cores and to the raw window read from the KV cache. The last
  group stays incomplete, and in the raw window, until its last token arrives. That token's
  query then pools the group into a new core token, the paper's scheme.
- **The compressed cache.** With the model's own ``DynamicCache`` every raw key stays
  cached. :class:`CCACache` keeps, per layer, only the raw keys and values that a later
  query can still read (the window and the incomplete group: at most ``s + 2g`` tokens);
  the rest live on only inside core tokens. Pass it as the model's cache:
  ``model(ids, **{cache_kwarg(model): CCACache(model)})`` (``cache=`` in recent
  ``transformers``, ``past_key_values=`` before), and likewise to ``generate``.
  :func:`kv_cache_bytes` counts what a cache and the core tokens hold.
- **Padding.** Left-padded batches (the usual batched generation) run each row's CCA from its
  first real token, which is what the row alone gives; other masks (right padding, custom
  patterns) are refused. Padded batches decode with the model's own cache, not
  :class:`CCACache`. A decoding step must add one token.
- **Dropout.** The model's attention dropout (``dropout``, which ``transformers`` passes as
  ``config.attention_dropout`` in training and 0 in evaluation) is applied as SDPA applies
  it: on the attention probabilities, prefill and decoding alike, whenever it is above 0.
- **Saving.** :func:`use_cca` records its settings in ``model.config.cca_attention``, which
  ``save_pretrained`` writes; :func:`load_cca` loads such a folder and switches it back to CCA.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from icml25.cca_attention.attention import attend, core_tokens, expand_kv

try:  # the compressed cache subclasses transformers' cache layer; the rest imports lazily
    from transformers.cache_utils import Cache, DynamicLayer
except ImportError:  # pragma: no cover - without the [llm] extra
    Cache = DynamicLayer = object  # type: ignore[misc,assignment]


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
        pads = left_padding(attention_mask, query.shape[0], query.shape[2], key.shape[2])
        scale = scaling if scaling is not None else 1.0 / math.sqrt(query.shape[-1])
        k_full, v_full = expand_kv(query, key, value)
        if query.shape[2] == key.shape[2]:  # prefill (or no cache): the whole sequence
            out, cores = _prefill(
                query, k_full, v_full, pads, group_size, window, scale, pool, dropout
            )
            setattr(module, "_cca_cores", cores)  # noqa: B010 - not registered buffers
            setattr(module, "_cca_pads", pads)  # noqa: B010
            setattr(module, "_cca_seen", query.shape[2])  # noqa: B010
            return out.transpose(1, 2).contiguous(), None
        if query.shape[2] != 1:
            raise NotImplementedError("CCA decoding adds one token per step")
        before = getattr(module, "_cca_pads", pads)
        if pads != before:
            raise ValueError(
                f"the padding changed between prefill ({before}) and this decoding step "
                f"({pads}): CCA supports left padding fixed at prefill"
            )
        t: int = getattr(module, "_cca_seen")  # noqa: B009 - set at prefill, not a buffer
        saved: Any = getattr(module, "_cca_cores")  # noqa: B009
        if not any(pads):
            out, cores = _decode_step(
                query, k_full, v_full, saved, t, scale, group_size, window, pool, dropout
            )
        else:
            if k_full.shape[2] != t + 1:
                raise ValueError(
                    "a left-padded batch decodes with the model's own cache (CCACache drops "
                    "raw tokens at positions that differ per row): pass unpadded inputs to use it"
                )
            rows = [
                _decode_step(
                    query[b : b + 1],
                    k_full[b : b + 1, :, p:],
                    v_full[b : b + 1, :, p:],
                    saved[b],
                    t - p,
                    scale,
                    group_size,
                    window,
                    pool,
                    dropout,
                )
                for b, p in enumerate(pads)
            ]
            out = torch.cat([o for o, _ in rows])
            cores = [c for _, c in rows]
        setattr(module, "_cca_cores", cores)  # noqa: B010
        setattr(module, "_cca_seen", t + 1)  # noqa: B010
        return out, None

    return attention


def _prefill(
    query: torch.Tensor,
    k_full: torch.Tensor,
    v_full: torch.Tensor,
    pads: list[int],
    g: int,
    s: int,
    scale: float,
    pool: str,
    dropout: float = 0.0,
) -> tuple[torch.Tensor, Any]:
    """The whole (padded) sequence: CCA over each row's tokens after its left padding, which
    is what the row alone gives (the model counts positions from its first real token). Pad
    positions get zeros. Returns the output and the core tokens (one pair for an unpadded
    batch, a list of per-row pairs for a padded one). ``dropout``: on the attention
    probabilities (SDPA's ``dropout_p``)."""
    if not any(pads):
        cores = core_tokens(query, k_full, v_full, g, scale, pool)
        return attend(query, k_full, v_full, cores, g, s, scale, dropout_p=dropout), cores
    out = torch.zeros_like(query)
    per_row = []
    for b, p in enumerate(pads):
        q, k, v = query[b : b + 1, :, p:], k_full[b : b + 1, :, p:], v_full[b : b + 1, :, p:]
        cores = core_tokens(q, k, v, g, scale, pool)
        out[b : b + 1, :, p:] = attend(q, k, v, cores, g, s, scale, dropout_p=dropout)
        per_row.append(cores)
    return out, per_row


def _decode_step(
    query: torch.Tensor,
    k_full: torch.Tensor,
    v_full: torch.Tensor,
    cores: tuple[torch.Tensor, torch.Tensor],
    t: int,
    scale: float,
    g: int,
    s: int,
    pool: str,
    dropout: float = 0.0,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """One new token at position ``t`` (counted from the row's first real token). The keys and
    values (heads expanded) are the cached suffix that ends at ``t``: the whole cache, or what
    :class:`CCACache` kept. Returns the output ``(B, 1, H, D)`` and the core tokens.
    ``dropout > 0`` drops attention probabilities as SDPA does."""
    offset = t + 1 - k_full.shape[2]  # absolute position of k_full[:, :, 0]
    kc, vc = cores
    J = max(0, (t + 1 - s) // g)
    needed = _raw_needed_from(t, g, s)
    if needed < offset:
        raise RuntimeError(
            f"the KV cache starts at position {offset}, but CCA at position {t} needs raw keys "
            f"from {needed}: use the model's own cache or CCACache(model)"
        )
    if (t + 1) % g == 0:  # this token completes a group: its query pools the group
        lo = t + 1 - g - offset
        # core_tokens pools with the query at the group's last position: the new token's
        q_group = query.expand(-1, -1, g, -1)
        new_k, new_v = core_tokens(q_group, k_full[:, :, lo:], v_full[:, :, lo:], g, scale, pool)
        kc, vc = torch.cat([kc, new_k], dim=2), torch.cat([vc, new_v], dim=2)
    keys = torch.cat([kc[:, :, :J], k_full[:, :, g * J - offset :]], dim=2)
    values = torch.cat([vc[:, :, :J], v_full[:, :, g * J - offset :]], dim=2)
    probs = torch.softmax((query @ keys.transpose(-1, -2)) * scale, dim=-1)
    if dropout > 0:
        probs = torch.nn.functional.dropout(probs, p=dropout)
    return (probs @ values).transpose(1, 2).contiguous(), (kc, vc)


def _raw_needed_from(t: int, g: int, s: int) -> int:
    """The earliest raw position that query ``t`` or a later one reads: the start of its
    window or of its group (which its last query pools), whichever comes first."""
    return g * min(max(0, (t + 1 - s) // g), t // g)


def left_padding(mask: torch.Tensor | None, batch: int, q_len: int, k_len: int) -> list[int]:
    """Each row's count of left-padding tokens, read from a materialised attention mask
    (``(B, 1, q_len, k_len)``, boolean or additive); zeros for no mask or a plain causal one.
    Any other pattern (right padding, holes, a custom mask) is refused: CCA's groups are
    counted from each row's first real token. The check runs on the mask's device."""
    if mask is None:
        return [0] * batch
    allowed = mask if mask.dtype == torch.bool else mask == 0
    allowed = allowed.expand(batch, -1, q_len, k_len)[:, 0]
    first_query = k_len - q_len  # absolute position of the first query
    dev = mask.device
    cols = torch.arange(k_len, device=dev)
    ones = torch.arange(1, k_len + 1, device=dev)
    pads = []
    for b in range(batch):
        last = allowed[b, -1]
        p = int((~last).cumsum(0).eq(ones).sum())  # leading False
        rows = torch.arange(q_len, device=dev) + first_query
        want = (cols[None, :] >= p) & (cols[None, :] <= rows[:, None])
        real = rows >= p  # rows of padding tokens are not read
        if not torch.equal(allowed[b][real], want[real]):
            raise ValueError(
                "CCA attention takes causal masks with left padding only (the usual batched "
                "generation case); this mask pads elsewhere or is not causal: pad on the left "
                "(tokenizer.padding_side = 'left') or pass unpadded inputs"
            )
        pads.append(p)
    return pads


def use_cca(model: Any, *, group_size: int, window: int, pool: str = "attention") -> str:
    """Switch every attention layer of a loaded HF model to CCA; returns the name it is
    registered under. Same weights; :func:`use_full` switches back."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    if not (hasattr(model, "set_attn_implementation") and hasattr(model, "config")):
        raise TypeError(
            "use_cca needs a loaded Hugging Face transformers decoder (a PreTrainedModel with "
            f"set_attn_implementation, e.g. from AutoModelForCausalLM), got {type(model).__name__}"
        )
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
    model._cca_settings = (group_size, window)
    # saved by save_pretrained in config.json; load_cca reads it back
    model.config.cca_attention = {"group_size": group_size, "window": window, "pool": pool}
    return name


def use_full(model: Any, implementation: str = "sdpa") -> None:
    """Back to full attention (PyTorch's SDPA by default)."""
    model.set_attn_implementation(implementation)
    model._cca_settings = None
    if hasattr(model.config, "cca_attention"):
        del model.config.cca_attention


def load_cca(name_or_path: Any, **kwargs: Any) -> Any:
    """``AutoModelForCausalLM.from_pretrained(name_or_path, **kwargs)``, switched to CCA with
    the settings :func:`use_cca` recorded in the saved ``config.json`` (a model saved without
    CCA loads as it was). ``save_pretrained`` after ``use_cca`` keeps the settings; a plain
    ``from_pretrained`` of such a folder gives full attention, so load it with this."""
    from transformers import AutoModelForCausalLM

    kwargs.setdefault("attn_implementation", "sdpa")
    model = AutoModelForCausalLM.from_pretrained(name_or_path, **kwargs)
    settings = getattr(model.config, "cca_attention", None)
    if settings:
        use_cca(model, **settings)
    return model


class CCACacheLayer(DynamicLayer):
    """One layer's raw keys and values, only from the earliest position a later query of CCA
    can still read: the start of its window or of the incomplete group, whichever is first
    (and at least the last token, so that a decoding step is never mistaken for a prefill).
    Earlier tokens live on only inside the layer's core tokens."""

    is_croppable = False

    def __init__(self, group_size: int, window: int) -> None:
        super().__init__()
        self.group_size, self.window = group_size, window
        self.cumulative_length = 0
        self.start = 0  # absolute position of the first kept token

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        assert self.keys is not None and self.values is not None
        keys = torch.cat([self.keys, key_states], dim=-2)
        values = torch.cat([self.values, value_states], dim=-2)
        self.cumulative_length += key_states.shape[-2]
        n = self.cumulative_length
        keep = max(self.start, min(_raw_needed_from(n, self.group_size, self.window), n - 1))
        self.keys, self.values = keys[:, :, keep - self.start :], values[:, :, keep - self.start :]
        self.start = keep
        return keys, values

    def get_seq_length(self) -> int:
        return self.cumulative_length

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.cumulative_length - self.start + query_length, self.start

    def reset(self) -> None:
        super().reset()
        self.cumulative_length = self.start = 0

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError("a CCA cache cannot be cropped: dropped tokens are pooled")


class CCACache(Cache):
    """A KV cache for a model switched to CCA by :func:`use_cca`: each layer keeps at most
    ``window + 2 * group_size`` raw tokens (plus the core tokens on its attention module)."""

    def __init__(self, model: Any) -> None:
        settings = getattr(model, "_cca_settings", None)
        if settings is None:
            raise ValueError("CCACache(model) needs a model switched to CCA: call use_cca first")
        layers = model.config.get_text_config(decoder=True).num_hidden_layers
        super().__init__(layers=[CCACacheLayer(*settings) for _ in range(layers)])


def cache_kwarg(model: Any) -> str:
    """The name under which this ``transformers`` version takes a KV cache."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def kv_cache_bytes(model: Any, cache: Any) -> int:
    """Bytes held for decoding: the cache's keys and values, plus CCA's core tokens when the
    model uses CCA."""
    total = sum(
        t.numel() * t.element_size()
        for layer in cache.layers
        for t in (layer.keys, layer.values)
        if isinstance(t, torch.Tensor)
    )
    if getattr(model, "_cca_settings", None) is not None:
        for module in model.modules():
            for t in getattr(module, "_cca_cores", ()):
                total += t.numel() * t.element_size()
    return total
