"""The deterministic risk ODE of signSGD (and of SGD) for one-pass linear regression.

Model: ``x ~ N(0, K)``, ``y = <x, theta*> + eps``, one fresh sample per step, step size
``lr(t) / d`` and time ``t = k / d``. With ``r = theta - theta*`` and ``V = E[r r^T]`` the
high-dimensional limit of signSGD is

    dV/dt = -lr phi(P) (M V + V M^T) + (lr^2 / d) K_sigma,     P = tr(K V) / 2,

with ``M = D^{-1/2} K`` (``D = diag K``: the diagonal preconditioning),
``K_sigma = (2/pi) arcsin(D^{-1/2} K D^{-1/2})`` (the arcsine law: the reshaped gradient noise),
and ``phi(P) = (2/pi) E[exp(-eps^2 / (4P))] / sqrt(2P)`` (the effective learning rate is
``lr phi(P)``; the noise enters only through that expectation: noise compression). For SGD,

    dV/dt = -lr (K V + V K) + (lr^2 / d) (2P + E eps^2) K.

Only ``P`` is needed, and the matrix equation reduces exactly to ``d`` scalar equations in the
eigenbasis of ``D^{-1/4} K D^{-1/4}`` (see :func:`_spectral_form`): one eigendecomposition, then
O(d) per step; ``method="matrix"`` integrates the d x d equation itself. The equations are this
package's derivation (see the README for what was checked against the paper and how).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import integrate, linalg, optimize

from icml25.core import validate as V
from icml25.core.validate import number
from icml25.signsgd_risk.noise import LabelNoise, as_noise

Optimizer = Literal["signsgd", "sgd"]
LearningRate = float | Callable[[float], float]
_OPTIMIZERS = ("signsgd", "sgd")


def check_covariance(K: object, name: str = "K") -> tuple[np.ndarray, bool]:
    """Validate a data covariance; returns ``(K, is_diagonal)``.

    A 1-D array is the diagonal of a diagonal covariance (entries > 0); a 2-D array must be square,
    symmetric, positive semi-definite and have a positive diagonal. A 2-D diagonal matrix is
    returned as its diagonal so that it takes the fast path.
    """
    arr = V.real_array(name, K, finite=False)
    if arr.ndim == 1:
        if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
            raise ValueError(
                f"{name} given as a vector is the diagonal of the covariance: it must be non-empty,"
                " "
                f"finite and > 0; got min {arr.min() if arr.size else 'empty'}"
            )
        return arr, True
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(
            f"{name} must be a (d,) diagonal or a (d, d) matrix, got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} has non-finite entries")
    scale = max(float(np.abs(arr).max()), 1e-300)
    if not np.allclose(arr, arr.T, atol=1e-10 * scale, rtol=0):
        raise ValueError(
            f"{name} must be symmetric (max |K - K^T| = {np.abs(arr - arr.T).max():.3g})"
        )
    diag = np.diag(arr)
    if np.any(diag <= 0):
        raise ValueError(f"{name} must have a positive diagonal (signSGD divides by sqrt(K_ii))")
    if np.count_nonzero(arr - np.diag(diag)) == 0:
        return diag.copy(), True
    lam_min = float(linalg.eigvalsh(arr, subset_by_index=[0, 0])[0])
    if lam_min < -1e-10 * scale:
        raise ValueError(
            f"{name} must be positive semi-definite, smallest eigenvalue {lam_min:.3g}"
        )
    return 0.5 * (arr + arr.T), False


def check_vectors(d: int, theta0: object, theta_star: object) -> tuple[np.ndarray, np.ndarray]:
    out = []
    for name, v in (("theta0", theta0), ("theta_star", theta_star)):
        a = V.real_array(name, v, finite=False)
        if a.shape != (d,):
            raise ValueError(f"{name} must have shape ({d},) to match K, got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} has non-finite entries")
        out.append(a)
    return out[0], out[1]


def lr_function(lr: LearningRate) -> Callable[[float], float]:
    """A learning rate as a function of time ``t = k / d``; checks a constant is positive and a
    schedule's values (numbers, finite, >= 0) as they are used."""
    if callable(lr):
        schedule = lr

        def checked(t: float) -> float:
            out = schedule(t)
            try:
                return V.number("lr(t)", out, low=0.0)
            except ValueError:
                raise ValueError(
                    f"lr(t) must return a finite number >= 0, got {out!r} at t = {t:g}"
                ) from None

        return checked
    if isinstance(lr, (str, bytes)) or not isinstance(lr, numbers.Real | np.ndarray):
        raise TypeError(f"lr must be a positive number or a callable t -> lr(t), got {lr!r}")
    value = V.positive("lr", lr)
    return lambda _t: value


