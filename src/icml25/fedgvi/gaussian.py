"""Gaussians in natural parameters, and divergences between Gaussians in closed form.

:class:`NatGaussian` stores ``N(mean, cov)`` by its precision ``J`` and shift ``h = J mean``:
``J`` is a vector (mean-field, diagonal) or a matrix (full covariance). The same class holds
the clients' factors ``t_m``, which need not be normalisable (``J`` may be zero or negative
somewhere), so products and quotients are additions and subtractions of natural parameters.

The divergences take moments as float64 tensors (``var`` a vector for mean-field, a matrix
for full covariance) so that they can be differentiated; each is ``D(q || p)``:

- :func:`kl` -- ``KL(q || p)``;
- :func:`reverse_kl` -- ``KL(p || q)``;
- :func:`weighted_kl` -- ``KL(q || p) / w`` (``w > 1`` weakens the pull to the reference);
- :func:`alpha_renyi` -- the alpha-Renyi divergence in Knoblauch et al.'s scaling (the one
  FedGVI uses), ``1/(alpha (alpha-1)) log int q^alpha p^(1-alpha)``: Renyi's own divergence of
  order ``alpha`` divided by ``alpha``. Closed form through
  ``S = alpha var_p + (1 - alpha) var_q``. It is finite only where ``S`` is positive
  definite; elsewhere it is ``+inf`` (with finite gradients, so optimisers can back off).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.core import validate as V
from icml25.fedgvi.checks import as_tensor

Tensor = torch.Tensor


@dataclass(frozen=True, eq=False)
class NatGaussian:
    """A Gaussian (or Gaussian factor) ``exp(h^T x - x^T J x / 2)`` in natural parameters.

    ``h`` is ``(d,)``; ``J`` is ``(d,)`` (the diagonal of a mean-field precision) or ``(d, d)``
    (a full one, symmetrised). A factor may have a non-positive ``J``; :meth:`is_proper` says
    whether it is a distribution, and ``mean`` ``(d,)`` and ``var`` (``(d,)`` or ``(d, d)``, as
    ``J``) need one.
    """

    h: np.ndarray
    J: np.ndarray

    def __post_init__(self) -> None:
        h = V.real_array("h", self.h, finite=False).reshape(-1)
        J = V.real_array("J", self.J, finite=False)
        d = h.shape[0]
        if d == 0:
            raise ValueError("h must hold at least one natural parameter, got an empty array")
        if J.shape not in ((d,), (d, d)):
            raise ValueError(
                f"J must have shape ({d},) or ({d}, {d}) for h of length {d}, got {J.shape}"
            )
        if not (np.all(np.isfinite(h)) and np.all(np.isfinite(J))):
            raise ValueError("natural parameters must be finite")
        if J.ndim == 2:
            J = (J + J.T) / 2
        object.__setattr__(self, "h", h)
        object.__setattr__(self, "J", J)

    @classmethod
    def from_moments(cls, mean: Any, var: Any) -> NatGaussian:
        """From a mean and a variance (vector: mean-field; matrix: full; scalar: isotropic)."""
        mean = np.atleast_1d(V.real_array("mean", mean, finite=False))
        var = V.real_array("var", var, finite=False)
        if mean.ndim != 1:
            raise ValueError(f"mean must be a vector, got shape {mean.shape}")
        if var.ndim == 0:
            var = np.full(mean.shape, float(var))
        if var.ndim == 1:
            if var.shape != mean.shape or np.any(var <= 0) or not np.all(np.isfinite(var)):
                raise ValueError(
                    f"var must be positive and finite with shape {mean.shape}, got {var}"
                )
            return cls(mean / var, 1.0 / var)
        if var.shape != (mean.size, mean.size):
            raise ValueError(f"cov must have shape ({mean.size}, {mean.size}), got {var.shape}")
        if not np.all(np.isfinite(var)):
            raise ValueError("cov must be finite")
        if np.any(np.linalg.eigvalsh((var + var.T) / 2) <= 0):
            raise ValueError("cov must be positive definite")
        J = np.linalg.inv(var)
        return cls(J @ mean, J)

    @classmethod
    def flat(cls, d: int, full: bool = False) -> NatGaussian:
        """The uniform factor (all natural parameters zero): every client's ``t_m`` at start."""
        d = V.integer("d", d, low=1)
        full = V.flag("full", full)
        return cls(np.zeros(d), np.zeros((d, d)) if full else np.zeros(d))

    @property
    def dim(self) -> int:
        return int(self.h.shape[0])

    @property
    def full(self) -> bool:
        return self.J.ndim == 2

    def min_precision(self) -> float:
        """Smallest precision eigenvalue; a distribution needs it positive."""
        return float(np.min(np.linalg.eigvalsh(self.J) if self.full else self.J))

    def is_proper(self) -> bool:
        return self.min_precision() > 0

    def _need_proper(self) -> None:
        if not self.is_proper():
            raise ValueError(
                f"not a normalisable Gaussian: smallest precision is {self.min_precision():.3g}"
            )

    @property
    def mean(self) -> np.ndarray:
        self._need_proper()
        return np.linalg.solve(self.J, self.h) if self.full else self.h / self.J

    @property
    def var(self) -> np.ndarray:
        """The variance vector (mean-field) or the covariance matrix (full)."""
        self._need_proper()
        return np.linalg.inv(self.J) if self.full else 1.0 / self.J

    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        return self.mean, self.var

    def _other(self, other: NatGaussian) -> NatGaussian:
        if not isinstance(other, NatGaussian) or other.dim != self.dim or other.full != self.full:
            raise ValueError("both Gaussians must have the same dimension and covariance kind")
        return other

    def __mul__(self, other: NatGaussian) -> NatGaussian:
        o = self._other(other)
        return NatGaussian(self.h + o.h, self.J + o.J)

    def __truediv__(self, other: NatGaussian) -> NatGaussian:
        o = self._other(other)
        return NatGaussian(self.h - o.h, self.J - o.J)

    def __pow__(self, power: float) -> NatGaussian:
        power = V.number("power", power)
        return NatGaussian(power * self.h, power * self.J)

    def clip_precision(self, floor: float) -> tuple[NatGaussian, int]:
        """The same mean direction with every precision eigenvalue below ``floor`` raised to it.
        Returns the clipped Gaussian and how many eigenvalues were raised (0: unchanged)."""
        floor = V.number("floor", floor, low=0.0)
        if self.full:
            w, vecs = np.linalg.eigh(self.J)
            low = int(np.sum(w < floor))
            if not low:
                return self, 0
            # keep h's component in each eigen-direction proportional to its new precision
            coef = vecs.T @ self.h
            scale = np.where(w < floor, floor / np.where(w == 0, 1.0, w), 1.0)
            scale = np.where((w < floor) & (w <= 0), 0.0, scale)
            return NatGaussian(vecs @ (coef * scale), (vecs * np.maximum(w, floor)) @ vecs.T), low
        low = int(np.sum(self.J < floor))
        if not low:
            return self, 0
        J = np.maximum(self.J, floor)
        # a coordinate with a positive precision keeps its mean; one without a mean gets 0
        h = np.where(self.J > 0, self.h * J / np.where(self.J > 0, self.J, 1.0), 0.0)
        return NatGaussian(h, J), low

    def to_arrays(self) -> list[np.ndarray]:
        return [self.h, self.J]

    @classmethod
    def from_arrays(cls, arrays: list[np.ndarray]) -> NatGaussian:
        if isinstance(arrays, np.ndarray) or len(arrays) != 2:
            raise ValueError(f"expected [h, J], got {len(arrays)} arrays")
        return cls(arrays[0], arrays[1])


