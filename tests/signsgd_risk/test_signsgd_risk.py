"""signSGD risk ODE, simulator, noise models, effects and optimizer.

The ODE is checked against closed forms (isotropic K), the simulator against the ODE at moderate
d, the noise models against scipy quadrature, the optimizer against hand-computed steps and
against the NumPy simulator on the same samples.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from icml25.signsgd_risk import (
    CauchyNoise,
    CustomNoise,
    GaussianNoise,
    ScipyNoise,
    SignSGD,
    StudentTNoise,
    effects,
    phi,
    risk_ode,
    sign_gradient_moments,
    sign_noise_covariance,
    simulate,
    stationary_risk,
)


def _isotropic_noiseless_time(P, P0, lam, eta):
    """Closed-form time to reach risk P for K = lam I, no noise: dP/dt = b - a sqrt(P)."""
    a = 2 * math.sqrt(2) * eta * math.sqrt(lam) / math.pi
    b = lam * eta**2 / 2
    u, u0 = math.sqrt(P), math.sqrt(P0)
    return -(2 / a) * (u - u0) - (2 * b / a**2) * math.log((b - a * u) / (b - a * u0))


def test_ode_isotropic_noiseless_matches_closed_form():
    d, lam, eta = 50, 1.5, 0.4
    rng = np.random.default_rng(0)
    ths = rng.standard_normal(d)
    curve = risk_ode(np.full(d, lam), np.zeros(d), ths, noise=0.0, lr=eta, t_max=20.0)
    P0 = curve.risk[0]
    assert P0 == pytest.approx(0.5 * lam * ths @ ths)
    for t, P in zip(curve.t[1::20], curve.risk[1::20], strict=True):
        assert _isotropic_noiseless_time(P, P0, lam, eta) == pytest.approx(t, rel=1e-4, abs=1e-6)


def test_sgd_ode_isotropic_matches_closed_form():
    d, lam, eta, s = 40, 0.8, 0.5, 0.3
    ths = np.random.default_rng([1, 99]).standard_normal(d) / math.sqrt(d)
    curve = risk_ode(np.full(d, lam), np.zeros(d), ths, noise=s, lr=eta, t_max=5.0, optimizer="sgd")
    c = 2 * eta * lam - eta**2 * lam**2
    P_inf = 0.5 * eta**2 * lam**2 * s**2 / c
    P0 = curve.risk[0]
    assert P0 == pytest.approx(0.5 * lam * ths @ ths)
    expected = P_inf + (P0 - P_inf) * np.exp(-c * curve.t)
    np.testing.assert_allclose(curve.risk, expected, rtol=1e-5)
    assert stationary_risk(np.full(d, lam), noise=s, lr=eta, optimizer="sgd") == pytest.approx(
        P_inf, rel=1e-12
    )


def _toeplitz(d, rho=0.5):
    idx = np.arange(d)
    s = np.sqrt(np.linspace(0.5, 1.5, d))
    return s[:, None] * rho ** np.abs(idx[:, None] - idx[None, :]) * s[None, :]


@pytest.mark.parametrize("optimizer", ["signsgd", "sgd"])
def test_spectral_reduction_equals_the_matrix_ode(optimizer):
    d = 30
    K = _toeplitz(d)
    ths = np.random.default_rng([2, 99]).standard_normal(d) / math.sqrt(d)
    kw = dict(noise=GaussianNoise(0.5), lr=0.3, t_max=4.0, optimizer=optimizer, rtol=1e-9)
    matrix = risk_ode(K, np.zeros(d), ths, method="matrix", **kw)
    spectral = risk_ode(K, np.zeros(d), ths, method="spectral", **kw)
    np.testing.assert_allclose(spectral.risk, matrix.risk, rtol=1e-6)
    # a diagonal matrix takes the same path as its diagonal
    lam = np.linspace(0.5, 2.0, d)
    a = risk_ode(np.diag(lam), np.zeros(d), ths, method="matrix", **kw).risk
    np.testing.assert_allclose(a, risk_ode(lam, np.zeros(d), ths, **kw).risk, rtol=1e-12)


def test_signsgd_fixed_point_ignores_correlations_as_lyapunov_says():
    # Independent route: the stationary V solves M X + X M^T = K_sigma (V = lr X / (d phi)).
    from scipy import linalg

    from icml25.signsgd_risk import preconditioned_drift

    d, eta = 25, 0.3
    K = _toeplitz(d, 0.7)
    X = linalg.solve_continuous_lyapunov(preconditioned_drift(K), sign_noise_covariance(K))
    target = eta * np.trace(K @ X) / (2 * d)  # = P phi(P)
    P = stationary_risk(K, noise=0.5, lr=eta)
    assert P * phi(P, 0.5) == pytest.approx(target, rel=1e-8)
    assert P == pytest.approx(stationary_risk(np.diag(K), noise=0.5, lr=eta), rel=1e-12)


@pytest.mark.parametrize("noise", [GaussianNoise(0.5), CauchyNoise(0.5)])
def test_stationary_risk_is_the_ode_limit(noise):
    d = 40
    K = _toeplitz(d)
    ths = np.random.default_rng([3, 99]).standard_normal(d) / math.sqrt(d)
    for cov in (K, np.diag(K)):
        curve = risk_ode(cov, np.zeros(d), ths, noise=noise, lr=0.3, t_max=200.0, times=[200.0])
        expected = stationary_risk(cov, noise=noise, lr=0.3)
        assert curve.risk[-1] == pytest.approx(expected, rel=1e-3)


def test_simulation_matches_ode_at_moderate_d():
    d = 400
    K = np.linspace(0.2, 2.0, d)
    ths = np.random.default_rng([4, 99]).standard_normal(d) / math.sqrt(d)
    times = np.linspace(0, 4, 21)
    kw = dict(noise=GaussianNoise(0.5), lr=0.3, t_max=4.0, times=times)
    for opt in ("signsgd", "sgd"):
        ode = risk_ode(K, np.zeros(d), ths, optimizer=opt, **kw)
        sim = simulate(K, np.zeros(d), ths, seeds=range(8), optimizer=opt, **kw)
        rel = sim.risk[:, 1:] / ode.risk[1:] - 1
        # unbiased within 4 standard errors of the seed mean at every time, and close overall
        z = np.abs(rel.mean(axis=0)) / (rel.std(axis=0, ddof=1) / np.sqrt(len(rel)))
        assert z.max() < 4, (opt, z.max())
        assert np.abs(rel.mean(axis=0)).max() < 0.1, opt


def test_simulation_correlated_matches_matrix_ode_not_diagonal_one():
    d = 200
    idx = np.arange(d)
    K = 0.6 ** np.abs(idx[:, None] - idx[None, :])
    ths = np.random.default_rng([5, 99]).standard_normal(d) / math.sqrt(d)
    times = np.linspace(0, 3, 16)
    kw = dict(noise=0.5, lr=0.3, t_max=3.0, times=times)
    sim = simulate(K, np.zeros(d), ths, seeds=range(6), **kw).risk.mean(axis=0)
    matrix = risk_ode(K, np.zeros(d), ths, **kw).risk
    diagonal = risk_ode(np.diag(K), np.zeros(d), ths, **kw).risk
    assert np.max(np.abs(sim / matrix - 1)) < 0.1
    assert np.max(np.abs(sim / diagonal - 1)) > 0.2


def test_simulate_seed_paths_do_not_depend_on_batching():
    d = 30
    K = np.linspace(0.5, 1.0, d)
    kw = dict(noise=CauchyNoise(0.2), lr=0.5, t_max=2.0, keep_iterates=True)
    both = simulate(K, np.zeros(d), np.ones(d) / 5, seeds=[0, 1], **kw)
    one = simulate(K, np.zeros(d), np.ones(d) / 5, seeds=[1], **kw)
    # same draws; only the summation order of the batched dot product differs
    np.testing.assert_allclose(both.risk[1], one.risk[0], rtol=1e-12)
    np.testing.assert_allclose(both.iterates[1], one.iterates[0], rtol=1e-12, atol=1e-15)


def test_torch_signsgd_reproduces_the_simulator_path():
    d, eta, n_steps = 20, 0.4, 60
    K = np.linspace(0.5, 2.0, d)
    ths = np.random.default_rng([6, 99]).standard_normal(d) / math.sqrt(d)
    noise = GaussianNoise(0.3)
    sim = simulate(
        K, np.zeros(d), ths, noise=noise, lr=eta, t_max=n_steps / d, seeds=[9],
        times=[0, n_steps / d], keep_iterates=True, chunk=1,
    )  # fmt: skip
    rng = np.random.default_rng(9)  # the simulator's draws with chunk=1: x then eps, per step
    theta = torch.zeros(d, dtype=torch.float64, requires_grad=True)
    opt = SignSGD([theta], lr=eta / d)
    for _ in range(n_steps):
        x = torch.from_numpy(rng.standard_normal((1, d))[0] * np.sqrt(K))
        y = x @ torch.from_numpy(ths) + float(noise.sample(rng, 1)[0])
        opt.zero_grad()
        (0.5 * (x @ theta - y) ** 2).backward()
        opt.step()
    np.testing.assert_allclose(theta.detach().numpy() - ths, sim.iterates[0, -1], atol=1e-12)


@pytest.mark.parametrize(
    ("noise", "reference"),
    [
        (GaussianNoise(0.7), stats.norm(scale=0.7)),
        (CauchyNoise(0.4), stats.cauchy(scale=0.4)),
    ],
)
@pytest.mark.parametrize("a", [0.0, 0.01, 1.0, 50.0, 1e4])
def test_closed_form_compression_matches_quadrature(noise, reference, a):
    assert noise.exp_moment(a) == pytest.approx(ScipyNoise(reference).exp_moment(a), rel=1e-6)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.5, 30.0), st.floats(0.1, 3.0), st.floats(1e-3, 1e3), st.floats(1.01, 4.0))
def test_student_t_compression_is_a_decreasing_expectation(df, scale, a, factor):
    noise = StudentTNoise(df, scale)
    e1, e2 = noise.exp_moment(a), noise.exp_moment(a * factor)
    assert 0 < e2 < e1 < 1


def test_student_t_approaches_gaussian_and_phi_limits():
    assert StudentTNoise(1e6, 0.5).exp_moment(2.0) == pytest.approx(
        GaussianNoise(0.5).exp_moment(2.0), rel=1e-5
    )
    assert phi(0.5, GaussianNoise(0.3)) == pytest.approx((2 / math.pi) / math.sqrt(1 + 0.09))
    # small-risk limit: 2 sqrt(2/pi) p(0); for Gaussian that is (2/pi)/s
    assert phi(0.0, GaussianNoise(0.3)) == pytest.approx((2 / math.pi) / 0.3)
    assert phi(1e-10, CauchyNoise(0.5)) == pytest.approx(phi(0.0, CauchyNoise(0.5)), rel=1e-4)
    custom = CustomNoise(lambda a: GaussianNoise(0.3).exp_moment(a))
    assert phi(0.2, custom) == pytest.approx(phi(0.2, 0.3))


def test_sign_covariance_is_sheppards_arcsine_law():
    K = np.array([[1.0, 0.6, -0.3], [0.6, 2.0, 0.2], [-0.3, 0.2, 0.5]])
    x = np.random.default_rng(0).multivariate_normal(np.zeros(3), K, size=400_000)
    s = np.sign(x)
    np.testing.assert_allclose(s.T @ s / len(s), sign_noise_covariance(K), atol=5e-3)
    np.testing.assert_array_equal(sign_noise_covariance(np.array([1.0, 3.0])), np.eye(2))


def test_measured_mean_sign_gradient_gives_phi():
    d = 200
    K = np.linspace(0.5, 1.5, d)
    r = np.random.default_rng([1, 99]).standard_normal(d) / math.sqrt(d)
    P = 0.5 * float(K @ r**2)
    for noise in (GaussianNoise(0.5), CauchyNoise(0.5)):
        g, _ = sign_gradient_moments(K, r, noise=noise, n_samples=100_000, rng=2)
        assert effects.measured_phi(K, r, g) == pytest.approx(phi(P, noise), rel=0.05)


def test_effects_numbers():
    lam = np.logspace(-1, 1, 9)
    assert effects.decay_exponent(lam, 3 * lam**0.5) == pytest.approx(0.5)
    r0 = np.ones(90)
    lam90 = np.repeat(lam, 10)
    b_lam, rates = effects.binned_decay_rates(lam90, r0, np.exp(-0.2 * lam90), 2.0, n_bins=9)
    np.testing.assert_allclose(b_lam, lam)
    np.testing.assert_allclose(rates, 0.1 * lam)
    eff = effects.effective_learning_rate([0.5, 0.1], 0.5, lr=0.3)
    assert eff[1] > eff[0]
    assert effects.noise_compression([1.0], CauchyNoise(1.0))[0] == pytest.approx(
        float(__import__("scipy").special.erfcx(0.5))
    )
    assert effects.small_risk_effective_lr(CauchyNoise(0.5)) == pytest.approx(
        2 * math.sqrt(2 / math.pi) / (math.pi * 0.5)
    )
    np.testing.assert_allclose(effects.drift_matrix(np.array([4.0, 9.0])), [2.0, 3.0])
    cov = effects.gradient_noise_covariance(np.array([1.0, 2.0]), "sgd", risk=0.5, noise=1.0)
    np.testing.assert_allclose(cov, np.diag([2.0, 4.0]))


# --- optimizer -------------------------------------------------------------------------------


def test_signsgd_step_by_hand():
    p = torch.nn.Parameter(torch.tensor([1.0, -2.0, 0.5, 3.0]))
    p.grad = torch.tensor([0.3, -5.0, 0.0, -1e-8])
    SignSGD([p], lr=0.1).step()
    torch.testing.assert_close(p.detach(), torch.tensor([0.9, -1.9, 0.5, 3.1]))


def test_signsgd_momentum_and_weight_decay_by_hand():
    p = torch.nn.Parameter(torch.tensor([1.0, 1.0]))
    opt = SignSGD([p], lr=0.1, momentum=0.5, weight_decay=2.0)
    p.grad = torch.tensor([-1.0, -3.0])  # + wd * p = [1, -1] -> buffer [1, -1]
    opt.step()
    torch.testing.assert_close(p.detach(), torch.tensor([0.9, 1.1]))
    p.grad = torch.tensor([-4.0, 0.0])  # + wd p = [-2.2, 2.2]; buffer 0.5*[1,-1] + 0.5*g
    opt.step()  # buffer [-0.6, 0.6]
    torch.testing.assert_close(p.detach(), torch.tensor([1.0, 1.0]))
    q = torch.nn.Parameter(torch.tensor([2.0]))
    q.grad = torch.tensor([-1.0])
    SignSGD([q], lr=0.1, weight_decay=0.5, decoupled_weight_decay=True).step()
    torch.testing.assert_close(q.detach(), torch.tensor([2.0 * (1 - 0.05) + 0.1]))
    m = torch.nn.Parameter(torch.tensor([0.0]))
    m.grad = torch.tensor([1.0])
    SignSGD([m], lr=0.1, maximize=True).step()
    torch.testing.assert_close(m.detach(), torch.tensor([0.1]))


def test_signsgd_momentum_buffer_starts_at_the_first_gradient():
    """The documented convention (torch.optim.SGD's, not MXNet Signum's zero start): with
    beta = 0.5, g1 = 1, g2 = -0.6 the buffer is 0.5 - 0.3 = 0.2 > 0; a zero start would give
    0.25 - 0.3 < 0."""
    assert "m_1 = g_1" in (SignSGD.__doc__ or "")
    p = torch.nn.Parameter(torch.tensor([0.0]))
    opt = SignSGD([p], lr=0.1, momentum=0.5)
    for g in (1.0, -0.6):
        p.grad = torch.tensor([g])
        opt.step()
    torch.testing.assert_close(opt.state[p]["momentum_buffer"], torch.tensor([0.2]))
    torch.testing.assert_close(p.detach(), torch.tensor([-0.2]))


def test_signsgd_trains_a_model():
    torch.manual_seed(0)
    X = torch.randn(256, 5)
    y = X @ torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0]) + 0.1
    model = torch.nn.Linear(5, 1)
    opt = SignSGD(model.parameters(), lr=0.01, momentum=0.9)
    first = None
    for _ in range(300):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(X).squeeze(-1), y)
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 0.01 * first


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"lr": -0.1}, "learning rate"),
        ({"lr": 0.1, "momentum": 1.0}, "momentum"),
        ({"lr": 0.1, "weight_decay": -1.0}, "weight_decay"),
    ],
)
def test_signsgd_rejects_bad_hyperparameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SignSGD([torch.nn.Parameter(torch.zeros(2))], **kwargs)


# --- bad input -------------------------------------------------------------------------------


def test_bad_inputs_get_clear_errors():
    d = 3
    z = np.zeros(d)
    with pytest.raises(ValueError, match="positive semi-definite"):
        risk_ode(np.array([[1.0, 2.0, 0], [2.0, 1.0, 0], [0, 0, 1.0]]), z, z, t_max=1.0)
    with pytest.raises(ValueError, match="symmetric"):
        risk_ode(np.array([[1.0, 0.5, 0], [0.0, 1.0, 0], [0, 0, 1.0]]), z, z, t_max=1.0)
    with pytest.raises(ValueError, match="positive diagonal"):
        simulate(np.diag([1.0, 0.0, 1.0]) + 0.0, z, z, t_max=1.0)
    with pytest.raises(ValueError, match=r"theta0 must have shape \(3,\)"):
        risk_ode(np.ones(d), np.zeros(4), z, t_max=1.0)
    with pytest.raises(ValueError, match="lr must be a finite number > 0"):
        simulate(np.ones(d), z, z, lr=-0.1, t_max=1.0)
    with pytest.raises(ValueError, match="lr\\(t\\) must return a finite number"):
        risk_ode(np.ones(d), z, np.ones(d), lr=lambda t: 0.1 - t, t_max=1.0)
    with pytest.raises(ValueError, match="finite variance"):
        risk_ode(np.ones(d), z, z, noise=CauchyNoise(1.0), optimizer="sgd", t_max=1.0)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        risk_ode(np.ones(d), z, z, optimizer="adam", t_max=1.0)
    with pytest.raises(TypeError, match="noise must be"):
        risk_ode(np.ones(d), z, z, noise="gaussian", t_max=1.0)
    with pytest.raises(ValueError, match="gamma must be a finite number > 0"):
        CauchyNoise(-1.0)
    with pytest.raises(ValueError, match="times must lie"):
        simulate(np.ones(d), z, z, t_max=1.0, times=[0.0, 2.0])


def test_learning_rate_schedule_is_used():
    d = 20
    K = np.ones(d)
    ths = np.ones(d) / math.sqrt(d)
    const = risk_ode(K, np.zeros(d), ths, lr=0.2, t_max=2.0, times=[2.0]).risk[-1]
    sched = risk_ode(K, np.zeros(d), ths, lr=lambda t: 0.2, t_max=2.0, times=[2.0]).risk[-1]
    decay = risk_ode(K, np.zeros(d), ths, lr=lambda t: 0.2 / (1 + t), t_max=2.0, times=[2.0])
    assert sched == pytest.approx(const)
    assert decay.risk[-1] > const  # smaller steps, slower descent from this start
    sol = optimize.brentq(lambda P: P - 0.1, 0, 1)  # keeps scipy.optimize import honest
    assert sol == pytest.approx(0.1)


def test_a_curve_prints_in_one_line_and_a_horizon_is_never_assumed():
    """Issue 56 item 10: printing a RiskCurve or a Simulation shows a summary, not every array;
    without t_max or times there is no horizon (1.0 was used silently); times alone set it."""
    d = 50
    K, th0, ths = np.ones(d), np.zeros(d), np.ones(d) / np.sqrt(d)
    curve = risk_ode(K, th0, ths, t_max=2.0)
    text = repr(curve)
    assert "\n" not in text and "201 points, t 0..2" in text and "signsgd" in text
    sim = simulate(K, th0, ths, t_max=0.5, seeds=[0, 1])
    assert "\n" not in repr(sim) and "seeds=(0, 1)" in repr(sim)
    with pytest.raises(ValueError, match="give t_max"):
        risk_ode(K, th0, ths)
    with pytest.raises(ValueError, match="give t_max"):
        simulate(K, th0, ths)
    assert risk_ode(K, th0, ths, times=[0.0, 0.7]).t[-1] == pytest.approx(0.7)
    with pytest.raises(TypeError, match=r"e\.g\. range\(3\)"):
        simulate(K, th0, ths, t_max=0.5, seeds=3)
