"""Attention dropout with SDPA's semantics (issue 69 item 7) and empty inputs (issue 70)."""

import math

import pytest
import torch
import torch.nn.functional as F

from icml25.cca_attention import attention
from icml25.cca_attention.attention import (
    attend,
    cca_attention,
    core_tokens,
    dense_cca_attention,
    expand_kv,
)


def _qkv(L, B=2, heads=4, kv_heads=2, d=8, seed=0, grad=False):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, heads, L, d, generator=g, dtype=torch.float64)
    k = torch.randn(B, kv_heads, L, d, generator=g, dtype=torch.float64)
    v = torch.randn(B, kv_heads, L, d, generator=g, dtype=torch.float64)
    return tuple(t.requires_grad_(grad) for t in (q, k, v))


# ------------------------------------------------------------------------- dropout: the mask
def test_dropout_keep_is_a_fair_independent_coin_per_entry():
    """Bernoulli(1 - p) per entry: the kept fraction, its independence from the neighbouring
    entry (row and key), from the same entry under another seed, and its determinism."""
    from icml25.cca_attention.attention import dropout_keep

    n = (2, 3, 64, 200)
    args = [torch.arange(x) for x in n]
    sizes = {"n_heads": 3, "length": 64, "n_cores": 136}
    for p in (0.1, 0.5, 0.8):
        keep = dropout_keep(12345, p, *args, **sizes).double()
        N = keep.numel()
        assert abs(keep.mean().item() - (1 - p)) < 5 * math.sqrt(p * (1 - p) / N)
        for a, b in (
            (keep[..., 1:], keep[..., :-1]),  # neighbouring keys
            (keep[:, :, 1:], keep[:, :, :-1]),  # neighbouring rows
            (keep[:, 1:], keep[:, :-1]),  # neighbouring heads
            (keep, dropout_keep(12346, p, *args, **sizes).double()),  # another seed
        ):
            corr = torch.corrcoef(torch.stack([a.flatten(), b.flatten()]))[0, 1].item()
            assert abs(corr) < 5 / math.sqrt(a.numel()), corr
        assert torch.equal(keep, dropout_keep(12345, p, *args, **sizes).double())
    assert bool(dropout_keep(7, 0.0, *args, **sizes).all())
    assert not bool(dropout_keep(7, 1.0, *args, **sizes).any())
    # a block of the array is the same entries as the whole array's slice
    whole = dropout_keep(99, 0.3, *args, **sizes)
    block = dropout_keep(
        99, 0.3, torch.arange(1, 2), torch.arange(1, 3), torch.arange(10, 30),
        torch.arange(50, 90), **sizes,
    )  # fmt: skip
    assert torch.equal(block, whole[1:2, 1:3, 10:30, 50:90])


# --------------------------------------------------------------- dropout: against the reference
@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("low_memory", [True, False])
@pytest.mark.parametrize(
    ("L", "g", "s", "block"),
    [(50, 4, 6, 8), (37, 3, 0, 5), (64, 8, 8, None), (10, 4, 20, 4), (33, 1, 2, 7)],
)
def test_dropout_equals_the_dense_reference_with_the_same_mask(
    force, low_memory, L, g, s, block, monkeypatch
):
    """Same seed (torch.manual_seed), same mask: the blocked kernel with dropout equals the
    explicit (L, m + L) masked softmax times the mask over 1 - p, forward and gradients (the
    backward recomputes its blocks in another order and must regenerate the same mask)."""
    monkeypatch.setattr(attention, "FORCE_PYTORCH", force)
    monkeypatch.setattr(attention, "UNIT_BYTES", 1)  # low_memory: one head per call
    q, k, v = _qkv(L, grad=True)
    kw = {"group_size": g, "window": s}
    torch.manual_seed(3)
    got = cca_attention(q, k, v, dropout_p=0.3, block_size=block, low_memory=low_memory, **kw)
    torch.manual_seed(3)
    want = dense_cca_attention(q, k, v, dropout_p=0.3, **kw)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)
    w = torch.randn_like(got)
    g_got = torch.autograd.grad((got * w).sum(), (q, k, v))
    g_want = torch.autograd.grad((want * w).sum(), (q, k, v))
    for a, b in zip(g_got, g_want, strict=True):
        torch.testing.assert_close(a, b, atol=1e-11, rtol=1e-11)
    assert not torch.equal(got, dense_cca_attention(q, k, v, **kw))  # dropout did something


def test_dropout_in_inference_groups_of_heads_equals_the_reference(monkeypatch):
    """Without gradients the raw windows run in groups of heads (RAW_BYTES): same mask."""
    monkeypatch.setattr(attention, "RAW_BYTES", 1)
    monkeypatch.setattr(attention, "UNIT_BYTES", 1)
    q, k, v = _qkv(45)
    with torch.no_grad():
        torch.manual_seed(5)
        got = cca_attention(q, k, v, dropout_p=0.5, group_size=4, window=8, block_size=8)
        torch.manual_seed(5)
        want = dense_cca_attention(q, k, v, dropout_p=0.5, group_size=4, window=8)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)


