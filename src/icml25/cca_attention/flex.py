"""CCA attention as a FlexAttention ``BlockMask``: the path :func:`cca_attention` takes on CUDA.

The official kernel is Triton on CUDA; this is PyTorch's own route to a fused GPU kernel for a
sparse attention pattern. The keys are laid out as ``[m core keys ; L raw keys]`` (the core
tokens pooled by :func:`icml25.cca_attention.attention.core_tokens`, differentiable torch ops)
and one mask function states the rules of the module docstring of ``attention.py``:

- core key ``c < m`` is visible to query ``t`` iff ``c < J(t)``;
- raw key ``m + r`` is visible iff ``g J(t) <= r <= t``,

with ``J(t) = max(0, floor((t + 1 - s) / g))``. ``create_block_mask`` turns it into the block
structure FlexAttention skips on (whole blocks of neither rule are never computed), so the cost
is that of the visible blocks, O(L (L/g + s + g)) up to the block size. There is one softmax over
both parts, as in the kernel; the result equals :func:`dense_cca_attention` to rounding.

Where it runs: on CUDA, compiled (``torch.compile(flex_attention)``, a fused Triton kernel) with
its backward. On the CPU, PyTorch 2.13 has FlexAttention's forward only (eager: an unfused
implementation that materialises the scores, for tests; compiled with ``compile=True``: an
Inductor C++ kernel, which needs a C++ compiler) and no backward, so a CPU call that needs
gradients is refused by name. There is no dropout on this path (FlexAttention's ``score_mod``
acts before the softmax; CCA's dropout zeroes probabilities): ``cca_attention`` takes the
kernel path when ``dropout_p > 0``.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from icml25.cca_attention.attention import (
    _check,
    _check_sdpa_options,
    _check_sizes,
    _default_scale,
    _empty_output,
    core_tokens,
    expand_kv,
)

Tensor = torch.Tensor


def available() -> bool:
    """Whether this PyTorch has FlexAttention (``torch.nn.attention.flex_attention``)."""
    try:
        from torch.nn.attention import flex_attention  # noqa: F401
    except ImportError:
        return False
    return True


def cca_mask_mod(length: int, group_size: int, window: int) -> Any:
    """The ``mask_mod(b, h, q, kv)`` of CCA over keys ``[m cores ; L raw]`` (``m = L // g``)."""
    g, s, m = group_size, window, length // group_size

    def mask_mod(b: Tensor, h: Tensor, q: Tensor, kv: Tensor) -> Tensor:
        j = torch.clamp(torch.div(q + 1 - s, g, rounding_mode="floor"), min=0)
        r = kv - m
        core = (kv < m) & (kv < j)
        raw = (kv >= m) & (r >= g * j) & (r <= q)
        return core | raw

    return mask_mod


@functools.lru_cache(maxsize=8)
def _block_mask(length: int, group_size: int, window: int, device: torch.device) -> Any:
    from torch.nn.attention.flex_attention import create_block_mask

    m = length // group_size
    return create_block_mask(
        cca_mask_mod(length, group_size, window),
        None,
        None,
        length,
        m + length,
        device=device,
        _compile=device.type == "cuda",  # eager evaluation holds the whole L x (m + L) mask
    )


def cca_block_mask(length: int, group_size: int, window: int, *, device: Any = "cpu") -> Any:
    """The ``BlockMask`` of CCA for a sequence of ``length`` (cached per size and device)."""
    _check_sizes(length, group_size, window)
    if length == 0:
        raise ValueError("length must be >= 1 for a block mask, got 0")
    return _block_mask(length, group_size, window, torch.device(device))


@functools.lru_cache(maxsize=1)
def _compiled() -> Any:
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=False)


def flex_cca_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    *,
    group_size: int,
    window: int,
    scale: float | None = None,
    pool: str = "attention",
    compile: bool | None = None,
) -> Tensor:
    """CCA attention through FlexAttention, ``(B, H, L, D)`` in and out (keys and values may
    have fewer heads, GQA). ``compile=None`` compiles on CUDA and runs eagerly elsewhere
    (``True``/``False`` force it). float16/bfloat16 inputs are pooled in float32 and attended
    in their own dtype, as FlexAttention does on the GPU. Needs FlexAttention; on the CPU,
    inference only (see the module docstring)."""
    _check(query, key, value, group_size, window)
    # the same dtype, device, head-size and scale checks as cca_attention's
    _check_sdpa_options(query, key, value, None, 0.0, True, scale, False)
    if pool not in ("attention", "mean"):
        raise ValueError(f"pool must be 'attention' or 'mean', got {pool!r}")
    if compile is not None and not isinstance(compile, bool):
        raise TypeError(f"compile must be None or a bool, got {type(compile).__name__}")
    if not available():
        raise RuntimeError(
            f"the flex path needs torch.nn.attention.flex_attention, absent in torch "
            f"{torch.__version__}: use backend='kernel'"
        )
    dev = query.device
    grads = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
    if dev.type == "cpu" and grads:
        raise NotImplementedError(
            "FlexAttention has no backward on the CPU (PyTorch "
            f"{torch.__version__}): inputs that require gradients need backend='kernel' on "
            "the CPU, or a CUDA device"
        )
    if query.numel() == 0:  # B, H, L or D is 0: SDPA's empty output
        return _empty_output(query, key, value)
    if not grads:  # FlexAttention refuses CPU inputs that require grad even under no_grad
        query, key, value = query.detach(), key.detach(), value.detach()
    scale = _default_scale(query.shape[3]) if scale is None else float(scale)
    key, value = expand_kv(query, key, value)
    low = query.dtype in (torch.float16, torch.bfloat16)
    q32, k32, v32 = (t.float() for t in (query, key, value)) if low else (query, key, value)
    cores = core_tokens(q32, k32, v32, group_size, scale, pool)
    return flex_attend(query, key, value, cores, group_size, window, scale, compile=compile)


def flex_attend(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    cores: tuple[Tensor, Tensor],
    g: int,
    s: int,
    scale: float,
    *,
    compile: bool | None = None,
) -> Tensor:
    """FlexAttention over ``[cores ; raw keys]`` given the core tokens (from
    :func:`core_tokens`) and keys and values with the query's head count: what
    :func:`icml25.cca_attention.attention.attend` runs on CUDA (the Hugging Face drop-in's
    prefill keeps the cores). The cores are cast to the query's dtype. Inputs are not checked."""
    from torch.nn.attention.flex_attention import flex_attention

    if query.numel() == 0:
        return _empty_output(query, key, value)
    dev, dtype = query.device, query.dtype
    kc, vc = cores
    keys = torch.cat([kc.to(dtype), key], dim=2)
    values = torch.cat([vc.to(dtype), value], dim=2)
    mask = _block_mask(query.shape[2], g, s, dev)
    run = flex_attention
    if compile or (compile is None and dev.type == "cuda"):
        run = _compiled()
    out = run(query, keys, values, block_mask=mask, scale=scale)
    assert isinstance(out, torch.Tensor)
    return out
