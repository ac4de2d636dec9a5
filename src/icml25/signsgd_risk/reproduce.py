"""Reproduction of "Exact Risk Curves of signSGD in High-Dimensions" at laptop scale.

Settings (from the research brief; claims and rules fixed before the first run):

A. Diagonal ``K = diag(linspace(0.2, 2, d))``, ``d = 1000``, ``theta* ~ N(0, I/d)``,
   ``theta0 = 0``, ``lr = 0.3``, ``t in [0, 6]``: ODE vs simulation with Gaussian (std 0.5) and
   Cauchy (scale 0.5) label noise; the same at d = 250, 500 (error shrinking with d); the
   per-coordinate decay exponents (preconditioning); the effective learning rate measured from
   Monte Carlo sign-gradients at iterates along the run (and the noise compression for Cauchy
   and Student-t df = 1.5 noise, both of infinite variance).
B. Correlated ``K`` (Toeplitz ``0.6^|i-j|`` scaled to variances linspace(0.2, 2)), ``d = 400``:
   the full matrix ODE with the arcsine-law noise covariance; the reshaped gradient noise
   measured at d = 50.
C. Heavy tails, ``d = 500``, ``t = 8``: signSGD vs SGD (both ``lr = 0.3``) under Cauchy noise.

The problem instance ``theta*`` is fixed (``PROBLEM_SEED``); the run seeds drive the samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from icml25.core.claims import Claim, Gate, Measurement, Null, Rule, gate_key, null_key
from icml25.core.runner import RunContext
from icml25.signsgd_risk.adam import adam_coefficients, adam_ode, simulate_adam
from icml25.signsgd_risk.effects import (
    binned_decay_rates,
    decay_exponent,
    measured_phi,
    reshaping_floor,
    reshaping_gaps,
)
from icml25.signsgd_risk.noise import CauchyNoise, GaussianNoise, LabelNoise, StudentTNoise
from icml25.signsgd_risk.ode import phi, preconditioned_drift, risk_ode, sign_noise_covariance
from icml25.signsgd_risk.simulate import sign_gradient_moments, simulate

FROZEN_PHI = (
    "the ODE with phi frozen at its starting value phi(P(0)) (no effective-learning-rate "
    "feedback; closed form)"
)
SEED_NOISE = (
    "seed noise: sup over t of the standard error of the seed-mean simulated risk / the ODE "
    "(the setting can show a gap this small)"
)

CLAIMS = (
    Claim(
        id="ode_diag_gaussian",
        statement="The deterministic risk ODE describes signSGD's risk curve in high dimensions.",
        where="Main theorem (signHSGD / risk ODE), figures of risk curves",
        metric="sup over t in [0, {{t_main}}] of |mean simulated risk / ODE - 1|, diagonal K, "
        "d = {{d_diag}}, Gaussian noise std 0.5, mean over the run seeds",
        paper_value="curves coincide (brief's check: 3.0%)",
        rule=Rule("<=", 0.05, partial=0.10),
        null=Null(arm=FROZEN_PHI),
        gate=Gate(SEED_NOISE),
    ),
    Claim(
        id="ode_diag_cauchy",
        statement="...also under heavy-tailed (Cauchy) label noise, through E exp(-eps^2/4P).",
        where="Main theorem; noise compression",
        metric="as ode_diag_gaussian, Cauchy noise scale 0.5",
        paper_value="curves coincide (brief's check: 2.3%)",
        rule=Rule("<=", 0.05, partial=0.10),
        null=Null(arm=FROZEN_PHI),
        gate=Gate(SEED_NOISE),
    ),
    Claim(
        id="ode_correlated",
        statement="For non-diagonal K the full matrix ODE with the arcsine-law noise covariance "
        "K_sigma describes the risk.",
        where="Main theorem (general K)",
        metric="as ode_diag_gaussian, Toeplitz 0.6^|i-j| correlations, d = {{d_dense}}",
        paper_value="curves coincide (brief's check: 8.2%)",
        rule=Rule("<=", 0.10, partial=0.20),
        null=Null(
            arm="the diagonal ODE on diag(K): the correlations removed (no off-diagonal drift, "
            "no arcsine-law noise covariance)"
        ),
        gate=Gate(SEED_NOISE),
    ),
    Claim(
        id="ode_error_shrinks",
        statement="The ODE is the high-dimensional limit: the gap to the simulation shrinks as d "
        "grows.",
        where="Main theorem (error bound vanishing with d)",
        metric="err(d = {{d_scaling_last}}) / err(d = {{d_scaling_first}}), err = per-seed sup "
        "relative error averaged over seeds; about {{shrink_expected}} if err ~ d^-1/2",
        paper_value="-> 0 as d -> inf",
        rule=Rule("<=", 0.75, partial=1.0),
        null=Null(arm=f"the same ratio against a wrong limit: {FROZEN_PHI}"),
    ),
    Claim(
        id="heavy_tail_sign_matches_ode",
        statement="Under Cauchy noise signSGD is stable and follows the ODE.",
        where="Noise compression discussion",
        metric="|mean final signSGD risk / ODE - 1| at t = {{t_heavy}}, d = {{d_heavy}}, Cauchy "
        "scale 0.5",
        paper_value="matches (brief's check: 0.14)",
        rule=Rule("<=", 0.05, partial=0.10),
        null=Null(arm=FROZEN_PHI),
        gate=Gate("seed noise: standard error of the seed-mean final risk / the ODE's final risk"),
    ),
    Claim(
        id="heavy_tail_sgd_worse",
        statement="...while SGD at the same learning rate is not (its risk is far larger).",
        where="Noise compression discussion",
        metric="median SGD final risk / mean signSGD final risk, same setting",
        paper_value="SGD >> signSGD (brief's check: 47 vs 0.14)",
        rule=Rule(">=", 10.0, partial=3.0),
        null=Null(
            arm="the same ratio under Gaussian label noise of std 0.5 (light tails: nothing for "
            "the sign to compress)"
        ),
    ),
    Claim(
        id="precond_exponent_signsgd",
        statement="Diagonal preconditioning: signSGD's drift is D^{-1/2} K, so coordinate i "
        "decays at a rate proportional to lambda_i^{1/2}.",
        where="Diagonal preconditioning effect",
        metric="|fitted exponent - 0.5| per seed: slope of log rate vs log lambda over 8 "
        "eigenvalue bins, rate from the projection of r(t) on r(0) at t = {{t_decay}} (setting A, "
        "d = {{d_diag}})",
        paper_value=0.5,
        rule=Rule("<=", 0.1, partial=0.2),
        null=Null(arm="the same fit on SGD's run (no sign: drift K): |SGD exponent - 0.5|"),
    ),
    Claim(
        id="precond_exponent_sgd",
        statement="...whereas SGD's rate is proportional to lambda_i.",
        where="Diagonal preconditioning effect (comparison)",
        metric="|fitted exponent - 1| per seed, same measurement for SGD",
        paper_value=1.0,
        rule=Rule("<=", 0.1, partial=0.2),
        null=Null(arm="the same fit on signSGD's run: |signSGD exponent - 1|"),
    ),
    Claim(
        id="effective_lr_rises",
        statement="Effective learning rate: signSGD's effective step lr phi(P) grows as the "
        "risk falls.",
        where="Effective learning rate effect",
        metric="Spearman correlation of the measured effective lr (Monte Carlo sign-gradient, "
        "{{phi_samples}} samples, at 6 iterates along the run) with the risk, worst of Gaussian "
        "and Cauchy noise, per seed",
        paper_value="increasing as risk decreases",
        rule=Rule("<=", -0.9, partial=-0.5),
        null=Null(
            arm="SGD's gradient (no sign) at the same iterates: Monte Carlo mean of "
            "(<x,r> - eps) x projected on its drift K r ({{sgd_samples}} samples per "
            "iterate), same Spearman correlation"
        ),
        gate=Gate(
            "the risk falls along the run: min over seeds and noises of P(t=0) / P(end)",
            Rule(">=", 2.0),
        ),
    ),
    Claim(
        id="effective_lr_formula",
        statement="The expected sign-gradient is phi(P) D^{-1/2} K r with "
        "phi = (2/pi) E[exp(-eps^2/4P)] / sqrt(2P).",
        where="Derivation of the drift",
        metric="max over the 6 iterates of |measured phi / formula - 1|, Gaussian noise, per seed",
        paper_value="exact in the limit",
        rule=Rule("<=", 0.05, partial=0.10),
        null=Null(arm="the formula with phi frozen at the iterate at t = 0, phi(P(0))"),
    ),
    Claim(
        id="noise_compression",
        statement="Noise compression: label noise enters only through E[exp(-eps^2/4P)], finite "
        "even for infinite-variance noise.",
        where="Noise compression effect",
        metric="as effective_lr_formula, max over Cauchy (scale 0.5) and Student-t (df 1.5) runs",
        paper_value="exact in the limit",
        rule=Rule("<=", 0.05, partial=0.10),
        null=Null(
            arm="the formula without the noise factor E[exp(-eps^2/4P)] (the noiseless phi, "
            "(2/pi)/sqrt(2P))"
        ),
    ),
    Claim(
        id="noise_reshaping",
        statement="Gradient-noise reshaping: signSGD's gradient-noise covariance is "
        "K_sigma = (2/pi) arcsin(D^{-1/2} K D^{-1/2}), independent of the risk and the noise.",
        where="Gradient noise reshaping effect",
        metric="max relative Frobenius error of the Monte Carlo UNCENTRED second moment "
        "E[g g^T] of the sign-gradient vs K_sigma over {start, end of a run} x {Gaussian, "
        "Cauchy}, correlated K, d = {{cov_d}}, {{cov_samples}} samples, per seed; the Monte Carlo "
        "floor is reported beside it "
        "(metric changed after a run: it was the centred covariance, see the README)",
        paper_value="exact",
        rule=Rule("<=", 0.05, partial=0.10),
        null=Null(
            arm="the unreshaped correlation matrix D^{-1/2} K D^{-1/2} (no arcsine law) in place "
            "of K_sigma, same measured E[g g^T]"
        ),
        gate=Gate(
            "Monte Carlo floor sqrt(sum(1 - K_sigma^2) / n) / ||K_sigma||_F of the measured "
            "second moment"
        ),
    ),
    Claim(
        id="noise_reshaping_centred",
        statement="The centred covariance of the sign-gradient is K_sigma minus the outer "
        "product of the phi-predicted mean mu = phi(P) D^{-1/2} K r (a finite-d check).",
        where="Gradient noise reshaping effect (our check at finite d)",
        metric="as noise_reshaping, for the centred covariance vs K_sigma - mu mu^T",
        paper_value="exact up to the drift's error",
        rule=Rule("<=", 0.05, partial=0.10),
        kind="control",
    ),
    Claim(
        id="adam_conjecture",
        statement="The paper closes with a conjecture on extending the ODE to Adam.",
        where="Conclusion",
        metric="none",
        paper_value="conjecture",
        rule=None,
        out_of_scale="not tested as the paper words it: the conjecture's exact statement was "
        "not reachable offline. The adam_* controls test OUR RECONSTRUCTION (a homogenized "
        "Adam ODE), not the paper's statement",
    ),
    Claim(
        id="adam_ode_matches",
        statement="Reconstruction (not the paper's statement): simulated Adam follows the "
        "homogenized Adam ODE (drift phi_A D^{-1/2} K r, phi_A and noise by Monte Carlo over "
        "resampled histories) for beta2 in {0, 0.5, 0.9, 0.99} x beta1 in {0, 0.9}",
        where="Conclusion (Adam conjecture), as reconstructed here",
        metric="sup over t in [0, {{t_main}}] of |mean simulated risk / ODE - 1|, one value per "
        "(beta1, beta2) except (0.9, 0) (no ODE: E[1/|g|] = inf), diagonal K, Gaussian noise "
        "std 0.5, lr 0.3, d = {{adam_d_large}}",
        paper_value="reconstruction",
        rule=Rule("<=", 0.05, partial=0.10),
        kind="control",
    ),
    Claim(
        id="adam_error_shrinks",
        statement="Reconstruction: the gap between simulated Adam and the Adam ODE shrinks as d "
        "doubles.",
        where="Conclusion (Adam conjecture), as reconstructed here",
        metric="err(2d) / err(d) per (beta1, beta2) as in adam_ode_matches, err = per-seed sup "
        "relative error averaged over seeds; d = {{adam_d_small}} -> {{adam_d_large}}; about 0.71 "
        "if err ~ d^-1/2",
        paper_value="reconstruction",
        rule=Rule("<=", 0.85, partial=1.0),
        kind="control",
    ),
    Claim(
        id="adam_precond_exponent",
        statement="Reconstruction: Adam keeps signSGD's diagonal preconditioning, coordinate i "
        "decaying at a rate proportional to lambda_i^{1/2}, for every (beta1, beta2).",
        where="Conclusion (Adam conjecture), as reconstructed here",
        metric="|fitted exponent - 0.5| averaged over seeds, one value per (beta1, beta2) of the "
        "sweep except (0.9, 0) (no ODE), measured as precond_exponent_signsgd at t = {{t_decay}} "
        "at the larger d = {{adam_d_large}}",
        paper_value="reconstruction: 0.5",
        rule=Rule("<=", 0.1, partial=0.2),
        kind="control",
    ),
    Claim(
        id="adam_cauchy_ode",
        statement="Reconstruction: under Cauchy noise simulated Adam (beta1 = 0) follows the "
        "Adam ODE, whose phi_A is tabulated by Monte Carlo over a grid of risks.",
        where="Conclusion (Adam conjecture), as reconstructed here",
        metric="as adam_ode_matches, Cauchy noise scale 0.5, beta1 = 0, beta2 in {0, 0.5, 0.9, "
        "0.99}, one value per beta2, d = {{adam_d_large}}",
        paper_value="reconstruction",
        rule=Rule("<=", 0.05, partial=0.10),
        kind="control",
    ),
    Claim(
        id="adam_cauchy_robustness_fades",
        statement="Reconstruction: signSGD's robustness to heavy tails fades as beta2 -> 1 "
        "(phi_A -> 1/sqrt(2P + E eps^2) = 0 for Cauchy noise).",
        where="Conclusion (Adam conjecture), as reconstructed here",
        metric="Spearman correlation between beta2 in {0, 0.5, 0.9, 0.99} and the simulated "
        "final-risk ratio Cauchy / Gaussian (beta1 = 0, t = {{t_main}}, seed means, larger d = "
        "{{adam_d_large}})",
        paper_value="reconstruction: increasing",
        rule=Rule(">=", 0.99, partial=0.5),
        kind="control",
    ),
)

PROBLEM_SEED = 20250202
LR = 0.3
NOISE_STD = 0.5
CAUCHY = 0.5


@dataclass(frozen=True)
class Config:
    d_diag: int
    d_dense: int
    t_main: float
    scaling_ds: tuple[int, ...]
    d_heavy: int
    t_heavy: float
    t_decay: float
    phi_samples: int
    cov_d: int
    cov_samples: int
    reshaping_ds: tuple[int, ...]  # the centred gap vs d (figure)
    adam_ds: tuple[int, int]  # d and 2d of the Adam sweep
    adam_chains: int  # Monte Carlo chains for phi_A and q


CONFIGS = {
    "tiny": Config(
        150, 40, 2.0, (50, 150), 100, 2.0, 1.0, 2000, 10, 4000, (6, 12), (100, 200), 500
    ),
    "quick": Config(
        1000, 400, 6.0, (250, 500, 1000), 500, 8.0, 3.0, 20_000, 50, 100_000,
        (12, 25, 50, 100), (500, 1000), 4000,
    ),
    "full": Config(
        1000, 400, 6.0, (250, 500, 1000, 2000), 500, 8.0, 3.0, 40_000, 50, 200_000,
        (12, 25, 50, 100, 200, 400), (1000, 2000), 8000,
    ),
}  # fmt: skip


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them."""
    cfg = CONFIGS[budget]
    first, last = cfg.scaling_ds[0], cfg.scaling_ds[-1]  # ode_error_shrinks: last d / first d
    return {
        "d_diag": cfg.d_diag,
        "d_dense": cfg.d_dense,
        "t_main": f"{cfg.t_main:g}",
        "t_decay": f"{cfg.t_decay:g}",
        "d_heavy": cfg.d_heavy,
        "t_heavy": f"{cfg.t_heavy:g}",
        "d_scaling_first": first,
        "d_scaling_last": last,
        "shrink_expected": f"{math.sqrt(first / last):.2g}",
        "phi_samples": cfg.phi_samples,
        "sgd_samples": cfg.phi_samples // 10,  # the null arm's Monte Carlo size in reproduce
        "cov_d": cfg.cov_d,
        "cov_samples": cfg.cov_samples,
        "adam_d_small": cfg.adam_ds[0],
        "adam_d_large": cfg.adam_ds[1],
    }


