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
values may have fewer heads, GQA). It runs PyTorch's fused CPU attention kernel (the one
behind CPU SDPA, which returns each row's log-sum-exp) on views, never copies, flash-style:
first every query attends to its raw window (blocks of 64 queries over their contiguous
slice of raw keys, with a mask), which fills the output and one log-sum-exp per row; then,
one head and one chunk of core tokens at a time (pooled from that chunk's groups only),
blocks of 512 queries attend to the cores of the chunk that all of them see (no mask) and
to the few that only some see (a small staircase mask), and each part is merged into the
output in place by its log-sum-exp. In inference the raw windows run in groups of heads,
each with its own log-sum-exps, and the chunks are longer (see :func:`_attend_forward`).
The backward keeps the output and the log-sum-exp per row, pools the core tokens again and
recomputes each block; the pooling's gradients are written in place. Time is
O(L (L/g + s + g)); beyond the output and its log-sum-exps (which SDPA also holds), the
forward holds one head's chunk of cores and one block's buffers, O(chunk + block (s + g)),
not O(L^2). Where the fused kernel is missing (or off the CPU), the same blocks run in
plain PyTorch.
:func:`dense_cca_attention` builds the explicit ``L x (m + L)`` mask from the rules; it
exists for tests.

Long by design: the kernel's forward and recomputing backward passes share the block bookkeeping
(raw blocks, core blocks, the staircase mask), so they stay in one file beside the dense
reference they are tested against.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import torch

Tensor = torch.Tensor

# PyTorch's fused CPU attention with a log-sum-exp output (the kernel behind CPU SDPA) and
# its backward; where a build lacks them, the same blocks run in plain PyTorch.
_FLASH: Any = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
_FLASH_BACKWARD: Any = getattr(
    torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None
)
FORCE_PYTORCH = False  # True: the plain-PyTorch blocks even where the fused kernel exists
DEFAULT_BLOCK = 512  # queries per block over the core tokens (rounded up to a multiple of g)
RAW_BLOCK = 64  # queries per block over the raw keys (at most the above; also rounded)
CORE_CHUNK = 256  # core tokens alive at a time in the forward (per head)
UNIT_BYTES = 256 * 1024  # low_memory: heads per call such that cores + an output block fit
RAW_BYTES = 64 * 1024  # inference: heads per raw-window group (one raw block's output)


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
    if (
        q.shape[1] == k.shape[1]
        and q.shape[2] != k.shape[2]
        and q.shape[2] % k.shape[2] == 0
        and q.shape[0] == k.shape[0]
        and q.shape[3] == k.shape[3]
    ):
        raise ValueError(
            f"query {tuple(q.shape)} and key {tuple(k.shape)} must agree on B, L and D "
            "(causal self-attention); they look like (B, L, H, D) with fewer key heads: "
            "cca_attention takes (B, H, L, D), as SDPA, so pass query.transpose(1, 2) (and "
            "key, value likewise)"
        )
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


def _visible(a: int, b: int, g: int, s: int) -> Tensor:
    """``J(t)`` for ``t = a .. b - 1`` (no array over all positions is kept)."""
    return torch.clamp(torch.div(torch.arange(a, b) + 1 - s, g, rounding_mode="floor"), min=0)


def _j(t: int, g: int, s: int) -> int:
    """``J(t)`` of one position."""
    return max(0, (t + 1 - s) // g)


def core_tokens(
    q: Tensor, k: Tensor, v: Tensor, group_size: int, scale: float, pool: str = "attention"
) -> tuple[Tensor, Tensor]:
    """Core keys and values ``(B, H, m, D)`` of the complete groups."""
    _check_sizes(0, group_size, 0)
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.ndim != 4:
            raise ValueError(f"{name} must be a (B, H, L, D) tensor, got {getattr(t, 'shape', t)}")
    w = _pool_weights(q, k, group_size, scale, pool)
    return _pool(k, w, group_size), _pool(v, w, group_size)


def cca_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = True,
    *,
    scale: float | None = None,
    enable_gqa: bool = False,
    group_size: int,
    window: int,
    pool: str = "attention",
    block_size: int | None = None,
    low_memory: bool = True,
) -> Tensor:
    """Causal CCA attention, ``(B, H, L, D)`` in and out (see the module docstring).

    The positional arguments are those of ``torch.nn.functional.scaled_dot_product_attention``,
    so ``functools.partial(cca_attention, group_size=16, window=256)`` replaces it where a model
    calls SDPA for causal self-attention. What CCA cannot do is refused by name: an
    ``attn_mask`` (CCA's groups fix the pattern; pass ``None`` and ``is_causal=True``),
    ``is_causal=False`` (CCA is defined causally), ``dropout_p > 0``. ``is_causal`` defaults
    to True here (SDPA's default is False). Keys and values may have fewer heads than the
    queries (GQA) whatever ``enable_gqa`` says (accepted for the signature). float16 and
    bfloat16 inputs are computed in float32 and returned in their own dtype (the CPU kernel
    has no half-precision path); all three inputs must share one dtype and device.

    Queries run in blocks of ``block_size`` (default 512, rounded up to a multiple of ``g``)
    over the core tokens and of ``min(block_size, 64)`` (rounded likewise) over the raw keys
    from the block's first window start to its last query; additive masks apply the exact
    rules and the parts share one softmax (merged by log-sum-exp). With ``low_memory`` (the
    default) the forward pools and attends to one head's chunk of core tokens at a time
    and holds no more than SDPA does; ``low_memory=False`` pools all cores at once and
    runs all heads in each call (~10% faster at 16K-32K, ~1/g of the output more memory).
    Same result either way. Differentiable, with a recomputing backward."""
    _check(query, key, value, group_size, window)
    _check_sdpa_options(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if not isinstance(low_memory, bool):
        raise TypeError(f"low_memory must be a bool, got {type(low_memory).__name__}")
    if pool not in ("attention", "mean"):
        raise ValueError(f"pool must be 'attention' or 'mean', got {pool!r}")
    dtype = query.dtype
    if dtype in (torch.float16, torch.bfloat16):
        query, key, value = query.float(), key.float(), value.float()
    key, value = expand_kv(query, key, value)
    # the kernel indexes raw storage: a strided view (a transposed last dimension) would read
    # the wrong numbers, so views are made contiguous (no copy when they already are)
    query, key, value = query.contiguous(), key.contiguous(), value.contiguous()
    scale = 1.0 / math.sqrt(query.shape[3]) if scale is None else float(scale)
    nq = _block_rows(group_size, window, block_size)
    out = _CCA.apply(query, key, value, group_size, window, scale, pool, nq, low_memory)
    assert isinstance(out, torch.Tensor)
    return out.to(dtype)


def _check_sdpa_options(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attn_mask: Any,
    dropout_p: Any,
    is_causal: Any,
    scale: Any,
    enable_gqa: Any,
) -> None:
    """SDPA's options that CCA takes, and clear errors for those it cannot honour."""
    if attn_mask is not None:
        raise ValueError(
            "cca_attention takes no attn_mask: CCA's groups and window fix the attention "
            "pattern (causal); pass attn_mask=None with is_causal=True"
        )
    if is_causal is not True:
        raise ValueError(
            f"cca_attention is causal self-attention: is_causal must be True, got {is_causal!r}"
        )
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, (int, float)):
        raise TypeError(f"dropout_p must be a number, got {type(dropout_p).__name__}")
    if dropout_p != 0:
        raise ValueError(
            f"cca_attention has no attention dropout: dropout_p must be 0, got {dropout_p}"
        )
    if scale is not None and (
        isinstance(scale, bool)
        or not isinstance(scale, (int, float))
        or not math.isfinite(scale)
        or scale <= 0
    ):
        raise ValueError(f"scale must be None or a positive finite number, got {scale!r}")
    if not isinstance(enable_gqa, bool):
        raise TypeError(f"enable_gqa must be a bool, got {type(enable_gqa).__name__}")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(
            f"query, key and value must share one dtype, got {q.dtype}, {k.dtype} and {v.dtype}"
        )
    if not q.is_floating_point():
        raise TypeError(f"query, key and value must be floating point, got {q.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(
            f"query, key and value must be on one device, got {q.device}, {k.device}, {v.device}"
        )


def attend(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    cores: tuple[Tensor, Tensor],
    g: int,
    s: int,
    scale: float,
    block_size: int | None = None,
    low_memory: bool = True,
) -> Tensor:
    """The blocked kernel of :func:`cca_attention`, given the core tokens (from
    :func:`core_tokens`) and keys and values with the query's head count: for a caller that
    keeps the core tokens (the Hugging Face drop-in's prefill). Gradients flow to the core
    tokens too. ``low_memory`` as in :func:`cca_attention`. Inputs are not checked."""
    kc, vc = cores
    nq = _block_rows(g, s, block_size)
    out = _Attend.apply(query, key, value, kc, vc, g, s, scale, nq, low_memory)
    assert isinstance(out, torch.Tensor)
    return out


def _block_rows(g: int, s: int, block_size: int | None) -> int:
    if block_size is None:
        block_size = DEFAULT_BLOCK
    if not (isinstance(block_size, int) and block_size >= 1):
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    return g * -(-block_size // g)


def _fused_ok(q: Tensor) -> bool:
    return _FLASH is not None and q.device.type == "cpu" and not FORCE_PYTORCH


def _raw_blocks(L: int, g: int, s: int, nr: int, dtype: torch.dtype) -> Iterator[_RawBlock]:
    """Query blocks ``a .. b - 1`` (``nr`` rows, a multiple of ``g``) over their raw keys
    ``k0 .. b - 1``, each with its additive mask (0 or -inf) and the rows that see no raw key
    (only with ``s = 0``). Once every row of a full block sees a core token, the pattern
    repeats from block to block and is built once."""
    steady: tuple[Tensor, Tensor | None] | None = None
    for a in range(0, L, nr):
        b = min(L, a + nr)
        k0 = g * _j(a, g, s)
        if steady is not None and b - a == nr:
            yield _RawBlock(a, b, k0, *steady)
            continue
        rows, cols = torch.arange(a, b)[:, None], torch.arange(k0, b)[None, :]
        mask = torch.zeros(b - a, b - k0, dtype=dtype)
        J = _visible(a, b, g, s)
        mask.masked_fill_((cols > rows) | (cols < g * J[:, None]), float("-inf"))
        empty = g * J > torch.arange(a, b)
        block = (mask, empty if bool(empty.any()) else None)
        if k0 >= g and b - a == nr:
            steady = block
        yield _RawBlock(a, b, k0, *block)


class _RawBlock(NamedTuple):
    a: int
    b: int
    k0: int
    mask: Tensor
    empty: Tensor | None


def _core_blocks(L: int, g: int, s: int, nc: int, dtype: torch.dtype) -> Iterator[_CoreBlock]:
    """Query blocks ``a .. b - 1`` over the core tokens: the rows ``c0 .. b - 1`` see at least
    the cores ``0 .. j0 - 1`` (no mask); the rows ``r0 .. b - 1`` also see some of the cores
    ``j0 .. jmax - 1`` (the staircase, an additive mask). Once the pattern repeats from block
    to block it is built once."""
    J = visible_groups(L, g, s)
    first = g + s - 1  # J(t) >= 1 from t = first on
    steady: Tensor | None = None
    for a in range(0, L, nc):
        b = min(L, a + nc)
        c0 = max(a, first)
        if c0 >= b:
            continue
        j0, jmax = int(J[c0]), int(J[b - 1])
        r0 = c0 + int((J[c0:b] == j0).sum())  # J is non-decreasing
        stair = None
        if r0 < b:
            if steady is not None and b - a == nc and c0 == a:
                stair = steady
            else:
                hidden = torch.arange(j0, jmax)[None, :] >= J[r0:b, None]
                stair = torch.zeros(b - r0, jmax - j0, dtype=dtype).masked_fill_(hidden, -math.inf)
                if c0 == a and b - a == nc and j0 >= 1:
                    steady = stair
        yield _CoreBlock(c0, r0, b, j0, jmax, stair)


class _CoreBlock(NamedTuple):
    c0: int
    r0: int
    b: int
    j0: int
    jmax: int
    stair: Tensor | None


def _merge(out: Tensor, lse: Tensor, o: Tensor, m: Tensor) -> None:
    """Fold a part's output ``o`` and log-sum-exp ``m`` into ``out`` and ``lse`` (in place):
    ``out = w out + (1 - w) o`` with ``w = exp(lse - logaddexp(lse, m)) = sigmoid(lse - m)``.
    ``m`` is finite; where ``lse`` is ``-inf`` (no key yet) ``out`` becomes ``o``."""
    w = torch.sigmoid(lse - m)[..., None]
    torch.lerp(o, out, w, out=out)
    torch.logaddexp(lse, m, out=lse)


def _part_forward(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float
) -> tuple[Tensor, Tensor]:
    """Attention of ``q`` over ``(k, v)`` under an additive mask: output and log-sum-exp per
    row. The fused CPU kernel where there is one, else the same in plain PyTorch."""
    if _fused_ok(q):
        out, lse = _FLASH(q, k, v, attn_mask=mask, scale=scale)
        return out, lse
    logits = (q @ k.transpose(-1, -2)).mul_(scale)
    if mask is not None:
        logits.add_(mask)
    lse = torch.logsumexp(logits, dim=-1)
    finite = torch.where(torch.isinf(lse), 0.0, lse)  # a row with no key: output 0
    return torch.exp(logits.sub_(finite[..., None])) @ v, lse


def _part_backward(
    dout: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    out: Tensor,
    lse: Tensor,
    mask: Tensor | None,
    scale: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """Gradients of one part of a joint softmax, given the joint output and log-sum-exp:
    ``P = exp(S - lse)``, ``dS = P (dP - rowsum(dout * out))``. Nothing of the forward's
    probabilities is kept; they are recomputed here."""
    if _fused_ok(q):
        dq, dk, dv = _FLASH_BACKWARD(
            dout, q, k, v, out, lse, 0.0, False, attn_mask=mask, scale=scale
        )
        return dq, dk, dv
    logits = (q @ k.transpose(-1, -2)).mul_(scale)
    if mask is not None:
        logits.add_(mask)
    p = torch.exp(logits.sub_(lse[..., None]))
    dv = p.transpose(-1, -2) @ dout
    dp = dout @ v.transpose(-1, -2)
    ds = p.mul_(dp.sub_((dout * out).sum(-1, keepdim=True))).mul_(scale)
    return ds @ k, ds.transpose(-1, -2) @ q, dv


def _raw_forward(
    q: Tensor, k: Tensor, v: Tensor, g: int, s: int, scale: float, nr: int, out: Tensor, lse: Tensor
) -> None:
    """Every query over its raw window alone, written into ``out`` and ``lse`` (one
    log-sum-exp per row; ``-inf`` where a row sees no raw key, only with ``s = 0``)."""
    L = q.shape[2]
    for r in _raw_blocks(L, g, s, nr, q.dtype):
        a, b, k0 = r.a, r.b, r.k0
        if b > k0:
            o, m = _part_forward(q[:, :, a:b], k[:, :, k0:b], v[:, :, k0:b], r.mask, scale)
            out[:, :, a:b], lse[:, :, a:b] = o, m
            del o, m  # not alive during the next block's call
        else:
            out[:, :, a:b] = 0.0
        if r.empty is not None:  # the fused kernel reports 0 there, not -inf
            lse[:, :, a:b][:, :, r.empty] = float("-inf")


def _stair(r: int, b: int, lo: int, hi: int, g: int, s: int, dtype: torch.dtype) -> Tensor:
    """Additive mask (0 or -inf) of the rows ``r .. b - 1`` over the cores ``lo .. hi - 1``:
    row ``t`` sees core ``j`` iff ``j < J(t)``."""
    hidden = torch.arange(lo, hi)[None, :] >= _visible(r, b, g, s)[:, None]
    return torch.zeros(b - r, hi - lo, dtype=dtype).masked_fill_(hidden, -math.inf)


Span = tuple[slice, slice, slice]  # batch, heads, positions (of keys or of core tokens)
Unit = tuple[int, int, int, int]  # batch rows b0 .. b1 - 1, heads h0 .. h1 - 1


def _units(unit: Unit, H: int, n: int) -> list[Unit]:
    """``unit`` cut into pieces of at most ``n`` (batch row, head) slices: whole batch rows
    where ``n`` holds all ``H`` heads and ``unit`` has them all, else runs of heads within
    one batch row."""
    b0, b1, h0, h1 = unit
    if n >= H and (h0, h1) == (0, H):
        rows = n // H
        return [(b, min(b1, b + rows), 0, H) for b in range(b0, b1, rows)]
    return [(b, b + 1, h, min(h1, h + n)) for b in range(b0, b1) for h in range(h0, h1, n)]


def _attend_forward(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    cores: Callable[[Span], tuple[Tensor, Tensor]],
    m: int,
    g: int,
    s: int,
    scale: float,
    nq: int,
    low_memory: bool,
    keep_lse: bool = True,
) -> tuple[Tensor, Tensor | None]:
    """Output and (with ``keep_lse``, for the backward) the per-row log-sum-exp,
    flash-style: every query first attends to its raw window; then, for one chunk of core
    tokens at a time (``cores(span)`` gives the keys and values of the cores in ``span``),
    the queries that see some of that chunk attend to it and are merged in place by their
    log-sum-exps.

    With ``low_memory``, a chunk is ``CORE_CHUNK`` cores of as many heads as fit in
    ``UNIT_BYTES`` with one block's output (one head at L >= 512, D = 64, float32; many for
    short sequences or small heads), so that only those and one block's buffers are alive
    at a time. Without ``keep_lse`` (inference), the raw windows run in groups of as many
    heads as keep a raw block's output within ``RAW_BYTES``, each group with its own
    log-sum-exps, dropped when the group is done; half of the memory that the whole array
    would have taken goes to longer chunks of cores (fewer, larger calls and merges: at
    B = 1, H = 8, D = 64, float32, 512 cores a chunk at 16K, 1,280 at 64K), so the forward
    holds less than SDPA, whose kernel allocates the whole array. Without ``low_memory``,
    all heads' cores at once."""
    B, H, L, D = q.shape
    size = q.element_size()
    nr = g * -(-min(nq, RAW_BLOCK) // g)
    out = torch.empty_like(q)
    lse = q.new_empty(q.shape[:3]) if keep_lse or not low_memory else None
    # Query blocks of nq rows (a multiple of g) from the first row that sees a core token:
    # every row of a block sees the cores 0 .. J(a) - 1, and some see up to J(b - 1) - 1.
    blocks = [(a, min(L, a + nq)) for a in range(g + s - 1, L, nq)]
    blocks_j = [(a, b, _j(a, g, s), _j(b - 1, g, s)) for a, b in blocks]  # with J(a), J(b - 1)
    whole: Unit = (0, B, 0, H)
    if not low_memory:  # all heads and all cores in each call
        groups, chunk, n = [whole], max(m, 1), B * H
    else:
        if lse is None:  # inference: raw windows in groups; half the spared memory: chunks
            groups = _units(whole, H, max(1, RAW_BYTES // (nr * D * size)))
            spared = (B * H - max((u[1] - u[0]) * (u[3] - u[2]) for u in groups)) * L * size
            chunk = CORE_CHUNK * (1 + spared // (2 * CORE_CHUNK * 2 * D * size))
        else:
            groups, chunk = [whole], CORE_CHUNK
        # as many heads per call as fit in UNIT_BYTES (cores + one output block)
        n = max(1, UNIT_BYTES // ((2 * min(chunk, m) + min(nq, L)) * D * size))
    # Every block starts at a row with J(a) - J(a - 1) = 1 (a = g + s - 1 mod g), so a
    # staircase depends only on its place relative to (a, J(a)): built once, for all heads.
    stairs: dict[tuple[int, int, int, int], Tensor] = {}
    for gb0, gb1, gh0, gh1 in groups:
        group = (slice(gb0, gb1), slice(gh0, gh1))
        lse_g = lse[group] if lse is not None else q.new_empty(gb1 - gb0, gh1 - gh0, L)
        _raw_forward(q[group], k[group], v[group], g, s, scale, nr, out[group], lse_g)
        for b0, b1, h0, h1 in _units((gb0, gb1, gh0, gh1), H, n):
            bs, hs = slice(b0, b1), slice(h0, h1)
            qh, oh = q[bs, hs], out[bs, hs]
            lh = lse_g[b0 - gb0 : b1 - gb0, h0 - gh0 : h1 - gh0]
            for ja in range(0, m, chunk):
                jb = min(m, ja + chunk)
                kc, vc = cores((bs, hs, slice(ja, jb)))
                for a, b, j0, jmax in blocks_j:
                    if jmax <= ja:  # no row of the block sees this chunk
                        continue
                    c = min(j0, jb) - ja
                    if c > 0:  # the chunk's cores that every row of the block sees
                        kv = kc[:, :, :c], vc[:, :, :c]
                        o, m_ = _part_forward(qh[:, :, a:b], *kv, None, scale)
                        _merge(oh[:, :, a:b], lh[:, :, a:b], o, m_)
                        del o, m_
                    lo, hi = max(j0, ja), min(jmax, jb)
                    if hi > lo:  # the staircase: the rows r .. b - 1 see some of lo .. hi - 1
                        r = max(a, g * (lo + 1) + s - 1)  # J(t) > lo from t = r on
                        kv = kc[:, :, lo - ja : hi - ja], vc[:, :, lo - ja : hi - ja]
                        key = (r - a, b - a, lo - j0, hi - j0)
                        mask = stairs.get(key)
                        if mask is None:
                            mask = stairs[key] = _stair(r, b, lo, hi, g, s, q.dtype)
                        o, m_ = _part_forward(qh[:, :, r:b], *kv, mask, scale)
                        _merge(oh[:, :, r:b], lh[:, :, r:b], o, m_)
                        del o, m_
                del kc, vc  # before the next chunk is pooled
        del lse_g
    return out, lse


def _attend_backward(
    dout: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    kc: Tensor,
    vc: Tensor,
    out: Tensor,
    lse: Tensor,
    g: int,
    s: int,
    scale: float,
    nq: int,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    L = q.shape[2]
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    dkc, dvc = torch.zeros_like(kc), torch.zeros_like(vc)
    dout = dout.contiguous()
    nr = g * -(-min(nq, RAW_BLOCK) // g)
    for r in _raw_blocks(L, g, s, nr, q.dtype):
        a, b, k0 = r.a, r.b, r.k0
        if b > k0:
            part = (dout[:, :, a:b], q[:, :, a:b], k[:, :, k0:b], v[:, :, k0:b])
            gq, gk, gv = _part_backward(*part, out[:, :, a:b], lse[:, :, a:b], r.mask, scale)
            dq[:, :, a:b] += gq
            dk[:, :, k0:b] += gk
            dv[:, :, k0:b] += gv
            del part, gq, gk, gv  # not alive during the next block's call
    for c in _core_blocks(L, g, s, nq, q.dtype):
        c0, r0, b, j0, j1 = c.c0, c.r0, c.b, c.j0, c.jmax
        parts: list[tuple[int, int, int, Tensor | None]] = [(c0, 0, j0, None)] if j0 else []
        if c.stair is not None:
            parts.append((r0, j0, j1, c.stair))
        for row, i, j, mask in parts:
            part = (dout[:, :, row:b], q[:, :, row:b], kc[:, :, i:j], vc[:, :, i:j])
            gq, gk, gv = _part_backward(*part, out[:, :, row:b], lse[:, :, row:b], mask, scale)
            dq[:, :, row:b] += gq
            dkc[:, :, i:j] += gk
            dvc[:, :, i:j] += gv
            del part, gq, gk, gv
    return dq, dk, dv, dkc, dvc


class _Attend(torch.autograd.Function):
    """:func:`attend` with a recomputing backward: it keeps the output and one log-sum-exp
    per row, never a block's probabilities."""

    @staticmethod
    def forward(
        ctx: Any,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        kc: Tensor,
        vc: Tensor,
        g: int,
        s: int,
        scale: float,
        nq: int,
        low_memory: bool,
    ) -> Tensor:
        def cores(span: Span) -> tuple[Tensor, Tensor]:
            return kc[span], vc[span]

        keep = any(ctx.needs_input_grad[:5])  # the backward needs the log-sum-exps
        out, lse = _attend_forward(
            q, k, v, cores, kc.shape[2], g, s, scale, nq, low_memory, keep_lse=keep
        )
        ctx.save_for_backward(q, k, v, kc, vc, out, lse)
        ctx.sizes = (g, s, scale, nq)
        return out

    @staticmethod
    def backward(ctx: Any, dout: Tensor) -> tuple[Tensor | None, ...]:
        q, k, v, kc, vc, out, lse = ctx.saved_tensors
        grads = _attend_backward(dout, q, k, v, kc, vc, out, lse, *ctx.sizes)
        return (*grads, None, None, None, None, None)


class _CCA(torch.autograd.Function):
    """Pooling and attention in one function: the forward pools one chunk of cores at a time
    and keeps none; the backward pools them again, recomputes each block and writes the
    pooling's gradients in place into those of the keys, values and queries, so that
    training holds no more than the inputs, the output, their gradients and O(L / g) extra."""

    @staticmethod
    def forward(
        ctx: Any,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        g: int,
        s: int,
        scale: float,
        pool: str,
        nq: int,
        low_memory: bool,
    ) -> Tensor:
        def cores(span: Span) -> tuple[Tensor, Tensor]:  # pooled from the span's groups only
            bs, hs, js = span
            keys = (bs, hs, slice(js.start * g, js.stop * g))
            w = _pool_weights(q[keys], k[keys], g, scale, pool)
            return _pool(k[keys], w, g), _pool(v[keys], w, g)

        keep = any(ctx.needs_input_grad[:3])  # the backward needs the log-sum-exps
        out, lse = _attend_forward(
            q, k, v, cores, q.shape[2] // g, g, s, scale, nq, low_memory, keep_lse=keep
        )
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.sizes = (g, s, scale, nq)
        ctx.pool = pool
        return out

    @staticmethod
    def backward(ctx: Any, dout: Tensor) -> tuple[Tensor | None, ...]:
        q, k, v, out, lse = ctx.saved_tensors
        g, s, scale, nq = ctx.sizes
        w = _pool_weights(q, k, g, scale, ctx.pool)  # recomputed: the forward kept no cores
        kc, vc = _pool(k, w, g), _pool(v, w, g)
        dq, dk, dv, dkc, dvc = _attend_backward(dout, q, k, v, kc, vc, out, lse, g, s, scale, nq)
        m = kc.shape[2]
        if m:
            kg, vg = _groups(k, g), _groups(v, g)
            dkg, dvg = _groups(dk, g), _groups(dv, g)
            wd = w.unsqueeze(-1)  # (B, H, m, g, 1)
            dkg.addcmul_(wd, dkc.unsqueeze(-2))  # k_core = sum_j w_j k_j
            dvg.addcmul_(wd, dvc.unsqueeze(-2))
            if ctx.pool == "attention":  # w = softmax(q_last . k_j * scale) over the group
                dw = (kg @ dkc.unsqueeze(-1)).squeeze(-1) + (vg @ dvc.unsqueeze(-1)).squeeze(-1)
                dlogit = w * (dw - (w * dw).sum(-1, keepdim=True)) * scale
                dkg.addcmul_(dlogit.unsqueeze(-1), _last_queries(q, g).unsqueeze(-2))
                _last_queries(dq, g).add_((dlogit.unsqueeze(-2) @ kg).squeeze(-2))
        return dq, dk, dv, None, None, None, None, None, None


def _groups(x: Tensor, g: int) -> Tensor:
    """``(B, H, m, g, D)`` view of the complete groups of ``x`` (B, H, L, D)."""
    B, H, L, D = x.shape
    return x[:, :, : (L // g) * g].view(B, H, L // g, g, D)


def _last_queries(q: Tensor, g: int) -> Tensor:
    """``(B, H, m, D)`` view of the query at each complete group's last position."""
    return q[:, :, g - 1 : (q.shape[2] // g) * g : g]


def _pool_weights(q: Tensor, k: Tensor, g: int, scale: float, pool: str) -> Tensor:
    """``(B, H, m, g)`` pooling weights of the complete groups."""
    kg = _groups(k, g)
    if pool == "mean":
        return kg.new_full(kg.shape[:4], 1.0 / g)
    if pool != "attention":
        raise ValueError(f"pool must be 'attention' or 'mean', got {pool!r}")
    logits = torch.einsum("bhmgd,bhmd->bhmg", kg, _last_queries(q, g))
    return torch.softmax(logits.mul_(scale), dim=-1)


def _pool(x: Tensor, w: Tensor, g: int) -> Tensor:
    """``sum_j w_j x_j`` over each complete group: ``(B, H, m, D)``."""
    return (w.unsqueeze(-2) @ _groups(x, g)).squeeze(-2)


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
