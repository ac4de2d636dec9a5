"""Core Context Aware attention (Chen, You, Zhang, Li, Li, Wang & Tan, ICML 2025).

For a causal sequence of length ``L``, group size ``g`` and local window ``s`` (positions are
0-based here):

- **Globality-aware pooling.** The ``m = L // g`` complete groups ``[i g, (i+1) g)`` are each
  compressed into one core key and value: ``w = softmax(q_last . k_j * scale)`` over the
  group, with ``q_last`` the query of the group's last token, and ``k_core = sum_j w_j k_j``,
  ``v_core = sum_j w_j v_j``. ``pool="mean"`` uses uniform weights (the paper's ablation).
- **Visibility.** Query ``t`` sees the core tokens of groups ``0 .. J(t) - 1`` with
  ``J(t) = max(0, floor((t + 1 - s) / g))``: only groups that ended at least ``s`` tokens
  before it. It sees the raw tokens ``g J(t) .. t``: the locality-preserving window of
  ``s + ((t + 1 - s) mod g)`` tokens, aligned to a group boundary. Every earlier position
  is reached exactly once, either raw or inside one core token. This is the brief's index
  rules in 0-based form, with the window starting right after the last visible group, so
  that no position is counted twice.
- **One joint softmax** over [visible core keys, window keys].

:func:`cca_attention` takes ``(B, H, L, D)`` tensors like
``torch.nn.functional.scaled_dot_product_attention`` (causal self-attention; keys and
values may have fewer heads, GQA). It works on blocks of queries, each scoring the core
keys it may see and one contiguous slice of raw keys. Time is O(L (L/g + s + g)) and
memory O(block (L/g + s + g)), not O(L^2). :func:`dense_cca_attention` builds the explicit
``L x (m + L)`` mask from the rules; it exists for tests.
"""

from __future__ import annotations

import math

import torch

Tensor = torch.Tensor


def _check_sizes(length: int, group_size: int, window: int) -> None:
    if not (isinstance(length, int) and length >= 0):
        raise ValueError(f"length must be an integer >= 0, got {length!r}")
    if not (isinstance(group_size, int) and group_size >= 1):
        raise ValueError(f"group_size must be an integer >= 1, got {group_size!r}")
    if not (isinstance(window, int) and window >= 0):
        raise ValueError(f"window must be an integer >= 0, got {window!r}")


