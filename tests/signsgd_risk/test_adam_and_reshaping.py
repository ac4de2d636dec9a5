"""The reconstructed Adam ODE (issue 35) and the noise-reshaping measures.

``adam_ode`` at ``beta1 = beta2 = 0`` must be the signSGD ODE (exactly by its closed form, and
within Monte Carlo error by its chains); the Monte Carlo coefficients must reach the ``beta2 -> 1``
closed form; ``simulate_adam`` must take torch's Adam steps. The uncentred noise measure is
checked against a hand computation at d = 2.
"""

import math

import numpy as np
import pytest
import torch

from icml25.signsgd_risk import (
    CauchyNoise,
    GaussianNoise,
    adam_coefficients,
    adam_ode,
    effects,
    phi,
    risk_ode,
    sign_gradient_moments,
    simulate_adam,
    stationary_risk,
)


def _problem(d, seed=3):
    K = np.linspace(0.3, 1.7, d)
    ths = np.random.default_rng([seed, 99]).standard_normal(d) / math.sqrt(d)
    return K, np.zeros(d), ths


@pytest.mark.parametrize("noise", [GaussianNoise(0.5), CauchyNoise(0.5)])
def test_adam_ode_at_beta2_zero_is_the_signsgd_ode(noise):
    K, th0, ths = _problem(200)
    kw = dict(noise=noise, lr=0.3, t_max=4.0, times=np.linspace(0, 4, 21))
    sign = risk_ode(K, th0, ths, **kw)
    closed = adam_ode(K, th0, ths, beta1=0.0, beta2=0.0, **kw)
    assert closed.coefficients.method == "closed form"
    np.testing.assert_allclose(closed.risk, sign.risk, rtol=1e-6)
    np.testing.assert_allclose(closed.effective_lr, sign.effective_lr, rtol=1e-6)
    mc = adam_ode(K, th0, ths, beta1=0.0, beta2=0.0, method="monte_carlo", n_chains=4000, **kw)
    assert mc.coefficients.method == "monte carlo"
    np.testing.assert_allclose(mc.risk, sign.risk, rtol=0.02)


def test_monte_carlo_coefficients_match_closed_forms():
    # beta1 = beta2 = 0: phi_A = phi, q = 1 (every update is +-1)
    c = adam_coefficients(0.4, beta1=0.0, beta2=0.0, noise=0.5, method="monte_carlo")
    assert c.phi[0] == pytest.approx(phi(0.4, 0.5), rel=0.02)
    assert c.noise[0] == pytest.approx(1.0, abs=1e-12)
    # exact Gaussian scaling: phi_A sqrt(2P + s^2) does not depend on P
    vals = [c.at(P)[0] * math.sqrt(2 * P + 0.25) for P in (0.01, 0.4, 10.0)]
    np.testing.assert_allclose(vals, vals[0], rtol=1e-12)
    # beta2 -> 1: v -> E g^2 = K_ii (2P + s^2), so phi_A -> 1 / sqrt(2P + s^2) and q -> 1
    near = adam_coefficients(0.4, beta1=0.0, beta2=0.995, noise=0.5, n_chains=1000)
    limit = adam_coefficients(0.4, beta1=0.0, beta2=1.0, noise=0.5)
    assert limit.phi[0] == pytest.approx(1 / math.sqrt(0.8 + 0.25))
    assert near.phi[0] == pytest.approx(limit.phi[0], rel=0.03)
    assert near.noise[0] == pytest.approx(1.0, rel=0.03)
    # heavy tails: the beta2 -> 1 limit has no drift at all
    assert adam_coefficients(0.4, beta1=0.0, beta2=1.0, noise=CauchyNoise(0.5)).phi[0] == 0.0
    cz = adam_coefficients([0.1, 0.4], beta1=0.0, beta2=0.0, noise=CauchyNoise(0.5), n_chains=8000,
                           method="monte_carlo")  # fmt: skip
    np.testing.assert_allclose(cz.phi, [phi(0.1, CauchyNoise(0.5)), phi(0.4, CauchyNoise(0.5))],
                               rtol=0.03)  # fmt: skip


def test_monte_carlo_coefficients_are_reproducible():
    a = adam_coefficients([0.1, 1.0], beta1=0.9, beta2=0.9, noise=CauchyNoise(0.3), n_chains=500)
    b = adam_coefficients([0.1, 1.0], beta1=0.9, beta2=0.9, noise=CauchyNoise(0.3), n_chains=500)
    np.testing.assert_array_equal(a.phi, b.phi)
    np.testing.assert_array_equal(a.noise, b.noise)


