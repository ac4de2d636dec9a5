"""dtypes, layouts and autograd modes of the tensor APIs (issue 70, area 4): float16,
bfloat16 and float64 inputs, non-contiguous views, empty batches, ``torch.no_grad`` and
``torch.inference_mode`` either give the float32 answer (within the dtype's tolerance) or are
refused by name, never a wrong or NaN result. cca_attention has its own such tests in its
folder."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

LOW = {torch.float16: 5e-3, torch.bfloat16: 3e-2, torch.float64: 1e-6}


# ---------------------------------------------------------------- SignSGD
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_signsgd_steps_in_the_parameters_dtype_on_non_contiguous_parameters(
    dtype: torch.dtype, momentum: float
) -> None:
    """p <- p - lr sign(m), m <- beta m + (1 - beta) g (m_1 = g_1, the documented start):
    the same in every dtype, on a transposed (non-contiguous) parameter and gradient."""
    from icml25.signsgd_risk import SignSGD

    torch.manual_seed(0)
    p = nn.Parameter(torch.randn(4, 3, dtype=dtype).t())
    assert not p.is_contiguous()
    opt = SignSGD([p], lr=0.1, momentum=momentum)
    want, m = p.detach().double().clone(), torch.zeros(3, 4, dtype=torch.float64)
    for step in range(3):
        g = torch.randn(4, 3, dtype=dtype).t()
        p.grad = g
        m = momentum * m + (1 - momentum) * g.double() if step else g.double()
        want = want - 0.1 * torch.sign(m)
        opt.step()
        assert p.dtype == dtype
        want = want.to(dtype).double()  # the parameter is rounded to its dtype each step
    torch.testing.assert_close(p.detach().double(), want, atol=LOW[dtype], rtol=0)


# ---------------------------------------------------------------- ZigZag / IT3
def _zigzag(dtype: torch.dtype = torch.float32) -> nn.Module:
    from icml25.it3 import ZigZag

    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(9, 16), nn.ReLU(), nn.Linear(16, 1)).to(dtype)
    zz = ZigZag(net, 1, task="regression")
    zz.mark_trained()
    return zz.eval()


@pytest.mark.parametrize(
    ("dtype", "optimizer", "lr"),
    [
        (torch.float64, "adam", 1e-3),
        (torch.bfloat16, "adam", 1e-3),
        (torch.float16, "sgd", 1e-2),
    ],
)
def test_it3_in_other_dtypes_matches_float32(dtype: torch.dtype, optimizer: str, lr: float) -> None:
    from icml25.it3 import IT3

    x = torch.randn(32, 8, generator=torch.Generator().manual_seed(1))
    ref = IT3(_zigzag(), steps=2, lr=lr, optimizer=optimizer)(x)
    low = _zigzag(dtype)
    low.load_state_dict({k: v.to(dtype) for k, v in _zigzag().state_dict().items()})
    got = IT3(low, steps=2, lr=lr, optimizer=optimizer)(x.to(dtype))
    assert got.dtype == dtype
    torch.testing.assert_close(got.double(), ref.double(), atol=10 * LOW[dtype], rtol=0)


def test_it3_refuses_adam_on_float16_weights_by_name() -> None:
    """Adam's eps underflows in float16: the first step would be NaN (it was, before)."""
    from icml25.it3 import IT3

    with pytest.raises(ValueError, match="optimizer='adam' on float16"):
        IT3(_zigzag(torch.float16), steps=1, lr=1e-4)


def test_it3_under_no_grad_and_inference_mode_gives_the_same_predictions() -> None:
    """IT3 takes gradient steps on its own copy of the weights: under no_grad it enables them,
    under inference_mode it leaves that mode for them (before: an autograd RuntimeError)."""
    from icml25.it3 import IT3

    x = torch.randn(32, 8, generator=torch.Generator().manual_seed(1))
    ref = IT3(_zigzag(), steps=2, lr=1e-3)(x)
    with torch.no_grad():
        torch.testing.assert_close(IT3(_zigzag(), steps=2, lr=1e-3)(x), ref)
    with torch.inference_mode():
        it3 = IT3(_zigzag(), steps=2, lr=1e-3)  # built in inference mode too
        got = it3(x.clone())  # an inference tensor
    torch.testing.assert_close(got, ref)
    assert it3.last_losses[0][-1] < it3.last_losses[0][0]


def test_it3_on_a_non_contiguous_view_equals_its_contiguous_copy() -> None:
    from icml25.it3 import IT3

    wide = torch.randn(32, 16, generator=torch.Generator().manual_seed(1))
    view = wide[:, ::2]
    assert not view.is_contiguous()
    a = IT3(_zigzag(), steps=2, lr=1e-3)(view)
    b = IT3(_zigzag(), steps=2, lr=1e-3)(view.contiguous())
    torch.testing.assert_close(a, b)


