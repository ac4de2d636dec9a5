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


@pytest.fixture(params=["fused", "pytorch"])
def kernel(request, monkeypatch):
    """Both block kernels: PyTorch's fused CPU attention and the plain-PyTorch fallback."""
    from icml25.cca_attention import attention

    if request.param == "fused" and attention._FLASH is None:
        pytest.skip("this PyTorch has no fused CPU attention with a log-sum-exp")
    monkeypatch.setattr(attention, "FORCE_PYTORCH", request.param == "pytorch")
    return request.param


@settings(max_examples=15, deadline=None)
@given(
    L=st.integers(1, 70),
    g=st.integers(1, 12),
    s=st.integers(0, 30),
    pool=st.sampled_from(["attention", "mean"]),
    block_size=st.sampled_from([None, 1, 5, 64]),
)
def test_the_plain_pytorch_fallback_equals_the_dense_reference(L, g, s, pool, block_size):
    from icml25.cca_attention import attention

    q, k, v = _qkv(L)
    old, attention.FORCE_PYTORCH = attention.FORCE_PYTORCH, True
    try:
        fast = cca_attention(q, k, v, group_size=g, window=s, pool=pool, block_size=block_size)
    finally:
        attention.FORCE_PYTORCH = old
    ref = dense_cca_attention(q, k, v, group_size=g, window=s, pool=pool)
    torch.testing.assert_close(fast, ref, atol=1e-10, rtol=1e-10)


