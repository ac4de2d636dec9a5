"""Cost of a predicted risk curve (the ODE) vs simulating it, on setting A of the reproduction.

For each d: the diagonal-K ODE (Gaussian noise; Student-t, whose phi needs quadrature), a
simulation of the same curve (one seed, and 10 seeds batched vs 10 one at a time), and a plain
PyTorch loop with :class:`SignSGD` on one sample per step (the natural user baseline). The dense
(correlated K) ODE against its simulation at smaller d. All ratios are from this run.
Run: ``python benchmarks/signsgd_risk_ode_vs_simulation.py [--t-max 6]``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch

from icml25.signsgd_risk import GaussianNoise, SignSGD, StudentTNoise, risk_ode, simulate
from icml25.signsgd_risk.experiments import correlated_covariance, diagonal_problem


def _time(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t0


def torch_loop(K: np.ndarray, ths: np.ndarray, lr: float, t_max: float, seed: int) -> float:
    d = K.size
    g = torch.Generator().manual_seed(seed)
    sq, star = torch.from_numpy(np.sqrt(K)), torch.from_numpy(ths)
    theta = torch.zeros(d, dtype=torch.float64, requires_grad=True)
    opt = SignSGD([theta], lr=lr / d)
    for _ in range(round(t_max * d)):
        x = torch.randn(d, generator=g, dtype=torch.float64) * sq
        y = x @ star + 0.5 * torch.randn((), generator=g, dtype=torch.float64)
        opt.zero_grad()
        (0.5 * (x @ theta - y) ** 2).backward()
        opt.step()
    r = theta.detach() - star
    return 0.5 * float(r @ (torch.from_numpy(K) * r))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--t-max", type=float, default=6.0)
    args = ap.parse_args()
    T, lr = args.t_max, 0.3
    torch.set_num_threads(1)
    torch_loop(np.ones(10), np.zeros(10), lr, 1.0, 0)  # warm up autograd before timing
    head = (
        f"{'d':>5} | {'ODE':>7} {'ODE t':>7} | {'sim 1':>7} {'sim/ODE':>8} | {'sim 10':>7} "
        f"{'10x1/10':>8} | {'torch':>7} {'torch/sim':>9}"
    )
    print("diagonal K (ODE t: Student-t noise, phi by quadrature)")
    print(head)
    print("-" * len(head))
    for d in (250, 1000, 4000):
        K, th0, ths = diagonal_problem(d)
        kw = dict(lr=lr, t_max=T, times=np.linspace(0, T, 61))
        t_ode = _time(risk_ode, K, th0, ths, noise=GaussianNoise(0.5), **kw)
        t_odet = _time(risk_ode, K, th0, ths, noise=StudentTNoise(1.5, 0.5), **kw)
        t_sim = _time(simulate, K, th0, ths, noise=0.5, seeds=[0], **kw)
        t_sim10 = _time(simulate, K, th0, ths, noise=0.5, seeds=range(10), **kw)
        t_one = sum(_time(simulate, K, th0, ths, noise=0.5, seeds=[s], **kw) for s in range(10))
        line = (
            f"{d:>5} | {t_ode:>6.3f}s {t_odet:>6.3f}s | {t_sim:>6.3f}s {t_sim / t_ode:>7.0f}x | "
            f"{t_sim10:>6.3f}s {t_one / t_sim10:>7.1f}x | "
        )
        if d <= 1000:
            t_torch = _time(torch_loop, K, ths, lr, T, 0)
            line += f"{t_torch:>6.2f}s {t_torch / t_sim:>8.1f}x"
        else:
            line += f"{'-':>7} {'-':>9}"
        print(line, flush=True)
    print("\ncorrelated K (ODE: one eigendecomposition, then the spectral form)")
    print(f"{'d':>5} | {'ODE':>7} | {'sim 1':>7} {'sim/ODE':>8}")
    for d in (100, 400):
        K = correlated_covariance(d)
        _, th0, ths = diagonal_problem(d)
        kw = dict(noise=0.5, lr=lr, t_max=T, times=np.linspace(0, T, 61))
        t_ode = _time(risk_ode, K, th0, ths, **kw)
        t_sim = _time(simulate, K, th0, ths, seeds=[0], **kw)
        print(f"{d:>5} | {t_ode:>6.3f}s | {t_sim:>6.3f}s {t_sim / t_ode:>7.2f}x", flush=True)
    print(f"\n(t_max = {T:g}, lr = {lr}, {math.ceil(T * 4000)} steps at d = 4000)")


if __name__ == "__main__":
    main()
