"""CCA follows the device and dtype of its inputs (issue 67): the kernel's masks, the dense
reference, the Hugging Face drop-in and the tiny LM create every tensor on the query's device.

Without a GPU the checks run on ``meta``:

* **no default-device tensors**: under ``with torch.device("meta")`` every factory call without
  a ``device=`` lands on ``meta``; mixed with the CPU inputs it raises (or cannot be read), so a
  CPU call must still give exactly its CPU results, forward and backward;
* **meta in, meta out**: on a non-CPU device the kernel runs its plain-PyTorch blocks (the fused
  kernel is CPU only) and never reads a value back, so meta inputs give a meta output.

Where CUDA is present, CUDA against CPU.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import pytest
import torch

from icml25.cca_attention import attention
from icml25.cca_attention.attention import (
    attend,
    cca_attention,
    core_tokens,
    dense_cca_attention,
    expand_kv,
)
from icml25.cca_attention.model import TinyLM

META = torch.device("meta")

# (B, H, H_kv, L, D, g, s): GQA, s = 0 (rows with no raw key), L below g + s, several blocks
SHAPES = [
    (1, 2, 2, 37, 8, 4, 5),
    (2, 4, 2, 130, 8, 8, 16),
    (1, 2, 1, 300, 16, 16, 40),
    (2, 3, 3, 64, 4, 4, 0),
    (1, 2, 2, 20, 8, 8, 32),
]


def _qkv(shape: tuple[int, ...], dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, ...]:
    B, H, Hk, L, D, _, _ = shape
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, L, D, generator=gen, dtype=dtype)
    k = torch.randn(B, Hk, L, D, generator=gen, dtype=dtype)
    v = torch.randn(B, Hk, L, D, generator=gen, dtype=dtype)
    return q, k, v


def _fwd_bwd(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, guard: bool, **kw: Any
) -> list[torch.Tensor]:
    """Output and input gradients of one cca_attention call (dropout seeded alike); with
    ``guard`` the forward and the backward run under the meta default device."""
    qq, kk, vv = (t.detach().clone().requires_grad_() for t in (q, k, v))
    torch.manual_seed(7)
    with torch.device(META) if guard else nullcontext():
        out = cca_attention(qq, kk, vv, **kw)
        out.backward(out.detach() + 1.0)
    assert qq.grad is not None and kk.grad is not None and vv.grad is not None
    return [out.detach(), qq.grad, kk.grad, vv.grad]


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> None:
    for x, y in zip(a, b, strict=True):
        assert x.device == y.device == torch.device("cpu")
        assert x.dtype == y.dtype and torch.equal(x, y)


@pytest.fixture
def plain_pytorch(request: Any) -> Any:
    before = attention.FORCE_PYTORCH
    attention.FORCE_PYTORCH = request.param
    yield request.param
    attention.FORCE_PYTORCH = before


# ------------------------------------------------------------- no default-device tensors
@pytest.mark.parametrize("plain_pytorch", [False, True], indirect=True, ids=["fused", "plain"])
@pytest.mark.parametrize("shape", SHAPES)
def test_kernel_creates_no_default_device_tensor(shape: tuple[int, ...], plain_pytorch: bool):
    """Forward and backward under ``torch.device("meta")`` on CPU inputs: exactly the CPU
    results (a mask built without ``device=`` would be a meta tensor meeting CPU logits)."""
    g, s = shape[5], shape[6]
    for dtype in (torch.float32, torch.float64):
        q, k, v = _qkv(shape, dtype)
        for kw in (
            {"dropout_p": 0.0, "low_memory": True},
            {"dropout_p": 0.0, "low_memory": False},
            {"dropout_p": 0.25, "low_memory": True},
            {"dropout_p": 0.25, "low_memory": False, "block_size": 32},
        ):
            kw = {**kw, "group_size": g, "window": s}
            _same(_fwd_bwd(q, k, v, True, **kw), _fwd_bwd(q, k, v, False, **kw))
    # inference (no log-sum-exps kept: the raw windows in groups of heads) and bfloat16
    q, k, v = _qkv(shape, torch.bfloat16)
    with torch.no_grad():
        want = cca_attention(q, k, v, group_size=g, window=s)
        with torch.device(META):
            got = cca_attention(q, k, v, group_size=g, window=s)
    _same([got], [want])


class _Ctx:
    """What autograd hands a Function's forward and backward, for calling them directly: the
    backward runs in autograd's engine, where ``torch.device("meta")`` does not reach."""

    needs_input_grad = (True,) * 5

    def save_for_backward(self, *tensors: torch.Tensor) -> None:
        self.saved_tensors = tensors