def check_times(t_max: object, times: object, default: int) -> tuple[float, np.ndarray]:
    """``t_max`` (a positive number) and the requested times: an increasing 1-D array in
    ``[0, t_max]``, by default ``default`` evenly spaced points. Without ``t_max`` the horizon
    is the last requested time; with neither, an error (no horizon is assumed)."""
    if t_max is None:
        if times is None:
            raise ValueError(
                "give t_max (the horizon in units of d steps: t = steps / d) or times; "
                "no horizon is assumed"
            )
        requested = V.real_array("times", times, finite=False)
        t_max = float(requested.max()) if requested.size else None
    t_end = V.positive("t_max", t_max)
    if times is None:
        return t_end, np.linspace(0.0, t_end, default)
    t_req = V.real_array("times", times, finite=False)
    if t_req.ndim != 1 or t_req.size == 0 or not np.all(np.isfinite(t_req)):
        raise ValueError(f"times must be a non-empty finite 1-D array, got shape {t_req.shape}")
    if np.any(np.diff(t_req) < 0):
        raise ValueError("times must be increasing")
    if t_req[0] < 0 or t_req[-1] > t_end:
        raise ValueError(
            f"times must lie in [0, t_max={t_end:g}], got [{t_req[0]:g}, {t_req[-1]:g}]"
        )
    return t_end, t_req


def check_optimizer(optimizer: str) -> Optimizer:
    if optimizer not in _OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {_OPTIMIZERS}, got {optimizer!r}")
    return optimizer  # type: ignore[return-value]


def phi(risk: float, noise: LabelNoise | float | None = None) -> float:
    """``phi(P) = (2/pi) E[exp(-eps^2/(4P))] / sqrt(2P)``: signSGD's effective-lr factor.

    At ``P = 0`` the limit ``2 sqrt(2/pi) p_eps(0)`` is returned (infinite without noise).
    """
    noise = as_noise(noise)
    P = V.number("risk", risk, allow_inf=True, low=0.0)
    if P == 0.0:
        return 2.0 * math.sqrt(2.0 / math.pi) * noise.density_at_zero()
    return (2.0 / math.pi) * noise.exp_moment(1.0 / (4.0 * P)) / math.sqrt(2.0 * P)


def sign_noise_covariance(K: object) -> np.ndarray:
    """``K_sigma = (2/pi) arcsin(D^{-1/2} K D^{-1/2})``: covariance of ``sign(x)``, x ~ N(0, K)."""
    arr, diag = check_covariance(K)
    if diag:
        return np.eye(arr.size)
    s = 1.0 / np.sqrt(np.diag(arr))
    corr = np.clip(arr * s[:, None] * s[None, :], -1.0, 1.0)
    return (2.0 / math.pi) * np.arcsin(corr)


def preconditioned_drift(K: object) -> np.ndarray:
    """signSGD's drift matrix ``D^{-1/2} K`` (SGD's is ``K``); for diagonal K, ``sqrt(diag K)``."""
    arr, diag = check_covariance(K)
    if diag:
        return np.sqrt(arr)
    return arr / np.sqrt(np.diag(arr))[:, None]


@dataclass(frozen=True)
class RiskCurve:
    """A predicted (or simulated) excess-risk curve.

    ``risk[i]`` is ``P(t_i) = E[(theta - theta*)^T K (theta - theta*)] / 2`` (excess over the
    noise); ``effective_lr[i]`` is ``lr(t) phi(P)`` for signSGD and ``lr(t)`` for SGD.
    """

    t: np.ndarray
    risk: np.ndarray
    effective_lr: np.ndarray
    optimizer: str

    def __repr__(self) -> str:
        return _curve_repr(self, f"optimizer={self.optimizer!r}")