def _t(x: Any, name: str = "moments") -> Tensor:
    return as_tensor(name, x)


def _ts(mq: Any, vq: Any, mp: Any, vp: Any) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    names = ("mean of q", "variance of q", "mean of p", "variance of p")
    a, b, c, d = (_t(x, f"the {n}") for x, n in zip((mq, vq, mp, vp), names, strict=True))
    return a, b, c, d


def _check(mq: Tensor, vq: Tensor, mp: Tensor, vp: Tensor) -> bool:
    if mq.shape != mp.shape or vq.shape != vp.shape or vq.shape not in (mq.shape, mq.shape * 2):
        raise ValueError(
            f"moment shapes must agree: means {tuple(mq.shape)}, {tuple(mp.shape)}; "
            f"variances {tuple(vq.shape)}, {tuple(vp.shape)}"
        )
    for name, m in (("mean of q", mq), ("mean of p", mp)):
        if not bool(torch.isfinite(m).all()):
            raise ValueError(f"the {name} must be finite, got {m.detach().tolist()}")
    for name, v in (("variance of q", vq), ("variance of p", vp)):
        diag = v.diagonal() if v.ndim == 2 else v
        if not bool(torch.isfinite(v).all() and (diag > 0).all()):
            raise ValueError(f"the {name} must be finite and > 0, got {v.detach().tolist()}")
    return vq.ndim == 2