@pytest.mark.parametrize("plain_pytorch", [False, True], indirect=True, ids=["fused", "plain"])
@pytest.mark.parametrize("shape", SHAPES)
def test_backward_creates_no_default_device_tensor(shape: tuple[int, ...], plain_pytorch: bool):
    """The recomputing backwards (their own raw blocks, staircases and pooling), called
    directly under the guard: exactly the gradients that autograd gets from cca_attention."""
    g, s = shape[5], shape[6]
    q, k, v = _qkv(shape, torch.float64)
    kf, vf = expand_kv(q, k, v)
    H, L = q.shape[1], q.shape[2]
    scale, nq = attention._default_scale(q.shape[3]), g * -(-attention.DEFAULT_BLOCK // g)
    for p in (0.0, 0.25):
        drop = attention._Dropout(p, 1234, H, L, L // g) if p else None

        def cca(q=q, drop=drop) -> list[torch.Tensor]:
            ctx = _Ctx()
            out = attention._CCA.forward(ctx, q, kf, vf, g, s, scale, "attention", nq, True, drop)
            return [out, *attention._CCA.backward(ctx, out + 1.0)[:3]]

        def attend_(q=q, drop=drop) -> list[torch.Tensor]:
            ctx = _Ctx()
            kc, vc = core_tokens(q, kf, vf, g, scale, "mean")
            out = attention._Attend.forward(ctx, q, kf, vf, kc, vc, g, s, scale, nq, False, drop)
            return [out, *attention._Attend.backward(ctx, out + 1.0)[:5]]

        for run in (cca, attend_):
            want = run()
            with torch.device(META):
                got = run()
            _same(got, want)
        if not p:  # the direct calls are what autograd runs
            got = _fwd_bwd(q, kf, vf, False, group_size=g, window=s)
            _same([cca()[0], *cca()[1:]], got)


def test_reference_and_attend_create_no_default_device_tensor():
    """dense_cca_attention (with dropout), core_tokens and attend under the guard."""
    q, k, v = _qkv(SHAPES[1], torch.float64)
    kf, vf = expand_kv(q, k, v)

    def run() -> list[torch.Tensor]:
        torch.manual_seed(3)
        dense = dense_cca_attention(q, k, v, group_size=8, window=16, dropout_p=0.3)
        cores = core_tokens(q, kf, vf, 8, 0.3, "mean")
        torch.manual_seed(3)
        blocked = attend(q, kf, vf, cores, 8, 16, 0.3, dropout_p=0.3)
        return [dense, *cores, blocked]

    want = run()
    with torch.device(META):
        got = run()
    _same(got, want)


def _decode(model: Any, ids: torch.Tensor, mask: torch.Tensor | None, cache: Any) -> Any:
    """Prefill, then three greedy decoding steps through the model's forward: the logits."""
    from icml25.cca_attention.hf import cache_kwarg

    name = cache_kwarg(model)
    kw: dict[str, Any] = {name: cache} if cache is not None else {}
    out = model(ids, attention_mask=mask, use_cache=True, **kw)
    logits = [out.logits]
    for _ in range(3):
        nxt = out.logits[:, -1:].argmax(-1)
        if mask is not None:
            mask = torch.cat([mask, torch.ones_like(nxt)], dim=1)
        out = model(nxt, attention_mask=mask, use_cache=True, **{name: out.past_key_values})
        logits.append(out.logits)
    return logits


def test_hf_drop_in_creates_no_default_device_tensor():
    """A tiny Llama (GQA) switched to CCA, created outside the guard: prefill and decoding
    (the model's cache, CCACache, a left-padded batch), generate, and a training step with
    attention dropout give exactly the same under ``torch.device("meta")``."""
    pytest.importorskip("transformers")
    from icml25.cca_attention.hf import CCACache, use_cca
    from icml25.core.llm import tiny_llama

    model, tok = tiny_llama(layers=2, heads=4, kv_heads=2)
    use_cca(model, group_size=4, window=8)
    ids = tok("the quick brown fox jumps over the lazy dog", return_tensors="pt").input_ids
    tok.padding_side = "left"
    batch = tok(["the quick brown fox", "jumps over the lazy dog again"], return_tensors="pt",
                padding=True)  # fmt: skip
    assert not bool(batch.attention_mask.all())  # really padded

    def infer() -> list[torch.Tensor]:
        with torch.no_grad():
            return [
                *_decode(model, ids, None, None),
                *_decode(model, ids, None, CCACache(model)),
                *_decode(model, batch.input_ids, batch.attention_mask, None),
                model.generate(ids, max_new_tokens=4, do_sample=False),
            ]

    def train() -> list[torch.Tensor]:
        model.zero_grad()
        torch.manual_seed(11)
        logits = model(ids).logits
        logits.sum().backward()
        return [
            logits.detach(),
            *(p.grad.clone() for p in model.parameters() if p.grad is not None),
        ]

    want = infer()
    with torch.device(META):
        got = infer()
    _same(got, want)
    model.config.attention_dropout = 0.2
    model.train()
    want = train()
    with torch.device(META):
        got = train()
    _same(got, want)


def test_tiny_lm_creates_no_default_device_tensor():
    """The reproduction's TinyLM (position ids, window masks, CCA) under the guard."""
    torch.manual_seed(0)
    lm = TinyLM(20, dim=16, heads=2, layers=1, max_len=64)
    x = torch.randint(0, 20, (2, 50))
    for kind in ("full", "local", "sink", "cca", "cca_mean"):
        lm.set_attention(kind, 4, 8)
        with torch.no_grad():
            want = lm(x)
            with torch.device(META):
                got = lm(x)
        _same([got], [want])


# ---------------------------------------------------------------------- meta in, meta out
@pytest.mark.parametrize("dropout_p", [0.0, 0.25])
def test_meta_inputs_give_a_meta_output(dropout_p: float):
    """Off the CPU the plain-PyTorch blocks run with masks on the inputs' device and nothing is
    read back from it: meta inputs give a meta output (and meta gradients) of SDPA's shape."""
    q, k, v = (t.to(META).requires_grad_() for t in _qkv(SHAPES[2], torch.float32))
    out = cca_attention(q, k, v, group_size=16, window=40, dropout_p=dropout_p)
    assert out.device == META and out.shape == q.shape and out.dtype == q.dtype
    out.sum().backward()
    assert q.grad is not None and q.grad.device == META and k.grad is not None
    assert k.grad.shape == k.shape
    ref = dense_cca_attention(q, k, v, group_size=16, window=40)
    assert ref.device == META and ref.shape == q.shape


# ------------------------------------------------------------------------- CUDA vs CPU
@pytest.mark.cuda
@pytest.mark.parametrize("shape", SHAPES)
def test_cuda_kernel_matches_cpu(shape: tuple[int, ...]):
    """float64 forward and backward on CUDA (the plain-PyTorch blocks) against the CPU; the
    dropout mask is a hash of the entry's index, so it is the same mask on both devices."""
    g, s = shape[5], shape[6]
    q, k, v = _qkv(shape, torch.float64)
    cuda = [t.cuda() for t in (q, k, v)]
    for kw in ({"dropout_p": 0.0}, {"dropout_p": 0.25}, {"low_memory": False}):
        kw = {**kw, "group_size": g, "window": s}
        want = _fwd_bwd(q, k, v, False, **kw)
        got = _fwd_bwd(*cuda, False, **kw)
        for x, y in zip(got, want, strict=True):
            assert x.device.type == "cuda" and x.dtype == torch.float64
            torch.testing.assert_close(x.cpu(), y, rtol=1e-9, atol=1e-10)
    with torch.no_grad():
        half = cca_attention(*(t.to(torch.bfloat16) for t in cuda), group_size=g, window=s)
    assert half.device.type == "cuda" and half.dtype == torch.bfloat16
    ref = dense_cca_attention(*cuda, group_size=g, window=s)
    torch.testing.assert_close(ref.cpu(), dense_cca_attention(q, k, v, group_size=g, window=s))


@pytest.mark.cuda
def test_cuda_hf_drop_in_and_tiny_lm_match_cpu():
    """The tiny Llama with CCA on CUDA (float64): prefill and decoding logits against the CPU,
    the compressed cache and a left-padded batch included; TinyLM likewise."""
    pytest.importorskip("transformers")
    from icml25.cca_attention.hf import CCACache, use_cca
    from icml25.core.llm import tiny_llama

    model, tok = tiny_llama(layers=2, heads=4, kv_heads=2)
    model = model.double()
    use_cca(model, group_size=4, window=8)
    ids = tok("the quick brown fox jumps over the lazy dog", return_tensors="pt").input_ids
    tok.padding_side = "left"
    batch = tok(["the quick brown fox", "jumps over the lazy dog again"], return_tensors="pt",
                padding=True)  # fmt: skip

    def run(device: str) -> list[torch.Tensor]:
        model.to(device)
        m = batch.attention_mask.to(device)
        with torch.no_grad():
            out = [
                *_decode(model, ids.to(device), None, None),
                *_decode(model, ids.to(device), None, CCACache(model)),
                *_decode(model, batch.input_ids.to(device), m, None),
            ]
        return [t.cpu() for t in out]

    want, got = run("cpu"), run("cuda")
    for x, y in zip(got, want, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-9, atol=1e-9)
    torch.manual_seed(0)
    lm = TinyLM(20, dim=16, heads=2, layers=1, max_len=64).double()
    x = torch.randint(0, 20, (2, 50))
    for kind in ("local", "sink", "cca"):
        lm.set_attention(kind, 4, 8)
        with torch.no_grad():
            want_lm = lm.cpu()(x)
            got_lm = lm.cuda()(x.cuda())
        assert got_lm.device.type == "cuda"
        torch.testing.assert_close(got_lm.cpu(), want_lm, rtol=1e-9, atol=1e-9)
