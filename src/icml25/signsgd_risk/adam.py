"""Adam in the same high-dimensional limit: OUR RECONSTRUCTION, not the paper's statement.

The paper closes with a conjecture on Adam whose exact statement was not available offline. This
module implements a homogenized Adam ODE reconstructed from the signSGD analysis (and from the
way the authors' public exploratory code frames it: the preconditioner is an expectation over
*resampled* independent histories at the current parameters). It is labelled a reconstruction
everywhere it is reported.

Adam on the one-pass regression of :mod:`icml25.signsgd_risk.ode`, step ``lr / d``::

    g = (<x, theta> - y) x,  m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2,
    theta -= (lr / d) m_hat / sqrt(v_hat)        (bias-corrected, eps = 0)

With ``b1, b2`` fixed as ``d`` grows the moving averages span O(1) steps (``(1 - b2) d >> 1``),
over which ``theta`` barely moves; coordinate ``i`` of the update, ``F_i = m_i / sqrt(v_i)``,
is a function of the recent samples ``a_j = e_j u_j`` (``u_j = x_ji / sqrt(K_ii)``,
``e_j = <x_j, r> - eps_j``; ``F`` is scale-free in each). Linear response in
``Cov(x_i, <x, r>) = (K r)_i`` (Stein's lemma) and the sign symmetry of ``u_j`` give

    E F = phi_A(P) D^{-1/2} K r,   phi_A(P) = psi(P) / sqrt(2P),
    psi(P) = (1 - b1) sum_j b1^j E[u_j^2 w_j e_j / sqrt(v)]       (w_j = z_j / sqrt(2P)),

(flipping ``u_j`` leaves ``v`` unchanged, which removes the sign's derivative), and the
diffusion of coordinate ``i`` is the long-run variance of ``F_i``, which the same symmetry turns
into one expectation:

    q(P) = E[a_0^2 G_0^2],   G_0 = (1 - b1) sum_{k >= 0} b1^k / sqrt(v_k)

(the total weight of sample 0 in all later updates). For diagonal ``K`` the risk ODE is then

    dV_ii/dt = -2 lr phi_A(P) sqrt(K_ii) V_ii + (lr^2 / d) q(P),    P = sum_i K_ii V_ii / 2.

Closed forms: ``b1 = b2 = 0`` is signSGD (``psi = (2/pi) E exp(-eps^2/4P)``, ``q = 1``);
the limit ``b2 -> 1`` (``beta2=1`` here) has ``v_i -> K_ii (2P + E eps^2)``, so
``phi_A = 1 / sqrt(2P + E eps^2)`` and ``q = 1``: the same diagonal preconditioning without the
``2/pi`` factor and without noise compression (``phi_A = 0`` for infinite-variance noise).
Otherwise ``psi`` and ``q`` are computed by Monte Carlo over independent stationary chains of
the per-coordinate recursion. For Gaussian noise ``psi(P) = psi_0 sqrt(2P) / sqrt(2P + s^2)``
and ``q`` is constant (``F`` is scale-free), so one Monte Carlo constant suffices; other noise is
tabulated on a grid of risks with common random numbers and interpolated in ``log P``.

``b1 > 0`` with ``b2 = 0`` is refused: the update is ``m / |g|`` and ``E[1 / |g|] = inf``, so
neither the drift nor the diffusion exists and there is no ODE.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import integrate

from icml25.core import validate as V
from icml25.core.validate import integer, number
from icml25.signsgd_risk.noise import GaussianNoise, LabelNoise, as_noise
from icml25.signsgd_risk.ode import (
    LearningRate,
    RiskCurve,
    _curve_repr,
    check_covariance,
    check_times,
    check_vectors,
    lr_function,
    phi,
)
from icml25.signsgd_risk.simulate import Simulation, _sampler, check_run

_TAIL = 1e-4  # truncate moving averages where the remaining weight is below this


def _check_betas(beta1: float, beta2: float, *, allow_limit: bool) -> tuple[float, float]:
    b1, b2 = V.number("beta1", beta1, low=0.0), V.number("beta2", beta2, low=0.0)
    if not (math.isfinite(b1) and 0.0 <= b1 < 1.0):
        raise ValueError(f"beta1 must lie in [0, 1), got {beta1!r}")
    top_ok = b2 <= 1.0 if allow_limit else b2 < 1.0
    if not (math.isfinite(b2) and 0.0 <= b2 and top_ok):
        interval = "[0, 1] (1 means the limit beta2 -> 1)" if allow_limit else "[0, 1)"
        raise ValueError(f"beta2 must lie in {interval}, got {beta2!r}")
    return b1, b2


def _horizon(beta: float) -> int:
    """Steps after which ``beta^k`` is below the truncation tail (0 for beta = 0)."""
    if beta == 0.0:
        return 0
    return math.ceil(math.log(_TAIL) / math.log(beta))


@dataclass(frozen=True)
class AdamCoefficients:
    """``phi_A(P)`` and ``q(P)`` of the reconstructed Adam ODE, tabulated at ``risk``.

    ``method`` is ``"closed form"`` or ``"monte carlo"``; ``gaussian_scale`` is the noise std when
    the exact Gaussian scaling applies (then ``psi0``, ``q0`` define every P), else None.
    Between grid points ``phi_A`` and ``q`` are interpolated linearly in ``log P`` and held at
    the edge values outside the grid.
    """

    beta1: float
    beta2: float
    risk: np.ndarray
    phi: np.ndarray
    noise: np.ndarray
    method: str
    gaussian_scale: float | None = None
    psi0: float = math.nan
    q0: float = math.nan
    exact: Callable[[float], float] | None = None

    def at(self, P: float) -> tuple[float, float]:
        """``(phi_A(P), q(P))``."""
        P = max(float(P), 1e-300)
        if self.exact is not None:  # a closed form: q = 1
            return self.exact(P), 1.0
        if self.gaussian_scale is not None:
            return self.psi0 / math.sqrt(2.0 * P + self.gaussian_scale**2), self.q0
        if self.risk.size == 1:
            return float(self.phi[0]), float(self.noise[0])
        lp = math.log(P)
        grid = np.log(self.risk)
        return float(np.interp(lp, grid, self.phi)), float(np.interp(lp, grid, self.noise))

    def covers(self, P: float) -> bool:
        """Whether ``P`` lies inside the tabulated range (always true with exact scaling)."""
        if self.gaussian_scale is not None or self.method == "closed form":
            return True
        return bool(self.risk[0] <= P <= self.risk[-1])


def _chain_moments(
    beta1: float,
    beta2: float,
    noise: LabelNoise,
    risks: np.ndarray,
    n_chains: int,
    window: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo ``(psi, q)`` at each risk, common random numbers across risks.

    ``n_chains`` independent chains of the per-coordinate recursion run ``burn`` steps to
    stationarity; the next ``window`` steps are averaged, and ``G`` needs ``ahead`` more.
    """
    G = risks.size
    burn = max(_horizon(beta2), _horizon(beta1), 1)
    ahead = _horizon(beta1)
    n_steps = burn + window + ahead
    scale = np.sqrt(2.0 * risks)[:, None]  # (G, 1)
    m = np.zeros((G, n_chains))
    v = np.zeros((G, n_chains))
    b = np.zeros((G, n_chains))
    psi_sum = np.zeros(G)
    a2_store = np.empty((window, G, n_chains))
    inv_store = np.empty((window + ahead, G, n_chains))
    for k in range(1, n_steps + 1):
        u = rng.standard_normal(n_chains)
        w = rng.standard_normal(n_chains)
        e = scale * w - noise.sample(rng, n_chains)  # (G, N): residual <x, r> - eps
        a = e * u
        m = beta1 * m + (1.0 - beta1) * a
        v = beta2 * v + (1.0 - beta2) * a * a
        b = beta1 * b + (1.0 - beta1) * (u * u * w) * e
        vhat = v / (1.0 - beta2**k)
        with np.errstate(divide="ignore"):
            inv = 1.0 / np.sqrt(vhat)
        j = k - burn - 1  # index in the window
        if 0 <= j < window:
            psi_sum += (b / (1.0 - beta1**k) * inv).mean(axis=1)
            a2_store[j] = a * a
        if j >= 0:
            inv_store[j] = inv
    # G_s = (1 - b1) sum_{k >= s} b1^(k - s) inv_k, by a backward recursion over the stored tail.
    Gs = np.zeros((G, n_chains))
    q_sum = np.zeros(G)
    for j in range(window + ahead - 1, -1, -1):
        Gs = (1.0 - beta1) * inv_store[j] + beta1 * Gs
        if j < window:
            q_sum += (a2_store[j] * Gs * Gs).mean(axis=1)
    return psi_sum / window, q_sum / window


