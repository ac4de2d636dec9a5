"""The figures of signSGD's reproduction, one function each: the runs' curves and arrays in, a
matplotlib Figure out (:mod:`icml25.signsgd_risk.reproduce` saves them). Curves are the
library's :class:`~icml25.signsgd_risk.RiskCurve` / :class:`~icml25.signsgd_risk.Simulation`
(``.t``, ``.risk``); matplotlib is imported on the first figure, with the Agg backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def risk_curves(
    diagonal: Mapping[str, tuple[Any, ...]],
    dense: tuple[Any, Any, Any],
    heavy: tuple[Any, Any, Any],
    *,
    d_diag: int,
    d_dense: int,
    d_heavy: int,
    lr: float,
) -> Figure:
    """``risk_curves``: the ODE against the seed band for setting A (``diagonal["gaussian"]``,
    ``diagonal["cauchy"]``: ``(ode, sim, ...)``), B (``dense = (ode, sim, diagonal ODE)``) and C
    (``heavy = (signSGD ODE, signSGD runs, SGD runs)``, Cauchy noise)."""
    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    panels = [
        (axes[0, 0], diagonal["gaussian"][:2], f"A: diagonal K, Gaussian noise, d={d_diag}"),
        (axes[0, 1], diagonal["cauchy"][:2], f"A: diagonal K, Cauchy noise, d={d_diag}"),
        (axes[1, 0], dense[:2], f"B: correlated K, Gaussian noise, d={d_dense}"),
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
    diag_ode = dense[2]
    axes[1, 0].plot(diag_ode.t, diag_ode.risk, ":", color="gray", label="diagonal ODE (wrong)")
    axes[1, 0].legend(fontsize=7)
    ode_h, sign_h, sgd_h = heavy
    ax = axes[1, 1]
    for s in range(sgd_h.risk.shape[0]):
        ax.plot(sgd_h.t, sgd_h.risk[s], color="tab:red", lw=0.8, label="SGD" if s == 0 else None)
        ax.plot(sign_h.t, sign_h.risk[s], color="tab:blue", lw=0.8,
                label="signSGD" if s == 0 else None)  # fmt: skip
    ax.plot(ode_h.t, ode_h.risk, "k--", label="signSGD ODE")
    ax.set_yscale("log")
    ax.set_title(f"C: Cauchy noise, d={d_heavy}, lr {lr}", fontsize=9)
    ax.set_xlabel("t = k / d")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def effects(
    rates: Mapping[str, tuple[np.ndarray, np.ndarray]],
    slopes: Mapping[str, Sequence[float]],
    phis: Mapping[str, np.ndarray],
    ds: Sequence[int],
    errs: Sequence[float],
    *,
    lr: float,
) -> Figure:
    """``effects``: decay rate against eigenvalue (seed 0's ``rates[opt] = (lambda, rate)``,
    the mean fitted ``slopes``), the measured effective lr against the formula (``phis[noise]``
    of shape (3 = measured, formula, risk; seeds; iterates)) and the gap ``errs`` against
    ``ds``."""
    plt = _pyplot()
    from matplotlib import ticker

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for opt, marker in (("signsgd", "o"), ("sgd", "s")):
        lam, rate = rates[opt]
        axes[0].loglog(lam, rate, marker, label=f"{opt}: slope {np.mean(slopes[opt]):.2f}")
    axes[0].set_xlabel("eigenvalue lambda (bin mean)")
    axes[0].set_ylabel("decay rate")
    axes[0].set_title("Preconditioning (seed 0)", fontsize=9)
    axes[0].legend(fontsize=7)
    for key, arr in phis.items():
        meas, pred, risk = arr[:, 0]
        axes[1].plot(risk, lr * meas, "o", label=f"{key}: measured")
        order = np.argsort(risk)
        axes[1].plot(risk[order], lr * pred[order], "-", color=axes[1].lines[-1].get_color())
    axes[1].set_xlabel("excess risk P")
    axes[1].set_ylabel("effective lr  lr * phi(P)")
    axes[1].set_title("Effective lr (dots: Monte Carlo, lines: formula)", fontsize=9)
    axes[1].legend(fontsize=7)
    axes[2].loglog(ds, errs, "o-", label="measured")
    axes[2].loglog(ds, errs[0] * np.sqrt(ds[0] / np.asarray(ds)), "k:", label="d^-1/2")
    axes[2].set_xlabel("d")
    axes[2].set_ylabel("sup relative error (per seed, mean)")
    axes[2].set_title("ODE vs simulation gap vs dimension", fontsize=9)
    axes[2].legend(fontsize=7)
    plain = ticker.ScalarFormatter()
    for ax in (axes[0], axes[2]):
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    fig.tight_layout()
    return fig


def noise_reshaping(rs: Mapping[str, np.ndarray]) -> Figure:
    """``noise_reshaping``: the old centred gap against d (``rs["d"]``, ``rs["naive"]``), its
    Monte Carlo floor and ``|mu|^2 / ||K_sigma||_F`` measured and phi-predicted, as returned by
    :func:`icml25.signsgd_risk.experiments.reshaping_vs_d`."""
    plt = _pyplot()
    from matplotlib import ticker

    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.loglog(rs["d"], rs["naive"], "o-", label="old metric: ||cov - K_sigma|| / ||K_sigma||")
    ax.loglog(rs["d"], rs["floor"], "k:", label="Monte Carlo floor")
    ax.loglog(rs["d"], rs["measured"], "s-", label="|mu|^2 / ||K_sigma||, mu measured")
    ax.loglog(rs["d"], rs["predicted"], "--", label="|mu|^2 / ||K_sigma||, mu = phi D^-1/2 K r")
    ref = rs["predicted"][0] * np.sqrt(rs["d"][0] / rs["d"])
    ax.loglog(rs["d"], ref, color="gray", lw=0.8, label="d^-1/2")
    ax.xaxis.set_major_formatter(ticker.ScalarFormatter())
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_xticks(rs["d"])
    ax.set_xlabel("d (correlated K, start of a run)")
    ax.set_ylabel("relative Frobenius gap")
    ax.set_title("Centred sign-gradient covariance vs K_sigma: the gap is mu mu^T", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def adam_reconstruction(
    gaussian: Mapping[tuple[float, float], tuple[Any, Any]],
    cauchy: Mapping[float, tuple[Any, Any]],
    *,
    d: int,
) -> Figure:
    """``adam_reconstruction``: simulated Adam (seed mean) against the reconstructed ODE,
    ``gaussian[(beta1, beta2)] = (ode, sim)`` at dimension ``d`` and, beta1 = 0,
    ``cauchy[beta2] = (ode, sim)``."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for (b1, b2), (ode, sim) in gaussian.items():
        ax = axes[0] if b1 == 0 else axes[1]
        line = ax.plot(sim.t, sim.risk.mean(axis=0), lw=1, label=f"beta2={b2:g}")
        ax.plot(ode.t, ode.risk, "--", color=line[0].get_color(), lw=1.2)
    for ax, b1 in ((axes[0], 0.0), (axes[1], 0.9)):
        ax.set_yscale("log")
        ax.set_title(
            f"Adam beta1={b1:g}, Gaussian noise, d={d} (dashed: ODE, reconstruction)",
            fontsize=8,
        )
        ax.set_xlabel("t = k / d")
        ax.set_ylabel("excess risk P")
        ax.legend(fontsize=7)
    for b2, (ode, sim) in cauchy.items():
        line = axes[2].plot(sim.t, sim.risk.mean(axis=0), lw=1, label=f"beta2={b2:g}")
        axes[2].plot(ode.t, ode.risk, "--", color=line[0].get_color(), lw=1.2)
    axes[2].set_yscale("log")
    axes[2].set_title("Adam beta1=0, Cauchy noise (dashed: ODE, reconstruction)", fontsize=8)
    axes[2].set_xlabel("t = k / d")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    return fig
