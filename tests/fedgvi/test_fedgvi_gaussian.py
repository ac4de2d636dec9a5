import numpy as np
import pytest
import torch
from scipy import integrate, stats

from icml25.fedgvi.gaussian import NatGaussian, alpha_renyi, kl, reverse_kl, weighted_kl


def test_moments_round_trip_and_arithmetic():
    g = NatGaussian.from_moments([1.0, -2.0], [0.5, 4.0])
    np.testing.assert_allclose(g.mean, [1.0, -2.0])
    np.testing.assert_allclose(g.var, [0.5, 4.0])
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    f = NatGaussian.from_moments([0.5, 1.0], cov)
    np.testing.assert_allclose(f.var, cov)
    np.testing.assert_allclose(f.mean, [0.5, 1.0])
    h = NatGaussian.from_moments([0.0, 1.0], [1.0, 1.0])
    prod = g * h
    # product of Gaussians: precisions add, precision-weighted means
    np.testing.assert_allclose(prod.var, 1 / (1 / np.array([0.5, 4.0]) + 1))
    np.testing.assert_allclose((prod / h).mean, g.mean)
    np.testing.assert_allclose((g**2).J, 2 * g.J)


def test_bad_gaussians_are_refused():
    with pytest.raises(ValueError, match="var must be positive"):
        NatGaussian.from_moments([0.0], [-1.0])
    with pytest.raises(ValueError, match="J must have shape"):
        NatGaussian(np.zeros(2), np.zeros(3))
    with pytest.raises(ValueError, match="finite"):
        NatGaussian(np.array([np.nan]), np.ones(1))
    with pytest.raises(ValueError, match="positive definite"):
        NatGaussian.from_moments([0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]])
    flat = NatGaussian.flat(2)
    with pytest.raises(ValueError, match="not a normalisable"):
        _ = flat.mean
    with pytest.raises(ValueError, match="same dimension"):
        _ = flat * NatGaussian.flat(3)


def test_clip_precision_keeps_means_and_counts():
    g = NatGaussian(np.array([1.0, 2.0, 3.0]), np.array([-1.0, 1e-12, 2.0]))
    c, low = g.clip_precision(1e-6)
    assert low == 2
    np.testing.assert_allclose(c.J, [1e-6, 1e-6, 2.0])
    np.testing.assert_allclose(c.mean[1:], [2.0 / 1e-12, 1.5])  # means kept where defined
    assert c.mean[0] == 0.0
    full = NatGaussian(np.zeros(2), np.array([[1.0, 0.0], [0.0, -1.0]]))
    cf, low = full.clip_precision(1e-3)
    assert low == 1 and cf.is_proper()


@pytest.mark.parametrize("full", [False, True])
def test_kl_matches_torch(full):
    rng = np.random.default_rng(0)
    mq, mp = rng.normal(size=3), rng.normal(size=3)
    if full:
        A, B = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
        vq, vp = A @ A.T + np.eye(3), B @ B.T + np.eye(3)
        ref = torch.distributions.kl_divergence(
            torch.distributions.MultivariateNormal(torch.tensor(mq), torch.tensor(vq)),
            torch.distributions.MultivariateNormal(torch.tensor(mp), torch.tensor(vp)),
        )
    else:
        vq, vp = rng.uniform(0.2, 3, 3), rng.uniform(0.2, 3, 3)
        ref = torch.distributions.kl_divergence(
            torch.distributions.Normal(torch.tensor(mq), torch.tensor(vq).sqrt()),
            torch.distributions.Normal(torch.tensor(mp), torch.tensor(vp).sqrt()),
        ).sum()
    assert float(kl(mq, vq, mp, vp)) == pytest.approx(float(ref), rel=1e-10)
    assert float(reverse_kl(mq, vq, mp, vp)) == pytest.approx(float(kl(mp, vp, mq, vq)))
    assert float(weighted_kl(mq, vq, mp, vp, 4.0)) == pytest.approx(float(ref) / 4)


@pytest.mark.parametrize(
    ("mq", "vq", "mp", "vp", "alpha"),
    [(0.3, 0.5, -0.2, 1.3, 2.5), (1.0, 2.0, 0.0, 1.0, 0.5), (0.0, 0.2, 1.5, 0.4, 1.7)],
)
def test_alpha_renyi_matches_numerical_integration(mq, vq, mp, vp, alpha):
    """Knoblauch et al.'s scaling: 1/(alpha (alpha-1)) log int q^alpha p^(1-alpha)."""

    def integrand(t):
        lq = stats.norm.logpdf(t, mq, vq**0.5)
        lp = stats.norm.logpdf(t, mp, vp**0.5)
        return np.exp(alpha * lq + (1 - alpha) * lp)

    integral = integrate.quad(integrand, -40, 40, epsabs=1e-13, limit=400)[0]
    expected = np.log(integral) / (alpha * (alpha - 1))
    got = float(alpha_renyi([mq], [vq], [mp], [vp], alpha))
    assert got == pytest.approx(expected, rel=1e-7)


def test_alpha_renyi_docstrings_state_the_scaling_the_code_computes():
    from icml25.fedgvi import gaussian

    for doc in (gaussian.__doc__ or "", alpha_renyi.__doc__ or ""):
        assert "1/(alpha (alpha-1)) log int q^alpha p^(1-alpha)" in doc
        assert "1/(alpha-1) log" not in doc


def test_alpha_renyi_full_agrees_with_diagonal_and_tends_to_kl():
    mq, mp = np.array([0.2, -1.0]), np.array([0.0, 0.5])
    vq, vp = np.array([0.5, 0.8]), np.array([1.0, 2.0])
    diag = float(alpha_renyi(mq, vq, mp, vp, 2.5))
    full = float(alpha_renyi(mq, np.diag(vq), mp, np.diag(vp), 2.5))
    assert full == pytest.approx(diag, rel=1e-12)
    near_one = float(alpha_renyi(mq, vq, mp, vp, 1 + 1e-6))
    assert near_one == pytest.approx(float(kl(mq, vq, mp, vp)), rel=1e-5)


def test_alpha_renyi_outside_its_domain_is_inf_with_finite_gradient():
    vq = torch.tensor([3.0], dtype=torch.float64, requires_grad=True)
    # alpha = 2.5 needs vq < 2.5/1.5 * vp
    value = alpha_renyi(torch.zeros(1, dtype=torch.float64), vq, [0.0], [1.0], 2.5)
    assert torch.isinf(value)
    value.backward()
    assert torch.all(torch.isfinite(vq.grad))
    with pytest.raises(ValueError, match="alpha must be > 0 and not 1"):
        alpha_renyi([0.0], [1.0], [0.0], [1.0], 1.0)