def test_attend_with_given_cores_drops_like_cca_attention():
    """attend (the HF prefill's kernel) with the same seed: the same mask, gradients flowing
    to the core tokens."""
    q, k, v = _qkv(40, grad=True)
    kf, vf = expand_kv(q, k, v)
    scale = 1 / math.sqrt(8)
    cores = core_tokens(q, kf, vf, 4, scale)
    torch.manual_seed(11)
    got = attend(q, kf, vf, cores, 4, 6, scale, dropout_p=0.25)
    torch.manual_seed(11)
    want = cca_attention(q, k, v, dropout_p=0.25, group_size=4, window=6)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)
    got.sum().backward()
    assert all(t.grad is not None and bool(t.grad.abs().sum() > 0) for t in (q, k, v))


def test_dropout_gradients_match_finite_differences():
    """gradcheck with the mask held fixed (the same seed before each call)."""
    q, k, v = _qkv(13, B=1, heads=2, kv_heads=1, d=3, grad=True)

    def f(q, k, v):
        torch.manual_seed(0)
        return cca_attention(q, k, v, dropout_p=0.4, group_size=3, window=4, block_size=3)

    assert torch.autograd.gradcheck(f, (q, k, v), eps=1e-6, atol=1e-8)


def test_the_mean_over_draws_is_the_undropped_output_and_the_spread_is_sdpas():
    """Properties that need no shared mask: averaged over draws, dropout's output is the
    no-dropout output (the 1 / (1 - p) scaling); with the window as long as the sequence CCA
    is causal full attention, and its spread over draws is that of SDPA's own dropout."""
    q, k, v = _qkv(24, B=1, heads=2, kv_heads=2)
    kw = {"group_size": 4, "window": 24}
    torch.manual_seed(0)
    n, p = 400, 0.3
    draws = torch.stack([cca_attention(q, k, v, dropout_p=p, **kw) for _ in range(n)])
    sdpa = torch.stack(
        [F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True) for _ in range(n)]
    )
    plain = cca_attention(q, k, v, **kw)
    torch.testing.assert_close(plain, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    se = draws.std(0) / math.sqrt(n)
    assert bool(((draws.mean(0) - plain).abs() <= 6 * se + 1e-12).all())
    ratio = draws.var(0).mean() / sdpa.var(0).mean()
    assert 0.9 < ratio.item() < 1.1, ratio  # the same distribution of masks, per entry
    # the windowed (core token) case: the mean is still the undropped output
    kw = {"group_size": 4, "window": 6}
    draws = torch.stack([cca_attention(q, k, v, dropout_p=p, **kw) for _ in range(n)])
    se = draws.std(0) / math.sqrt(n)
    assert bool(((draws.mean(0) - cca_attention(q, k, v, **kw)).abs() <= 6 * se + 1e-12).all())


def test_p_zero_is_the_undropped_kernel_and_draws_no_random_number():
    """dropout_p = 0 is the kernel as before, bit for bit, and leaves torch's generator as it
    was (so no reproduction's random stream moves); p > 0 draws a seed from it."""
    q, k, v = _qkv(40)
    state = torch.get_rng_state()
    a = cca_attention(q, k, v, group_size=4, window=6)
    b = cca_attention(q, k, v, None, 0.0, True, group_size=4, window=6)
    assert torch.equal(a, b)
    assert torch.equal(state, torch.get_rng_state())
    cca_attention(q, k, v, dropout_p=0.1, group_size=4, window=6)
    assert not torch.equal(state, torch.get_rng_state())


def test_dropout_p_one_gives_zeros_as_sdpa():
    q, k, v = _qkv(20)
    out = cca_attention(q, k, v, dropout_p=1.0, group_size=4, window=6)
    assert torch.equal(out, torch.zeros_like(out))
    sdpa = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0, is_causal=True, enable_gqa=True)
    assert torch.equal(sdpa, torch.zeros_like(sdpa))


@pytest.mark.parametrize(
    ("p", "err", "match"),
    [
        (1.5, ValueError, r"dropout_p must be in \[0, 1\], got 1.5"),
        (-0.1, ValueError, r"dropout_p must be in \[0, 1\], got -0.1"),
        (float("nan"), ValueError, r"dropout_p must be in \[0, 1\], got nan"),
        (True, TypeError, "dropout_p must be a number, got bool"),
        ("0.1", TypeError, "dropout_p must be a number, got str"),
    ],
)
def test_bad_dropout_p_is_refused_by_name(p, err, match):
    q, k, v = _qkv(8)
    with pytest.raises(err, match=match):
        cca_attention(q, k, v, dropout_p=p, group_size=4, window=4)
    with pytest.raises(err, match=match):
        dense_cca_attention(q, k, v, dropout_p=p, group_size=4, window=4)


