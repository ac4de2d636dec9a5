r"""Time-dependent Legendre functions of the diagonal reparameterisation :math:`x = u \odot v`.

Gradient flow on :math:`f(u \odot v) + \tfrac{\alpha}{2}(\|u\|^2 + \|v\|^2)` keeps
:math:`x_t = u_t \odot v_t` on a mirror flow whose Legendre function depends on time only
through :math:`c = u^2 - v^2`:

.. math::
    \frac{d}{dt}\nabla R_{c_t}(x_t) = -\nabla f(x_t), \qquad
    R_c(x) = \tfrac12 \sum_i \Big[x_i \operatorname{arcsinh}\frac{2x_i}{c_i}
             - \sqrt{x_i^2 + c_i^2/4}\Big], \qquad
    \frac{dc}{dt} = -2\alpha c.

(Derivation: :math:`\nabla R_c(x) = \log(u+v) - \tfrac12\log c`, and both terms move at rate
:math:`\mp\alpha` under weight decay, which cancels.) Weight decay therefore only shrinks
:math:`c`; if it is switched off at time T with :math:`x_0 = 0`, the limit interpolates and is
:math:`\arg\min_{Ax=y} R_{c_T}(x)`, a bias that moves from :math:`\ell_2`-like (large c) to
:math:`\ell_1`-like (c → 0). With :math:`x_0 \ne 0` the limit is
:math:`\arg\min_{Ax=y} R_{c_T}(x) - \langle\nabla R_{c_0}(x_0), x\rangle` (positional bias).

References
----------
T. Jacobs, C. Zhou and R. Burkholz. Mirror, Mirror of the Flow: How Does Regularization Shape
Implicit Bias? ICML 2025 (arXiv:2504.12883).
"""

from __future__ import annotations

import numpy as np

from icml25.core import validate as V
from icml25.core.validate import number, real_array


def _c_array(c: np.ndarray | float, shape: tuple[int, ...], name: str = "c") -> np.ndarray:
    """``c`` (a number, or one value per coordinate) broadcast to ``shape``; positive, finite."""
    arr = real_array(name, c, shape=shape)
    if np.any(arr <= 0):
        raise ValueError(
            f"{name} must be positive and finite (c = u**2 - v**2 > 0; use u0 != v0, "
            f"u0 > |v0|), got min {np.min(arr) if arr.size else 'empty'}"
        )
    return np.broadcast_to(arr, shape)


def legendre(x: np.ndarray, c: np.ndarray | float) -> float:
    r"""The Legendre function :math:`R_c(x)` of the module docstring."""
    x = real_array("x", x)
    c = _c_array(c, x.shape)
    return float(0.5 * np.sum(x * np.arcsinh(2 * x / c) - np.sqrt(x**2 + c**2 / 4)))


def legendre_grad(x: np.ndarray, c: np.ndarray | float) -> np.ndarray:
    r""":math:`\nabla R_c(x) = \tfrac12 \operatorname{arcsinh}(2x/c)` (the mirror map)."""
    x = real_array("x", x)
    return 0.5 * np.arcsinh(2 * x / _c_array(c, x.shape))


def mirror_inverse(z: np.ndarray, c: np.ndarray | float) -> np.ndarray:
    r"""Inverse mirror map :math:`x = (c/2)\sinh(2z)`."""
    z = real_array("z", z)
    return 0.5 * _c_array(c, z.shape) * np.sinh(2 * z)


def c_flow(c0: np.ndarray | float, alpha: float, t: float | np.ndarray) -> np.ndarray:
    r"""Gradient flow: :math:`c_t = c_0 e^{-2\alpha t}`."""
    alpha = number("alpha (weight decay)", alpha, low=0.0)
    c0 = real_array("c0", c0, low=0.0, low_open=True)
    t = real_array("t", t, low=0.0)
    return c0 * np.exp(-2 * alpha * t)


def c_gd_step(c: np.ndarray, g: np.ndarray, lr: float, alpha: float) -> np.ndarray:
    r"""One GD step on (u, v): :math:`c_{k+1} = c_k[(1-\eta\alpha)^2 - \eta^2 g_k^2]`, with
    :math:`g = \nabla f(x_k)`. Exact for GD on :math:`f(u\odot v) + \tfrac\alpha2\|(u,v)\|^2`."""
    lr = number("lr", lr, low=0.0, low_open=True)
    alpha = number("alpha", alpha, low=0.0)
    c = real_array("c", c)
    g = real_array("g", g, shape=c.shape if c.ndim else None)
    return c * ((1 - lr * alpha) ** 2 - lr**2 * g**2)