def test_simulate_adam_takes_torch_adam_steps():
    d, eta, n_steps = 20, 0.4, 60
    K, th0, ths = _problem(d, seed=6)
    noise = GaussianNoise(0.3)
    sim = simulate_adam(
        K, th0, ths, noise=noise, lr=eta, t_max=n_steps / d, beta1=0.9, beta2=0.99, eps=1e-8,
        seeds=[9], times=[0, n_steps / d], keep_iterates=True, chunk=1,
    )  # fmt: skip
    rng = np.random.default_rng(9)  # the simulator's draws with chunk=1: x then eps, per step
    theta = torch.zeros(d, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([theta], lr=eta / d, betas=(0.9, 0.99), eps=1e-8)
    for _ in range(n_steps):
        x = torch.from_numpy(rng.standard_normal((1, d))[0] * np.sqrt(K))
        y = x @ torch.from_numpy(ths) + float(noise.sample(rng, 1)[0])
        opt.zero_grad()
        (0.5 * (x @ theta - y) ** 2).backward()
        opt.step()
    np.testing.assert_allclose(theta.detach().numpy() - ths, sim.iterates[0, -1], atol=1e-12)


def test_simulated_adam_follows_the_ode_at_moderate_d():
    K, th0, ths = _problem(600)
    kw = dict(noise=0.5, lr=0.3, t_max=3.0, beta1=0.9, beta2=0.9, times=np.linspace(0, 3, 7))
    ode = adam_ode(K, th0, ths, n_chains=2000, **kw)
    sim = simulate_adam(K, th0, ths, seeds=[0, 1], **kw)
    assert np.max(np.abs(sim.risk.mean(axis=0) / ode.risk - 1)) < 0.1


def test_uncentred_noise_measure_by_hand_at_d2():
    rho, n = 0.5, 200_000
    K = np.array([[1.0, rho], [rho, 1.0]])
    r = np.array([0.3, -0.2])
    gaps = effects.reshaping_gaps(K, r, noise=0.5, n_samples=n, rng=4)
    # by hand: sign(.)^2 = 1, and E sign(x1) sign(x2) = (2/pi) arcsin(1/2) = 1/3
    np.testing.assert_array_equal(np.diag(gaps.second_moment), [1.0, 1.0])
    c = gaps.second_moment[0, 1]
    assert abs(c - 1 / 3) < 5 * math.sqrt((1 - 1 / 9) / n)
    # ||S - K_sigma||_F / ||K_sigma||_F with ||K_sigma||_F = sqrt(2 + 2/9)
    assert gaps.uncentred == pytest.approx(math.sqrt(2) * abs(c - 1 / 3) / math.sqrt(20 / 9))
    # floor: sqrt(sum(1 - K_sigma^2) / n) / ||K_sigma||_F = sqrt((16/9) / n) / sqrt(20/9)
    assert gaps.floor == pytest.approx(math.sqrt(0.8 / n))
    # centred: the covariance is K_sigma - mu mu^T with mu = phi(P) D^{-1/2} K r
    P = 0.5 * r @ K @ r
    mu = phi(P, 0.5) * (K @ r)
    expect = np.array([[1.0, 1 / 3], [1 / 3, 1.0]]) - np.outer(mu, mu)
    assert np.abs(gaps.covariance - expect).max() < 0.01
    assert gaps.naive > gaps.centred


def test_uncentred_gap_sits_at_the_monte_carlo_floor():
    K = np.array([[1.0, 0.6, 0.2], [0.6, 1.5, -0.3], [0.2, -0.3, 0.8]])
    n = 5000
    errs = [
        effects.reshaping_gaps(K, np.array([0.4, 0.1, -0.2]), noise=0.3, n_samples=n, rng=s)
        for s in range(40)
    ]
    rms = math.sqrt(np.mean([e.uncentred**2 for e in errs]))
    assert rms == pytest.approx(errs[0].floor, rel=0.25)


def test_new_functions_reject_bad_arguments():
    K, th0, ths = _problem(5)
    with pytest.raises(ValueError, match="beta1"):
        adam_ode(K, th0, ths, beta1=1.0, t_max=1.0)
    with pytest.raises(ValueError, match="beta2"):
        adam_ode(K, th0, ths, beta2=1.5, t_max=1.0)
    with pytest.raises(ValueError, match="beta2"):
        simulate_adam(K, th0, ths, beta2=1.0, t_max=1.0)
    with pytest.raises(ValueError, match="no homogenized ODE"):
        adam_ode(K, th0, ths, beta1=0.9, beta2=0.0, t_max=1.0)
    with pytest.raises(ValueError, match="diagonal K only"):
        adam_ode(np.eye(5) + 0.1, th0, ths, t_max=1.0)
    with pytest.raises(ValueError, match="n_chains"):
        adam_coefficients(0.5, beta1=0.5, beta2=0.5, n_chains=0)
    with pytest.raises(ValueError, match="method"):
        adam_coefficients(0.5, beta1=0.5, beta2=0.5, method="exact")
    with pytest.raises(ValueError, match="closed form"):
        adam_coefficients(0.5, beta1=0.5, beta2=1.0, method="monte_carlo")
    with pytest.raises(ValueError, match="risk must be positive"):
        adam_coefficients([0.5, 0.1], beta1=0.5, beta2=0.5)
    with pytest.raises(ValueError, match="eps"):
        simulate_adam(K, th0, ths, eps=-1.0, t_max=1.0)
    with pytest.raises(ValueError, match="chunk"):
        simulate_adam(K, th0, ths, chunk=0, t_max=1.0)
    with pytest.raises(ValueError, match="n_samples"):
        effects.reshaping_floor(np.eye(2), 0)
    with pytest.raises(ValueError, match="K_sigma"):
        effects.reshaping_floor(np.ones(3), 10)
    # these two never returned before (an endless bracket search, a loop without progress)
    with pytest.raises(ValueError, match="d must be a positive integer"):
        stationary_risk(K, d=-8)
    with pytest.raises(ValueError, match="chunk"):
        sign_gradient_moments(K, ths, chunk=0)