def adam_coefficients(
    risk: object,
    *,
    beta1: float,
    beta2: float,
    noise: LabelNoise | float | None = None,
    method: str = "auto",
    n_chains: int = 4000,
    window: int = 200,
    seed: int = 0,
) -> AdamCoefficients:
    """``phi_A`` and ``q`` of the reconstructed Adam ODE at the given risks (a number or 1-D grid).

    ``method="auto"`` uses a closed form where one exists (``beta1 = beta2 = 0``: signSGD;
    ``beta2 = 1``: the ``beta2 -> 1`` limit) and Monte Carlo otherwise; ``"monte_carlo"`` forces
    Monte Carlo (``beta2 = 1`` has no chain to simulate). Monte Carlo averages ``window``
    stationary steps of ``n_chains`` chains, seeded by ``seed``.
    """
    b1, b2 = _check_betas(beta1, beta2, allow_limit=True)
    if b2 == 0.0 and b1 > 0.0:
        raise ValueError(
            "beta1 > 0 with beta2 = 0 has no homogenized ODE: the update is m / |g| and "
            "E[1 / |g|] is infinite, so neither the drift nor the noise term exists"
        )
    if method not in ("auto", "monte_carlo"):
        raise ValueError(f"method must be 'auto' or 'monte_carlo', got {method!r}")
    n_chains = integer("n_chains", n_chains, low=2)
    window = integer("window", window, low=1)
    seed = integer("seed", seed, low=0)
    risks = np.atleast_1d(V.real_array("risk", risk, finite=False))
    if risks.ndim != 1 or risks.size == 0:
        raise ValueError("risk must be a positive number or a non-empty 1-D grid")
    if not np.all(np.isfinite(risks)) or np.any(risks <= 0) or np.any(np.diff(risks) <= 0):
        raise ValueError("risk must be positive, finite and strictly increasing")
    noise = as_noise(noise)

    if method == "monte_carlo" and b2 == 1.0:
        raise ValueError("beta2 = 1 is the limit beta2 -> 1: it has a closed form and no chain")
    if b2 == 1.0 or (b1 == 0.0 and b2 == 0.0 and method == "auto"):
        exact: Callable[[float], float]
        if b2 == 1.0:
            m2 = noise.second_moment()

            def exact(P: float) -> float:
                return 1.0 / math.sqrt(2 * P + m2) if math.isfinite(m2) else 0.0

        else:
            limit_noise = noise

            def exact(P: float) -> float:
                return phi(P, limit_noise)

        phis = np.array([exact(float(P)) for P in risks])
        return AdamCoefficients(
            b1, b2, risks, phis, np.ones_like(risks), "closed form", exact=exact
        )

    rng = np.random.default_rng([seed, 35])
    if isinstance(noise, GaussianNoise):
        # Exact scaling: compute the noiseless constant once (psi at P = 1/2, e = w).
        psi, q = _chain_moments(b1, b2, GaussianNoise(0.0), np.array([0.5]), n_chains, window, rng)
        psi0, q0 = float(psi[0]), float(q[0])
        s = noise.std
        phis = psi0 / np.sqrt(2 * risks + s**2)
        return AdamCoefficients(
            b1, b2, risks, phis, np.full_like(risks, q0), "monte carlo", s, psi0, q0
        )
    psi, q = _chain_moments(b1, b2, noise, risks, n_chains, window, rng)
    return AdamCoefficients(b1, b2, risks, psi / np.sqrt(2 * risks), q, "monte carlo")


