"""CCA against the official code's rules, and the reproduction's arms (issue 54).

The official implementation (chenyaofo/CCA-Attention at commit 052cc8e,
``codebase/core/cca_attn.py`` and ``cca_pooling.py``) builds, for sequences shorter than its
Triton threshold, an explicit mask over ``[core tokens; raw tokens]`` with 1-based rows. The
reference below is written from my reading of those rules, not from their code:

- the core tokens are pooled from the first ``n = (L - s) // g`` groups only (none when
  ``L <= s``), each with softmax weights ``k . q_last / sqrt(d)`` of the group's last query,
  after RoPE and per query head (keys repeated to the query heads first);
- row ``r`` sees core ``p`` (``1 <= p <= n``) when ``r > s`` and ``floor((r - s) / g) >= p``;
- row ``r`` sees raw column ``c <= r`` when ``c > r - w_r``, with the window
  ``w_r = s + max(r - P_r - s, 0)`` and ``P_r = max(floor((r - s) / g) g, 0)`` the pooled
  positions;
- one softmax over both.

Its Triton kernel (``cca.py``, for longer sequences) writes the same core rule as
``(m - (g - 1) - s) // g >= n`` (0-based) and the raw window as ``s + (m + 1) mod g`` tokens,
which equals the mask's ``s + (m + 1 - s) mod g`` only when ``g`` divides ``s``.
"""

import math

import numpy as np
import pytest
import torch

from icml25.cca_attention.attention import cca_attention, visible_groups


