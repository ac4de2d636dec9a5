"""CCA's FlexAttention path (issue 67 part 3) against the dense reference.

On the CPU, PyTorch has FlexAttention's forward only: the eager path (float64, exact to
rounding) is compared with :func:`dense_cca_attention`, the mask function is compared entry by
entry with the reference's explicit mask, the block mask is checked to skip blocks, and, where
a C++ compiler is present, the compiled CPU forward is compared with the kernel. Gradients and
the compiled Triton kernel run only on CUDA (skipped here with the reason).
"""

from __future__ import annotations

import shutil
import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.cca_attention import attention, flex
from icml25.cca_attention.attention import cca_attention, dense_cca_attention, visible_groups
from icml25.cca_attention.flex import cca_block_mask, cca_mask_mod, flex_cca_attention

pytestmark = pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")

# (B, H, H_kv, L, D, g, s): GQA, s = 0, L below g + s, several 128-blocks, L not a multiple of g
SHAPES = [
    (1, 2, 2, 37, 8, 4, 5),
    (2, 4, 2, 130, 8, 8, 16),
    (1, 2, 1, 300, 16, 16, 40),
    (2, 3, 3, 64, 4, 4, 0),
    (1, 2, 2, 20, 8, 8, 32),
    (1, 1, 1, 517, 8, 16, 100),
]


def _qkv(shape: tuple[int, ...], dtype: torch.dtype, device: str = "cpu") -> list[torch.Tensor]:
    B, H, Hk, L, D, _, _ = shape
    gen = torch.Generator().manual_seed(L)
    sizes = [(B, H, L, D), (B, Hk, L, D), (B, Hk, L, D)]
    return [torch.randn(*s, generator=gen, dtype=dtype).to(device) for s in sizes]