def test_use_cca_applies_the_models_attention_dropout_in_training_only():
    """hf.use_cca: transformers passes config.attention_dropout in training and 0 in eval;
    CCA applies it (before, it was dropped silently): training passes differ between seeds and
    repeat under one seed; eval is deterministic and the same as with no dropout at all."""
    pytest.importorskip("transformers")
    from icml25.cca_attention import hf
    from icml25.core.llm import tiny_llama

    model, _ = tiny_llama(layers=2, hidden=32, heads=4, seed=0, kv_heads=2)
    hf.use_cca(model, group_size=4, window=6)
    ids = torch.randint(6, 100, (2, 30), generator=torch.Generator().manual_seed(0))
    model.eval()
    base = model(ids).logits
    for m in model.modules():
        if hasattr(m, "attention_dropout"):
            m.attention_dropout = 0.3
    model.config.attention_dropout = 0.3
    seen = []
    real = hf.attend

    def spy(*a, **kw):
        seen.append(kw.get("dropout_p", 0.0))
        return real(*a, **kw)

    hf.attend = spy
    try:
        assert torch.equal(model(ids).logits, base)  # eval: no dropout
        assert seen == [0.0, 0.0]
        model.train()
        torch.manual_seed(1)
        one = model(ids).logits
        torch.manual_seed(1)
        again = model(ids).logits
        torch.manual_seed(2)
        other = model(ids).logits
    finally:
        hf.attend = real
    assert seen[2:] == [0.3] * 6
    assert torch.equal(one, again)
    assert not torch.equal(one, other)
    assert not torch.allclose(one, base)
    one.sum().backward()  # trains through the dropped probabilities
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


# ------------------------------------------------------------------------------ empty inputs
EMPTY = [
    ((0, 4, 16, 8), (0, 2, 16, 8)),  # no batch row
    ((2, 4, 0, 8), (2, 2, 0, 8)),  # zero-length sequences
    ((0, 4, 0, 8), (0, 2, 0, 8)),
    ((2, 0, 16, 8), (2, 0, 16, 8)),  # no head
    ((2, 0, 16, 8), (2, 2, 16, 8)),  # no query head, some key heads
    ((2, 4, 16, 0), (2, 2, 16, 0)),  # head size 0
    ((0, 0, 0, 0), (0, 0, 0, 0)),
]


@pytest.mark.parametrize(("qshape", "kshape"), EMPTY)
@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("low_memory", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_empty_inputs_give_what_sdpa_gives(qshape, kshape, grad, low_memory, dtype):
    """A zero batch, length, head count or head size: SDPA's output (shape, dtype, values)
    and gradients of the inputs' shapes, where these raised ``max() arg is an empty
    sequence`` or ZeroDivisionError."""
    q = torch.randn(qshape, dtype=dtype, requires_grad=grad)
    k = torch.randn(kshape, dtype=dtype, requires_grad=grad)
    v = torch.randn(kshape, dtype=dtype, requires_grad=grad)
    gqa = qshape[1] != kshape[1]
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
    for p in (0.0, 0.2):
        got = cca_attention(q, k, v, dropout_p=p, group_size=4, window=4, low_memory=low_memory)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert torch.equal(got, want)
        ref = dense_cca_attention(q, k, v, group_size=4, window=4)
        assert ref.shape == want.shape
        if grad:
            got.sum().backward()
            for t in (q, k, v):
                assert t.grad is not None and t.grad.shape == t.shape
                assert bool((t.grad == 0).all())
                t.grad = None


def test_empty_length_through_attend():
    q, k, v = _qkv(0)
    kf, vf = expand_kv(q, k, v)
    cores = core_tokens(q, kf, vf, 4, 0.5)
    assert attend(q, kf, vf, cores, 4, 4, 0.5).shape == q.shape


def test_zero_key_heads_for_some_query_heads_is_refused_by_name():
    q, k, v = torch.randn(2, 4, 8, 8), torch.randn(2, 0, 8, 8), torch.randn(2, 0, 8, 8)
    with pytest.raises(ValueError, match="key has 0 heads: query heads 4 need at least one"):
        cca_attention(q, k, v, group_size=4, window=4)


def test_a_value_head_size_other_than_the_querys_is_refused_by_name():
    q, k, v = torch.randn(1, 2, 8, 8), torch.randn(1, 2, 8, 8), torch.randn(1, 2, 8, 3)
    with pytest.raises(ValueError, match="value's head size must be the query's"):
        cca_attention(q, k, v, group_size=4, window=4)