def kl(mq: Any, vq: Any, mp: Any, vp: Any) -> Tensor:
    """``KL(N(mq, vq) || N(mp, vp))``."""
    mq, vq, mp, vp = _ts(mq, vq, mp, vp)
    full = _check(mq, vq, mp, vp)
    diff = mp - mq
    if full:
        Lp = torch.linalg.cholesky(vp)
        trace = torch.cholesky_solve(vq, Lp).diagonal().sum()
        maha = (torch.cholesky_solve(diff[:, None], Lp)[:, 0] * diff).sum()
        logdet = 2 * torch.log(Lp.diagonal()).sum() - torch.linalg.slogdet(vq)[1]
        return 0.5 * (trace + maha - mq.numel() + logdet)
    return 0.5 * torch.sum(vq / vp + diff**2 / vp - 1 + torch.log(vp) - torch.log(vq))


def reverse_kl(mq: Any, vq: Any, mp: Any, vp: Any) -> Tensor:
    """``KL(N(mp, vp) || N(mq, vq))``: the reference's mass must be covered (mode covering)."""
    mq, vq, mp, vp = _ts(mq, vq, mp, vp)
    _check(mq, vq, mp, vp)  # errors name the arguments as the caller passed them
    return kl(mp, vp, mq, vq)


def weighted_kl(mq: Any, vq: Any, mp: Any, vp: Any, w: float) -> Tensor:
    """``KL(q || p) / w``."""
    w = V.positive("w", w)
    return kl(mq, vq, mp, vp) / w


def alpha_renyi(mq: Any, vq: Any, mp: Any, vp: Any, alpha: float) -> Tensor:
    """alpha-Renyi divergence between Gaussians (``alpha > 0``, ``alpha != 1``) in Knoblauch et
    al.'s scaling, ``1/(alpha (alpha-1)) log int q^alpha p^(1-alpha)`` (Renyi's own ``D_alpha(q ||
    p)`` divided by ``alpha``; tested against quadrature):

    ``1/2 d^T S^-1 d - log|S| / (2 alpha (alpha-1)) - log|vq| / (2 alpha)
    + log|vp| / (2 (alpha-1))`` with ``S = alpha vp + (1-alpha) vq``; ``+inf`` where ``S`` is
    not positive definite (``alpha > 1`` and ``vq`` too broad against ``vp``)."""
    alpha = V.positive("alpha", alpha)
    if alpha == 1:
        raise ValueError("alpha must be > 0 and not 1 (alpha = 1 is KL: use kl), got 1")
    mq, vq, mp, vp = _ts(mq, vq, mp, vp)
    full = _check(mq, vq, mp, vp)
    diff = mq - mp
    S = alpha * vp + (1 - alpha) * vq
    if full:
        eig = torch.linalg.eigvalsh(S)
        valid = bool(eig.min() > 0)
        S_safe = S if valid else torch.eye(S.shape[0], dtype=S.dtype)
        maha = diff @ torch.linalg.solve(S_safe, diff)
        logdet_S = torch.linalg.slogdet(S_safe)[1]
        logdet_q = torch.linalg.slogdet(vq)[1]
        logdet_p = torch.linalg.slogdet(vp)[1]
    else:
        valid = bool(torch.all(S > 0))
        S_safe = torch.where(S > 0, S, torch.ones_like(S))
        maha = torch.sum(diff**2 / S_safe)
        logdet_S = torch.log(S_safe).sum()
        logdet_q = torch.log(vq).sum()
        logdet_p = torch.log(vp).sum()
    value = (
        0.5 * maha
        - logdet_S / (2 * alpha * (alpha - 1))
        - logdet_q / (2 * alpha)
        + logdet_p / (2 * (alpha - 1))
    )
    if not valid:
        return value * 0 + torch.inf  # keeps the graph; gradients are zero, not NaN
    return value
