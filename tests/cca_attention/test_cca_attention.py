import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.cca_attention.attention import (
    cca_attention,
    dense_cca_attention,
    reach,
    visible_groups,
)


def _qkv(L, heads=2, kv_heads=None, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    kv_heads = kv_heads or heads
    q = torch.randn(2, heads, L, d, generator=g, dtype=torch.float64)
    k = torch.randn(2, kv_heads, L, d, generator=g, dtype=torch.float64)
    v = torch.randn(2, kv_heads, L, d, generator=g, dtype=torch.float64)
    return q, k, v


@settings(max_examples=40, deadline=None)
@given(
    L=st.integers(1, 70),
    g=st.integers(1, 12),
    s=st.integers(0, 30),
    pool=st.sampled_from(["attention", "mean"]),
    block_size=st.sampled_from([None, 1, 5, 64]),
)
def test_chunked_equals_the_dense_reference(L, g, s, pool, block_size):
    q, k, v = _qkv(L)
    fast = cca_attention(q, k, v, group_size=g, window=s, pool=pool, block_size=block_size)
    ref = dense_cca_attention(q, k, v, group_size=g, window=s, pool=pool)
    torch.testing.assert_close(fast, ref, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize(("L", "g", "s"), [(50, 4, 6), (33, 5, 0), (64, 8, 16), (7, 16, 2)])
def test_every_earlier_position_is_reached_exactly_once(L, g, s):
    assert torch.equal(reach(L, g, s), torch.ones(L, L, dtype=torch.int).tril())
    J = visible_groups(L, g, s)
    for t in range(L):  # core j is visible only at or after its group's end + s
        assert all(t >= (j + 1) * g - 1 + s for j in range(int(J[t])))


def test_no_position_sees_the_future():
    L, g, s = 29, 4, 5
    q, k, v = (x.requires_grad_(True) for x in _qkv(L))
    out = cca_attention(q, k, v, group_size=g, window=s)
    for t in (0, 3, 11, 20, 28):
        grads = torch.autograd.grad(out[:, :, t].sum(), (q, k, v), retain_graph=True)
        for grad in grads:
            assert torch.all(grad[:, :, t + 1 :] == 0)
        assert grads[2][:, :, : t + 1].abs().sum() > 0  # it does use the past


def test_a_window_covering_everything_is_causal_attention_and_gqa_works():
    q, k, v = _qkv(40, heads=4, kv_heads=2)
    out = cca_attention(q, k, v, group_size=4, window=40)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    torch.testing.assert_close(out, ref)


def test_bad_input_is_refused():
    q, k, v = _qkv(10)
    with pytest.raises(ValueError, match="group_size must be an integer >= 1"):
        cca_attention(q, k, v, group_size=0, window=2)
    with pytest.raises(ValueError, match="window must be an integer >= 0"):
        cca_attention(q, k, v, group_size=2, window=-1)
    with pytest.raises(ValueError, match="must agree on B, L and D"):
        cca_attention(q, k[:, :, :5], v[:, :, :5], group_size=2, window=2)
    with pytest.raises(ValueError, match=r"must be \(B, H, L, D\)"):
        cca_attention(q[0], k, v, group_size=2, window=2)
    with pytest.raises(ValueError, match="multiple of key heads"):
        cca_attention(
            q, k.repeat(1, 3, 1, 1)[:, :3], v.repeat(1, 3, 1, 1)[:, :3], group_size=2, window=2
        )
    with pytest.raises(ValueError, match="pool must be"):
        cca_attention(q, k, v, group_size=2, window=2, pool="max")


def test_hf_drop_in_matches_full_attention_and_decodes_with_a_cache():
    pytest.importorskip("transformers")
    from icml25.cca_attention.hf import use_cca, use_full
    from icml25.core.llm import tiny_llama

    model, _ = tiny_llama(layers=2, hidden=32, heads=4, seed=0)
    ids = torch.randint(6, 100, (1, 40), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full = model(input_ids=ids).logits
        use_cca(model, group_size=4, window=64)  # the window covers the whole context
        torch.testing.assert_close(model(input_ids=ids).logits, full, atol=1e-5, rtol=1e-5)
        use_cca(model, group_size=4, window=6)
        out = model(input_ids=ids[:, :20], use_cache=True)
        cache, steps = out.past_key_values, []
        for i in range(20, 30):
            o = model(input_ids=ids[:, i : i + 1], past_key_values=cache, use_cache=True)
            cache = o.past_key_values
            steps.append(o.logits[:, -1])
        ref = model(input_ids=ids[:, :30]).logits[:, 20:30]
        torch.testing.assert_close(torch.stack(steps, 1), ref, atol=1e-5, rtol=1e-5)
        assert not torch.allclose(ref, full[:, 20:30], atol=1e-3)  # CCA really is on
        use_full(model)
        torch.testing.assert_close(model(input_ids=ids).logits, full)
    with pytest.raises(ValueError, match="group_size must be"):
        use_cca(model, group_size=0, window=4)


def test_tiny_lm_attention_switch():
    from icml25.cca_attention import TinyLM
    from icml25.cca_attention.model import window_mask

    torch.manual_seed(0)
    model = TinyLM(32)
    ids = torch.randint(0, 32, (2, 40))
    with torch.no_grad():
        full = model(ids)
        wide = model.set_attention("cca", group_size=4, window=64)(ids)
        torch.testing.assert_close(wide, full, atol=1e-5, rtol=1e-5)
        narrow = model.set_attention("cca", group_size=4, window=8)(ids)
        assert not torch.allclose(narrow, full, atol=1e-3)
    m = window_mask("sink", 10, 3)
    assert m[9, :4].all() and m[9, 7:].all() and not m[9, 4:7].any() and not m[0, 1:].any()
    with pytest.raises(ValueError, match="attention must be one of"):
        model.set_attention("linear")
