"""The reproduction's null arms are what they say: the frozen-phi ODE solves its linear equation
and starts like the real ODE; SGD's measured effective-lr coefficient is 1 in expectation."""

from __future__ import annotations

import numpy as np
from scipy import integrate

from icml25.signsgd_risk import CauchyNoise, GaussianNoise, phi, risk_ode
from icml25.signsgd_risk.experiments import _sgd_coefficient, frozen_phi_risk


def test_frozen_phi_risk_solves_the_linear_ode() -> None:
    rng = np.random.default_rng(0)
    d, lr = 30, 0.3
    K, r0 = np.linspace(0.2, 2.0, d), rng.standard_normal(d) / np.sqrt(d)
    noise = CauchyNoise(0.5)
    phi0 = phi(0.5 * float(K @ r0**2), noise)
    t = np.linspace(0.0, 5.0, 11)
    sol = integrate.solve_ivp(
        lambda _t, v: -2 * lr * phi0 * np.sqrt(K) * v + lr**2 / d,
        (0.0, 5.0), r0**2, t_eval=t, rtol=1e-10, atol=1e-14,
    )  # fmt: skip
    np.testing.assert_allclose(frozen_phi_risk(K, r0, noise, lr, t), 0.5 * K @ sol.y, rtol=1e-7)


def test_frozen_phi_risk_starts_like_the_ode_and_then_departs() -> None:
    d, lr = 200, 0.3
    K = np.linspace(0.2, 2.0, d)
    star = np.random.default_rng(1).standard_normal(d) / np.sqrt(d)
    noise = GaussianNoise(0.5)
    t = np.array([0.0, 1e-3, 6.0])
    ode = risk_ode(K, np.zeros(d), star, noise=noise, lr=lr, t_max=6.0, times=t).risk
    frozen = frozen_phi_risk(K, -star, noise, lr, t)
    assert abs(frozen[0] / ode[0] - 1) < 1e-12
    assert abs(frozen[1] / ode[1] - 1) < 1e-5  # same slope at t = 0 (phi(P(0)) is the same)
    assert frozen[2] / ode[2] - 1 > 0.2  # phi grows as P falls; the frozen arm lags far behind


def test_sgd_coefficient_is_one_in_expectation() -> None:
    rng = np.random.default_rng(2)
    d = 20
    K = np.linspace(0.2, 2.0, d)
    r = rng.standard_normal(d)
    vals = [_sgd_coefficient(K, r, GaussianNoise(0.5), 4000, rng) for _ in range(20)]
    assert abs(np.mean(vals) - 1) < 4 * np.std(vals) / np.sqrt(len(vals))