@dataclass(frozen=True)
class AdamCurve(RiskCurve):
    """A :class:`RiskCurve` of the reconstructed Adam ODE, with its coefficients.

    ``left_grid`` says whether the risk left the tabulated range (coefficients then held at the
    edge value; never for Gaussian noise or closed forms).
    """

    coefficients: AdamCoefficients | None = None
    left_grid: bool = False

    def __repr__(self) -> str:
        return _curve_repr(self, f"optimizer={self.optimizer!r}, left_grid={self.left_grid}")


def adam_ode(
    K: object,
    theta0: object,
    theta_star: object,
    *,
    noise: LabelNoise | float | None = None,
    lr: LearningRate = 0.1,
    t_max: float | None = None,
    beta1: float = 0.9,
    beta2: float = 0.999,
    times: object = None,
    method: str = "auto",
    n_chains: int = 4000,
    window: int = 200,
    seed: int = 0,
    risk_grid: object = None,
    rtol: float = 1e-7,
) -> AdamCurve:
    """Risk curve of the reconstructed homogenized Adam ODE (diagonal ``K`` only).

    See the module docstring for the equations. ``risk_grid`` (non-Gaussian noise, Monte Carlo)
    defaults to 25 log-spaced risks on ``[1e-3 P0, 10 P0]``. ``beta1 = beta2 = 0`` with
    ``method="auto"`` gives exactly :func:`~icml25.signsgd_risk.ode.risk_ode`'s signSGD curve.
    """
    Karr, diag = check_covariance(K)
    if not diag:
        raise ValueError(
            "adam_ode supports a diagonal K only: the off-diagonal noise of Adam between "
            "correlated coordinates is not derived in this reconstruction"
        )
    d = Karr.size
    th0, ths = check_vectors(d, theta0, theta_star)
    eta = lr_function(lr)
    rtol = number("rtol", rtol, low=0.0, high=1.0, low_open=True, high_open=True)
    t_max, t_eval = check_times(t_max, times, 201)
    r0 = th0 - ths
    P0 = 0.5 * float(Karr @ (r0 * r0))
    if risk_grid is None:
        base = P0 if P0 > 0 else 1.0
        grid = np.geomspace(1e-3 * base, 10 * base, 25)
    else:
        grid = V.real_array("risk_grid", risk_grid, finite=False)
    coef = adam_coefficients(
        grid, beta1=beta1, beta2=beta2, noise=noise, method=method, n_chains=n_chains,
        window=window, seed=seed,
    )  # fmt: skip
    sq = np.sqrt(Karr)

    def risk_of(y: np.ndarray) -> float:
        return max(0.5 * float(Karr @ y), 1e-300)

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        ph, q = coef.at(risk_of(y))
        lr_t = eta(t)
        return -2.0 * lr_t * ph * sq * y + (lr_t**2 / d) * q

    y0 = r0 * r0
    scale = float(np.abs(y0).max()) + eta(0.0) ** 2 / d
    sol = integrate.solve_ivp(
        rhs, (0.0, t_max), y0, t_eval=t_eval, rtol=rtol, atol=1e-10 * scale, method="RK45"
    )
    if not sol.success:  # pragma: no cover
        raise RuntimeError(f"Adam ODE integration failed: {sol.message}")
    risk = np.array([risk_of(sol.y[:, i]) for i in range(sol.y.shape[1])])
    eff = np.array([eta(t) * coef.at(P)[0] for t, P in zip(sol.t, risk, strict=True)])
    left = not all(coef.covers(P) for P in risk)
    return AdamCurve(
        t=sol.t, risk=risk, effective_lr=eff, optimizer=f"adam(beta1={coef.beta1:g}, "
        f"beta2={coef.beta2:g})", coefficients=coef, left_grid=left,
    )  # fmt: skip


