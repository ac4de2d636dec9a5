"""Losses for generalised (robust) Bayesian updates, each ``per_point(model, theta) -> (S, N)``.

- :class:`NLL` -- ``-log p(y | x, theta)``: with the KL divergence, Bayes / VI (PVI).
- :class:`GeneralisedCrossEntropy` -- ``(1 - p^b) / b`` for ``b`` in (0, 1]; ``b -> 0``
  gives the NLL, ``b = 1`` the mean absolute error. Bounded, so one wrong label costs at
  most ``1/b``.
- :class:`DensityPowerLoss` -- the beta-divergence loss
  ``-p^(beta-1) / (beta-1) + int p^beta / beta`` (Basu et al. 1998), ``beta > 1``.
- :class:`GammaLoss` -- the gamma-divergence loss
  ``-gamma/(gamma-1) p^(gamma-1) / (int p^gamma)^((gamma-1)/gamma)`` (Fujisawa & Eguchi
  2008, as in Knoblauch et al. 2022), ``gamma > 1``.
- :class:`IMQScoreMatching` -- weighted score matching with the inverse multiquadric weight
  ``w(x) = sqrt(sigma2/2) (1 + (x - m)^2 / c^2)^(-1/2)`` centred at the cavity mean ``m``
  (Altamirano et al. 2024), for the 1-D Gaussian location model. Quadratic in ``theta``, so
  the update is conjugate; ``c -> inf`` gives back the exact Bayes update.

With the :class:`~icml25.fedgvi.models.GaussianLocation` model every loss also has a
closed-form expectation under a Gaussian ``q`` (``expected``), which the client optimises
exactly instead of by Monte Carlo.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import torch

from icml25.core import validate as V
from icml25.fedgvi.checks import as_tensor
from icml25.fedgvi.checks import model as check_model
from icml25.fedgvi.models import GaussianLocation

Tensor = torch.Tensor


def _number(name: str, value: Any, what: str, **bounds: Any) -> float:
    """A finite real number within ``bounds`` (strings, booleans, NaN and inf refused), with
    the loss's own wording: ``"beta must be > 1, got '1.5'"``."""
    try:
        return V.number(name, value, **bounds)
    except ValueError:
        raise ValueError(f"{name} {what} (a finite number), got {value!r}") from None


def _trace(var: Tensor) -> Tensor:
    return var.diagonal().sum() if var.ndim == 2 else var.sum()


def _expected_power(model: GaussianLocation, mu: Tensor, var: Tensor, c: float) -> Tensor:
    """``E_q[N(x_i; theta, sigma2 I)^c]`` for each point: a Gaussian integral."""
    s2, d = model.sigma2, model.dim
    cov = var if var.ndim == 2 else torch.diag(var)
    total = cov + (s2 / c) * torch.eye(d, dtype=torch.float64)
    diff = model.x - mu  # (N, d)
    L = torch.linalg.cholesky(total)
    maha = (torch.cholesky_solve(diff.T, L) * diff.T).sum(0)
    log_n = -0.5 * maha - torch.log(L.diagonal()).sum() - 0.5 * d * math.log(2 * math.pi)
    log_const = -0.5 * d * c * math.log(2 * math.pi * s2) + 0.5 * d * math.log(2 * math.pi * s2 / c)
    return torch.exp(log_n + log_const)


@dataclass(frozen=True)
class NLL:
    """``-log p(y | x, theta)``. Every loss here has this interface:

    - ``per_point(model, theta)``: ``theta`` ``(S, P)`` samples (or ``(P,)``) to the ``(S, N)``
      losses of the client's ``N`` points;
    - ``expected(model, mu, var)``: the summed loss's expectation under ``q = N(mu, var)``
      (``mu`` ``(P,)``, ``var`` ``(P,)`` or ``(P, P)``), a 0-d tensor, where a closed form
      exists (the :class:`GaussianLocation` model), else ``None`` (Monte Carlo is used);
    - ``bind(cavity_mean)``: the loss for one client update (only :class:`IMQScoreMatching`
      depends on the cavity; the others return themselves).
    """

    def per_point(self, model: Any, theta: Tensor) -> Tensor:
        """``(S, N)`` losses of the model's ``N`` points at the ``S`` samples ``theta``."""
        return -check_model(model).log_lik(theta)

    def expected(self, model: Any, mu: Tensor, var: Tensor) -> Tensor | None:
        """``E_q[sum_i loss_i]`` under ``q = N(mu, var)`` (closed form), or ``None``."""
        if not isinstance(model, GaussianLocation):
            return None
        s2, n, d = model.sigma2, model.n, model.dim
        sq = ((model.x - mu) ** 2).sum()
        return 0.5 * (sq + n * _trace(var)) / s2 + 0.5 * n * d * math.log(2 * math.pi * s2)

    def bind(self, cavity_mean: Any) -> NLL:
        """The loss for an update from this cavity (the NLL does not depend on it)."""
        return self


