"""BackSlash on models with an Embedding or a BatchNorm (issue 69, item 1): lambda means the same
whatever else the model holds, and a layer the rate zeroes is named in a warning.

The failure: an MLP on scikit-learn's digits trains at lam=1e4, the same MLP with an (unused)
N(0, 1) embedding, or with a BatchNorm1d after its first layer, had every Linear weight zeroed.
The shape estimate pooled raw tensors of different scales (an N(0, 1) embedding beside weights
at 1/sqrt(fan_in) reads as heavy tails: nu at its 0.5 bound, a hard threshold), and a weight
feeding a BatchNorm has no scale the loss holds, so the rate shrank it into that threshold.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from scipy.stats import gennorm
from sklearn.datasets import load_digits
from torch import nn

from icml25.backslash import (
    BackSlash,
    RateCollapseWarning,
    gg_shape,
    gg_shape_pooled,
    prox_power,
)

DIGITS = load_digits()  # bundled with scikit-learn: 1,797 8x8 images, no download
PIXELS = torch.tensor(DIGITS.data / 16.0, dtype=torch.float32)
LEVELS = torch.tensor(DIGITS.data, dtype=torch.long)  # the 17 grey levels, for an embedding
LABELS = torch.tensor(DIGITS.target)
SPLIT = torch.randperm(len(LABELS), generator=torch.Generator().manual_seed(0))
TRAIN, TEST = SPLIT[:1300], SPLIT[1300:]  # 497 test digits


class DigitsNet(nn.Module):
    """The MLP 64-128-10, optionally with an embedding (``"unused"``: an ``Embedding(10, 16)``
    no forward pass reads; ``"used"``: the grey level of each pixel embedded in 4 dimensions,
    which then feed the first layer) and a BatchNorm1d after the first layer. The Linear
    layers are created first, so with the same seed they start as the plain MLP's do."""

    def __init__(self, embedding: str | None = None, batchnorm: bool = False) -> None:
        super().__init__()
        self.embedding = embedding
        self.fc1 = nn.Linear(64 * 4 if embedding == "used" else 64, 128)
        self.bn = nn.BatchNorm1d(128) if batchnorm else None
        self.fc2 = nn.Linear(128, 10)
        if embedding is not None:
            self.emb = nn.Embedding(17, 4) if embedding == "used" else nn.Embedding(10, 16)

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        x = self.emb(LEVELS[rows]).flatten(1) if self.embedding == "used" else PIXELS[rows]
        h = self.fc1(x)
        if self.bn is not None:
            h = self.bn(h)
        return self.fc2(torch.relu(h))


def train_digits(lam: float | None, **variant) -> tuple[float, DigitsNet, BackSlash | None]:
    """300 Adam steps (lr 3e-3, batches of 128) with the rate step at ``lam``; the test accuracy
    of the model in eval mode. About 0.2 s without the rate, 0.5 s with it."""
    torch.manual_seed(1)
    model = DigitsNet(**variant)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    bs = BackSlash(model, lam=lam).attach(opt) if lam is not None else None
    g = torch.Generator().manual_seed(2)
    for _ in range(300):
        rows = TRAIN[torch.randint(0, len(TRAIN), (128,), generator=g)]
        opt.zero_grad()
        nn.functional.cross_entropy(model(rows), LABELS[rows]).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        acc = float((model(TEST).argmax(1) == LABELS[TEST]).float().mean())
    return acc, model, bs


@pytest.mark.parametrize(
    "variant",
    [
        {"embedding": "unused", "batchnorm": True},
        {"embedding": "unused"},
        {"batchnorm": True},
        {"embedding": "used", "batchnorm": True},
    ],
    ids=["unused-embedding+batchnorm", "unused-embedding", "batchnorm", "used-embedding+batchnorm"],
)
def test_an_embedding_or_a_batchnorm_does_not_collapse_the_mlp(variant):
    """At lam=1e4 the plain MLP trains (0.93 here, against 0.97 without the rate); with an
    embedding and/or a BatchNorm every Linear weight was zeroed (0.087, chance; 0.50 for the used
    embedding). Tolerance 0.03: the binomial standard error of an accuracy near 0.95 on 497
    test digits is 0.010, 0.014 for a difference of two, so 0.03 is about two of them, and the
    failure sits 85 points below."""
    plain, _, _ = train_digits(1e4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RateCollapseWarning)  # no Linear layer may be zeroed
        acc, model, _ = train_digits(1e4, **variant)
    assert plain > 0.85
    assert acc >= plain - 0.03, (acc, plain)
    for name in ("fc1", "fc2"):
        assert bool(getattr(model, name).weight.any()), f"{name} is all zeros"


