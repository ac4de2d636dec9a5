import numpy as np
import pytest
import torch

from icml25.fedgvi import (
    KL,
    NLL,
    DensityPowerLoss,
    GammaLoss,
    GaussianLocation,
    GeneralisedCrossEntropy,
    IMQScoreMatching,
    LocalOptimizer,
    LogisticRegression,
    MLPClassifier,
    NatGaussian,
    local_posterior,
)

RNG = np.random.default_rng(3)
X1 = np.concatenate([RNG.normal(0, 1, 40), [6.0, 7.5, 9.0]])


def _mc_mean(loss, model, mu, var, n=400_000):
    theta = mu + np.sqrt(var) * torch.randn(
        n, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    return float(loss.per_point(model, theta).sum(1).mean())


@pytest.mark.parametrize(
    "loss", [NLL(), DensityPowerLoss(1.5), GammaLoss(1.75), IMQScoreMatching(1.0, center=0.3)]
)
def test_closed_form_expectations_match_monte_carlo(loss):
    model = GaussianLocation(X1, sigma2=1.3)
    mu, var = torch.tensor([0.4], dtype=torch.float64), torch.tensor([0.05], dtype=torch.float64)
    exact = float(loss.expected(model, mu, var))
    assert exact == pytest.approx(_mc_mean(loss, model, 0.4, 0.05), rel=2e-3, abs=2e-3)


def test_gce_tends_to_nll_and_is_bounded():
    model = LogisticRegression(RNG.normal(size=(30, 3)), RNG.integers(0, 2, 30))
    theta = torch.as_tensor(RNG.normal(size=(5, 3)))
    nll = NLL().per_point(model, theta)
    gce = GeneralisedCrossEntropy(1e-7).per_point(model, theta)
    torch.testing.assert_close(gce, nll, rtol=1e-5, atol=1e-6)
    big = GeneralisedCrossEntropy(0.5).per_point(model, 100 * theta)
    assert float(big.max()) <= 2.0  # 1/b
    with pytest.raises(ValueError, match="b must lie in"):
        GeneralisedCrossEntropy(0.0)
    with pytest.raises(ValueError, match="beta must be > 1"):
        DensityPowerLoss(1.0)
    with pytest.raises(ValueError, match="gamma must be > 1"):
        GammaLoss(0.75)


def test_power_integrals():
    model = LogisticRegression(RNG.normal(size=(10, 2)), RNG.integers(0, 2, 10))
    theta = torch.as_tensor(RNG.normal(size=(4, 2)))
    torch.testing.assert_close(
        model.log_power_integral(theta, 1.0), torch.zeros(4, 10, dtype=torch.float64)
    )
    loc = GaussianLocation(X1, 0.7)
    grid = np.linspace(-20, 20, 200_001)
    dens = np.exp(-0.5 * grid**2 / 0.7) / np.sqrt(2 * np.pi * 0.7)
    numeric = np.log(np.sum(dens**1.6) * (grid[1] - grid[0]))
    assert float(loc.log_power_integral(theta[:, :1], 1.6)[0, 0]) == pytest.approx(
        numeric, rel=1e-8
    )


def _imq_formula(x, sigma2, c, m_cav, v_cav):
    """The brief's update, written out independently."""
    w = np.sqrt(sigma2 / 2) * (1 + (x - m_cav) ** 2 / c**2) ** -0.5
    dw = -np.sqrt(sigma2 / 2) * (x - m_cav) / c**2 * (1 + (x - m_cav) ** 2 / c**2) ** -1.5
    prec = 1 / v_cav + 2 * np.sum(w**2) / sigma2**2
    v = 1 / prec
    m = v * (m_cav / v_cav + np.sum(2 * w**2 * (x - sigma2 * 2 * dw / w)) / sigma2**2)
    return m, v


def test_imq_conjugate_update_matches_formula_lbfgs_and_monte_carlo():
    model = GaussianLocation(X1, sigma2=1.0)
    cavity = NatGaussian.from_moments([0.5], [2.0])
    loss = IMQScoreMatching(1.0)
    exact = local_posterior(cavity, model, loss, KL())
    m, v = _imq_formula(X1, 1.0, 1.0, 0.5, 2.0)
    assert float(exact.mean[0]) == pytest.approx(m, rel=1e-12)
    assert float(exact.var[0]) == pytest.approx(v, rel=1e-12)
    lbfgs = local_posterior(cavity, model, loss, KL(), conjugate=False)
    assert float(lbfgs.mean[0]) == pytest.approx(m, abs=1e-7)
    assert float(lbfgs.var[0]) == pytest.approx(v, rel=1e-6)
    adam = LocalOptimizer(method="adam", steps=3000, lr=0.01, samples=256)
    mc = local_posterior(
        cavity,
        model,
        loss,
        KL(),
        conjugate=False,
        optimizer=adam,
        generator=torch.Generator().manual_seed(1),
    )
    assert float(mc.mean[0]) == pytest.approx(m, abs=0.02)
    assert float(mc.var[0]) == pytest.approx(v, rel=0.3)


def test_imq_with_a_huge_scale_is_bayes_and_downweights_outliers():
    model = GaussianLocation(X1, sigma2=1.0)
    cavity = NatGaussian.from_moments([0.0], [10.0])
    bayes = local_posterior(cavity, model, NLL(), KL())
    wide = local_posterior(cavity, model, IMQScoreMatching(1e6), KL())
    np.testing.assert_allclose(wide.mean, bayes.mean, rtol=1e-8)
    np.testing.assert_allclose(wide.var, bayes.var, rtol=1e-8)
    robust = local_posterior(cavity, model, IMQScoreMatching(1.0), KL())
    assert abs(robust.mean[0]) < 0.5 * abs(bayes.mean[0])
    with pytest.raises(ValueError, match="1-D GaussianLocation"):
        IMQScoreMatching(1.0, center=0.0).per_point(
            GaussianLocation(RNG.normal(size=(5, 2))), torch.zeros(1, 2)
        )


def test_mlp_classifier_matches_torch_modules():
    X, y = RNG.normal(size=(20, 4)), RNG.integers(0, 3, 20)
    model = MLPClassifier(X, y, 3, hidden=(5,))
    net = torch.nn.Sequential(
        torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3)
    ).double()
    theta = torch.cat(
        [net[0].weight.T.reshape(-1), net[0].bias, net[2].weight.T.reshape(-1), net[2].bias]
    ).detach()[None]
    assert theta.shape[1] == model.dim
    ref = -torch.nn.functional.cross_entropy(
        net(torch.as_tensor(X)), torch.as_tensor(y), reduction="none"
    )
    torch.testing.assert_close(model.log_lik(theta)[0], ref.detach())
    np.testing.assert_allclose(model.predict_proba(theta, X).sum(1), 1.0)
    with pytest.raises(ValueError, match="y must lie in"):
        MLPClassifier(X, np.full(20, 3), 3)
    with pytest.raises(ValueError, match="theta must have shape"):
        model.log_lik(torch.zeros(2, 7))
