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

The steps, in the order they run (each in :mod:`icml25.signsgd_risk.experiments`, the Adam
sweep in :mod:`icml25.signsgd_risk.experiments_adam`): setting A and the effective learning
rate at its iterates, the error against d, the preconditioning exponents, setting B, noise
reshaping (and its old metric against d), the Adam reconstruction, setting C; then the notes
and the four figures. Claims, null arms and gates: :mod:`icml25.signsgd_risk.claims`.
"""

from __future__ import annotations

import math
from typing import Any

from icml25.core.runner import RunContext
from icml25.signsgd_risk import experiments as E
from icml25.signsgd_risk import figures
from icml25.signsgd_risk.claims import CLAIMS
from icml25.signsgd_risk.experiments import BUDGETS, LR
from icml25.signsgd_risk.experiments_adam import adam_block

__all__ = ["CLAIMS", "claim_sizes", "reproduce"]


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them."""
    cfg = BUDGETS[budget]
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
        "sgd_samples": cfg.phi_samples // 10,  # the null arm's Monte Carlo size (effective_lr)
        "cov_d": cfg.cov_d,
        "cov_samples": cfg.cov_samples,
        "adam_d_small": cfg.adam_ds[0],
        "adam_d_large": cfg.adam_ds[1],
    }


def reproduce(ctx: RunContext) -> dict[str, Any]:
    """Run the steps of the module docstring; claim id, null arm or gate -> measurement."""
    cfg = BUDGETS[ctx.budget]
    seeds = ctx.seeds
    gauss, cauchy, student = E.label_noises()

    # A: diagonal K, ODE vs simulation, with iterates kept for the effect measurements.
    noises = {"gaussian": gauss, "cauchy": cauchy, "student": student}
    diagonal, sims = E.setting_a(ctx, cfg, seeds, noises)
    # Effective learning rate and noise compression: Monte Carlo sign-gradients at iterates.
    effective, phis = E.effective_lr(ctx, cfg, seeds, sims)
    # Error vs dimension; preconditioning exponents.
    scaling, errs = E.error_vs_dimension(ctx, cfg, seeds, gauss)
    precond, rates, slopes = E.preconditioning(ctx, cfg, seeds, gauss)

    # B: correlated K, full matrix ODE; noise reshaping at two iterates, two noises.
    correlated, dense = E.setting_b(ctx, cfg, seeds, gauss)
    reshaping, reshaping_risks = E.noise_reshaping(ctx, cfg, seeds, gauss, cauchy)
    reshaping_by_d = E.reshaping_vs_d(ctx, cfg, seeds[0], gauss)

    # Adam (our reconstruction): sweep (beta1, beta2) at d and 2d, Gaussian then Cauchy noise.
    adam, adam_curves = adam_block(ctx, cfg, seeds, gauss, cauchy)

    # C: heavy tails, signSGD vs SGD.
    heavy_tails, heavy = E.setting_c(ctx, cfg, seeds, gauss, cauchy)

    E.notes(ctx, cfg, sims, phis, errs, slopes, heavy, dense, reshaping_risks)
    ctx.save_figure(
        figures.risk_curves(
            sims, (dense.ode, dense.sim, dense.diag_ode), (heavy.ode, heavy.sign, heavy.sgd),
            d_diag=cfg.d_diag, d_dense=cfg.d_dense, d_heavy=cfg.d_heavy, lr=LR,
        ),
        "risk_curves",
    )  # fmt: skip
    ctx.save_figure(figures.effects(rates, slopes, phis, cfg.scaling_ds, errs, lr=LR), "effects")
    ctx.save_figure(figures.noise_reshaping(reshaping_by_d), "noise_reshaping")
    ctx.save_figure(
        figures.adam_reconstruction(
            adam_curves["gaussian"], adam_curves["cauchy"], d=cfg.adam_ds[1]
        ),
        "adam_reconstruction",
    )
    return {
        **diagonal, **effective, **scaling, **precond, **correlated, **reshaping, **adam,
        **heavy_tails,
    }  # fmt: skip
