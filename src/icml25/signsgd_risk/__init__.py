"""Exact risk curves of signSGD in high dimensions (Xiao, Marshall, Agarwala & Paquette, ICML 2025).

Library: :class:`SignSGD` (a ``torch.optim.Optimizer``); the risk ODE of signSGD and of SGD for
one-pass linear regression (:func:`risk_ode`, :func:`stationary_risk`, :func:`phi`,
:func:`sign_noise_covariance`); a seeded, vectorised simulator of the actual iterations
(:func:`simulate`, :func:`sign_gradient_moments`); label-noise models (:class:`GaussianNoise`,
:class:`CauchyNoise`, :class:`StudentTNoise`, :class:`ScipyNoise`, :class:`CustomNoise`); and
the four effects as numbers (:mod:`icml25.signsgd_risk.effects`); and OUR RECONSTRUCTION of
a homogenized Adam ODE (:func:`adam_ode`, :func:`adam_coefficients`, :func:`simulate_adam`; not
the paper's conjecture, whose statement was not available). Reproduction:
``icml25 reproduce signsgd_risk``.
"""

from icml25.core.registry import register
from icml25.signsgd_risk import effects
from icml25.signsgd_risk.adam import (
    AdamCoefficients,
    AdamCurve,
    adam_coefficients,
    adam_ode,
    simulate_adam,
)
from icml25.signsgd_risk.noise import (
    CauchyNoise,
    CustomNoise,
    GaussianNoise,
    LabelNoise,
    ScipyNoise,
    StudentTNoise,
)
from icml25.signsgd_risk.ode import (
    RiskCurve,
    phi,
    preconditioned_drift,
    risk_ode,
    sign_noise_covariance,
    stationary_risk,
)
from icml25.signsgd_risk.optim import SignSGD
from icml25.signsgd_risk.simulate import Simulation, sign_gradient_moments, simulate

__all__ = [
    "AdamCoefficients",
    "AdamCurve",
    "CauchyNoise",
    "CustomNoise",
    "GaussianNoise",
    "LabelNoise",
    "RiskCurve",
    "ScipyNoise",
    "SignSGD",
    "Simulation",
    "StudentTNoise",
    "adam_coefficients",
    "adam_ode",
    "effects",
    "phi",
    "preconditioned_drift",
    "risk_ode",
    "sign_gradient_moments",
    "sign_noise_covariance",
    "simulate",
    "simulate_adam",
    "stationary_risk",
]

register(
    slug="signsgd_risk",
    title="Exact Risk Curves of signSGD in High-Dimensions: Quantifying Preconditioning and "
    "Noise-Compression Effects",
    authors="Ke Liang Xiao, Noah Marshall, Atish Agarwala, Elliot Paquette",
    venue="ICML 2025 (arXiv:2411.12135)",
    url="https://arxiv.org/abs/2411.12135",
    summary="A deterministic ODE gives signSGD's risk curve; it quantifies an effective "
    "learning rate, noise compression, diagonal preconditioning and noise reshaping.",
    quick_seconds=30,
    module="icml25.signsgd_risk.reproduce",
)
