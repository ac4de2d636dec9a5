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

**Dropout** (``dropout_p > 0``, SDPA's semantics: applied whenever ``dropout_p > 0``, the
caller passes 0 in evaluation) zeroes each attention probability of the joint softmax, over
core and raw keys alike, with probability ``p`` and scales the kept ones by ``1 / (1 - p)``.
The probabilities are not renormalised, so the parts still merge by their (undropped)
log-sum-exps. The keep/drop decision of an entry is a hash of one seed (drawn from torch's
default generator per call, so ``torch.manual_seed`` reproduces it) and of the entry's
(batch, head, query, key) index (:func:`dropout_keep`), so the backward, which recomputes
its blocks in another order, regenerates the same mask without storing it. With dropout the
blocks run in plain PyTorch (the fused CPU kernel takes no mask of this kind); without it
nothing changes.
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


_M32 = 0xFFFFFFFF


def _mulmod32(x: Tensor, c: int) -> Tensor:
    """``x * c mod 2**32`` for int64 ``x`` in ``[0, 2**32)``, never overflowing int64."""
    lo, hi = c & 0xFFFF, c >> 16
    return (x * lo + ((x * hi) & 0xFFFF) * 65536) & _M32


def _mix32(x: Tensor) -> Tensor:
    """A 32-bit integer hash (lowbias32: xor-shift and multiply rounds), for the small
    per-row and per-key tensors."""
    x = x ^ (x >> 16)
    x = _mulmod32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mulmod32(x, 0x846CA68B)
    return x ^ (x >> 16)


def _mix32_fast(x: Tensor) -> Tensor:
    """A cheaper 32-bit hash for the per-entry pass (multipliers below ``2**28``, so one int64
    product never overflows), in place: ``x`` in ``[0, 2**32)``."""
    for _ in range(2):
        x.bitwise_xor_(x >> 16).mul_(0x045D9F3B).bitwise_and_(_M32)
    return x.bitwise_xor_(x >> 16)


def dropout_keep(
    seed: int,
    p: float,
    batch: Tensor,
    heads: Tensor,
    rows: Tensor,
    keys: Tensor,
    *,
    n_heads: int,
    length: int,
    n_cores: int,
) -> Tensor:
    """Which attention probabilities dropout keeps: a boolean ``(len(batch), len(heads),
    len(rows), len(keys))`` tensor, True with probability ``1 - p``, a hash of ``seed`` and of
    each entry's index (so any block of the ``(B, H, L, m + L)`` array is drawn alike,
    whichever order blocks are visited in). Keys ``0 .. m - 1`` are the core tokens,
    ``m + t`` the raw key at position ``t`` (``m = n_cores``), the order of
    :func:`dense_cca_attention`'s ``[cores, raw keys]``. Each query row (batch, head,
    position) and each key gets its own 32-bit hash of the seed; an entry's bits are a hash
    of their sum."""
    lo, hi = seed & _M32, (seed >> 32) & _M32
    row = (batch.view(-1, 1, 1) * n_heads + heads.view(1, -1, 1)) * length + rows.view(1, 1, -1)
    r = _mix32(_mix32((row & _M32) ^ lo) ^ (row >> 32) ^ hi)
    k = _mix32(_mix32(keys ^ hi) ^ lo)
    x = (r.unsqueeze(-1) + k.view(1, 1, 1, -1)).bitwise_and_(_M32)
    return _mix32_fast(x) >= round(float(p) * 2.0**32)


class _Dropout(NamedTuple):
    """The dropout of one call: probability, seed and the sizes that index its entries."""

    p: float
    seed: int
    n_heads: int
    length: int
    n_cores: int

    def factor(
        self, bs: slice, hs: slice, rows: tuple[int, int], keys: tuple[int, int], raw: bool,
        like: Tensor,
    ) -> Tensor:  # fmt: skip
        """``keep / (1 - p)`` for the batch rows ``bs``, heads ``hs``, query rows
        ``rows[0] .. rows[1] - 1`` and keys ``keys[0] .. keys[1] - 1`` (raw positions when
        ``raw``, else core tokens), in ``like``'s dtype and device."""
        dev = like.device
        off = self.n_cores if raw else 0
        keep = dropout_keep(
            self.seed,
            self.p,
            torch.arange(bs.start, bs.stop, device=dev),
            torch.arange(hs.start, hs.stop, device=dev),
            torch.arange(*rows, device=dev),
            torch.arange(keys[0] + off, keys[1] + off, device=dev),
            n_heads=self.n_heads,
            length=self.length,
            n_cores=self.n_cores,
        )
        if self.p >= 1:
            return torch.zeros(keep.shape, dtype=like.dtype, device=dev)
        return keep.to(like.dtype).div_(1.0 - self.p)