def test_it3_and_zigzag_refuse_an_empty_batch_by_name() -> None:
    from icml25.it3 import IT3, idempotence_error, zigzag_loss

    zz, empty = _zigzag(), torch.zeros(0, 8)
    assert zz(empty).shape == (0, 1)  # a plain forward pass of nothing is nothing, as nn.Linear
    for call in (
        lambda: IT3(zz, steps=1, lr=1e-3)(empty),
        lambda: idempotence_error(zz, empty),
        lambda: zigzag_loss(zz, empty, torch.zeros(0, 1)),
    ):
        with pytest.raises(ValueError, match="x must hold at least one sample"):
            call()


# ---------------------------------------------------------------- SoupOfExperts
def _soup() -> nn.Module:
    from icml25.soup_of_experts import ByteGPT, SoupOfExperts

    torch.manual_seed(0)
    return SoupOfExperts(ByteGPT(dim=16, layers=1, context=4), n_domains=3, n_experts=4)


def test_soup_instantiates_the_same_model_from_any_form_of_h_and_in_every_mode() -> None:
    soup, x = _soup(), torch.randint(0, 256, (2, 4), generator=torch.Generator().manual_seed(0))
    h = np.array([0.2, 0.5, 0.3])
    ref = soup.instantiate(h)(x)
    strided = np.array([0.2, 9.0, 0.5, 9.0, 0.3])[::2]
    for form in (torch.tensor(h), h.astype(np.float32), strided, list(h)):
        torch.testing.assert_close(soup.instantiate(form)(x), ref, atol=1e-6, rtol=0)
    with torch.no_grad():
        torch.testing.assert_close(soup.instantiate(h)(x), ref)
    with torch.inference_mode():
        torch.testing.assert_close(soup.instantiate(h)(x), ref)
    assert soup.instantiate(h)(x[:0]).shape == (0, 4, 256)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_soup_in_other_dtypes_matches_float32(dtype: torch.dtype) -> None:
    soup, x = _soup(), torch.randint(0, 256, (2, 4), generator=torch.Generator().manual_seed(0))
    h = np.array([0.2, 0.5, 0.3])
    ref = soup.instantiate(h)(x)
    other = _soup()
    other.load_state_dict(soup.state_dict())
    got = other.to(dtype).instantiate(h)(x)
    assert got.dtype == dtype
    torch.testing.assert_close(got.double(), ref.double(), atol=20 * LOW[dtype], rtol=0)


def test_next_token_loss_refuses_an_empty_batch_instead_of_nan() -> None:
    from icml25.soup_of_experts import next_token_loss

    with pytest.raises(ValueError, match="at least one sequence"):
        next_token_loss(torch.zeros(0, 3, 256), torch.zeros(0, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="at least one sequence"):
        next_token_loss(torch.zeros(2, 0, 256), torch.zeros(2, 1, dtype=torch.long))


# ---------------------------------------------------------------- WeightDecaySwitch
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64])
def test_weight_decay_switch_turns_decay_off_whatever_the_dtype(dtype: torch.dtype) -> None:
    from icml25.mirror_flow import WeightDecaySwitch

    p = nn.Parameter(torch.ones(3, dtype=dtype))
    opt = torch.optim.SGD([p], lr=0.1, weight_decay=0.5)
    switch = WeightDecaySwitch(opt, at_step=1)
    p.grad = torch.zeros(3, dtype=dtype)
    opt.step()
    switch.step()
    after_decay = p.detach().clone()
    torch.testing.assert_close(after_decay, torch.full((3,), 0.95, dtype=dtype))
    opt.step()  # weight decay off: a zero gradient moves nothing
    switch.step()
    torch.testing.assert_close(p.detach(), after_decay)
    assert p.dtype == dtype


# ---------------------------------------------------------------- BackSlash
def _bs_run(dtype: torch.dtype, steps: int = 20) -> nn.Module:
    from icml25.backslash import BackSlash

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(dtype)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rate = BackSlash(model, 1e2)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(64, 8, generator=g).to(dtype), torch.randint(0, 3, (64,), generator=g)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x).float(), y).backward()
        opt.step()
        rate.step(lr=0.1)
    return model


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_backslash_steps_in_the_weights_dtype_and_matches_float32(dtype: torch.dtype) -> None:
    ref, got = _bs_run(torch.float32), _bs_run(dtype)
    for a, b in zip(ref.parameters(), got.parameters(), strict=True):
        assert b.dtype == dtype and torch.isfinite(b).all()
        torch.testing.assert_close(b.float(), a, atol=LOW[dtype], rtol=LOW[dtype])