def c_gd(c0: np.ndarray | float, lr: float, alpha: float, steps: int | np.ndarray) -> np.ndarray:
    r"""GD, neglecting the :math:`O(\eta^2 g^2)` term: :math:`c_k = c_0 (1-\eta\alpha)^{2k}`."""
    lr = number("lr", lr, low=0.0, low_open=True)
    alpha = number("alpha", alpha, low=0.0)
    k = real_array("steps", steps, low=0.0, integer=True)
    c0 = real_array("c0", c0, low=0.0, low_open=True)
    return c0 * (1 - lr * alpha) ** (2 * k)


def implicit_bias_solution(
    A: np.ndarray,
    y: np.ndarray,
    c: np.ndarray | float,
    *,
    x0: np.ndarray | None = None,
    c0: np.ndarray | float | None = None,
    tol: float = 1e-11,
    max_iter: int = 500,
) -> np.ndarray:
    r""":math:`\arg\min_{Ax=y} R_c(x) - \langle \nabla R_{c_0}(x_0), x\rangle` (the linear term
    only when ``x0`` is given; ``c0`` defaults to ``c``).

    Solved in the dual by damped Newton: the minimiser is :math:`x = (c/2)\sinh(2(A^\top\lambda
    + b))` with :math:`b = \nabla R_{c_0}(x_0)`, and :math:`\lambda` minimises
    :math:`\sum_i (c_i/4)\cosh(2 z_i) - \lambda^\top y`, :math:`z = A^\top\lambda + b`. The
    cosh is evaluated as :math:`\exp(\log(c/8) + \operatorname{logaddexp}(2z, -2z))`, so tiny c
    (the :math:`\ell_1` limit) does not overflow.
    """
    A = real_array("A", A)
    y = real_array("y", y)
    tol = V.positive("tol", tol)
    max_iter = V.integer("max_iter", max_iter, low=1)
    if A.ndim != 2 or y.shape != (A.shape[0],):
        raise ValueError(f"A must be (n, d) and y (n,), got {A.shape} and {y.shape}")
    d = A.shape[1]
    c = _c_array(c, (d,))
    if x0 is None:
        b = np.zeros(d)
    else:
        x0 = real_array("x0", x0)
        if x0.shape != (d,):
            raise ValueError(f"x0 must have one entry per column of A ({d}), got shape {x0.shape}")
        b = 0.5 * np.arcsinh(2 * x0 / (c if c0 is None else _c_array(c0, (d,), "c0")))
    # Continuation: Newton from lambda = 0 stalls for tiny c (the Hessian ~ c is nearly
    # singular far from the solution), so solve for c * s with s = 10^k, ..., 10, 1, warm-starting
    # each stage from the last (the dual solution moves like log(1/c)).
    stages = int(max(0.0, np.ceil(np.log10(1.0 / float(np.min(c))))))
    lam = np.zeros(A.shape[0])
    for k in range(stages, -1, -1):
        lam, z = _newton_dual(A, y, c * 10.0**k, b, lam, tol, max_iter)
    return 0.5 * c * np.sinh(2 * z)


def _newton_dual(
    A: np.ndarray,
    y: np.ndarray,
    c: np.ndarray,
    b: np.ndarray,
    lam: np.ndarray,
    tol: float,
    max_iter: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Damped Newton on the dual of argmin_{Ax=y} R_c(x) - <b, x>; returns (lambda, z)."""
    logc8 = np.log(c / 8)

    def dual(lam: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        z = A.T @ lam + b
        # Trial steps of the line search may overflow; they come back as value inf and are
        # rejected, so the warnings are silenced here and only here.
        with np.errstate(over="ignore", invalid="ignore"):
            cosh_part = np.exp(logc8 + np.logaddexp(2 * z, -2 * z))  # (c/4) cosh(2z)
            x = 0.5 * c * np.sinh(2 * z)
            value = float(np.sum(cosh_part) - lam @ y)
            residual = A @ x - y
        if not np.isfinite(value) or not np.all(np.isfinite(residual)):
            value = np.inf
        return value, residual, z, 4 * cosh_part

    value, grad, z, curv = dual(lam)
    scale = max(1.0, float(np.linalg.norm(y)))
    for _ in range(max_iter):
        if np.linalg.norm(grad) <= tol * scale:
            break
        Hm = (A * curv) @ A.T
        step = np.linalg.solve(Hm + 1e-14 * np.trace(Hm) / len(Hm) * np.eye(len(Hm)), grad)
        t = 1.0
        while True:
            new = dual(lam - t * step)
            if new[0] <= value - 1e-4 * t * (grad @ step) or t < 1e-12:
                break
            t *= 0.5
        if t < 1e-12:  # no more progress in floating point
            break
        lam = lam - t * step
        value, grad, z, curv = new
    if np.linalg.norm(grad) > 1e-6 * scale:
        raise RuntimeError(
            f"implicit_bias_solution did not converge (constraint residual "
            f"{np.linalg.norm(grad):.2e}); is Ax = y feasible?"
        )
    return lam, z