Drop = Callable[[tuple[int, int], tuple[int, int], bool], Tensor]


def _bind(dropout: _Dropout | None, like: Tensor, bs: slice, hs: slice) -> Drop | None:
    """``dropout.factor`` for one (batch, head) slice, or None without dropout."""
    if dropout is None:
        return None
    return lambda rows, keys, raw: dropout.factor(bs, hs, rows, keys, raw, like)


def _draw_seed() -> int:
    """A seed from torch's default (CPU) generator (``torch.manual_seed`` reproduces it),
    whatever the inputs' device: a Python int, which each block's mask hashes on its own
    device."""
    return int(torch.randint(0, 2**62, (), dtype=torch.int64, device="cpu").item())


def _check_dropout(dropout_p: Any) -> float:
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, (int, float)):
        raise TypeError(f"dropout_p must be a number, got {type(dropout_p).__name__}")
    if not (0.0 <= dropout_p <= 1.0):  # also refuses NaN
        raise ValueError(f"dropout_p must be in [0, 1], got {dropout_p}")
    return float(dropout_p)


def _default_scale(d: int) -> float:
    """SDPA's ``1 / sqrt(D)``; with ``D = 0`` every logit is 0, so any scale does."""
    return 1.0 / math.sqrt(d) if d > 0 else 1.0