@settings(max_examples=25, deadline=None)
@given(
    L=st.integers(1, 90),
    g=st.integers(1, 6),
    s=st.integers(0, 20),
    chunk=st.sampled_from([1, 2, 3, 7]),
    block_size=st.sampled_from([None, 1, 5, 12]),
    fused=st.booleans(),
    low_memory=st.booleans(),
    unit_bytes=st.sampled_from([1, 8000, 10**9]),
    raw_bytes=st.sampled_from([1, 3000, 10**9]),
)
def test_the_forward_over_chunks_of_core_tokens_equals_the_dense_reference(
    L, g, s, chunk, block_size, fused, low_memory, unit_bytes, raw_bytes
):
    """The forward keeps one chunk of cores alive at a time and merges by log-sum-exp: with
    chunks of 1 to 7 cores (many chunks, the last one partial, staircases across chunk
    boundaries), both kernels, with the cores pooled inside or given from outside, one head,
    some heads (3 heads in groups of 2 and 1) or whole batch rows per call, the raw windows
    (inference) in groups of one head, some heads or whole batch rows, with the chunks
    lengthened by the log-sum-exps not held; and with ``low_memory=False`` (all heads, all
    cores at once)."""
    from icml25.cca_attention import attention

    q, k, v = _qkv(L, heads=3)
    old = attention.CORE_CHUNK, attention.FORCE_PYTORCH, attention.UNIT_BYTES, attention.RAW_BYTES
    attention.CORE_CHUNK, attention.FORCE_PYTORCH, attention.UNIT_BYTES, attention.RAW_BYTES = (
        chunk,
        not fused,
        unit_bytes,
        raw_bytes,
    )
    try:
        fast = cca_attention(
            q, k, v, group_size=g, window=s, block_size=block_size, low_memory=low_memory
        )
        cores = attention.core_tokens(q, k, v, g, 0.3, "attention")
        given_cores = attention.attend(q, k, v, cores, g, s, 0.3, block_size, low_memory)
    finally:
        attention.CORE_CHUNK, attention.FORCE_PYTORCH, attention.UNIT_BYTES, attention.RAW_BYTES = (
            old
        )
    ref = dense_cca_attention(q, k, v, group_size=g, window=s)
    torch.testing.assert_close(fast, ref, atol=1e-10, rtol=1e-10)
    ref = dense_cca_attention(q, k, v, group_size=g, window=s, scale=0.3)
    torch.testing.assert_close(given_cores, ref, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize(("L", "g", "s", "block"), [(1100, 16, 256, None), (700, 16, 32, 100)])
def test_float32_at_speed_settings_matches_the_reference_to_1e_6(kernel, L, g, s, block):
    q, k, v = (x.float() for x in _qkv(L, heads=2, d=64, seed=3))
    fast = cca_attention(q, k, v, group_size=g, window=s, block_size=block)
    ref = dense_cca_attention(q, k, v, group_size=g, window=s)
    torch.testing.assert_close(fast, ref, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize(
    ("L", "g", "s", "pool", "block"),
    [(23, 3, 4, "attention", 6), (19, 4, 0, "attention", 1), (17, 2, 5, "mean", None)],
)
def test_gradients_pass_gradcheck_in_float64(kernel, L, g, s, pool, block, monkeypatch):
    from icml25.cca_attention import attention
    from icml25.cca_attention.attention import attend, core_tokens

    monkeypatch.setattr(attention, "CORE_CHUNK", 2)  # the forward over several chunks
    monkeypatch.setattr(attention, "UNIT_BYTES", 1)  # one head per call

    q, k, v = (x[:1, :, :, :4].clone().requires_grad_(True) for x in _qkv(L, heads=2))

    def fused(a, b, c):
        return cca_attention(a, b, c, group_size=g, window=s, pool=pool, block_size=block)

    def with_cores(a, b, c):  # the Hugging Face drop-in's path: cores from outside
        return attend(a, b, c, core_tokens(a, b, c, g, 0.4, pool), g, s, 0.4, block)

    assert torch.autograd.gradcheck(fused, (q, k, v))
    assert torch.autograd.gradcheck(with_cores, (q, k, v))


def test_gradients_equal_the_dense_references_in_float32(kernel):
    q, k, v = (x.float().requires_grad_(True) for x in _qkv(600, heads=2, d=32, seed=5))
    grad = torch.randn(2, 2, 600, 32, generator=torch.Generator().manual_seed(6))
    fast = torch.autograd.grad(cca_attention(q, k, v, group_size=8, window=64), (q, k, v), grad)
    ref = torch.autograd.grad(
        dense_cca_attention(q, k, v, group_size=8, window=64), (q, k, v), grad
    )
    for a, b in zip(fast, ref, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


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
    with pytest.raises(TypeError, match="low_memory must be a bool"):
        cca_attention(q, k, v, group_size=2, window=2, low_memory="yes")


def test_hf_drop_in_matches_full_attention_and_decodes_with_a_cache():
    pytest.importorskip("transformers")
    from icml25.cca_attention.hf import cache_kwarg, use_cca, use_full
    from icml25.core.llm import tiny_llama

    model, _ = tiny_llama(layers=2, hidden=32, heads=4, seed=0)
    ids = torch.randint(6, 100, (1, 40), generator=torch.Generator().manual_seed(0))
    kw = cache_kwarg(model)
    with torch.no_grad():
        full = model(input_ids=ids).logits
        use_cca(model, group_size=4, window=64)  # the window covers the whole context
        torch.testing.assert_close(model(input_ids=ids).logits, full, atol=1e-5, rtol=1e-5)
        use_cca(model, group_size=4, window=6)
        out = model(input_ids=ids[:, :20], use_cache=True)
        cache, steps = out.past_key_values, []
        for i in range(20, 30):
            o = model(input_ids=ids[:, i : i + 1], use_cache=True, **{kw: cache})
            steps.append(o.logits[:, -1])
        ref = model(input_ids=ids[:, :30]).logits[:, 20:30]
        torch.testing.assert_close(torch.stack(steps, 1), ref, atol=1e-5, rtol=1e-5)
        assert not torch.allclose(ref, full[:, 20:30], atol=1e-3)  # CCA really is on
        use_full(model)
        torch.testing.assert_close(model(input_ids=ids).logits, full)
    with pytest.raises(ValueError, match="group_size must be"):
        use_cca(model, group_size=0, window=4)


@pytest.mark.parametrize("g,s,kv", [(4, 6, 4), (1, 0, 4), (5, 0, 2), (3, 2, 1), (4, 64, 2)])
def test_compressed_cache_decodes_like_recomputing_and_keeps_only_the_window(g, s, kv):
    pytest.importorskip("transformers")
    from transformers import DynamicCache

    from icml25.cca_attention.hf import CCACache, cache_kwarg, kv_cache_bytes, use_cca
    from icml25.core.llm import tiny_llama

    model, _ = tiny_llama(layers=2, hidden=32, heads=4, seed=0, kv_heads=kv)
    ids = torch.randint(6, 100, (1, 40), generator=torch.Generator().manual_seed(1))
    kw = cache_kwarg(model)
    use_cca(model, group_size=g, window=s)
    with torch.no_grad():
        cache, steps = CCACache(model), []
        model(input_ids=ids[:, :17], use_cache=True, **{kw: cache})
        for i in range(17, 40):
            out = model(input_ids=ids[:, i : i + 1], use_cache=True, **{kw: cache})
            steps.append(out.logits[:, -1])
            assert cache.get_seq_length() == i + 1
            assert all(layer.keys.shape[2] <= max(1, s + 2 * g) for layer in cache.layers)
        ref = model(input_ids=ids).logits[:, 17:40]
        torch.testing.assert_close(torch.stack(steps, 1), ref, atol=1e-5, rtol=1e-5)
        # raw tokens are cached per KV head; core tokens per query head (4), one per group
        full = DynamicCache()
        model(input_ids=ids, use_cache=True, **{kw: full})
        entry = 2 * (32 // 4) * 4  # key and value, head dim 8, float32
        raw = sum(layer.keys.shape[2] for layer in cache.layers)
        cores = 2 * 4 * (40 // g)  # 2 layers
        assert kv_cache_bytes(model, cache) == entry * (kv * raw + cores)
        assert kv_cache_bytes(model, full) == entry * (kv * 40 * 2 + cores)
        a = model.generate(ids[:, :20], max_new_tokens=12, do_sample=False, **{kw: CCACache(model)})
        b = model.generate(ids[:, :20], max_new_tokens=12, do_sample=False)
        assert torch.equal(a, b)


def test_a_cache_that_dropped_needed_tokens_is_refused():
    pytest.importorskip("transformers")
    from icml25.cca_attention.hf import CCACache, cache_kwarg, use_cca, use_full
    from icml25.core.llm import tiny_llama

    model, _ = tiny_llama(layers=1, hidden=16, heads=2, seed=0)
    with pytest.raises(ValueError, match="use_cca first"):
        CCACache(model)
    use_cca(model, group_size=2, window=2)
    cache = CCACache(model)  # built for g = 2, s = 2, then the model's window widens
    use_cca(model, group_size=2, window=8)
    ids = torch.randint(6, 100, (1, 12))
    kw = cache_kwarg(model)
    with torch.no_grad(), pytest.raises(RuntimeError, match="needs raw keys"):
        model(input_ids=ids[:, :10], use_cache=True, **{kw: cache})
        model(input_ids=ids[:, 10:11], use_cache=True, **{kw: cache})
    use_full(model)


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


def test_perplexity_matches_hugging_face_loss_and_skips_early_positions():
    pytest.importorskip("transformers")
    from icml25.cca_attention.experiments_lm import perplexity
    from icml25.core.llm import tiny_llama

    model, _ = tiny_llama(layers=1, hidden=16, heads=2, seed=0)
    doc = torch.randint(6, 100, (50,), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        # one chunk, nothing skipped: exp of the model's own mean loss
        loss = model(input_ids=doc[None, :48], labels=doc[None, :48]).loss
        assert perplexity(model, [doc], 48, skip=0) == pytest.approx(float(loss.exp()), rel=1e-5)
        # two chunks of 24 (the last 2 tokens dropped), targets at positions >= 10 only
        nll = []
        for c in doc[:48].reshape(2, 24):
            logp = torch.log_softmax(model(input_ids=c[None]).logits[0], -1)
            nll += [-float(logp[t - 1, c[t]]) for t in range(10, 24)]
        expected = float(torch.tensor(nll).mean().exp())
        assert perplexity(model, [doc], 24, skip=10) == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="skip must be in"):
        perplexity(model, [doc], 24, skip=24)
    with pytest.raises(ValueError, match="at least one chunk"):
        perplexity(model, [doc], 64, skip=0)


def test_forward_cost_refuses_an_unknown_method():
    from icml25.cca_attention.experiments_cost import forward_cost_here

    with pytest.raises(ValueError, match="method must be"):
        forward_cost_here("flash", 64)


def test_finetune_resumes_from_its_checkpoint_to_the_same_weights(tmp_path):
    pytest.importorskip("transformers")
    from icml25.cca_attention.experiments_lm import finetune_lm
    from icml25.core.llm import tiny_llama

    text = torch.randint(6, 100, (400,), generator=torch.Generator().manual_seed(0))
    straight, _ = tiny_llama(layers=1, hidden=16, heads=2, seed=0)
    finetune_lm(straight, text, 6, 32, seed=1)
    ckpt = tmp_path / "ft.pt"
    first, _ = tiny_llama(layers=1, hidden=16, heads=2, seed=0)
    finetune_lm(first, text, 4, 32, seed=1, checkpoint=ckpt, every=2)  # "interrupted" at 4
    resumed, _ = tiny_llama(layers=1, hidden=16, heads=2, seed=5)  # other initial weights
    finetune_lm(resumed, text, 6, 32, seed=1, checkpoint=ckpt, every=2)
    for a, b in zip(straight.parameters(), resumed.parameters(), strict=True):
        torch.testing.assert_close(a, b)
    with pytest.raises(ValueError, match="more than length"):
        finetune_lm(straight, text[:20], 1, 32, seed=1)


@pytest.mark.slow
def test_real_smollm2_decodes_through_the_compressed_cache():  # opt-in: make llm; -m slow
    pytest.importorskip("transformers")
    from icml25.cca_attention.hf import CCACache, cache_kwarg, kv_cache_bytes, use_cca
    from icml25.core.llm import load_causal_lm, smollm2_gguf

    try:
        smollm2_gguf()
    except FileNotFoundError:
        pytest.skip("SmolLM2 is not installed (make llm)")
    model, tok = load_causal_lm(quiet=True)
    ids = tok("import os\n" * 120, return_tensors="pt").input_ids[:, :200]
    assert ids.shape[1] == 200
    use_cca(model, group_size=16, window=64)  # GQA: 9 query heads, 3 KV heads
    kw = cache_kwarg(model)
    with torch.no_grad():
        cache, steps = CCACache(model), []
        model(input_ids=ids[:, :150], use_cache=True, **{kw: cache})
        for i in range(150, 200):
            steps.append(model(input_ids=ids[:, i : i + 1], use_cache=True, **{kw: cache}).logits)
        ref = model(input_ids=ids).logits[:, 150:200]
    torch.testing.assert_close(torch.cat(steps, 1), ref, atol=1e-4, rtol=1e-4)
    assert all(layer.keys.shape[2] <= 64 + 2 * 16 for layer in cache.layers)
    assert kv_cache_bytes(model, cache) > 0


@pytest.mark.parametrize("method", ["sdpa", "cca"])
def test_forward_cost_times_forward_and_backward(method):
    from icml25.cca_attention.experiments_cost import forward_cost_here

    for backward in (False, True):
        cost = forward_cost_here(method, 512, repeats=2, backward=backward, threads=1)
        assert {"seconds", "cpu_seconds", "mib", "cpu_runs", "wall_runs", "mib_runs"} == set(cost)
        assert cost["seconds"] > 0 and cost["cpu_seconds"] > 0


def test_forward_costs_runs_each_method_and_length_in_a_forked_process_in_order():
    from icml25.cca_attention.experiments_cost import forward_costs

    runs = [("sdpa", 2048), ("cca", 256), ("cca-dense", 256), ("sdpa", 64)]
    costs = forward_costs(runs, repeats=2, threads=1)
    assert len(costs) == 4
    for cost in costs:
        assert {"seconds", "cpu_seconds", "mib", "cpu_runs", "wall_runs", "mib_runs"} == set(cost)
        assert cost["cpu_seconds"] > 0 and len(cost["cpu_runs"]) == 1
    # in the order given: SDPA at L = 2,048 takes far longer than at L = 64 (about 1,000x)
    assert costs[0]["cpu_seconds"] > 10 * costs[3]["cpu_seconds"]
    with pytest.raises(ValueError, match="method must be"):
        forward_costs([("sdpa", 64), ("flash", 64)])


def test_the_quick_cut_of_the_pooling_models_leaves_every_other_needle_arm_unchanged():
    from dataclasses import replace

    from icml25.cca_attention.experiments import BUDGETS, needle_arms

    assert BUDGETS["quick"].pooling is False and BUDGETS["full"].pooling is True
    b = replace(BUDGETS["tiny"], steps=2, finetune_steps=1, test_items=40)
    every = needle_arms(b, 0, lambda _msg: None)
    cut = needle_arms(replace(b, pooling=False), 0, lambda _msg: None)
    assert set(every) - set(cut) == {"cca_mean"}
    for name, ok in cut.items():
        assert (ok == every[name]).all(), name


def _sdpa_parameters():
    """SDPA's parameter names, read from PyTorch's own docstring (the builtin has no
    inspectable signature)."""
    import re

    head = F.scaled_dot_product_attention.__doc__.split("->")[0]
    return re.findall(r"(\w+)(?:=[^,)]*)?[,)]", head.split("(", 1)[1])


def test_the_signature_is_sdpas():
    """SDPA's parameters in SDPA's order, positional up to is_causal (scale and enable_gqa
    are keyword-only in SDPA: calling it with 7 positional arguments is a TypeError)."""
    import inspect

    params = inspect.signature(cca_attention).parameters
    sdpa = _sdpa_parameters()
    assert sdpa[:3] == ["query", "key", "value"] and "is_causal" in sdpa
    assert list(params)[: len(sdpa)] == sdpa
    positional = [n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional == sdpa[: sdpa.index("is_causal") + 1]


@pytest.mark.parametrize("kv_heads", [4, 2])
def test_a_partial_replaces_sdpa_in_a_causal_call(kv_heads):
    """With the window as long as the sequence no core token is visible, so CCA is causal full
    attention: a partial called exactly as SDPA (positional scale, enable_gqa) equals it."""
    from functools import partial

    q, k, v = _qkv(24, heads=4, kv_heads=kv_heads)
    attn = partial(cca_attention, group_size=4, window=24)
    gqa = kv_heads != 4
    want = F.scaled_dot_product_attention(q, k, v, None, 0.0, True, scale=0.3, enable_gqa=gqa)
    got = attn(q, k, v, None, 0.0, True, scale=0.3, enable_gqa=gqa)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(
        attn(q, k, v, is_causal=True),
        F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa),
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_runs_in_float32_and_keeps_its_dtype(dtype):
    q, k, v = (t.float() for t in _qkv(40))
    ref = cca_attention(q, k, v, group_size=4, window=8)
    out = cca_attention(q.to(dtype), k.to(dtype), v.to(dtype), group_size=4, window=8)
    assert out.dtype == dtype
    torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)


def test_what_cca_cannot_do_is_refused_by_name():
    q, k, v = _qkv(16, heads=4, kv_heads=2)
    gw = {"group_size": 4, "window": 4}
    with pytest.raises(ValueError, match="takes no attn_mask"):
        cca_attention(q, k, v, torch.ones(16, 16, dtype=torch.bool), **gw)
    with pytest.raises(ValueError, match="is_causal must be True"):
        cca_attention(q, k, v, is_causal=False, **gw)
    with pytest.raises(ValueError, match=r"dropout_p must be in \[0, 1\]"):
        cca_attention(q, k, v, dropout_p=1.1, **gw)
    with pytest.raises(TypeError, match="share one dtype"):
        cca_attention(q.float(), k, v, **gw)
    with pytest.raises(ValueError, match="scale must be None or a positive"):
        cca_attention(q, k, v, scale=float("nan"), **gw)
    with pytest.raises(ValueError, match=r"look like \(B, L, H, D\)"):
        cca_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), **gw)


def test_a_left_padded_batch_gives_each_row_what_it_gives_alone():
    """Left padding (batched generation): prefill logits and greedy tokens of each row equal
    those of the row run unpadded; right padding is refused by name."""
    pytest.importorskip("transformers")
    from icml25.cca_attention.hf import use_cca
    from icml25.core.llm import tiny_llama

    model, _ = tiny_llama(layers=2, hidden=32, heads=4, seed=0, kv_heads=2)
    use_cca(model, group_size=4, window=6)
    gen = torch.Generator().manual_seed(3)
    rows = [torch.randint(6, 100, (n,), generator=gen) for n in (30, 21)]
    L = 30
    ids = torch.zeros(2, L, dtype=torch.long)
    mask = torch.zeros(2, L, dtype=torch.long)
    for b, r in enumerate(rows):
        ids[b, L - len(r) :], mask[b, L - len(r) :] = r, 1
    with torch.no_grad():
        batch = model(input_ids=ids, attention_mask=mask).logits
        out = model.generate(
            input_ids=ids, attention_mask=mask, max_new_tokens=9, do_sample=False, pad_token_id=0
        )
        for b, r in enumerate(rows):
            alone = model(input_ids=r[None]).logits[0]
            torch.testing.assert_close(batch[b, L - len(r) :], alone, atol=1e-5, rtol=1e-5)
            want = model.generate(input_ids=r[None], max_new_tokens=9, do_sample=False)
            assert torch.equal(out[b, L:], want[0, len(r) :])
        right = torch.flip(mask, [1])
        with pytest.raises(ValueError, match="left padding only"):
            model(input_ids=ids, attention_mask=right)


def test_cca_survives_save_pretrained_and_load_cca(tmp_path):
    pytest.importorskip("transformers")
    from transformers import AutoModelForCausalLM

    from icml25.cca_attention.hf import load_cca, use_cca, use_full
    from icml25.core.llm import tiny_llama

    model, _ = tiny_llama(layers=1, hidden=16, heads=2, seed=0)
    ids = torch.randint(6, 100, (1, 24), generator=torch.Generator().manual_seed(0))
    use_cca(model, group_size=2, window=3)
    with torch.no_grad():
        want = model(input_ids=ids).logits
        model.save_pretrained(tmp_path / "cca")
        loaded = load_cca(tmp_path / "cca")
        assert loaded._cca_settings == (2, 3)
        torch.testing.assert_close(loaded(input_ids=ids).logits, want)
        plain = AutoModelForCausalLM.from_pretrained(tmp_path / "cca", attn_implementation="sdpa")
        assert not torch.allclose(plain(input_ids=ids).logits, want, atol=1e-4)  # full attention
        use_full(model)
        model.save_pretrained(tmp_path / "full")
        assert getattr(load_cca(tmp_path / "full"), "_cca_settings", None) is None


def test_use_cca_refuses_what_is_not_a_hf_decoder():
    pytest.importorskip("transformers")
    from icml25.cca_attention.hf import use_cca

    with pytest.raises(TypeError, match="needs a loaded Hugging Face transformers decoder"):
        use_cca(torch.nn.Linear(2, 2), group_size=2, window=2)


def test_strided_views_give_the_numbers_of_contiguous_inputs():
    """A query, key or value whose last dimension is not contiguous (a transposed view) once
    came back off by up to 3.7e19; SDPA handles such views, and so must the kernel."""
    import torch

    from icml25.cca_attention import cca_attention

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 40, 8, generator=g) for _ in range(3))
    want = cca_attention(q, k, v, group_size=4, window=8, is_causal=True)
    views = [t.transpose(-1, -2).contiguous().transpose(-1, -2) for t in (q, k, v)]
    assert all(t.stride(-1) != 1 for t in views)
    got = cca_attention(*views, group_size=4, window=8, is_causal=True)
    assert torch.allclose(got, want, atol=1e-6)