def simulate_adam(
    K: object,
    theta0: object,
    theta_star: object,
    *,
    noise: LabelNoise | float | None = None,
    lr: LearningRate = 0.1,
    t_max: float | None = None,
    beta1: float = 0.9,
    beta2: float = 0.999,
    eps: float = 0.0,
    seeds: Sequence[int] = (0,),
    times: object = None,
    keep_iterates: bool = False,
    chunk: int = 256,
) -> Simulation:
    """Run ``round(t_max d)`` steps of Adam (step ``lr(k/d) / d``) for every seed at once.

    Bias-corrected as ``torch.optim.Adam``: ``theta -= step m_hat / (sqrt(v_hat) + eps)``;
    ``eps = 0`` by default (the theory's setting). Same conventions as
    :func:`~icml25.signsgd_risk.simulate.simulate` (dense K allowed, times rounded to steps).
    """
    Karr, diag = check_covariance(K)
    d = Karr.shape[0]
    th0, ths = check_vectors(d, theta0, theta_star)
    b1, b2 = _check_betas(beta1, beta2, allow_limit=False)
    eps = V.number("eps", eps, low=0.0)
    noise = as_noise(noise)
    eta = lr_function(lr)
    seeds, t_req = check_run(seeds, t_max, times, chunk)
    steps = np.rint(t_req * d).astype(np.int64)
    n_steps = int(steps[-1])
    S = len(seeds)
    rngs = [np.random.default_rng(s) for s in seeds]
    draw = _sampler(Karr, diag)
    r = np.tile(th0 - ths, (S, 1))
    m = np.zeros((S, d))
    v = np.zeros((S, d))
    risk = np.empty((S, steps.size))
    its = np.empty((S, steps.size, d)) if keep_iterates else None

    def record(k: int) -> None:
        idx = np.nonzero(steps == k)[0]
        if idx.size:
            if diag:
                risk[:, idx] = (0.5 * (r * r) @ Karr)[:, None]
            else:
                risk[:, idx] = 0.5 * np.einsum("sd,de,se->s", r, Karr, r)[:, None]
            if its is not None:
                its[:, idx] = r[:, None, :]

    record(0)
    k = 0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        while k < n_steps:
            n = min(chunk, n_steps - k)
            xi = np.stack([g.standard_normal((n, d)) for g in rngs], axis=1)  # (n, S, d)
            noise_draw = np.stack([noise.sample(g, n) for g in rngs], axis=1)  # (n, S)
            x = draw(xi)
            for j in range(n):
                step = eta(k / d) / d
                resid = np.einsum("sd,sd->s", x[j], r) - noise_draw[j]
                g = resid[:, None] * x[j]
                m *= b1
                m += (1.0 - b1) * g
                v *= b2
                v += (1.0 - b2) * g * g
                k += 1
                c1 = 1.0 - b1**k
                c2 = math.sqrt(1.0 - b2**k)
                r -= (step / c1) * m / (np.sqrt(v) / c2 + eps)
                record(k)
    return Simulation(
        t=steps / d, risk=risk, seeds=seeds, optimizer=f"adam(beta1={b1:g}, beta2={b2:g})",
        iterates=its,
    )  # fmt: skip