def _official_masks(L, g, s):
    n = max(0, (L - s) // g)
    core = torch.zeros(L, n, dtype=torch.bool)
    raw = torch.zeros(L, L, dtype=torch.bool)
    for r in range(1, L + 1):
        done = (r - s) // g  # floor division, negative before the window fills
        for p in range(1, n + 1):
            core[r - 1, p - 1] = r > s and done >= p
        pooled = max(done * g, 0)
        width = s + max(r - pooled - s, 0)
        for c in range(1, r + 1):
            raw[r - 1, c - 1] = c > r - width
    return core, raw


def _official_attention(q, k, v, g, s):
    """The official rules as an explicit computation (float64, (B, H, L, D), GQA allowed)."""
    rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    B, H, L, D = q.shape
    core, raw = _official_masks(L, g, s)
    n = core.shape[1]
    kg = k[:, :, : n * g].reshape(B, H, n, g, D)
    vg = v[:, :, : n * g].reshape(B, H, n, g, D)
    q_last = q[:, :, : n * g].reshape(B, H, n, g, D)[:, :, :, -1]
    w = torch.softmax(torch.einsum("bhngd,bhnd->bhng", kg, q_last) / math.sqrt(D), -1)
    kc = torch.einsum("bhng,bhngd->bhnd", w, kg)
    vc = torch.einsum("bhng,bhngd->bhnd", w, vg)
    logits = torch.cat([q @ kc.transpose(-1, -2), q @ k.transpose(-1, -2)], -1) / math.sqrt(D)
    mask = torch.cat([core, raw], 1)
    p = torch.softmax(logits.masked_fill(~mask, float("-inf")), -1)
    return p[..., :n] @ vc + p[..., n:] @ v


CASES = [(50, 4, 6), (64, 8, 16), (33, 5, 0), (20, 16, 30), (70, 3, 10), (48, 1, 5), (40, 6, 9)]


@pytest.mark.parametrize(("L", "g", "s"), CASES)
def test_the_kernel_equals_the_official_rules(L, g, s):
    gen = torch.Generator().manual_seed(L * 100 + g * 10 + s)
    q = torch.randn(2, 4, L, 8, generator=gen, dtype=torch.float64)
    k, v = (torch.randn(2, 2, L, 8, generator=gen, dtype=torch.float64) for _ in range(2))
    out = cca_attention(q, k, v, group_size=g, window=s)
    torch.testing.assert_close(out, _official_attention(q, k, v, g, s), atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize(("L", "g", "s"), CASES)
def test_the_official_visibility_is_the_packages_J_rule(L, g, s):
    core, raw = _official_masks(L, g, s)
    J = visible_groups(L, g, s)
    t = torch.arange(L)
    assert torch.equal(core, torch.arange(core.shape[1])[None, :] < J[:, None])
    assert torch.equal(raw, (t[None, :] <= t[:, None]) & (t[None, :] >= g * J[:, None]))


def _triton_raw(L, g, s):
    m, n = torch.arange(L)[:, None], torch.arange(L)[None, :]
    return (n <= m) & (n + 1 > m + 1 - ((m + 1) % g + s))


@pytest.mark.parametrize(("g", "s"), [(4, 8), (16, 32), (8, 0), (1, 5), (4, 6), (16, 30), (5, 7)])
def test_the_triton_window_matches_the_mask_only_when_g_divides_s(g, s):
    L = 4 * (g + s) + 3
    _, raw = _official_masks(L, g, s)
    assert torch.equal(_triton_raw(L, g, s), raw) == (s % g == 0)
    m, n = torch.arange(L)[:, None], torch.arange(L)[None, :]
    triton_core = (m - (g - 1) - s) // g >= n  # the kernel's core rule, 0-based
    assert torch.equal(triton_core[:, : L // g], n[:, : L // g] < visible_groups(L, g, s)[:, None])


# ----------------------------------------------------------------------------- the arms
def test_the_recipe_warms_up_linearly_then_stays_constant():
    from icml25.cca_attention.experiments_lm import Recipe

    r = Recipe(lr=1e-3, warmup=4)
    assert [r.rate(i) for i in range(6)] == pytest.approx([2.5e-4, 5e-4, 7.5e-4, 1e-3, 1e-3, 1e-3])
    assert Recipe(lr=1e-3, warmup=0).rate(0) == 1e-3


def test_finetune_follows_the_recipe_step_by_step():
    """Warm-up, accumulation over windows and clipping, against a loop written here."""
    pytest.importorskip("transformers")
    from icml25.cca_attention.experiments_lm import Recipe, finetune_lm
    from icml25.core.llm import tiny_llama

    text = torch.randint(6, 100, (300,), generator=torch.Generator().manual_seed(0))
    recipe = Recipe(lr=3e-3, warmup=2, clip=0.05, accumulate=3)
    model, _ = tiny_llama(layers=1, hidden=16, heads=2, seed=0)
    finetune_lm(model, text, 4, 24, seed=3, recipe=recipe)

    ref, _ = tiny_llama(layers=1, hidden=16, heads=2, seed=0)
    opt = torch.optim.AdamW(ref.parameters(), lr=3e-3, weight_decay=0.0)
    gen = torch.Generator().manual_seed(3)
    ref.train()
    norms = []
    for step in range(4):
        for group in opt.param_groups:
            group["lr"] = 3e-3 * min(1.0, (step + 1) / 2)
        opt.zero_grad()
        starts = [int(torch.randint(0, 300 - 24, (1,), generator=gen)) for _ in range(3)]
        loss = sum(ref(input_ids=text[a : a + 24][None], labels=text[a : a + 24][None]).loss
                   for a in starts) / 3  # fmt: skip
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.05)))
        opt.step()
    assert max(norms) > 0.05  # the clipping did act
    for a, b in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    with pytest.raises(ValueError, match=r"recipe\.accumulate"):
        finetune_lm(model, text, 1, 24, seed=0, recipe=Recipe(accumulate=0))


def test_the_local_arm_is_ccas_window_without_core_tokens():
    pytest.importorskip("transformers")
    from icml25.cca_attention.experiments_lm import _local_fn, set_arm
    from icml25.core.llm import tiny_llama

    gen = torch.Generator().manual_seed(1)
    L, g, s = 37, 4, 6
    q = torch.randn(1, 4, L, 8, generator=gen)
    k, v = (torch.randn(1, 2, L, 8, generator=gen) for _ in range(2))
    out, _ = _local_fn(g, s)(torch.nn.Identity(), q, k, v, None, scaling=0.3)
    ref = _official_attention_without_cores(q, k, v, g, s, 0.3)
    torch.testing.assert_close(out, ref.transpose(1, 2), atol=1e-5, rtol=1e-5)

    model, _ = tiny_llama(layers=2, hidden=32, heads=4, seed=0, kv_heads=2)
    ids = torch.randint(6, 100, (1, 30))
    with torch.no_grad():
        set_arm(model, "full")
        full = model(input_ids=ids).logits
        from icml25.cca_attention.experiments_lm import use_local

        use_local(model, group_size=4, window=64)  # a window over everything: full attention
        torch.testing.assert_close(model(input_ids=ids).logits, full, atol=1e-5, rtol=1e-5)
        set_arm(model, "local")  # g = 16, s = 128 > 30: also everything
        torch.testing.assert_close(model(input_ids=ids).logits, full, atol=1e-5, rtol=1e-5)
        use_local(model, group_size=4, window=6)
        assert not torch.allclose(model(input_ids=ids).logits, full, atol=1e-3)
    with pytest.raises(ValueError, match="arm must be one of"):
        set_arm(model, "sparse")


def _official_attention_without_cores(q, k, v, g, s, scale):
    rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    _, raw = _official_masks(q.shape[2], g, s)
    p = torch.softmax((q @ k.transpose(-1, -2) * scale).masked_fill(~raw, float("-inf")), -1)
    return p @ v


def test_token_nlls_are_the_perplexitys_terms():
    pytest.importorskip("transformers")
    from icml25.cca_attention.experiments_lm import perplexity, token_nlls
    from icml25.core.llm import tiny_llama

    model, _ = tiny_llama(layers=1, hidden=16, heads=2, seed=0)
    docs = [
        torch.randint(6, 100, (70,), generator=torch.Generator().manual_seed(i)) for i in (1, 2)
    ]
    nll = token_nlls(model, docs, 32, skip=8)
    assert nll.shape == (4, 24)  # two chunks of 32 per document, positions 8..31
    assert perplexity(model, docs, 32, skip=8) == pytest.approx(math.exp(nll.mean()))


def test_the_bootstrap_statistics_of_the_lm_claims():
    from icml25.cca_attention.experiments import _ratio
    from icml25.cca_attention.experiments_lm import BLOCK, _blocks, _closure, _exp_mean

    nll = np.arange(2 * 2 * BLOCK, dtype=float).reshape(2, 2 * BLOCK)
    assert _blocks(nll).tolist() == pytest.approx([(BLOCK - 1) / 2 + i * BLOCK for i in range(4)])
    with pytest.raises(ValueError, match="not blocks of"):
        _blocks(nll[:, 1:])
    assert _exp_mean(np.array([0.1, 0.3])) == pytest.approx(math.exp(0.2))
    assert _closure(np.array([[0.1, 0.4], [0.3, 0.4]])) == pytest.approx(0.5)
    assert _closure(np.array([[0.0, -0.1], [-0.1, 0.0]])) == 0.0
    assert _closure(np.array([[0.2, -0.1], [0.1, 0.0]])) == 1e3
    assert _ratio(np.array([[1.0, 1.0], [0.0, 1.0]])) == 0.5


def test_forward_cost_reports_every_timed_run_and_the_dense_null_arm():
    from icml25.cca_attention.experiments_cost import forward_cost_here

    for method in ("cca", "cca-dense"):
        cost = forward_cost_here(method, 256, repeats=3, threads=1)
        assert len(cost["cpu_runs"]) == len(cost["mib_runs"]) == 2
        assert cost["cpu_seconds"] == min(cost["cpu_runs"]) > 0
    with pytest.raises(ValueError, match="method must be one of"):
        forward_cost_here("flash", 64)
    with pytest.raises(ValueError, match="repeats"):
        forward_cost_here("sdpa", 64, repeats=1)