def test_the_shape_estimate_ignores_each_tensors_scale():
    """Moment matching over tensors each divided by its own RMS: a rescaled tensor or an
    all-zero one changes nothing, tensors at one scale give gg_shape of their concatenation,
    and generalized Gaussians of one shape at scales 1000x apart give that shape back (pooled
    raw they read as a scale mixture, at the lower bound)."""
    torch.manual_seed(0)
    f64 = torch.float64
    a, b = torch.randn(300, 40, dtype=f64), torch.rand(50, 20, dtype=f64) - 0.5
    ref = gg_shape_pooled([a, b])
    assert gg_shape_pooled([1e3 * a, 1e-2 * b]) == pytest.approx(ref, rel=1e-12)
    assert gg_shape_pooled([a, b, torch.zeros(100, 7)]) == pytest.approx(ref, rel=1e-12)
    c, d = torch.randn(200, 30, dtype=f64), torch.randn(400, dtype=f64)
    c, d = c / c.pow(2).mean().sqrt(), d / d.pow(2).mean().sqrt()  # RMS 1 both
    assert gg_shape_pooled([c, d], (0.1, 3.0)) == pytest.approx(
        gg_shape(torch.cat([c.flatten(), d]), (0.1, 3.0)), rel=1e-9
    )
    x = [
        torch.tensor(gennorm.rvs(1.0, scale=s, size=20_000, random_state=k))
        for k, s in enumerate((1e-3, 1.0))
    ]
    assert gg_shape_pooled(x, (0.1, 3.0)) == pytest.approx(1.0, abs=0.05)
    assert gg_shape(torch.cat(x), (0.1, 3.0)) < 0.5  # the raw pooling this replaced
    assert gg_shape_pooled([torch.zeros(3)], (0.5, 2.0)) == 0.5
    with pytest.raises(ValueError, match="finite"):
        gg_shape_pooled([torch.tensor([1.0, float("nan")])])


def test_backslash_nu_does_not_depend_on_an_embeddings_scale():
    """The estimate BackSlash starts from: an embedding at N(0, 1) (PyTorch's default) or at
    N(0, 0.02) gives the same nu; pooled raw, the N(0, 1) one put it at the 0.5 bound."""
    torch.manual_seed(0)
    model = DigitsNet(embedding="unused")
    nu = BackSlash(model, lam=1.0).nu_
    with torch.no_grad():
        model.emb.weight.mul_(0.02)
    assert BackSlash(model, lam=1.0).nu_ == pytest.approx(nu, rel=1e-9)
    assert nu > 1.5


def test_a_weight_feeding_a_batchnorm_takes_the_prox_of_its_folded_weight():
    """After one training forward pass the rate finds fc1 (it feeds the BatchNorm), not fc2,
    and removes its hooks; fc1's step is prox(W * f) / f with f = |gamma| / sqrt(var + eps)
    per output channel, so scaling W by k (and the running variance by k^2) scales the step's
    result by k (exactly with the BatchNorm's eps at 0): the rate no longer shrinks a scale that
    the loss ignores."""
    torch.manual_seed(0)
    model = DigitsNet(batchnorm=True)
    bs = BackSlash(model, lam=2e4, nu=0.7)
    assert bs.folded_ == []
    model(TRAIN[:64])
    assert bs.folded_ == ["fc1.weight"]
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
    model.double()  # the same parameters (ids), in float64: the checks below to 1e-7
    model.bn.eps = 0.0  # (var + eps) scales by k^2 exactly
    with torch.no_grad():
        model.bn.weight.copy_(torch.linspace(0.5, 2.0, 128))
        model.bn.running_var.copy_(torch.linspace(0.01, 0.3, 128))
    w1, w2 = model.fc1.weight.detach().clone(), model.fc2.weight.detach().clone()
    t = 1e-3 * 2e4 / bs.n_params
    f = (model.bn.weight.detach() / (model.bn.running_var + model.bn.eps).sqrt())[:, None]
    bs.step(lr=1e-3)
    torch.testing.assert_close(model.fc1.weight.detach(), prox_power(w1 * f, t, 0.7) / f)
    torch.testing.assert_close(model.fc2.weight.detach(), prox_power(w2, t, 0.7))
    with torch.no_grad():  # the same network with fc1 ten times larger
        model.fc1.weight.copy_(10 * w1)
        model.fc2.weight.copy_(w2)
        model.bn.running_var.mul_(100)
    bs.step(lr=1e-3)
    torch.testing.assert_close(
        model.fc1.weight.detach(), 10 * prox_power(w1 * f, t, 0.7) / f, rtol=1e-7, atol=1e-9
    )


def test_a_model_without_batchnorm_gets_no_hooks():
    model = DigitsNet(embedding="unused")
    BackSlash(model, lam=1.0)
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


def test_a_layer_driven_to_zero_is_named_in_a_warning_once():
    """Two layers at scales 1e-3 and 1, the Laplace prox with t = 0.01: the first is zeroed and
    named, once over repeated steps; the second is not named."""
    torch.manual_seed(0)
    model = nn.Sequential()
    model.add_module("small", nn.Linear(8, 8))
    model.add_module("large", nn.Linear(8, 2))
    with torch.no_grad():
        model.small.weight.uniform_(-1e-3, 1e-3)
        model.large.weight.uniform_(0.5, 1.0)
    bs = BackSlash(model, lam=0.01, nu=1.0, reduction="sum")
    with pytest.warns(RateCollapseWarning) as caught:
        bs.step(lr=1.0)
        bs.step(lr=1.0)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert "small.weight" in messages[0] and "64 weights" in messages[0]
    assert "large.weight" not in messages[0]
    assert not model.small.weight.any() and model.large.weight.all()


def test_no_warning_while_every_layer_keeps_a_weight():
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 2))
    bs = BackSlash(model, lam=1e-4, nu=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RateCollapseWarning)
        for _ in range(3):
            bs.step(lr=1.0)
