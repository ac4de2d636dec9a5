"""The four effects of signSGD, each as numbers one can compute, plot or compare.

1. *Effective learning rate* ``lr phi(P)``: grows as the risk P falls.
2. *Noise compression* ``E[exp(-eps^2/(4P))]``: the only way the label noise enters; finite for
   any noise (Cauchy included), tending to ``p_eps(0) sqrt(4 pi P)`` at small risk.
3. *Diagonal preconditioning*: drift ``D^{-1/2} K`` instead of ``K``; for diagonal K, coordinate
   ``i`` decays at a rate proportional to ``lambda_i^{1/2}`` instead of ``lambda_i``
   (:func:`decay_exponent` measures that exponent from rates).
4. *Gradient-noise reshaping*: noise covariance ``K_sigma`` (arcsine law), independent of risk
   and label noise, instead of SGD's ``(2P + E eps^2) K``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from icml25.core import validate as V
from icml25.core.validate import integer
from icml25.signsgd_risk.noise import LabelNoise, as_noise
from icml25.signsgd_risk.ode import (
    Optimizer,
    check_covariance,
    check_optimizer,
    phi,
    preconditioned_drift,
    sign_noise_covariance,
)
from icml25.signsgd_risk.simulate import sign_gradient_moments


def _risks(risk: object) -> np.ndarray:
    arr = np.atleast_1d(V.real_array("risk", risk, finite=False))
    if not np.all(arr >= 0):
        raise ValueError("risk must be >= 0 everywhere")
    return arr


def _vector(name: str, value: object, d: int) -> np.ndarray:
    """A finite vector with one entry per coordinate of K."""
    arr = V.real_array(name, value, finite=False)
    if arr.shape != (d,):
        raise ValueError(f"{name} must have shape ({d},) to match K, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} has non-finite entries")
    return arr


def effective_learning_rate(
    risk: object, noise: LabelNoise | float | None = None, lr: float = 1.0
) -> np.ndarray:
    """``lr phi(P)`` at each risk value: the learning rate signSGD effectively runs at."""
    noise = as_noise(noise)
    lr = V.positive("lr", lr)
    return np.array([lr * phi(P, noise) for P in _risks(risk)])


def noise_compression(risk: object, noise: LabelNoise | float | None = None) -> np.ndarray:
    """``E[exp(-eps^2/(4P))]`` at each risk: the factor the noise multiplies phi by (<= 1)."""
    noise = as_noise(noise)
    return np.array([noise.exp_moment(1.0 / (4.0 * P)) if P > 0 else 0.0 for P in _risks(risk)])


def small_risk_effective_lr(noise: LabelNoise | float | None = None, lr: float = 1.0) -> float:
    """The limit ``lr phi(0) = 2 sqrt(2/pi) lr p_eps(0)``: at small risk signSGD is SGD-like with
    a learning rate set by the noise density at zero only."""
    lr = V.positive("lr", lr)
    return lr * 2.0 * math.sqrt(2.0 / math.pi) * as_noise(noise).density_at_zero()


def drift_matrix(K: object, optimizer: Optimizer = "signsgd") -> np.ndarray:
    """``D^{-1/2} K`` (signSGD) or ``K`` (SGD); a vector for diagonal K."""
    arr, _ = check_covariance(K)
    if check_optimizer(optimizer) == "sgd":
        return arr.copy()
    return preconditioned_drift(arr)


def gradient_noise_covariance(
    K: object,
    optimizer: Optimizer = "signsgd",
    *,
    risk: float = 0.0,
    noise: LabelNoise | float | None = None,
) -> np.ndarray:
    """Gradient-noise covariance per step, times ``d / lr^2``.

    signSGD: ``K_sigma``; SGD: ``(2P + E eps^2) K``.
    """
    arr, diag = check_covariance(K)
    if check_optimizer(optimizer) == "signsgd":
        return sign_noise_covariance(arr)
    dense = np.diag(arr) if diag else arr
    P = V.number("risk", risk, low=0.0)
    return (2.0 * P + as_noise(noise).second_moment()) * dense


def decay_exponent(eigenvalues: object, rates: object) -> float:
    """Least-squares slope of ``log rate`` on ``log eigenvalue``: 1/2 for signSGD, 1 for SGD."""
    lam = V.real_array("eigenvalues", eigenvalues, finite=False)
    rate = V.real_array("rates", rates, finite=False)
    if lam.shape != rate.shape or lam.ndim != 1 or lam.size < 2:
        raise ValueError(
            "eigenvalues and rates must be 1-D of the same length >= 2, got "
            f"{lam.shape}, {rate.shape}"
        )
    if np.any(lam <= 0) or np.any(rate <= 0) or np.ptp(lam) == 0:
        raise ValueError("eigenvalues and rates must be > 0 and the eigenvalues not all equal")
    return float(np.polyfit(np.log(lam), np.log(rate), 1)[0])


def binned_decay_rates(
    eigenvalues: object, r0: object, r_t: object, t: float, n_bins: int = 8
) -> tuple[np.ndarray, np.ndarray]:
    """Per-coordinate decay rates of a diagonal-K run, pooled in eigenvalue bins.

    For the coordinates of each bin (sorted by eigenvalue), ``m = <r_t, r_0> / <r_0, r_0>`` is the
    projection of the error on its start; its mean decays as ``exp(-rate t)`` whatever the
    (mean-zero) gradient noise does, so ``rate = -log(m) / t``. Returns ``(bin mean eigenvalue,
    rate)``; bins whose projection is not positive (or whose ``r0`` is zero) are dropped.
    """
    lam = V.real_array("eigenvalues", eigenvalues, finite=False)
    a, b = V.real_array("r0", r0, finite=False), V.real_array("r_t", r_t, finite=False)
    if not (lam.shape == a.shape == b.shape and lam.ndim == 1):
        raise ValueError(
            f"eigenvalues, r0, r_t must be 1-D of one shape, got {lam.shape}, {a.shape}, {b.shape}"
        )
    t = V.positive("t", t)
    n_bins = integer("n_bins", n_bins, low=1, high=lam.size)
    order = np.argsort(lam)
    lams, rates = [], []
    for idx in np.array_split(order, n_bins):
        norm = float(a[idx] @ a[idx])
        m = float(b[idx] @ a[idx]) / norm if norm > 0 else 0.0
        if m > 0:
            lams.append(float(lam[idx].mean()))
            rates.append(-math.log(m) / t)
    return np.array(lams), np.array(rates)


def measured_phi(K: object, r: object, mean_sign_gradient: object) -> float:
    """Estimate ``phi`` from a measured mean sign-gradient ``g``.

    ``phi = <g, u> / <u, u>`` with ``u = D^{-1/2} K r`` (the drift direction).
    """
    arr, diag = check_covariance(K)
    rv = _vector("r", r, arr.shape[0])
    g = _vector("mean_sign_gradient", mean_sign_gradient, arr.shape[0])
    u = np.sqrt(arr) * rv if diag else preconditioned_drift(arr) @ rv
    uu = float(u @ u)
    if uu == 0:
        raise ValueError("r = 0 (theta = theta*): the drift direction and phi are undefined")
    return float(g @ u) / uu


def reshaping_floor(K_sigma: object, n_samples: int) -> float:
    """Expected relative Frobenius error of an ``n``-sample mean of ``g g^T`` (``g = +-1``).

    ``g_i g_j = +-1`` has mean ``K_sigma_ij`` and variance ``1 - K_sigma_ij^2``, so the
    root-mean-square Frobenius error is ``sqrt(sum_ij (1 - K_sigma_ij^2) / n)``, divided here by
    ``||K_sigma||_F``. The Monte Carlo floor under which no measured gap can fall.
    """
    Ks = V.real_array("K_sigma", K_sigma, finite=False)
    if Ks.ndim != 2 or Ks.shape[0] != Ks.shape[1] or Ks.size == 0:
        raise ValueError(f"K_sigma must be a non-empty square matrix, got shape {Ks.shape}")
    n_samples = integer("n_samples", n_samples, low=1)
    return math.sqrt(float(np.sum(1.0 - Ks**2)) / n_samples) / float(np.linalg.norm(Ks))


@dataclass(frozen=True)
class ReshapingGaps:
    """Relative Frobenius gaps (all divided by ``||K_sigma||_F``) of a measured sign-gradient.

    ``uncentred``: ``E[g g^T]`` vs ``K_sigma`` (equal at any d: ``sign(.)^2 = 1``);
    ``centred``: covariance vs ``K_sigma - mu mu^T`` with the phi-predicted
    ``mu = phi(P) D^{-1/2} K r``; ``naive``: covariance vs ``K_sigma`` (off by ``|mu|^2``, which
    vanishes only like ``d^{-1/2}``); ``floor``: :func:`reshaping_floor`. ``second_moment`` and
    ``covariance`` are the measured matrices, ``mean`` the measured mean.
    """

    uncentred: float
    centred: float
    naive: float
    floor: float
    mean: np.ndarray
    second_moment: np.ndarray
    covariance: np.ndarray


def reshaping_gaps(
    K: object,
    r: object,
    *,
    noise: LabelNoise | float | None = None,
    n_samples: int = 100_000,
    rng: np.random.Generator | int = 0,
) -> ReshapingGaps:
    """Measure the sign-gradient's second moments at ``r = theta - theta*`` against ``K_sigma``."""
    Karr, diag = check_covariance(K)
    rv = _vector("r", r, Karr.shape[0])
    mean, cov = sign_gradient_moments(
        Karr, rv, noise=noise, n_samples=n_samples, rng=rng, covariance=True
    )
    assert cov is not None
    n = n_samples
    second = cov * (n - 1) / n + np.outer(mean, mean)
    target = sign_noise_covariance(Karr)
    norm = float(np.linalg.norm(target))
    P = 0.5 * float(rv @ (Karr * rv if diag else Karr @ rv))
    drift = (np.sqrt(Karr) * rv) if diag else preconditioned_drift(Karr) @ rv
    mu = phi(P, noise) * drift
    return ReshapingGaps(
        uncentred=float(np.linalg.norm(second - target)) / norm,
        centred=float(np.linalg.norm(cov - (target - np.outer(mu, mu)))) / norm,
        naive=float(np.linalg.norm(cov - target)) / norm,
        floor=reshaping_floor(target, n),
        mean=mean,
        second_moment=second,
        covariance=cov,
    )