def _reference_mask(length: int, g: int, s: int) -> torch.Tensor:
    """The explicit (L, m + L) mask of :func:`dense_cca_attention`, written again here."""
    J = visible_groups(length, g, s)
    t = torch.arange(length)
    core = torch.arange(length // g)[None, :] < J[:, None]
    raw = (t[None, :] <= t[:, None]) & (t[None, :] >= g * J[:, None])
    return torch.cat([core, raw], dim=1)


@settings(max_examples=60, deadline=None)
@given(length=st.integers(1, 90), g=st.integers(1, 12), s=st.integers(0, 40))
def test_mask_mod_is_the_reference_mask(length: int, g: int, s: int) -> None:
    q = torch.arange(length)[:, None]
    kv = torch.arange(length // g + length)[None, :]
    zero = torch.zeros((), dtype=torch.long)
    got = cca_mask_mod(length, g, s)(zero, zero, q, kv)
    assert torch.equal(got, _reference_mask(length, g, s))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("pool", ["attention", "mean"])
def test_eager_flex_equals_dense_float64(shape: tuple[int, ...], pool: str) -> None:
    q, k, v = _qkv(shape, torch.float64)
    g, s = shape[5], shape[6]
    want = dense_cca_attention(q, k, v, group_size=g, window=s, pool=pool)
    got = cca_attention(q, k, v, group_size=g, window=s, pool=pool, backend="flex")
    assert got.shape == want.shape and got.dtype == torch.float64
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


def test_flex_scale_and_bfloat16() -> None:
    shape = SHAPES[2]
    q, k, v = _qkv(shape, torch.float32)
    want = dense_cca_attention(q, k, v, group_size=16, window=40, scale=0.3)
    got = flex_cca_attention(q, k, v, group_size=16, window=40, scale=0.3)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    low = flex_cca_attention(*(t.bfloat16() for t in (q, k, v)), group_size=16, window=40)
    assert low.dtype == torch.bfloat16
    torch.testing.assert_close(low.float(), dense_cca_attention(q, k, v, group_size=16, window=40),
                               rtol=0.05, atol=0.05)  # fmt: skip


def test_block_mask_skips_blocks() -> None:
    """At L = 4096, g = 16, s = 256 most blocks of the L x (m + L) grid are never computed."""
    mask = cca_block_mask(4096, 16, 256)
    assert mask.shape[-2:] == (4096, 4096 + 256)
    assert mask.sparsity() > 70.0  # percent of blocks skipped (a causal mask alone skips ~48%)
    assert cca_block_mask(4096, 16, 256) is mask  # cached


def test_auto_takes_the_kernel_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: object, **k: object) -> None:
        raise AssertionError("auto took the flex path on the CPU")

    monkeypatch.setattr(flex, "flex_cca_attention", boom)
    q, k, v = _qkv(SHAPES[0], torch.float32)
    cca_attention(q, k, v, group_size=4, window=5)


def test_auto_picks_flex_only_on_cuda_without_dropout() -> None:
    class Fake:
        class device:  # mimics torch.Tensor.device
            type = "cuda"

    assert attention._flex_by_default(Fake(), 0.0) is flex.available()  # type: ignore[arg-type]
    assert attention._flex_by_default(Fake(), 0.1) is False  # type: ignore[arg-type]
    assert attention._flex_by_default(torch.zeros(1), 0.0) is False


def test_flex_refusals() -> None:
    q, k, v = _qkv(SHAPES[0], torch.float32)
    with pytest.raises(ValueError, match="backend must be"):
        cca_attention(q, k, v, group_size=4, window=5, backend="triton")
    with pytest.raises(ValueError, match="no dropout"):
        cca_attention(q, k, v, group_size=4, window=5, dropout_p=0.1, backend="flex")
    q.requires_grad_(True)
    with pytest.raises(NotImplementedError, match="no backward on the CPU"):
        cca_attention(q, k, v, group_size=4, window=5, backend="flex")
    with torch.no_grad():  # inference is fine
        cca_attention(q, k, v, group_size=4, window=5, backend="flex")
    with pytest.raises(TypeError, match="must share one dtype"):
        flex_cca_attention(q.detach(), k.double(), v, group_size=4, window=5)
    with pytest.raises(ValueError, match="scale must be None or a positive"):
        flex_cca_attention(q.detach(), k, v, group_size=4, window=5, scale=-1.0)
    with pytest.raises(TypeError, match="compile must be"):
        flex_cca_attention(q.detach(), k, v, group_size=4, window=5, compile="yes")  # type: ignore[arg-type]
    empty = torch.zeros(0, 2, 8, 4)
    assert cca_attention(empty, empty, empty, group_size=4, window=2, backend="flex").shape == (
        0, 2, 8, 4,
    )  # fmt: skip


@pytest.mark.skipif(
    shutil.which("c++") is None and shutil.which("g++") is None,
    reason="no C++ compiler: Inductor cannot compile FlexAttention for the CPU here",
)
def test_compiled_cpu_forward_equals_the_kernel() -> None:
    shape = (1, 2, 1, 1024, 32, 16, 128)
    q, k, v = _qkv(shape, torch.float32)
    want = cca_attention(q, k, v, group_size=16, window=128, backend="kernel")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = flex_cca_attention(q, k, v, group_size=16, window=128, compile=True)
    torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_flex_forward_backward_equals_kernel(dtype: torch.dtype) -> None:
    shape = (2, 4, 2, 1100, 64, 16, 128)
    tol = 2e-4 if dtype == torch.float32 else 3e-2
    ref = [t.requires_grad_(True) for t in _qkv(shape, torch.float64)]
    want = dense_cca_attention(ref[0], ref[1], ref[2], group_size=16, window=128)
    want.square().sum().backward()
    cuda = [t.detach().to("cuda", dtype).requires_grad_(True) for t in ref]
    got = cca_attention(cuda[0], cuda[1], cuda[2], group_size=16, window=128)  # auto: flex
    got.float().square().sum().backward()
    torch.testing.assert_close(got.double().cpu(), want.detach(), rtol=tol, atol=tol)
    for a, b in zip(cuda, ref, strict=True):
        assert a.grad is not None and b.grad is not None
        torch.testing.assert_close(a.grad.double().cpu(), b.grad, rtol=10 * tol, atol=10 * tol)


def test_flex_through_the_hf_drop_in_and_tiny_lm(monkeypatch: pytest.MonkeyPatch) -> None:
    """What CUDA users run, routed here on the CPU: with ``auto`` taking the flex path for every
    device, the drop-in's prefill (cores kept for the cache, GQA, left padding), its decoding and
    the reproduction's TinyLM give the kernel's logits."""
    pytest.importorskip("transformers")
    from icml25.cca_attention.hf import use_cca
    from icml25.cca_attention.model import TinyLM
    from icml25.core.llm import tiny_llama

    model, tok = tiny_llama(layers=2, heads=4, kv_heads=2)
    use_cca(model, group_size=4, window=8)
    tok.padding_side = "left"
    batch = tok(["the quick brown fox", "jumps over the lazy dog again and again"],
                return_tensors="pt", padding=True)  # fmt: skip
    torch.manual_seed(0)
    lm = TinyLM(50, dim=32, heads=2, layers=2, max_len=128)
    lm.set_attention("cca", 4, 8)
    ids = torch.randint(0, 50, (2, 70), generator=torch.Generator().manual_seed(0))

    def run() -> list[torch.Tensor]:
        with torch.no_grad():
            return [
                model(**batch).logits,
                model.generate(**batch, max_new_tokens=5, do_sample=False),
                lm(ids),
            ]

    want = run()
    calls = []

    def always(query: torch.Tensor, dropout_p: float) -> bool:
        calls.append(query.shape)
        return not dropout_p

    monkeypatch.setattr(attention, "_flex_by_default", always)
    got = run()
    assert len(calls) >= 4  # prefill layers and the TinyLM's
    torch.testing.assert_close(got[0], want[0], rtol=1e-5, atol=1e-5)
    assert torch.equal(got[1], want[1])
    torch.testing.assert_close(got[2], want[2], rtol=1e-5, atol=1e-5)