def _empty_output(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """What SDPA returns when there is nothing to compute (a zero batch, head count, length
    or head size): zeros of the output's shape ``(B, H, L, D)``, differentiable (zero
    gradients of the inputs' shapes)."""
    out = q.new_zeros(q.shape[:3] + v.shape[3:])
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        out = out + 0.0 * (q.sum() + k.sum() + v.sum())
    return out


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
    if k.shape[1] == 0 and q.shape[1] > 0:
        raise ValueError(f"key has 0 heads: query heads {q.shape[1]} need at least one key head")
    if k.shape[1] and q.shape[1] % k.shape[1]:
        raise ValueError(f"query heads {q.shape[1]} must be a multiple of key heads {k.shape[1]}")


def expand_kv(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """Keys and values repeated to the query's head count (GQA), as SDPA's ``enable_gqa``."""
    rep = q.shape[1] // k.shape[1] if k.shape[1] else 1
    if rep == 1:
        return k, v
    return k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)


def visible_groups(
    length: int, group_size: int, window: int, *, device: torch.device | str | None = None
) -> Tensor:
    """``J(t)`` for every query position: how many core tokens it sees (int64, on ``device``;
    torch's default device when None)."""
    _check_sizes(length, group_size, window)
    t = torch.arange(length, device=device)
    return torch.clamp(torch.div(t + 1 - window, group_size, rounding_mode="floor"), min=0)


def _visible(a: int, b: int, g: int, s: int, device: torch.device) -> Tensor:
    """``J(t)`` for ``t = a .. b - 1`` on ``device`` (no array over all positions is kept)."""
    t = torch.arange(a, b, device=device)
    return torch.clamp(torch.div(t + 1 - s, g, rounding_mode="floor"), min=0)


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
    backend: str = "auto",
) -> Tensor:
    """Causal CCA attention, ``(B, H, L, D)`` in and out (see the module docstring).

    The positional arguments are those of ``torch.nn.functional.scaled_dot_product_attention``,
    so ``functools.partial(cca_attention, group_size=16, window=256)`` replaces it where a model
    calls SDPA for causal self-attention. What CCA cannot do is refused by name: an
    ``attn_mask`` (CCA's groups fix the pattern; pass ``None`` and ``is_causal=True``),
    ``is_causal=False`` (CCA is defined causally). ``is_causal`` defaults to True here
    (SDPA's default is False). ``dropout_p`` is SDPA's: with ``dropout_p > 0`` each attention
    probability (core and raw keys alike) is zeroed with that probability and the others
    scaled by ``1 / (1 - p)``, whatever mode the caller is in (pass 0 in evaluation, as with
    SDPA); the mask comes from torch's default generator (see the module docstring). Keys and
    values may have fewer heads than the queries (GQA) whatever ``enable_gqa`` says (accepted
    for the signature). float16 and bfloat16 inputs are computed in float32 and returned in
    their own dtype (the CPU kernel has no half-precision path); all three inputs must share
    one dtype, device and head size. Empty inputs (a zero batch, head count, length or head
    size) give SDPA's empty output.

    Queries run in blocks of ``block_size`` (default 512, rounded up to a multiple of ``g``)
    over the core tokens and of ``min(block_size, 64)`` (rounded likewise) over the raw keys
    from the block's first window start to its last query; additive masks apply the exact
    rules and the parts share one softmax (merged by log-sum-exp). With ``low_memory`` (the
    default) the forward pools and attends to one head's chunk of core tokens at a time
    and holds no more than SDPA does; ``low_memory=False`` pools all cores at once and
    runs all heads in each call (~10% faster at 16K-32K, ~1/g of the output more memory).
    Same result either way. Differentiable, with a recomputing backward.

    ``backend`` picks the implementation: ``"kernel"`` is the above (PyTorch's fused CPU
    kernel, plain-PyTorch blocks elsewhere); ``"flex"`` is FlexAttention with CCA's
    ``BlockMask`` (:mod:`icml25.cca_attention.flex`: compiled on CUDA, forward only on the
    CPU, no dropout, half precision attended in its own dtype); ``"auto"`` (the default) takes
    ``"flex"`` for CUDA inputs without dropout where this PyTorch has FlexAttention, and
    ``"kernel"`` otherwise. ``block_size`` and ``low_memory`` are the kernel's."""
    _check(query, key, value, group_size, window)
    _check_sdpa_options(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if not isinstance(low_memory, bool):
        raise TypeError(f"low_memory must be a bool, got {type(low_memory).__name__}")
    if pool not in ("attention", "mean"):
        raise ValueError(f"pool must be 'attention' or 'mean', got {pool!r}")
    if backend not in ("auto", "kernel", "flex"):
        raise ValueError(f"backend must be 'auto', 'kernel' or 'flex', got {backend!r}")
    if backend == "flex" and dropout_p:
        raise ValueError(
            f"backend='flex' has no dropout (FlexAttention's score_mod acts before the softmax), "
            f"got dropout_p={dropout_p!r}: use backend='kernel' or 'auto'"
        )
    if query.numel() == 0:  # B, H, L or D is 0: nothing to attend (SDPA returns empty)
        return _empty_output(query, key, value)
    if backend == "flex" or (backend == "auto" and _flex_by_default(query, dropout_p)):
        from icml25.cca_attention.flex import flex_cca_attention

        return flex_cca_attention(
            query, key, value, group_size=group_size, window=window, scale=scale, pool=pool
        )
    dtype = query.dtype
    if dtype in (torch.float16, torch.bfloat16):
        query, key, value = query.float(), key.float(), value.float()
    key, value = expand_kv(query, key, value)
    # the kernel indexes raw storage: a strided view (a transposed last dimension) would read
    # the wrong numbers, so views are made contiguous (no copy when they already are)
    query, key, value = query.contiguous(), key.contiguous(), value.contiguous()
    scale = _default_scale(query.shape[3]) if scale is None else float(scale)
    nq = _block_rows(group_size, window, block_size)
    H, L = query.shape[1], query.shape[2]
    drop = _Dropout(float(dropout_p), _draw_seed(), H, L, L // group_size) if dropout_p else None
    out = _CCA.apply(query, key, value, group_size, window, scale, pool, nq, low_memory, drop)
    assert isinstance(out, torch.Tensor)
    return out.to(dtype)


def _flex_by_default(query: Tensor, dropout_p: float) -> bool:
    """``backend="auto"``: FlexAttention for CUDA inputs without dropout, where it exists."""
    if query.device.type != "cuda" or dropout_p:
        return False
    from icml25.cca_attention.flex import available

    return available()


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
    _check_dropout(dropout_p)
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
    if v.shape[3] != q.shape[3]:
        raise ValueError(
            f"value's head size must be the query's (the kernel's), got {v.shape[3]} and "
            f"{q.shape[3]}"
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
    dropout_p: float = 0.0,
) -> Tensor:
    """The blocked kernel of :func:`cca_attention`, given the core tokens (from
    :func:`core_tokens`) and keys and values with the query's head count: for a caller that
    keeps the core tokens (the Hugging Face drop-in's prefill). Gradients flow to the core
    tokens too. ``low_memory`` and ``dropout_p`` as in :func:`cca_attention`. Inputs other
    than ``dropout_p`` are not checked. On CUDA without dropout it runs FlexAttention
    (:func:`icml25.cca_attention.flex.flex_attend`), as :func:`cca_attention`'s ``"auto"``."""
    dropout_p = _check_dropout(dropout_p)
    if query.numel() == 0:
        return _empty_output(query, key, value)
    if _flex_by_default(query, dropout_p):
        from icml25.cca_attention.flex import flex_attend

        return flex_attend(query, key, value, cores, g, s, scale)
    kc, vc = cores
    nq = _block_rows(g, s, block_size)
    H, L = query.shape[1], query.shape[2]
    drop = _Dropout(dropout_p, _draw_seed(), H, L, kc.shape[2]) if dropout_p else None
    out = _Attend.apply(query, key, value, kc, vc, g, s, scale, nq, low_memory, drop)
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


def _raw_blocks(
    L: int, g: int, s: int, nr: int, dtype: torch.dtype, device: torch.device
) -> Iterator[_RawBlock]:
    """Query blocks ``a .. b - 1`` (``nr`` rows, a multiple of ``g``) over their raw keys
    ``k0 .. b - 1``, each with its additive mask (0 or -inf, ``dtype`` on ``device``: the
    queries') and the rows that see no raw key (only with ``s = 0``). Once every row of a full
    block sees a core token, the pattern repeats from block to block and is built once."""
    steady: tuple[Tensor, Tensor | None] | None = None
    for a in range(0, L, nr):
        b = min(L, a + nr)
        k0 = g * _j(a, g, s)
        if steady is not None and b - a == nr:
            yield _RawBlock(a, b, k0, *steady)
            continue
        rows = torch.arange(a, b, device=device)[:, None]
        cols = torch.arange(k0, b, device=device)[None, :]
        mask = torch.zeros(b - a, b - k0, dtype=dtype, device=device)
        J = _visible(a, b, g, s, device)
        mask.masked_fill_((cols > rows) | (cols < g * J[:, None]), float("-inf"))
        # row t sees no raw key iff g J(t) > t (only with s = 0): decided in Python, so that
        # nothing is read back from the device
        any_empty = s == 0 and any(g * _j(t, g, s) > t for t in range(a, b))
        block = (mask, g * J > rows[:, 0] if any_empty else None)
        if k0 >= g and b - a == nr:
            steady = block
        yield _RawBlock(a, b, k0, *block)


class _RawBlock(NamedTuple):
    a: int
    b: int
    k0: int
    mask: Tensor
    empty: Tensor | None


def _core_blocks(
    L: int, g: int, s: int, nc: int, dtype: torch.dtype, device: torch.device
) -> Iterator[_CoreBlock]:
    """Query blocks ``a .. b - 1`` over the core tokens: the rows ``c0 .. b - 1`` see at least
    the cores ``0 .. j0 - 1`` (no mask); the rows ``r0 .. b - 1`` also see some of the cores
    ``j0 .. jmax - 1`` (the staircase, an additive mask, ``dtype`` on ``device``). Once the
    pattern repeats from block to block it is built once. The bookkeeping is integer
    arithmetic on ``J`` (never read back from the device)."""
    first = g + s - 1  # J(t) >= 1 from t = first on
    steady: Tensor | None = None
    for a in range(0, L, nc):
        b = min(L, a + nc)
        c0 = max(a, first)
        if c0 >= b:
            continue
        j0, jmax = _j(c0, g, s), _j(b - 1, g, s)
        # J is non-decreasing and J(t) > j0 from t = g (j0 + 1) + s - 1 on
        r0 = min(b, max(c0, g * (j0 + 1) + s - 1))
        stair = None
        if r0 < b:
            if steady is not None and b - a == nc and c0 == a:
                stair = steady
            else:
                stair = _stair(r0, b, j0, jmax, g, s, dtype, device)
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
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float, drop: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """Attention of ``q`` over ``(k, v)`` under an additive mask: output and log-sum-exp per
    row. The fused CPU kernel where there is one, else the same in plain PyTorch. ``drop``
    (dropout's ``keep / (1 - p)``) multiplies the probabilities; the log-sum-exp is the
    undropped one, so that parts merge as without dropout."""
    if drop is None and _fused_ok(q):
        out, lse = _FLASH(q, k, v, attn_mask=mask, scale=scale)
        return out, lse
    logits = (q @ k.transpose(-1, -2)).mul_(scale)
    if mask is not None:
        logits.add_(mask)
    lse = torch.logsumexp(logits, dim=-1)
    finite = torch.where(torch.isinf(lse), 0.0, lse)  # a row with no key: output 0
    probs = torch.exp(logits.sub_(finite[..., None]))
    if drop is not None:
        probs.mul_(drop)
    return probs @ v, lse


def _part_backward(
    dout: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    out: Tensor,
    lse: Tensor,
    mask: Tensor | None,
    scale: float,
    drop: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Gradients of one part of a joint softmax, given the joint output and log-sum-exp:
    ``P = exp(S - lse)``, ``dS = P (dP - rowsum(dout * out))``. Nothing of the forward's
    probabilities is kept; they are recomputed here. With dropout's factors ``drop`` (``D``,
    the output being ``(P D) V``): ``dV = (P D)^T dout`` and ``dP = D (dout V^T)``, and the
    row sum is still ``rowsum(dout * out)`` (``sum_k P_k dP_k = dout . out``)."""
    if drop is None and _fused_ok(q):
        dq, dk, dv = _FLASH_BACKWARD(
            dout, q, k, v, out, lse, 0.0, False, attn_mask=mask, scale=scale
        )
        return dq, dk, dv
    logits = (q @ k.transpose(-1, -2)).mul_(scale)
    if mask is not None:
        logits.add_(mask)
    p = torch.exp(logits.sub_(lse[..., None]))
    dp = dout @ v.transpose(-1, -2)
    if drop is None:
        dv = p.transpose(-1, -2) @ dout
    else:
        dv = (p * drop).transpose(-1, -2) @ dout
        dp.mul_(drop)
    ds = p.mul_(dp.sub_((dout * out).sum(-1, keepdim=True))).mul_(scale)
    return ds @ k, ds.transpose(-1, -2) @ q, dv


def _raw_forward(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    g: int,
    s: int,
    scale: float,
    nr: int,
    out: Tensor,
    lse: Tensor,
    drop: Drop | None = None,
) -> None:
    """Every query over its raw window alone, written into ``out`` and ``lse`` (one
    log-sum-exp per row; ``-inf`` where a row sees no raw key, only with ``s = 0``)."""
    L = q.shape[2]
    for r in _raw_blocks(L, g, s, nr, q.dtype, q.device):
        a, b, k0 = r.a, r.b, r.k0
        if b > k0:
            d = None if drop is None else drop((a, b), (k0, b), True)
            o, m = _part_forward(q[:, :, a:b], k[:, :, k0:b], v[:, :, k0:b], r.mask, scale, d)
            out[:, :, a:b], lse[:, :, a:b] = o, m
            del o, m  # not alive during the next block's call
        else:
            out[:, :, a:b] = 0.0
        if r.empty is not None:  # the fused kernel reports 0 there, not -inf
            lse[:, :, a:b].masked_fill_(r.empty, float("-inf"))  # in place, no sync


def _stair(
    r: int, b: int, lo: int, hi: int, g: int, s: int, dtype: torch.dtype, device: torch.device
) -> Tensor:
    """Additive mask (0 or -inf, ``dtype`` on ``device``) of the rows ``r .. b - 1`` over the
    cores ``lo .. hi - 1``: row ``t`` sees core ``j`` iff ``j < J(t)``."""
    hidden = torch.arange(lo, hi, device=device)[None, :] >= _visible(r, b, g, s, device)[:, None]
    mask = torch.zeros(b - r, hi - lo, dtype=dtype, device=device)
    return mask.masked_fill_(hidden, -math.inf)


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
    dropout: _Dropout | None = None,
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
    all heads' cores at once. ``dropout``: see :func:`cca_attention`."""
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
        drop_g = _bind(dropout, q, *group)
        _raw_forward(q[group], k[group], v[group], g, s, scale, nr, out[group], lse_g, drop_g)
        for b0, b1, h0, h1 in _units((gb0, gb1, gh0, gh1), H, n):
            bs, hs = slice(b0, b1), slice(h0, h1)
            drop = _bind(dropout, q, bs, hs)
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
                        d = None if drop is None else drop((a, b), (ja, ja + c), False)
                        o, m_ = _part_forward(qh[:, :, a:b], *kv, None, scale, d)
                        _merge(oh[:, :, a:b], lh[:, :, a:b], o, m_)
                        del o, m_
                    lo, hi = max(j0, ja), min(jmax, jb)
                    if hi > lo:  # the staircase: the rows r .. b - 1 see some of lo .. hi - 1
                        r = max(a, g * (lo + 1) + s - 1)  # J(t) > lo from t = r on
                        kv = kc[:, :, lo - ja : hi - ja], vc[:, :, lo - ja : hi - ja]
                        key = (r - a, b - a, lo - j0, hi - j0)
                        mask = stairs.get(key)
                        if mask is None:
                            mask = stairs[key] = _stair(r, b, lo, hi, g, s, q.dtype, q.device)
                        d = None if drop is None else drop((r, b), (lo, hi), False)
                        o, m_ = _part_forward(qh[:, :, r:b], *kv, mask, scale, d)
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
    dropout: _Dropout | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    B, H, L, _ = q.shape
    drop = _bind(dropout, q, slice(0, B), slice(0, H))
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    dkc, dvc = torch.zeros_like(kc), torch.zeros_like(vc)
    dout = dout.contiguous()
    nr = g * -(-min(nq, RAW_BLOCK) // g)
    for r in _raw_blocks(L, g, s, nr, q.dtype, q.device):
        a, b, k0 = r.a, r.b, r.k0
        if b > k0:
            part = (dout[:, :, a:b], q[:, :, a:b], k[:, :, k0:b], v[:, :, k0:b])
            d = None if drop is None else drop((a, b), (k0, b), True)
            gq, gk, gv = _part_backward(*part, out[:, :, a:b], lse[:, :, a:b], r.mask, scale, d)
            dq[:, :, a:b] += gq
            dk[:, :, k0:b] += gk
            dv[:, :, k0:b] += gv
            del part, gq, gk, gv  # not alive during the next block's call
    for c in _core_blocks(L, g, s, nq, q.dtype, q.device):
        c0, r0, b, j0, j1 = c.c0, c.r0, c.b, c.j0, c.jmax
        parts: list[tuple[int, int, int, Tensor | None]] = [(c0, 0, j0, None)] if j0 else []
        if c.stair is not None:
            parts.append((r0, j0, j1, c.stair))
        for row, i, j, mask in parts:
            part = (dout[:, :, row:b], q[:, :, row:b], kc[:, :, i:j], vc[:, :, i:j])
            d = None if drop is None else drop((row, b), (i, j), False)
            gq, gk, gv = _part_backward(*part, out[:, :, row:b], lse[:, :, row:b], mask, scale, d)
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
        dropout: _Dropout | None,
    ) -> Tensor:
        def cores(span: Span) -> tuple[Tensor, Tensor]:
            return kc[span], vc[span]

        keep = any(ctx.needs_input_grad[:5])  # the backward needs the log-sum-exps
        out, lse = _attend_forward(
            q, k, v, cores, kc.shape[2], g, s, scale, nq, low_memory, keep_lse=keep,
            dropout=dropout,
        )  # fmt: skip
        ctx.save_for_backward(q, k, v, kc, vc, out, lse)
        ctx.sizes = (g, s, scale, nq)
        ctx.dropout = dropout
        return out

    @staticmethod
    def backward(ctx: Any, dout: Tensor) -> tuple[Tensor | None, ...]:
        q, k, v, kc, vc, out, lse = ctx.saved_tensors
        g, s, scale, nq = ctx.sizes
        grads = _attend_backward(dout, q, k, v, kc, vc, out, lse, g, s, scale, nq, ctx.dropout)
        return (*grads, None, None, None, None, None, None)


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
        dropout: _Dropout | None,
    ) -> Tensor:
        def cores(span: Span) -> tuple[Tensor, Tensor]:  # pooled from the span's groups only
            bs, hs, js = span
            keys = (bs, hs, slice(js.start * g, js.stop * g))
            w = _pool_weights(q[keys], k[keys], g, scale, pool)
            return _pool(k[keys], w, g), _pool(v[keys], w, g)

        keep = any(ctx.needs_input_grad[:3])  # the backward needs the log-sum-exps
        out, lse = _attend_forward(
            q, k, v, cores, q.shape[2] // g, g, s, scale, nq, low_memory, keep_lse=keep,
            dropout=dropout,
        )  # fmt: skip
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.sizes = (g, s, scale, nq)
        ctx.pool = pool
        ctx.dropout = dropout
        return out

    @staticmethod
    def backward(ctx: Any, dout: Tensor) -> tuple[Tensor | None, ...]:
        q, k, v, out, lse = ctx.saved_tensors
        g, s, scale, nq = ctx.sizes
        w = _pool_weights(q, k, g, scale, ctx.pool)  # recomputed: the forward kept no cores
        kc, vc = _pool(k, w, g), _pool(v, w, g)
        dq, dk, dv, dkc, dvc = _attend_backward(
            dout, q, k, v, kc, vc, out, lse, g, s, scale, nq, ctx.dropout
        )
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
        return dq, dk, dv, None, None, None, None, None, None, None


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
    dropout_p: float = 0.0,
) -> Tensor:
    """The reference: an explicit ``L x (m + L)`` mask from the index rules (O(L^2)).
    ``dropout_p > 0`` multiplies the ``(B, H, L, m + L)`` probabilities by
    :func:`dropout_keep`'s mask over the whole array (the seed drawn from torch's default
    generator as :func:`cca_attention` draws it) and divides by ``1 - p``."""
    _check(query, key, value, group_size, window)
    dropout_p = _check_dropout(dropout_p)
    key, value = expand_kv(query, key, value)
    B, H, L, D = query.shape
    scale = _default_scale(D) if scale is None else scale
    kc, vc = core_tokens(query, key, value, group_size, scale, pool)
    m = kc.shape[2]
    dev = query.device
    J = visible_groups(L, group_size, window, device=dev)
    t = torch.arange(L, device=dev)
    core_ok = torch.arange(m, device=dev)[None, :] < J[:, None]
    raw_ok = (t[None, :] <= t[:, None]) & (t[None, :] >= group_size * J[:, None])
    mask = torch.cat([core_ok, raw_ok], dim=1)
    logits = torch.cat([query @ kc.transpose(-1, -2), query @ key.transpose(-1, -2)], -1) * scale
    probs = torch.softmax(logits.masked_fill(~mask, float("-inf")), dim=-1)
    if dropout_p:
        keep = dropout_keep(
            _draw_seed(), dropout_p, torch.arange(B, device=dev), torch.arange(H, device=dev), t,
            torch.arange(m + L, device=dev),
            n_heads=H, length=L, n_cores=m,
        )  # fmt: skip
        probs = probs * keep.to(probs.dtype) / (1.0 - dropout_p) if dropout_p < 1 else probs * 0
    return probs[..., :m] @ vc + probs[..., m:] @ value


def reach(
    length: int, group_size: int, window: int, *, device: torch.device | str | None = None
) -> Tensor:
    """``(L, L)`` counts: how many times query ``t`` reaches position ``t'`` (raw or inside a
    visible core token), on ``device`` (torch's default when None). The rules give exactly 1
    for every ``t' <= t`` and 0 after."""
    _check_sizes(length, group_size, window)
    J = visible_groups(length, group_size, window, device=device)
    t = torch.arange(length, device=device)
    raw = (t[None, :] <= t[:, None]) & (t[None, :] >= group_size * J[:, None])
    m = length // group_size
    in_core = (t[None, :] < group_size * J[:, None]) & (t[None, :] < m * group_size)
    return raw.int() + in_core.int()