def _curve_repr(curve: Any, what: str) -> str:
    """One line for a curve: its points, time range and risk at the ends (not every array)."""
    t, risk = np.asarray(curve.t), np.asarray(curve.risk)
    if t.size == 0:
        return f"{type(curve).__name__}({what}, no points)"
    r = risk if risk.ndim == 1 else risk.mean(axis=0)
    return (
        f"{type(curve).__name__}({what}, {t.size} points, t {t[0]:g}..{t[-1]:g}, "
        f"risk {r[0]:.4g} -> {r[-1]:.4g})"
    )


def _spectral_form(
    K: np.ndarray, diag: bool, r0: np.ndarray, opt: Optimizer
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reduce the matrix ODE to ``d`` scalar equations: returns ``(w, c, y0)``.

    With ``G = D^{1/4}`` for signSGD (identity for SGD), ``S = G^{-1} K G^{-1}`` is symmetric and
    ``M = G^{-1} S G``; substituting ``V = G^{-1} W G^{-1}`` and rotating to the eigenbasis
    ``S = Q diag(w) Q^T`` decouples the diagonal of ``W~ = Q^T W Q``:

        dy_i/dt = -2 lr phi(P) w_i y_i + (lr^2/d) c_i,     P = sum_i w_i y_i / 2,

    with ``c = diag(Q^T G C G Q)`` (``C = K_sigma``, or ``K`` times ``2P + E eps^2`` for SGD) and
    ``y0 = (Q^T G r0)^2``. The off-diagonal of ``W~`` never feeds back into P, so this is exact.
    """
    if diag:
        if opt == "signsgd":
            sq = np.sqrt(K)
            return sq, sq.copy(), sq * r0**2
        return K.copy(), K.copy(), r0**2
    if opt == "signsgd":
        g = np.diag(K) ** 0.25
        S = K / g[:, None] / g[None, :]
        C = g[:, None] * sign_noise_covariance(K) * g[None, :]
    else:
        g = np.ones(K.shape[0])
        S, C = K, K
    w, Q = linalg.eigh(S)
    w = np.clip(w, 0.0, None)
    c = np.einsum("ij,ik,kj->j", Q, C, Q)
    y0 = (Q.T @ (g * r0)) ** 2
    return w, c, y0


def risk_ode(
    K: object,
    theta0: object,
    theta_star: object,
    *,
    noise: LabelNoise | float | None = None,
    lr: LearningRate = 0.1,
    t_max: float | None = None,
    optimizer: Optimizer = "signsgd",
    times: object = None,
    method: Literal["spectral", "matrix"] = "spectral",
    rtol: float = 1e-7,
) -> RiskCurve:
    """Solve the risk ODE from ``V(0) = (theta0 - theta*)(theta0 - theta*)^T``.

    ``times`` (increasing, in ``[0, t_max]``) defaults to 201 points; ``d`` is ``len(theta0)``.
    ``method="spectral"`` (default) integrates the exact d-dimensional reduction of
    :func:`_spectral_form` (one eigendecomposition for a dense K, then O(d) per step);
    ``method="matrix"`` integrates the d x d equation for V itself (O(d^3) per step; for checks).
    """
    Karr, diag = check_covariance(K)
    d = Karr.shape[0]
    th0, ths = check_vectors(d, theta0, theta_star)
    noise = as_noise(noise)
    opt = check_optimizer(optimizer)
    eta = lr_function(lr)
    if method not in ("spectral", "matrix"):
        raise ValueError(f"method must be 'spectral' or 'matrix', got {method!r}")
    rtol = number("rtol", rtol, low=0.0, high=1.0, low_open=True, high_open=True)
    t_max, t_eval = check_times(t_max, times, 201)
    m2 = 0.0
    if opt == "sgd":
        m2 = noise.second_moment()
        if not math.isfinite(m2):
            raise ValueError(
                f"the SGD risk ODE needs noise of finite variance; {noise!r} has E[eps^2] = {m2} "
                "(SGD's risk is not defined in the limit: that is the point of the comparison)"
            )
    r0 = th0 - ths

    def drift_factor(t: float, P: float) -> float:
        return eta(t) * (phi(P, noise) if opt == "signsgd" else 1.0)

    def noise_factor(t: float, P: float) -> float:
        return eta(t) ** 2 / d * (1.0 if opt == "signsgd" else 2.0 * P + m2)

    risk_of: Callable[[np.ndarray], float]
    rhs: Callable[[float, np.ndarray], np.ndarray]
    if method == "spectral" or diag:
        w, c, y0 = _spectral_form(Karr, diag, r0, opt)

        def risk_of(y: np.ndarray) -> float:
            return max(0.5 * float(w @ y), 1e-300)

        def rhs(t: float, y: np.ndarray) -> np.ndarray:
            P = risk_of(y)
            return -2.0 * drift_factor(t, P) * w * y + noise_factor(t, P) * c

    else:
        M = preconditioned_drift(Karr) if opt == "signsgd" else Karr
        C = sign_noise_covariance(Karr) if opt == "signsgd" else Karr
        y0 = np.outer(r0, r0).ravel()

        def risk_of(y: np.ndarray) -> float:
            return max(0.5 * float(np.einsum("ij,ji->", Karr, y.reshape(d, d))), 1e-300)

        def rhs(t: float, y: np.ndarray) -> np.ndarray:
            P = risk_of(y)
            X = M @ y.reshape(d, d)
            return (-drift_factor(t, P) * (X + X.T) + noise_factor(t, P) * C).ravel()

    scale = float(np.abs(y0).max()) + eta(0.0) ** 2 / d
    sol = integrate.solve_ivp(
        rhs, (0.0, t_max), y0, t_eval=t_eval, rtol=rtol, atol=1e-10 * scale, method="RK45"
    )
    if not sol.success:  # the learning rate is beyond the stable range: the risk explodes
        start = risk_of(y0)
        last = risk_of(sol.y[:, -1]) if sol.y.size else start
        top = float(np.max(Karr) if Karr.ndim == 1 else np.linalg.eigvalsh(Karr).max())
        t_last = float(sol.t[-1]) if sol.t.size else 0.0
        raise FloatingPointError(
            f"the risk ODE diverges: the risk went from {start:.3g} to {last:.3g} by t = "
            f"{t_last:.3g} (t_max = {t_max:.3g}) and the solver stopped ({sol.message}); "
            f"lr = {eta(0.0):.3g} (at t = 0) is too large for this K (largest eigenvalue "
            f"{top:.3g}) with optimizer={opt!r}: lower lr "
            "or t_max"
        )
    risk = np.array([risk_of(sol.y[:, i]) for i in range(sol.y.shape[1])])
    eff = np.array([drift_factor(t, P) for t, P in zip(sol.t, risk, strict=True)])
    return RiskCurve(t=sol.t, risk=risk, effective_lr=eff, optimizer=opt)


def stationary_risk(
    K: object,
    d: int | None = None,
    *,
    noise: LabelNoise | float | None = None,
    lr: float = 0.1,
    optimizer: Optimizer = "signsgd",
) -> float:
    """The ODE's fixed point ``P_inf`` at constant ``lr`` (``d`` defaults to K's dimension).

    From the spectral form, ``P = lr sum(c) / (4 d)`` times the noise factor over the drift
    factor. signSGD: ``P phi(P) = lr sum_i sqrt(K_ii) / (4 d)`` (``sum c = tr(D^{1/2} K_sigma)``,
    and ``diag K_sigma = 1``): the correlations of K do not move the fixed point. SGD:
    ``P = a E[eps^2] / (1 - 2a)`` with ``a = lr tr(K) / (4 d)``, finite only when ``a < 1/2``.
    """
    Karr, diag = check_covariance(K)
    ok_d = isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0
    if d is not None and not ok_d:
        raise ValueError(f"d must be a positive integer (or None for K's dimension), got {d!r}")
    d = Karr.shape[0] if d is None else int(d)
    noise = as_noise(noise)
    if callable(lr):
        raise TypeError("stationary_risk needs a constant lr (a number), got a schedule")
    eta = lr_function(lr)(0.0)
    opt = check_optimizer(optimizer)
    kdiag = Karr if diag else np.diag(Karr)
    if opt == "sgd":
        a = eta * float(kdiag.sum()) / (4 * d)
        if a >= 0.5:
            return math.inf
        return a * noise.second_moment() / (1 - 2 * a)
    target = eta * float(np.sqrt(kdiag).sum()) / (4 * d)

    # P phi(P) increases from 0 to infinity with P: bracket and solve.
    def f(P: float) -> float:
        return P * phi(P, noise) - target

    hi = 1.0
    while f(hi) < 0:
        hi *= 4.0
    lo = 1e-3 * hi
    while f(lo) > 0:
        lo *= 1e-3
    return float(optimize.brentq(f, lo, hi, xtol=1e-300, rtol=1e-12))
