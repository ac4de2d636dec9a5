"""The actual iterations: one-pass signSGD / SGD on ``y = <x, theta*> + eps``, batched over seeds.

Step ``k``: a fresh ``x ~ N(0, K)`` and ``eps``; with ``g = (<x, theta> - y) x`` the update is
``theta -= (lr(k/d) / d) sign(g)`` (signSGD, coordinate-wise sign) or ``... g`` (SGD). Each seed
has its own generator, so a seed's path does not depend on which other seeds run beside it. The
loop over steps is in Python (the iteration is sequential); each step is a handful of vectorised
operations over ``(seeds, d)``, and samples are drawn in chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from icml25.core import validate as V
from icml25.core.validate import integer
from icml25.signsgd_risk.noise import LabelNoise, as_noise
from icml25.signsgd_risk.ode import (
    LearningRate,
    Optimizer,
    RiskCurve,
    check_covariance,
    check_optimizer,
    check_times,
    check_vectors,
    lr_function,
)


@dataclass(frozen=True)
class Simulation:
    """Simulated excess risks ``risk[s, i]`` at ``t[i]`` for each seed; optional iterates.

    ``iterates[s, i]`` is ``theta - theta*`` at ``t[i]`` (only with ``keep_iterates=True``).
    """

    t: np.ndarray
    risk: np.ndarray
    seeds: tuple[int, ...]
    optimizer: str
    iterates: np.ndarray | None = None

    def __repr__(self) -> str:
        from icml25.signsgd_risk.ode import _curve_repr

        return _curve_repr(self, f"optimizer={self.optimizer!r}, seeds={self.seeds}")

    def mean(self) -> RiskCurve:
        """Mean over seeds as a :class:`RiskCurve` (effective lr left as NaN: not observed)."""
        return RiskCurve(
            t=self.t,
            risk=self.risk.mean(axis=0),
            effective_lr=np.full(self.t.shape, np.nan),
            optimizer=self.optimizer,
        )


def _sampler(K: np.ndarray, diag: bool) -> Callable[[np.ndarray], np.ndarray]:
    """Map standard normals (..., d) to N(0, K) samples."""
    if diag:
        s = np.sqrt(K)
        return lambda xi: xi * s
    w, U = np.linalg.eigh(K)
    root = (U * np.sqrt(np.clip(w, 0.0, None))) @ U.T  # symmetric square root (K may be singular)
    return lambda xi: xi @ root


def as_generator(rng: object) -> np.random.Generator:
    """A ``numpy.random.Generator``, or one seeded by a non-negative integer."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(integer("rng", rng, low=0))


def check_run(
    seeds: Sequence[int], t_max: float | None, times: object, chunk: int
) -> tuple[tuple[int, ...], np.ndarray]:
    """The seeds and the requested times of a simulation, after checking them and ``chunk``
    (``chunk`` before the horizon, so that a bad ``chunk`` is named even where ``t_max`` and
    ``times`` are missing too)."""
    integer("chunk", chunk, low=1)
    seed_list = V.seeds("seeds", seeds)
    _, t_req = check_times(t_max, times, 101)
    return seed_list, t_req


def simulate(
    K: object,
    theta0: object,
    theta_star: object,
    *,
    noise: LabelNoise | float | None = None,
    lr: LearningRate = 0.1,
    t_max: float | None = None,
    optimizer: Optimizer = "signsgd",
    seeds: Sequence[int] = (0,),
    times: object = None,
    keep_iterates: bool = False,
    chunk: int = 256,
) -> Simulation:
    """Run ``round(t_max d)`` steps of signSGD or SGD for every seed at once.

    ``times`` default to 101 points on ``[0, t_max]``; each is rounded to the nearest step.
    """
    Karr, diag = check_covariance(K)
    d = Karr.shape[0]
    th0, ths = check_vectors(d, theta0, theta_star)
    noise = as_noise(noise)
    opt = check_optimizer(optimizer)
    eta = lr_function(lr)
    seeds, t_req = check_run(seeds, t_max, times, chunk)
    steps = np.rint(t_req * d).astype(np.int64)
    n_steps = int(steps[-1])
    S = len(seeds)
    rngs = [np.random.default_rng(s) for s in seeds]
    draw = _sampler(Karr, diag)

    r = np.tile(th0 - ths, (S, 1))
    risk = np.empty((S, steps.size))
    its = np.empty((S, steps.size, d)) if keep_iterates else None

    def excess(r: np.ndarray) -> np.ndarray:
        if diag:
            return 0.5 * (r * r) @ Karr
        return 0.5 * np.einsum("sd,de,se->s", r, Karr, r)

    def record(k: int) -> None:
        idx = np.nonzero(steps == k)[0]
        if idx.size:
            risk[:, idx] = excess(r)[:, None]
            if its is not None:
                its[:, idx] = r[:, None, :]

    record(0)
    k = 0
    with np.errstate(over="ignore", invalid="ignore"):
        while k < n_steps:
            n = min(chunk, n_steps - k)
            xi = np.stack([g.standard_normal((n, d)) for g in rngs], axis=1)  # (n, S, d)
            eps = np.stack([noise.sample(g, n) for g in rngs], axis=1)  # (n, S)
            x = draw(xi)
            sx = np.sign(x) if opt == "signsgd" else None
            for j in range(n):
                step = eta(k / d) / d
                resid = np.einsum("sd,sd->s", x[j], r) - eps[j]
                if sx is not None:
                    r -= step * np.sign(resid)[:, None] * sx[j]
                else:
                    r -= step * resid[:, None] * x[j]
                k += 1
                record(k)
    return Simulation(t=steps / d, risk=risk, seeds=seeds, optimizer=opt, iterates=its)


def sign_gradient_moments(
    K: object,
    r: object,
    *,
    noise: LabelNoise | float | None = None,
    n_samples: int = 10_000,
    rng: np.random.Generator | int = 0,
    covariance: bool = False,
    chunk: int = 2048,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Monte Carlo mean (and optionally covariance) of the sign-gradient at ``r = theta - theta*``.

    The sign-gradient is ``sign(<x, r> - eps) sign(x)``; its mean is the drift whose size is the
    effective learning rate, its covariance the reshaped gradient noise.
    """
    Karr, diag = check_covariance(K)
    d = Karr.shape[0]
    rv = V.real_array("r", r, finite=False)
    if rv.shape != (d,):
        raise ValueError(f"r must have shape ({d},) to match K, got {rv.shape}")
    if not np.all(np.isfinite(rv)):
        raise ValueError("r has non-finite entries")
    n_samples = integer("n_samples", n_samples, low=2)
    chunk = integer("chunk", chunk, low=1)
    noise = as_noise(noise)
    gen = as_generator(rng)
    draw = _sampler(Karr, diag)
    total = np.zeros(d)
    second = np.zeros((d, d)) if covariance else None
    done = 0
    while done < n_samples:
        n = min(chunk, n_samples - done)
        x = draw(gen.standard_normal((n, d)))
        g = np.sign(x @ rv - noise.sample(gen, n))[:, None] * np.sign(x)
        total += g.sum(axis=0)
        if second is not None:
            second += g.T @ g
        done += n
    mean = total / n_samples
    if second is None:
        return mean, None
    cov = (second - n_samples * np.outer(mean, mean)) / (n_samples - 1)
    return mean, cov