@dataclass(frozen=True)
class GeneralisedCrossEntropy:
    b: float = 0.5

    def __post_init__(self) -> None:
        b = _number("b", self.b, "must lie in (0, 1]", low=0.0, high=1.0, low_open=True)
        object.__setattr__(self, "b", b)

    def per_point(self, model: Any, theta: Tensor) -> Tensor:
        return -torch.expm1(self.b * check_model(model).log_lik(theta)) / self.b

    def expected(self, model: Any, mu: Tensor, var: Tensor) -> Tensor | None:
        return None

    def bind(self, cavity_mean: Any) -> GeneralisedCrossEntropy:
        return self


@dataclass(frozen=True)
class DensityPowerLoss:
    beta: float = 1.5

    def __post_init__(self) -> None:
        beta = _number("beta", self.beta, "must be > 1", low=1.0, low_open=True)
        object.__setattr__(self, "beta", beta)

    def per_point(self, model: Any, theta: Tensor) -> Tensor:
        check_model(model)
        b = self.beta
        first = -torch.exp((b - 1) * model.log_lik(theta)) / (b - 1)
        return first + torch.exp(model.log_power_integral(theta, b)) / b

    def expected(self, model: Any, mu: Tensor, var: Tensor) -> Tensor | None:
        if not isinstance(model, GaussianLocation):
            return None
        b = self.beta
        integral = float(model.log_power_integral(mu[None], b)[0, 0].exp())
        return (-_expected_power(model, mu, var, b - 1) / (b - 1)).sum() + model.n * integral / b

    def bind(self, cavity_mean: Any) -> DensityPowerLoss:
        return self


@dataclass(frozen=True)
class GammaLoss:
    gamma: float = 1.75

    def __post_init__(self) -> None:
        gamma = _number("gamma", self.gamma, "must be > 1", low=1.0, low_open=True)
        object.__setattr__(self, "gamma", gamma)

    def per_point(self, model: Any, theta: Tensor) -> Tensor:
        check_model(model)
        g = self.gamma
        log = (g - 1) * model.log_lik(theta) - (g - 1) / g * model.log_power_integral(theta, g)
        return -g / (g - 1) * torch.exp(log)

    def expected(self, model: Any, mu: Tensor, var: Tensor) -> Tensor | None:
        if not isinstance(model, GaussianLocation):
            return None
        g = self.gamma
        log_int = float(model.log_power_integral(mu[None], g)[0, 0])
        scale = math.exp(-(g - 1) / g * log_int)
        return -g / (g - 1) * scale * _expected_power(model, mu, var, g - 1).sum()

    def bind(self, cavity_mean: Any) -> GammaLoss:
        return self


@dataclass(frozen=True)
class IMQScoreMatching:
    """Weighted score matching, IMQ weight of scale ``c`` centred at ``center`` (set to the
    cavity mean by the client step through :meth:`bind`)."""

    c: float = 1.0
    center: float | None = None

    def __post_init__(self) -> None:
        c = _number("c", self.c, "must be a positive number", low=0.0, low_open=True)
        object.__setattr__(self, "c", c)
        if self.center is not None:
            object.__setattr__(self, "center", V.number("center", self.center))

    def bind(self, cavity_mean: Any) -> IMQScoreMatching:
        mean = as_tensor("cavity_mean", cavity_mean).reshape(-1)
        if mean.numel() != 1:
            raise ValueError("IMQ score matching is implemented for the 1-D location model")
        return replace(self, center=float(mean[0]))

    def _weights(self, model: Any) -> tuple[Tensor, Tensor]:
        """``w(x_i)^2`` and ``2 w'(x_i) / w(x_i)``."""
        if not isinstance(model, GaussianLocation) or model.dim != 1:
            raise ValueError("IMQ score matching needs a 1-D GaussianLocation model")
        if self.center is None:
            raise ValueError("IMQ score matching needs a center: call bind(cavity_mean)")
        u = model.x[:, 0] - self.center
        w2 = (model.sigma2 / 2) / (1 + u**2 / self.c**2)
        return w2, -2 * u / (self.c**2 + u**2)

    def coefficients(self, model: GaussianLocation) -> tuple[Tensor, Tensor]:
        """The loss is ``a theta^2 - 2 b theta + const`` summed over points: returns
        ``(a, b)``, so the conjugate update adds ``2a`` to the precision and ``2b`` to the shift."""
        w2, dlogw2 = self._weights(model)
        s2 = model.sigma2
        x = model.x[:, 0]
        return w2.sum() / s2**2, (w2 * (x - s2 * dlogw2)).sum() / s2**2

    def per_point(self, model: Any, theta: Tensor) -> Tensor:
        w2, dlogw2 = self._weights(model)
        s2 = model.sigma2
        x = model.x[:, 0]
        r = x[None] - theta[:, :1]  # (S, N)
        # |w s|^2 + 2 d/dx (w^2 s) with s = -(x - theta)/sigma2
        return w2 * r**2 / s2**2 - 2 * w2 * dlogw2 * r / s2 - 2 * w2 / s2

    def expected(self, model: Any, mu: Tensor, var: Tensor) -> Tensor | None:
        w2, dlogw2 = self._weights(model)
        s2 = model.sigma2
        r = model.x[:, 0] - mu[0]
        v = var.reshape(-1)[0]
        return (w2 * (r**2 + v) / s2**2 - 2 * w2 * dlogw2 * r / s2 - 2 * w2 / s2).sum()