def test_backslash_prox_and_shape_of_a_view_equal_those_of_its_copy() -> None:
    from icml25.backslash import gg_shape, gg_shape_pooled, prox_power

    x = torch.randn(10, 7, generator=torch.Generator().manual_seed(2)).t()  # not contiguous
    assert not x.is_contiguous()
    for nu in (0.6, 1.0, 2.0):
        torch.testing.assert_close(prox_power(x, 0.05, nu), prox_power(x.contiguous(), 0.05, nu))
    assert gg_shape(x) == gg_shape(x.contiguous())
    assert gg_shape_pooled([x, 3 * x]) == gg_shape_pooled([x.contiguous(), 3 * x.contiguous()])
    with torch.inference_mode():
        torch.testing.assert_close(prox_power(x, 0.05, 0.7), prox_power(x.contiguous(), 0.05, 0.7))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_backslash_file_round_trips_a_model_of_any_float_dtype(tmp_path, dtype) -> None:
    """Coded weights come back within half a quantisation step (plus the dtype's rounding),
    raw tensors (biases, BatchNorm buffers, in bfloat16 too: NumPy has no such dtype) exactly."""
    from icml25.backslash import load_compressed, save_compressed

    def make(seed: int) -> nn.Module:
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Linear(16, 3)).to(dtype)

    model, delta = make(0), 0.01
    model(torch.randn(5, 8, dtype=dtype))  # running statistics, num_batches_tracked = 1
    save_compressed(model, tmp_path / "m.bs", delta=delta)
    other = make(1)
    load_compressed(tmp_path / "m.bs", other)
    for (name, a), b in zip(model.state_dict().items(), other.state_dict().values(), strict=True):
        assert b.dtype == a.dtype, name
        err = float((a.double() - b.double()).abs().max())
        if name.endswith("weight") and name[0] in "02":
            assert err <= delta / 2 + LOW[dtype], (name, err)
        else:
            assert err == 0.0, (name, err)


# ---------------------------------------------------------------- LLMScan
@pytest.fixture(scope="module")
def tiny_lm_parts():
    pytest.importorskip("transformers")
    from icml25.core.llm import HFLanguageModel, tiny_llama
    from icml25.llmscan import LLMScan

    prompt = "is the sky green today?"
    return tiny_llama, HFLanguageModel, LLMScan, prompt


@pytest.mark.parametrize(("dtype", "rel"), [(torch.float64, 1e-5), (torch.float16, 2e-2)])
def test_llmscan_of_a_model_in_another_dtype_matches_float32(tiny_lm_parts, dtype, rel) -> None:
    """float64 and float16 models give float32's effects within the dtype's rounding (the
    attention maps are compared in float32). A bfloat16 model's own rounding (8 bits of
    mantissa in every attention map) moves a token effect by up to ~10% on this tiny Llama and
    a layer effect by a few roundings of P(y*): finite, of the same top token, but scan in
    float32 or float16 where the detector's features must be comparable."""
    tiny_llama, HF, LLMScan, prompt = tiny_lm_parts
    ref = LLMScan(HF(*tiny_llama(layers=3, hidden=32, seed=1))).scan(prompt)
    for d, tol in ((dtype, rel), (torch.bfloat16, 0.2)):
        model, tok = tiny_llama(layers=3, hidden=32, seed=1)
        got = LLMScan(HF(model.to(d), tok)).scan(prompt)
        assert got.top_token == ref.top_token
        assert np.isfinite(got.features()).all()
        np.testing.assert_allclose(got.token_effects, ref.token_effects, rtol=tol)
        # a layer effect is a difference of two probabilities near P(y*): in bfloat16 it is
        # known to within a few roundings of P(y*) (2^-8 relative), not relatively
        atol = 4 * ref.top_prob * 2**-8 if d == torch.bfloat16 else 1e-7
        np.testing.assert_allclose(got.layer_effects, ref.layer_effects, rtol=tol, atol=atol)


def test_llmscan_under_no_grad_and_inference_mode_gives_the_same_scan(tiny_lm_parts) -> None:
    tiny_llama, HF, LLMScan, prompt = tiny_lm_parts
    scanner = LLMScan(HF(*tiny_llama(layers=3, hidden=32, seed=1)))
    ref = scanner.scan(prompt).features()
    with torch.no_grad():
        np.testing.assert_array_equal(scanner.scan(prompt).features(), ref)
    with torch.inference_mode():
        np.testing.assert_array_equal(scanner.scan(prompt).features(), ref)