ADAM_BETAS = tuple((b1, b2) for b1 in (0.0, 0.9) for b2 in (0.0, 0.5, 0.9, 0.99))
"""The sweep of the issue; (0.9, 0) has no ODE in the reconstruction (E[1/|g|] is infinite), so it
is simulated and reported in a note but left out of the ODE comparisons (fixed before running)."""


def diagonal_problem(d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(K diagonal, theta0, theta*)`` of setting A."""
    rng = np.random.default_rng([PROBLEM_SEED, d])  # a stream no run seed shares
    return np.linspace(0.2, 2.0, d), np.zeros(d), rng.standard_normal(d) / math.sqrt(d)


def correlated_covariance(d: int) -> np.ndarray:
    """Toeplitz ``0.6^|i-j|`` correlations with variances ``linspace(0.2, 2)``."""
    idx = np.arange(d)
    s = np.sqrt(np.linspace(0.2, 2.0, d))
    return s[:, None] * 0.6 ** np.abs(idx[:, None] - idx[None, :]) * s[None, :]


def _sup_rel(sim: np.ndarray, ode: np.ndarray) -> float:
    return float(np.max(np.abs(sim / ode - 1.0)))


def frozen_phi_risk(
    K: np.ndarray, r0: np.ndarray, noise: LabelNoise, lr: float, t: np.ndarray
) -> np.ndarray:
    """The null arms' wrong limit: the diagonal-K risk ODE with phi frozen at phi(P(0)).

    ``dV_ii/dt = -2 lr phi0 sqrt(K_ii) V_ii + lr^2 / d`` is linear, so
    ``V_ii(t) = V_inf + (r0_i^2 - V_inf) exp(-a_i t)`` with ``a_i = 2 lr phi0 sqrt(K_ii)`` and
    ``V_inf = lr^2 / (d a_i)``; returns ``P(t) = sum_i K_ii V_ii(t) / 2``.
    """
    phi0 = phi(0.5 * float(K @ r0**2), noise)
    a = 2.0 * lr * phi0 * np.sqrt(K)
    v_inf = lr**2 / (K.size * a)
    V = v_inf + (r0**2 - v_inf) * np.exp(-np.outer(t, a))
    return 0.5 * V @ K


def _over_seeds(rows: Any, statistic: Any) -> Measurement | list[float]:
    """A statistic of per-seed rows with a bootstrap over seeds (its value alone for one seed)."""
    arr = np.asarray(rows, dtype=float)
    if arr.shape[0] < 2:
        return [float(statistic(arr))]
    return Measurement.bootstrap([arr], statistic=statistic)


def _curve_gap(ode: np.ndarray) -> Any:
    """The statistic sup_t |mean over rows / ode - 1| of a (seeds, times) array."""
    return lambda rows: _sup_rel(rows.mean(axis=0), ode)


def _seed_noise(risk: np.ndarray, ode: np.ndarray) -> float:
    """sup_t of the standard error of the seed mean relative to the ODE (NaN for one seed)."""
    if risk.shape[0] < 2:
        return math.nan
    return float(np.max(risk.std(axis=0, ddof=1) / math.sqrt(risk.shape[0]) / ode))


def _sgd_coefficient(
    K: np.ndarray, r: np.ndarray, noise: LabelNoise, n: int, rng: np.random.Generator
) -> float:
    """SGD's measured effective-lr coefficient at r: Monte Carlo mean of (<x,r> - eps) x, x ~
    N(0, diag K), projected on its drift K r (1 in expectation at every r)."""
    x = rng.standard_normal((n, K.size)) * np.sqrt(K)
    g = ((x @ r - noise.sample(rng, n))[:, None] * x).mean(axis=0)
    u = K * r
    return float(g @ u) / float(u @ u)


def reproduce(ctx: RunContext) -> dict[str, Any]:
    cfg = CONFIGS[ctx.budget]
    seeds = ctx.seeds
    out: dict[str, list[float]] = {c.id: [] for c in CLAIMS if c.rule is not None}
    fig_data: dict[str, Any] = {}
    gauss, cauchy = GaussianNoise(NOISE_STD), CauchyNoise(CAUCHY)
    student = StudentTNoise(df=1.5, scale=0.5)

    # A: diagonal K, ODE vs simulation, with iterates kept for the effect measurements.
    K, th0, ths = diagonal_problem(cfg.d_diag)
    times = np.linspace(0.0, cfg.t_main, 61)
    snap = np.arange(0, times.size, 12)  # 6 iterates along the run: t = 0, 1.2, ..., 6
    sims: dict[str, Any] = {}
    res: dict[str, Any] = {}  # measurements with their own intervals, nulls and gates
    for key, noise in (("gaussian", gauss), ("cauchy", cauchy), ("student", student)):
        ctx.progress(f"setting A ({key} noise): ODE and {len(seeds)} simulations at d={K.size}")
        ode = risk_ode(K, th0, ths, noise=noise, lr=LR, t_max=cfg.t_main, times=times)
        sim = simulate(
            K, th0, ths, noise=noise, lr=LR, t_max=cfg.t_main, seeds=seeds, times=times,
            keep_iterates=True,
        )  # fmt: skip
        sims[key] = (ode, sim, noise)
        if key != "student":
            cid = f"ode_diag_{key}"
            res[cid] = _over_seeds(sim.risk, _curve_gap(ode.risk))
            frozen = frozen_phi_risk(K, th0 - ths, noise, LR, sim.t)
            res[null_key(cid)] = _over_seeds(sim.risk, _curve_gap(frozen))
            res[gate_key(cid)] = [_seed_noise(sim.risk, ode.risk)]
    fig_data["A"] = sims

    # Effective learning rate and noise compression: Monte Carlo sign-gradients at iterates.
    phis: dict[str, np.ndarray] = {}
    for key, (_ode, sim, noise) in sims.items():
        ctx.progress(f"effective lr ({key}): {cfg.phi_samples} sign-gradients at 6 iterates/seed")
        meas = np.empty((len(seeds), snap.size))
        pred = np.empty((len(seeds), snap.size))
        for si, seed in enumerate(seeds):
            rng = np.random.default_rng([seed, 7])
            for i, j in enumerate(snap):
                assert sim.iterates is not None
                r = sim.iterates[si, j]
                g, _ = sign_gradient_moments(K, r, noise=noise, n_samples=cfg.phi_samples, rng=rng)
                meas[si, i] = measured_phi(K, r, g)
                pred[si, i] = phi(float(sim.risk[si, j]), noise)
        phis[key] = np.stack([meas, pred, sim.risk[:, snap]])
    # Null arm of effective_lr_rises: SGD's gradient at the same iterates (its coefficient is 1
    # in expectation everywhere); a tenth of the samples, since it has no trend to resolve.
    sgd_coef: dict[str, np.ndarray] = {}
    for key in ("gaussian", "cauchy"):
        _ode, sim, noise = sims[key]
        assert sim.iterates is not None
        coef = np.empty((len(seeds), snap.size))
        for si, seed in enumerate(seeds):
            null_rng = np.random.default_rng([seed, 48])
            for i, j in enumerate(snap):
                r = sim.iterates[si, j]
                coef[si, i] = _sgd_coefficient(K, r, noise, cfg.phi_samples // 10, null_rng)
        sgd_coef[key] = coef
    for key in ("effective_lr_rises", "effective_lr_formula", "noise_compression"):
        out[null_key(key)] = []
    out[gate_key("effective_lr_rises")] = []
    for si in range(len(seeds)):
        rho = [stats.spearmanr(phis[k][0, si], phis[k][2, si])[0] for k in ("gaussian", "cauchy")]
        out["effective_lr_rises"].append(float(max(rho)))
        rho0 = [stats.spearmanr(sgd_coef[k][si], phis[k][2, si])[0] for k in sgd_coef]
        out[null_key("effective_lr_rises")].append(float(max(rho0)))
        out[gate_key("effective_lr_rises")].append(
            min(float(phis[k][2, si, 0] / phis[k][2, si, -1]) for k in ("gaussian", "cauchy"))
        )
        err = {k: float(np.max(np.abs(phis[k][0, si] / phis[k][1, si] - 1))) for k in phis}
        out["effective_lr_formula"].append(err["gaussian"])
        meas, _, risk = phis["gaussian"][:, si]
        phi0 = phi(float(risk[0]), gauss)
        out[null_key("effective_lr_formula")].append(float(np.max(np.abs(meas / phi0 - 1))))
        out["noise_compression"].append(max(err["cauchy"], err["student"]))
        noiseless = [
            float(np.max(np.abs(phis[k][0, si] / [phi(P) for P in phis[k][2, si]] - 1)))
            for k in ("cauchy", "student")
        ]
        out[null_key("noise_compression")].append(max(noiseless))
    fig_data["phi"] = phis

    # Error vs dimension.
    errs = []
    per_seed, per_seed_null = [], []  # (d, seed) sup gaps to the ODE and to the frozen-phi one
    for d in cfg.scaling_ds:
        ctx.progress(f"error vs dimension: d={d}")
        Kd, a0, astar = diagonal_problem(d)
        ode = risk_ode(Kd, a0, astar, noise=gauss, lr=LR, t_max=cfg.t_main, times=times)
        sim = simulate(
            Kd, a0, astar, noise=gauss, lr=LR, t_max=cfg.t_main, seeds=seeds, times=times
        )
        frozen = frozen_phi_risk(Kd, a0 - astar, gauss, LR, sim.t)
        per_seed.append([_sup_rel(s, ode.risk) for s in sim.risk])
        per_seed_null.append([_sup_rel(s, frozen) for s in sim.risk])
        errs.append(float(np.mean(per_seed[-1])))

    def shrink(rows: np.ndarray) -> float:  # rows: (seed, [err at the first d, at the last d])
        return float(rows[:, 1].mean() / rows[:, 0].mean())

    for key, table in (
        ("ode_error_shrinks", per_seed),
        (null_key("ode_error_shrinks"), per_seed_null),
    ):
        res[key] = _over_seeds(np.array([table[0], table[-1]]).T, shrink)
    fig_data["scaling"] = (cfg.scaling_ds, errs)

    # Preconditioning exponents.
    slopes: dict[str, list[float]] = {"signsgd": [], "sgd": []}
    rates: dict[str, Any] = {}
    for opt in ("signsgd", "sgd"):
        ctx.progress(f"preconditioning: {opt} decay rates per eigenvalue bin")
        run = simulate(
            K, th0, ths, noise=gauss, lr=LR, t_max=cfg.t_decay, seeds=seeds,
            times=[0.0, cfg.t_decay], keep_iterates=True, optimizer=opt,
        )  # fmt: skip
        assert run.iterates is not None
        for si in range(len(seeds)):
            lam, rate = binned_decay_rates(
                K, run.iterates[si, 0], run.iterates[si, 1], cfg.t_decay, n_bins=8
            )
            slopes[opt].append(decay_exponent(lam, rate))
            rates.setdefault(opt, (lam, rate))
    out["precond_exponent_signsgd"] = [abs(s - 0.5) for s in slopes["signsgd"]]
    out["precond_exponent_sgd"] = [abs(s - 1.0) for s in slopes["sgd"]]
    out[null_key("precond_exponent_signsgd")] = [abs(s - 0.5) for s in slopes["sgd"]]
    out[null_key("precond_exponent_sgd")] = [abs(s - 1.0) for s in slopes["signsgd"]]
    fig_data["rates"] = (rates, slopes)

    # B: correlated K, full matrix ODE.
    ctx.progress(f"setting B: correlated K, matrix ODE at d={cfg.d_dense}")
    Kc = correlated_covariance(cfg.d_dense)
    _, c0, cstar = diagonal_problem(cfg.d_dense)
    ode_c = risk_ode(Kc, c0, cstar, noise=gauss, lr=LR, t_max=cfg.t_main, times=times)
    sim_c = simulate(Kc, c0, cstar, noise=gauss, lr=LR, t_max=cfg.t_main, seeds=seeds, times=times)
    diag_ode = risk_ode(np.diag(Kc), c0, cstar, noise=gauss, lr=LR, t_max=cfg.t_main, times=times)
    res["ode_correlated"] = _over_seeds(sim_c.risk, _curve_gap(ode_c.risk))
    res[null_key("ode_correlated")] = _over_seeds(sim_c.risk, _curve_gap(diag_ode.risk))
    res[gate_key("ode_correlated")] = [_seed_noise(sim_c.risk, ode_c.risk)]
    fig_data["B"] = (ode_c, sim_c, diag_ode)

    # Noise reshaping: second moments of the sign-gradient at two iterates, two noises.
    ctx.progress(f"noise reshaping: sign-gradient second moments at d={cfg.cov_d}")
    Ks = correlated_covariance(cfg.cov_d)
    _, s0, sstar = diagonal_problem(cfg.cov_d)
    target = sign_noise_covariance(Ks)
    floor = reshaping_floor(target, cfg.cov_samples)
    reshaping_risks = []
    naive_centred = 0.0
    s_inv = 1.0 / np.sqrt(np.diag(Ks))
    unreshaped = Ks * s_inv[:, None] * s_inv[None, :]  # the correlation matrix, no arcsine law
    out[null_key("noise_reshaping")], out[gate_key("noise_reshaping")] = [], [floor]
    for si, seed in enumerate(seeds):
        run = simulate(
            Ks, s0, sstar, noise=gauss, lr=LR, t_max=cfg.t_main, seeds=[seed],
            times=[0.0, cfg.t_main], keep_iterates=True,
        )  # fmt: skip
        assert run.iterates is not None
        rng = np.random.default_rng([seed, 11])
        worst_u = worst_c = worst_null = 0.0
        for i in (0, 1):
            for noise in (gauss, cauchy):
                gaps = reshaping_gaps(
                    Ks, run.iterates[0, i], noise=noise, n_samples=cfg.cov_samples, rng=rng
                )
                worst_u = max(worst_u, gaps.uncentred)
                null_gap = np.linalg.norm(gaps.second_moment - unreshaped)
                worst_null = max(worst_null, float(null_gap / np.linalg.norm(unreshaped)))
                worst_c = max(worst_c, gaps.centred)
                # The old metric (centred covariance vs K_sigma), kept as a diagnostic.
                naive_centred = max(naive_centred, gaps.naive)
        out["noise_reshaping"].append(worst_u)
        out[null_key("noise_reshaping")].append(worst_null)
        out["noise_reshaping_centred"].append(worst_c)
        if si == 0:
            reshaping_risks = [float(v) for v in run.risk[0]]
    ctx.note(
        f"- Noise reshaping (d={cfg.cov_d}, {cfg.cov_samples} samples, worst over iterates and "
        f"noises; max over seeds): uncentred E[g g^T] vs K_sigma "
        f"{max(out['noise_reshaping']):.4f}, centred covariance vs K_sigma - mu mu^T "
        f"{max(out['noise_reshaping_centred']):.4f}; Monte Carlo floor (expected relative "
        f"Frobenius error of the sample mean of g g^T, sqrt(sum(1 - K_sigma^2) / n) / "
        f"||K_sigma||_F) {floor:.4f}. Old metric (centred covariance vs K_sigma): "
        f"{naive_centred:.4f}."
    )
    fig_data["reshaping"] = _reshaping_vs_d(ctx, cfg, seeds[0], gauss)

    # Adam (our reconstruction): sweep (beta1, beta2) at d and 2d, Gaussian then Cauchy noise.
    fig_data["adam"] = _adam_block(ctx, cfg, seeds, gauss, cauchy, out)
    res["adam_cauchy_robustness_fades"] = fig_data["adam"]["robustness"]

    # C: heavy tails, signSGD vs SGD.
    ctx.progress(f"setting C: Cauchy noise, signSGD vs SGD at d={cfg.d_heavy}")
    Kh, h0, hstar = diagonal_problem(cfg.d_heavy)
    th = np.linspace(0.0, cfg.t_heavy, 41)
    ode_h = risk_ode(Kh, h0, hstar, noise=cauchy, lr=LR, t_max=cfg.t_heavy, times=th)
    sign_h = simulate(Kh, h0, hstar, noise=cauchy, lr=LR, t_max=cfg.t_heavy, seeds=seeds, times=th)
    sgd_h = simulate(
        Kh, h0, hstar, noise=cauchy, lr=LR, t_max=cfg.t_heavy, seeds=seeds, times=th,
        optimizer="sgd",
    )  # fmt: skip
    sign_final = float(sign_h.risk[:, -1].mean())
    sgd_final = np.nan_to_num(sgd_h.risk[:, -1], nan=np.inf)
    ode_end = float(ode_h.risk[-1])
    frozen_end = float(frozen_phi_risk(Kh, h0 - hstar, cauchy, LR, th[-1:])[0])
    res["heavy_tail_sign_matches_ode"] = _over_seeds(
        sign_h.risk[:, -1], lambda v: abs(float(v.mean()) / ode_end - 1)
    )
    res[null_key("heavy_tail_sign_matches_ode")] = _over_seeds(
        sign_h.risk[:, -1], lambda v: abs(float(v.mean()) / frozen_end - 1)
    )
    res[gate_key("heavy_tail_sign_matches_ode")] = [
        float(sign_h.risk[:, -1].std(ddof=1) / math.sqrt(len(seeds)) / ode_end)
        if len(seeds) > 1
        else math.nan
    ]
    # Gaussian contrast (a note, not a claim): SGD's ODE and whether SGD wins with light tails.
    sgd_g = simulate(
        Kh, h0, hstar, noise=gauss, lr=LR, t_max=cfg.t_heavy, seeds=seeds, times=th,
        optimizer="sgd",
    )  # fmt: skip
    sgd_g_ode = risk_ode(
        Kh, h0, hstar, noise=gauss, lr=LR, t_max=cfg.t_heavy, times=th, optimizer="sgd"
    )
    sign_g = simulate(Kh, h0, hstar, noise=gauss, lr=LR, t_max=cfg.t_heavy, seeds=seeds, times=th)
    fig_data["C"] = (ode_h, sign_h, sgd_h)

    def worse(rows: np.ndarray) -> float:  # rows: (seed, [SGD final, signSGD final])
        return float(np.median(rows[:, 0]) / rows[:, 1].mean())

    # A diverged SGD run (inf or NaN) counts as risk 1e300, so that resamples stay finite.
    for key, a, b in (
        ("heavy_tail_sgd_worse", sgd_h, sign_h),
        (null_key("heavy_tail_sgd_worse"), sgd_g, sign_g),
    ):
        finals = np.nan_to_num(np.stack([a.risk[:, -1], b.risk[:, -1]], axis=1), nan=1e300)
        res[key] = _over_seeds(np.minimum(finals, 1e300), worse)

    _notes(ctx, cfg, sims, phis, errs, slopes, sign_final, sgd_final, ode_h, reshaping_risks)
    ctx.note(
        f"- Gaussian noise, d={cfg.d_heavy}, t={cfg.t_heavy:g}, both lr {LR}: final risk SGD "
        f"{sgd_g.risk[:, -1].mean():.4g} (SGD ODE {sgd_g_ode.risk[-1]:.4g}, sup relative gap "
        f"{_sup_rel(sgd_g.risk.mean(axis=0), sgd_g_ode.risk):.3f}) vs signSGD "
        f"{sign_g.risk[:, -1].mean():.4g}: with light tails SGD is not worse."
    )
    ctx.note(
        f"- Correlated K: ignoring the correlations (the diagonal ODE on diag K) would give a sup "
        f"relative gap of {_sup_rel(sim_c.risk.mean(axis=0), diag_ode.risk):.3f} instead of "
        f"{_sup_rel(sim_c.risk.mean(axis=0), ode_c.risk):.3f}."
    )
    _figures(ctx, cfg, fig_data)
    return {**out, **res}


def _reshaping_vs_d(
    ctx: RunContext, cfg: Config, seed: int, noise: LabelNoise
) -> dict[str, np.ndarray]:
    """The old (centred) gap against d at the start of a run: it is ||mu||^2 / ||K_sigma||_F.

    For each d: the full-matrix naive centred gap ||cov - K_sigma|| / ||K_sigma|| and its Monte
    Carlo floor; the population value |mu|^2 / ||K_sigma||_F from the measured mean (its
    sampling bias d / n subtracted) and from the phi-predicted mean.
    """
    ds = np.array(cfg.reshaping_ds)
    naive, floors, measured, predicted = [], [], [], []
    rng = np.random.default_rng([seed, 13])
    for d in ds:
        ctx.progress(f"noise reshaping vs d: d={d}")
        Kd = correlated_covariance(int(d))
        _, _, star = diagonal_problem(int(d))
        r = -star
        norm = float(np.linalg.norm(sign_noise_covariance(Kd)))
        gaps = reshaping_gaps(Kd, r, noise=noise, n_samples=cfg.cov_samples, rng=rng)
        P = 0.5 * float(r @ Kd @ r)
        mu = phi(P, noise) * (preconditioned_drift(Kd) @ r)
        naive.append(gaps.naive)
        floors.append(gaps.floor)
        mean = gaps.mean
        var = 1.0 - mean**2
        measured.append((float(mean @ mean) - float(var.sum()) / cfg.cov_samples) / norm)
        predicted.append(float(mu @ mu) / norm)
    ctx.note(
        "- Old (centred) reshaping gap against d (start of a run, Gaussian noise, seed "
        f"{seed}): "
        + ", ".join(
            f"d={d}: {g:.4f} (floor {f:.4f}, |mu|^2/||K_sigma|| measured {m:.4f}, "
            f"phi-predicted {p:.4f})"
            for d, g, f, m, p in zip(ds, naive, floors, measured, predicted, strict=True)
        )
    )
    return {
        "d": ds,
        "naive": np.array(naive),
        "floor": np.array(floors),
        "measured": np.array(measured),
        "predicted": np.array(predicted),
    }


def _adam_block(
    ctx: RunContext,
    cfg: Config,
    seeds: tuple[int, ...],
    gauss: LabelNoise,
    cauchy: LabelNoise,
    out: dict[str, list[float]],
) -> dict[str, Any]:
    """Simulated Adam against the reconstructed Adam ODE (claims adam_*)."""
    times = np.linspace(0.0, cfg.t_main, 61)
    i_decay = int(np.argmin(np.abs(times - cfg.t_decay)))
    d_small, d_large = cfg.adam_ds
    curves: dict[tuple[float, float], Any] = {}
    finals: dict[str, dict[float, float]] = {"gaussian": {}, "cauchy": {}}
    per_seed: dict[str, dict[float, np.ndarray]] = {"gaussian": {}, "cauchy": {}}
    lines = []
    for b1, b2 in ADAM_BETAS:
        has_ode = not (b1 > 0 and b2 == 0)
        errs = []
        for d in (d_small, d_large):
            ctx.progress(f"Adam (reconstruction) beta1={b1:g} beta2={b2:g}: d={d}")
            K, th0, ths = diagonal_problem(d)
            big = d == d_large
            sim = simulate_adam(
                K, th0, ths, noise=gauss, lr=LR, t_max=cfg.t_main, beta1=b1, beta2=b2,
                seeds=seeds, times=times, keep_iterates=big,
            )  # fmt: skip
            if not has_ode:
                if big:
                    expo = f"{_adam_exponent(K, sim, i_decay):.3f}"
                    lines.append(
                        f"beta1={b1:g}, beta2={b2:g} (no ODE): simulated final risk per seed "
                        + ", ".join(f"{v:.4g}" for v in sim.risk[:, -1])
                        + f", |exponent - 0.5| {expo}"
                    )
                continue
            ode = adam_ode(
                K, th0, ths, noise=gauss, lr=LR, t_max=cfg.t_main, beta1=b1, beta2=b2,
                times=times, n_chains=cfg.adam_chains,
            )  # fmt: skip
            errs.append(float(np.mean([_sup_rel(s, ode.risk) for s in sim.risk])))
            if big:
                gap = _sup_rel(sim.risk.mean(axis=0), ode.risk)
                out["adam_ode_matches"].append(gap)
                out["adam_precond_exponent"].append(_adam_exponent(K, sim, i_decay))
                coef = ode.coefficients
                assert coef is not None
                curves[(b1, b2)] = (ode, sim)
                if b1 == 0.0:
                    finals["gaussian"][b2] = float(sim.risk[:, -1].mean())
                    per_seed["gaussian"][b2] = sim.risk[:, -1]
                lines.append(
                    f"beta1={b1:g}, beta2={b2:g}: phi_A(P=0.5) {coef.at(0.5)[0]:.4f} "
                    f"({coef.method}), q {coef.at(0.5)[1]:.4f}; sup gap {gap:.4f}; "
                    f"per-seed error d={d_small}: {errs[0]:.4f}, d={d_large}: {errs[1]:.4f}; "
                    f"final risk ODE {ode.risk[-1]:.4g}, simulated {sim.risk[:, -1].mean():.4g}"
                )
        if has_ode:
            out["adam_error_shrinks"].append(errs[1] / errs[0])
    ctx.note("- Adam (reconstruction), Gaussian noise: " + "; ".join(lines) + ".")

    # Cauchy noise, beta1 = 0: does the heavy-tail robustness fade as beta2 -> 1?
    K, th0, ths = diagonal_problem(d_large)
    P0 = 0.5 * float(K @ (th0 - ths) ** 2)
    grid = np.geomspace(1e-3 * P0, 10 * P0, 17)
    cauchy_curves = {}
    clines = []
    for b2 in (0.0, 0.5, 0.9, 0.99):
        ctx.progress(f"Adam (reconstruction), Cauchy noise: beta2={b2:g}, d={d_large}")
        sim = simulate_adam(
            K, th0, ths, noise=cauchy, lr=LR, t_max=cfg.t_main, beta1=0.0, beta2=b2,
            seeds=seeds, times=times,
        )  # fmt: skip
        ode = adam_ode(
            K, th0, ths, noise=cauchy, lr=LR, t_max=cfg.t_main, beta1=0.0, beta2=b2,
            times=times, n_chains=cfg.adam_chains // 2, risk_grid=grid,
        )  # fmt: skip
        out["adam_cauchy_ode"].append(_sup_rel(sim.risk.mean(axis=0), ode.risk))
        finals["cauchy"][b2] = float(sim.risk[:, -1].mean())
        per_seed["cauchy"][b2] = sim.risk[:, -1]
        cauchy_curves[b2] = (ode, sim)
        clines.append(
            f"beta2={b2:g}: final risk simulated {finals['cauchy'][b2]:.4g}, ODE "
            f"{ode.risk[-1]:.4g} (left grid: {ode.left_grid}), Cauchy/Gaussian "
            f"{finals['cauchy'][b2] / finals['gaussian'][b2]:.3g}"
        )
    b2s = sorted(finals["cauchy"])
    ratio = [finals["cauchy"][b] / finals["gaussian"][b] for b in b2s]
    rows = np.array([per_seed[k][b] for k in ("cauchy", "gaussian") for b in b2s]).T

    def fades(rows: np.ndarray) -> float:  # rows: (seed, Cauchy finals by beta2 + Gaussian)
        means = rows.mean(axis=0)
        return float(stats.spearmanr(b2s, means[: len(b2s)] / means[len(b2s) :])[0])

    robustness = _over_seeds(rows, fades)
    assert abs(Measurement.of(robustness).values[0] - stats.spearmanr(b2s, ratio)[0]) < 1e-12
    limit = adam_coefficients(P0, beta1=0.0, beta2=1.0, noise=cauchy)
    ctx.note(
        f"- Adam (reconstruction), Cauchy noise scale {CAUCHY}, beta1 = 0, d={d_large}: "
        + "; ".join(clines)
        + f". The beta2 -> 1 limit has phi_A = {limit.phi[0]:g} (no drift at all)."
    )
    return {
        "gaussian": curves,
        "cauchy": cauchy_curves,
        "finals": finals,
        "robustness": robustness,
    }


def _adam_exponent(K: np.ndarray, sim: Any, i_decay: int) -> float:
    assert sim.iterates is not None
    t = float(sim.t[i_decay])
    devs = []
    for si in range(sim.risk.shape[0]):
        lam, rate = binned_decay_rates(K, sim.iterates[si, 0], sim.iterates[si, i_decay], t, 8)
        try:
            devs.append(abs(decay_exponent(lam, rate) - 0.5))
        except ValueError:  # a bin did not decay (rate <= 0): no exponent, counted as a miss
            devs.append(math.inf)
    return float(np.mean(devs))


def _notes(
    ctx: RunContext,
    cfg: Config,
    sims: dict[str, Any],
    phis: dict[str, np.ndarray],
    errs: list[float],
    slopes: dict[str, list[float]],
    sign_final: float,
    sgd_final: np.ndarray,
    ode_h: Any,
    reshaping_risks: list[float],
) -> None:
    for ode, sim, noise in sims.values():
        ctx.note(
            f"- Setting A, {noise!r}: sup relative gap of the seed-mean curve "
            f"{_sup_rel(sim.risk.mean(axis=0), ode.risk):.4f}; risk at t=0/{cfg.t_main:g}: ODE "
            f"{ode.risk[0]:.4g}/{ode.risk[-1]:.4g}, simulated {sim.risk[:, -1].mean():.4g} at the "
            f"end; effective lr from {ode.effective_lr[0]:.3f} to {ode.effective_lr[-1]:.3f}."
        )
    for key, arr in phis.items():
        ctx.note(
            f"- Measured phi ({key}, seed 0) at the 6 iterates: "
            + ", ".join(f"{m:.3f} (formula {p:.3f}, P {r:.3f})" for m, p, r in arr[:, 0].T)
        )
    ctx.note(
        "- Error vs d (mean per-seed sup relative error): "
        + ", ".join(f"d={d}: {e:.4f}" for d, e in zip(cfg.scaling_ds, errs, strict=True))
    )
    ctx.note(
        "- Fitted decay exponents per seed: signSGD "
        + ", ".join(f"{s:.3f}" for s in slopes["signsgd"])
        + "; SGD "
        + ", ".join(f"{s:.3f}" for s in slopes["sgd"])
    )
    ctx.note(
        f"- Heavy tails (Cauchy), t={cfg.t_heavy:g}: signSGD final risk {sign_final:.4g} (ODE "
        f"{ode_h.risk[-1]:.4g}); SGD per seed " + ", ".join(f"{v:.4g}" for v in sgd_final) + "."
    )
    if reshaping_risks:
        ctx.note(
            "- Noise reshaping was measured at risks "
            + " and ".join(f"{v:.3g}" for v in reshaping_risks)
            + "; SGD's covariance would scale by (2P + E eps^2) between them (and be infinite "
            "for Cauchy)."
        )


def _figures(ctx: RunContext, cfg: Config, data: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    panels = [
        (axes[0, 0], data["A"]["gaussian"][:2], f"A: diagonal K, Gaussian noise, d={cfg.d_diag}"),
        (axes[0, 1], data["A"]["cauchy"][:2], f"A: diagonal K, Cauchy noise, d={cfg.d_diag}"),
        (axes[1, 0], data["B"][:2], f"B: correlated K, Gaussian noise, d={cfg.d_dense}"),
    ]
    for ax, (ode, sim), title in panels:
        ax.fill_between(
            sim.t, sim.risk.min(axis=0), sim.risk.max(axis=0), alpha=0.3, label="simulated (range)"
        )
        ax.plot(sim.t, sim.risk.mean(axis=0), lw=1, label="simulated (mean)")
        ax.plot(ode.t, ode.risk, "k--", lw=1.5, label="ODE")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("t = k / d")
        ax.set_ylabel("excess risk P")
        ax.legend(fontsize=7)
    diag_ode = data["B"][2]
    axes[1, 0].plot(diag_ode.t, diag_ode.risk, ":", color="gray", label="diagonal ODE (wrong)")
    axes[1, 0].legend(fontsize=7)
    ode_h, sign_h, sgd_h = data["C"]
    ax = axes[1, 1]
    for s in range(sgd_h.risk.shape[0]):
        ax.plot(sgd_h.t, sgd_h.risk[s], color="tab:red", lw=0.8, label="SGD" if s == 0 else None)
        ax.plot(sign_h.t, sign_h.risk[s], color="tab:blue", lw=0.8,
                label="signSGD" if s == 0 else None)  # fmt: skip
    ax.plot(ode_h.t, ode_h.risk, "k--", label="signSGD ODE")
    ax.set_yscale("log")
    ax.set_title(f"C: Cauchy noise, d={cfg.d_heavy}, lr {LR}", fontsize=9)
    ax.set_xlabel("t = k / d")
    ax.legend(fontsize=7)
    fig.tight_layout()
    ctx.save_figure(fig, "risk_curves")

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    rates, slopes = data["rates"]
    for opt, marker in (("signsgd", "o"), ("sgd", "s")):
        lam, rate = rates[opt]
        axes[0].loglog(lam, rate, marker, label=f"{opt}: slope {np.mean(slopes[opt]):.2f}")
    axes[0].set_xlabel("eigenvalue lambda (bin mean)")
    axes[0].set_ylabel("decay rate")
    axes[0].set_title("Preconditioning (seed 0)", fontsize=9)
    axes[0].legend(fontsize=7)
    for key, arr in data["phi"].items():
        meas, pred, risk = arr[:, 0]
        axes[1].plot(risk, LR * meas, "o", label=f"{key}: measured")
        order = np.argsort(risk)
        axes[1].plot(risk[order], LR * pred[order], "-", color=axes[1].lines[-1].get_color())
    axes[1].set_xlabel("excess risk P")
    axes[1].set_ylabel("effective lr  lr * phi(P)")
    axes[1].set_title("Effective lr (dots: Monte Carlo, lines: formula)", fontsize=9)
    axes[1].legend(fontsize=7)
    ds, errs = data["scaling"]
    axes[2].loglog(ds, errs, "o-", label="measured")
    axes[2].loglog(ds, errs[0] * np.sqrt(ds[0] / np.asarray(ds)), "k:", label="d^-1/2")
    axes[2].set_xlabel("d")
    axes[2].set_ylabel("sup relative error (per seed, mean)")
    axes[2].set_title("ODE vs simulation gap vs dimension", fontsize=9)
    axes[2].legend(fontsize=7)
    plain = matplotlib.ticker.ScalarFormatter()
    for ax in (axes[0], axes[2]):
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    fig.tight_layout()
    ctx.save_figure(fig, "effects")

    rs = data["reshaping"]
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.loglog(rs["d"], rs["naive"], "o-", label="old metric: ||cov - K_sigma|| / ||K_sigma||")
    ax.loglog(rs["d"], rs["floor"], "k:", label="Monte Carlo floor")
    ax.loglog(rs["d"], rs["measured"], "s-", label="|mu|^2 / ||K_sigma||, mu measured")
    ax.loglog(rs["d"], rs["predicted"], "--", label="|mu|^2 / ||K_sigma||, mu = phi D^-1/2 K r")
    ref = rs["predicted"][0] * np.sqrt(rs["d"][0] / rs["d"])
    ax.loglog(rs["d"], ref, color="gray", lw=0.8, label="d^-1/2")
    ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(rs["d"])
    ax.set_xlabel("d (correlated K, start of a run)")
    ax.set_ylabel("relative Frobenius gap")
    ax.set_title("Centred sign-gradient covariance vs K_sigma: the gap is mu mu^T", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    ctx.save_figure(fig, "noise_reshaping")

    ad = data["adam"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for (b1, b2), (ode, sim) in ad["gaussian"].items():
        ax = axes[0] if b1 == 0 else axes[1]
        line = ax.plot(sim.t, sim.risk.mean(axis=0), lw=1, label=f"beta2={b2:g}")
        ax.plot(ode.t, ode.risk, "--", color=line[0].get_color(), lw=1.2)
    for ax, b1 in ((axes[0], 0.0), (axes[1], 0.9)):
        ax.set_yscale("log")
        ax.set_title(
            f"Adam beta1={b1:g}, Gaussian noise, d={cfg.adam_ds[1]} (dashed: ODE, reconstruction)",
            fontsize=8,
        )
        ax.set_xlabel("t = k / d")
        ax.set_ylabel("excess risk P")
        ax.legend(fontsize=7)
    for b2, (ode, sim) in ad["cauchy"].items():
        line = axes[2].plot(sim.t, sim.risk.mean(axis=0), lw=1, label=f"beta2={b2:g}")
        axes[2].plot(ode.t, ode.risk, "--", color=line[0].get_color(), lw=1.2)
    axes[2].set_yscale("log")
    axes[2].set_title("Adam beta1=0, Cauchy noise (dashed: ODE, reconstruction)", fontsize=8)
    axes[2].set_xlabel("t = k / d")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    ctx.save_figure(fig, "adam_reconstruction")