def _check(q: Tensor, k: Tensor, v: Tensor, group_size: int, window: int) -> None:
    if not (isinstance(group_size, int) and group_size >= 1):
        raise ValueError(f"group_size must be an integer >= 1, got {group_size!r}")
    if not (isinstance(window, int) and window >= 0):
        raise ValueError(f"window must be an integer >= 0, got {window!r}")
    for name, t in (("query", q), ("key", k), ("value", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.ndim != 4:
            raise ValueError(f"{name} must be (B, H, L, D), got shape {tuple(t.shape)}")
    if k.shape[:3] != v.shape[:3]:
        raise ValueError(f"key {tuple(k.shape)} and value {tuple(v.shape)} must agree on B, H, L")
    if q.shape[0] != k.shape[0] or q.shape[2] != k.shape[2] or q.shape[3] != k.shape[3]:
        raise ValueError(
            f"query {tuple(q.shape)} and key {tuple(k.shape)} must agree on B, L and D "
            "(causal self-attention)"
        )
    if q.shape[1] % k.shape[1]:
        raise ValueError(f"query heads {q.shape[1]} must be a multiple of key heads {k.shape[1]}")


def expand_kv(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """Keys and values repeated to the query's head count (GQA), as SDPA's ``enable_gqa``."""
    rep = q.shape[1] // k.shape[1]
    if rep == 1:
        return k, v
    return k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)


def visible_groups(length: int, group_size: int, window: int) -> Tensor:
    """``J(t)`` for every query position: how many core tokens it sees."""
    _check_sizes(length, group_size, window)
    t = torch.arange(length)
    return torch.clamp(torch.div(t + 1 - window, group_size, rounding_mode="floor"), min=0)


def core_tokens(
    q: Tensor, k: Tensor, v: Tensor, group_size: int, scale: float, pool: str = "attention"
) -> tuple[Tensor, Tensor]:
    """Core keys and values ``(B, H, m, D)`` of the complete groups."""
    _check_sizes(0, group_size, 0)
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.ndim != 4:
            raise ValueError(f"{name} must be a (B, H, L, D) tensor, got {getattr(t, 'shape', t)}")
    B, H, L, D = k.shape
    m = L // group_size
    kg = k[:, :, : m * group_size].reshape(B, H, m, group_size, D)
    vg = v[:, :, : m * group_size].reshape(B, H, m, group_size, D)
    if pool == "mean":
        return kg.mean(3), vg.mean(3)
    if pool != "attention":
        raise ValueError(f"pool must be 'attention' or 'mean', got {pool!r}")
    q_last = q[:, :, group_size - 1 : m * group_size : group_size]  # (B, H, m, D)
    w = torch.softmax(torch.einsum("bhmd,bhmgd->bhmg", q_last, kg) * scale, dim=-1)
    return torch.einsum("bhmg,bhmgd->bhmd", w, kg), torch.einsum("bhmg,bhmgd->bhmd", w, vg)


def cca_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    *,
    group_size: int,
    window: int,
    scale: float | None = None,
    pool: str = "attention",
    block_size: int | None = None,
) -> Tensor:
    """Causal CCA attention, ``(B, H, L, D)`` in and out (see the module docstring).

    Queries run in blocks of ``block_size`` (default: the window rounded up to a multiple of
    ``g``, at least 128). A block scores the core tokens visible to its last query and one
    contiguous slice of raw keys, from its first query's window start to its last query.
    Per-row masks apply the exact rules, and one softmax covers both. That is
    O(L (L/g + 2 s + g)) time and O(block (L/g + block + s + g)) extra memory."""
    _check(query, key, value, group_size, window)
    key, value = expand_kv(query, key, value)
    scale = 1.0 / math.sqrt(query.shape[3]) if scale is None else scale
    cores = core_tokens(query, key, value, group_size, scale, pool)
    return attend(query, key, value, cores, group_size, window, scale, block_size)


def attend(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    cores: tuple[Tensor, Tensor],
    g: int,
    s: int,
    scale: float,
    block_size: int | None = None,
) -> Tensor:
    """The blocked kernel of :func:`cca_attention`, given the core tokens (from
    :func:`core_tokens`) and keys and values with the query's head count: for a caller that
    keeps the core tokens (the Hugging Face drop-in's prefill). Inputs are not checked."""
    kc, vc = cores
    L = query.shape[2]
    if block_size is None:
        block_size = max(128, s)
    if not (isinstance(block_size, int) and block_size >= 1):
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    nq = g * -(-block_size // g)
    J = visible_groups(L, g, s)
    out = torch.empty_like(query)
    for a in range(0, L, nq):
        b = min(L, a + nq)
        k0 = g * int(J[a])  # the earliest window start in this block
        jmax = int(J[b - 1])  # the most core tokens any query of the block sees
        rows, cols = torch.arange(a, b), torch.arange(k0, b)
        hidden = (cols[None, :] > rows[:, None]) | (cols[None, :] < g * J[a:b, None])
        if jmax:
            hidden = torch.cat([torch.arange(jmax)[None, :] >= J[a:b, None], hidden], dim=1)
            keys = torch.cat([kc[:, :, :jmax], key[:, :, k0:b]], dim=2)
            values = torch.cat([vc[:, :, :jmax], value[:, :, k0:b]], dim=2)
        else:
            keys, values = key[:, :, k0:b], value[:, :, k0:b]
        # in place: one block of logits and its softmax are the largest buffers held
        logits = (query[:, :, a:b] @ keys.transpose(-1, -2)).mul_(scale)
        logits.masked_fill_(hidden, torch.finfo(logits.dtype).min)
        out[:, :, a:b] = torch.softmax(logits, dim=-1) @ values
    return out


def dense_cca_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    *,
    group_size: int,
    window: int,
    scale: float | None = None,
    pool: str = "attention",
) -> Tensor:
    """The reference: an explicit ``L x (m + L)`` mask from the index rules (O(L^2))."""
    _check(query, key, value, group_size, window)
    key, value = expand_kv(query, key, value)
    L, D = query.shape[2], query.shape[3]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    kc, vc = core_tokens(query, key, value, group_size, scale, pool)
    m = kc.shape[2]
    J = visible_groups(L, group_size, window)
    t = torch.arange(L)
    core_ok = torch.arange(m)[None, :] < J[:, None]
    raw_ok = (t[None, :] <= t[:, None]) & (t[None, :] >= group_size * J[:, None])
    mask = torch.cat([core_ok, raw_ok], dim=1)
    logits = torch.cat([query @ kc.transpose(-1, -2), query @ key.transpose(-1, -2)], -1) * scale
    probs = torch.softmax(logits.masked_fill(~mask, float("-inf")), dim=-1)
    return probs[..., :m] @ vc + probs[..., m:] @ value


def reach(length: int, group_size: int, window: int) -> Tensor:
    """``(L, L)`` counts: how many times query ``t`` reaches position ``t'`` (raw or inside a
    visible core token). The rules give exactly 1 for every ``t' <= t`` and 0 after."""
    _check_sizes(length, group_size, window)
    J = visible_groups(length, group_size, window)
    t = torch.arange(length)
    raw = (t[None, :] <= t[:, None]) & (t[None, :] >= group_size * J[:, None])
    m = length // group_size
    in_core = (t[None, :] < group_size * J[:, None]) & (t[None, :] < m * group_size)
    return raw.int() + in_core.int()
