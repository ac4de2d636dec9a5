"""Label-noise distributions, described by what the signSGD ODE needs from them.

signSGD sees the label noise ``eps`` only through the *compression function*
``E[exp(-a eps^2)]`` (evaluated at ``a = 1 / (4 P)``, P the excess risk); plain SGD sees it only
through its second moment ``E[eps^2]``. A :class:`LabelNoise` provides both, plus a sampler for
the simulator. Gaussian and Cauchy have closed forms; Student-t and any scipy distribution use
quadrature; :class:`CustomNoise` takes the compression function directly.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import integrate, special, stats

from icml25.core import validate as V
from icml25.core.validate import number


def _positive(name: str, value: float) -> float:
    return number(name, value, low=0.0, low_open=True)


class LabelNoise:
    """Symmetric label noise ``eps`` of the model ``y = <x, theta*> + eps``."""

    name = "noise"

    def exp_moment(self, a: float) -> float:
        """``E[exp(-a eps^2)]`` for ``a >= 0`` (1 at ``a = 0``)."""
        raise NotImplementedError

    def second_moment(self) -> float:
        """``E[eps^2]`` (``inf`` for heavy tails such as Cauchy)."""
        raise NotImplementedError

    def density_at_zero(self) -> float:
        """``p_eps(0)``: the small-risk limit of signSGD depends on the noise only through it."""
        raise NotImplementedError

    def sample(self, rng: np.random.Generator, size: Any) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, repr=False)
class GaussianNoise(LabelNoise):
    """``eps ~ N(0, std^2)``; ``std = 0`` is noiseless."""

    std: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "std", number("std", self.std, low=0.0))

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"Gaussian(std={self.std:g})"

    def exp_moment(self, a: float) -> float:
        return 1.0 / math.sqrt(1.0 + 2.0 * a * self.std**2)

    def second_moment(self) -> float:
        return float(self.std) ** 2

    def density_at_zero(self) -> float:
        return math.inf if self.std == 0 else 1.0 / (self.std * math.sqrt(2 * math.pi))

    def sample(self, rng: np.random.Generator, size: Any) -> np.ndarray:
        return self.std * rng.standard_normal(size)


@dataclass(frozen=True, repr=False)
class CauchyNoise(LabelNoise):
    """Cauchy noise of scale ``gamma``, infinite variance.

    ``E exp(-a eps^2) = erfcx(gamma sqrt a)`` (scaled complementary error function).
    """

    gamma: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "gamma", _positive("gamma", self.gamma))

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"Cauchy(scale={self.gamma:g})"

    def exp_moment(self, a: float) -> float:
        return float(special.erfcx(self.gamma * math.sqrt(a)))

    def second_moment(self) -> float:
        return math.inf

    def density_at_zero(self) -> float:
        return 1.0 / (math.pi * self.gamma)

    def sample(self, rng: np.random.Generator, size: Any) -> np.ndarray:
        return self.gamma * rng.standard_cauchy(size)


class ScipyNoise(LabelNoise):
    """Any symmetric continuous scipy distribution (frozen), by quadrature of its density."""

    def __init__(self, dist: Any, name: str | None = None) -> None:
        if not (hasattr(dist, "pdf") and hasattr(dist, "rvs") and hasattr(dist, "dist")):
            raise TypeError(
                "dist must be a frozen continuous scipy.stats distribution (with pdf and rvs, "
                f"e.g. scipy.stats.t(df=3)), got {dist!r}"
            )
        q = float(dist.ppf(0.75))
        if not (
            abs(float(dist.cdf(0.0)) - 0.5) <= 1e-6
            and math.isclose(float(dist.pdf(q)), float(dist.pdf(-q)), rel_tol=1e-6, abs_tol=1e-12)
        ):
            raise ValueError(
                f"dist must be symmetric about 0 (label noise of the model), got {dist!r} with "
                f"P(eps <= 0) = {float(dist.cdf(0.0)):.4g}"
            )
        self.dist = dist
        self.name = name or f"{dist.dist.name}{dist.args}"
        self._scale = float(dist.ppf(0.75) - dist.ppf(0.25))  # interquartile range

    def exp_moment(self, a: float) -> float:
        if a == 0:
            return 1.0
        # Symmetric density: 2 int_0^inf p(x) exp(-a x^2) dx. When the Gaussian factor is narrower
        # than the density (large a) substitute x = u / sqrt(2a), so quad sees a width-1 integrand.
        if a * self._scale**2 <= 1.0:
            val, _ = integrate.quad(lambda x: self.dist.pdf(x) * math.exp(-a * x * x), 0, np.inf)
            return 2.0 * val
        c = 1.0 / math.sqrt(2.0 * a)
        val, _ = integrate.quad(lambda u: self.dist.pdf(c * u) * math.exp(-0.5 * u * u), 0, np.inf)
        return 2.0 * c * val

    def second_moment(self) -> float:
        return float(self.dist.var()) + float(self.dist.mean()) ** 2

    def density_at_zero(self) -> float:
        return float(self.dist.pdf(0.0))

    def sample(self, rng: np.random.Generator, size: Any) -> np.ndarray:
        return np.asarray(self.dist.rvs(size=size, random_state=rng), dtype=float)


class StudentTNoise(ScipyNoise):
    """Student-t noise, ``df`` degrees of freedom and ``scale`` (infinite variance for df <= 2)."""

    def __init__(self, df: float, scale: float = 1.0) -> None:
        self.df = _positive("df", df)
        self.scale = _positive("scale", scale)
        super().__init__(
            stats.t(df=self.df, scale=self.scale), f"Student-t(df={df:g}, scale={scale:g})"
        )

    def second_moment(self) -> float:
        return math.inf if self.df <= 2 else self.scale**2 * self.df / (self.df - 2)


class CustomNoise(LabelNoise):
    """Noise given by its characteristic quantity ``a -> E[exp(-a eps^2)]``.

    ``sampler(rng, size)`` is only needed for simulation, ``second_moment`` only for the SGD ODE,
    ``density_at_zero`` only for the small-risk limit.
    """

    def __init__(
        self,
        exp_moment: Callable[[float], float],
        *,
        sampler: Callable[[np.random.Generator, Any], np.ndarray] | None = None,
        second_moment: float = math.nan,
        density_at_zero: float = math.nan,
        name: str = "custom",
    ) -> None:
        if not callable(exp_moment):
            raise TypeError(
                f"exp_moment must be callable a -> E[exp(-a eps^2)], got {exp_moment!r}"
            )
        self._exp_moment = exp_moment
        self._sampler = V.optional_callable("sampler", sampler, "(rng, size) -> samples")
        self._m2 = _optional_moment("second_moment", second_moment)
        self._p0 = _optional_moment("density_at_zero", density_at_zero)
        self.name = str(name)

    def exp_moment(self, a: float) -> float:
        value = self._exp_moment(a)
        try:
            out = V.number("exp_moment(a)", value, low=0.0)
        except ValueError:
            out = math.nan
        if not 0.0 <= out <= 1.0:  # E[exp(-a eps^2)] is a probability-like number
            raise ValueError(
                f"{self.name}: exp_moment(a) = E[exp(-a eps^2)] must be a number in [0, 1], got "
                f"{value!r} at a = {a:g}"
            )
        return out

    def second_moment(self) -> float:
        if math.isnan(self._m2):
            raise ValueError(f"{self.name}: second_moment was not given (needed for the SGD ODE)")
        return self._m2

    def density_at_zero(self) -> float:
        if math.isnan(self._p0):
            raise ValueError(f"{self.name}: density_at_zero was not given")
        return self._p0

    def sample(self, rng: np.random.Generator, size: Any) -> np.ndarray:
        if self._sampler is None:
            raise ValueError(f"{self.name}: no sampler was given, so it cannot be simulated")
        return np.asarray(self._sampler(rng, size), dtype=float)


def _optional_moment(name: str, value: Any) -> float:
    """NaN (not given) or a number >= 0, possibly infinite."""
    if isinstance(value, float) and math.isnan(value):
        return value
    return V.number(name, value, allow_inf=True, low=0.0)


def as_noise(noise: LabelNoise | float | None) -> LabelNoise:
    """A :class:`LabelNoise`; a number is read as a Gaussian standard deviation, None as 0."""
    if noise is None:
        return GaussianNoise(0.0)
    if isinstance(noise, LabelNoise):
        return noise
    if isinstance(noise, numbers.Real) and not isinstance(noise, bool):
        return GaussianNoise(float(noise))
    if hasattr(noise, "pdf") and hasattr(noise, "rvs"):
        return ScipyNoise(noise)
    raise TypeError(
        "noise must be a LabelNoise (GaussianNoise, CauchyNoise, StudentTNoise, CustomNoise), a "
        f"frozen scipy.stats distribution, or a Gaussian std as a number; got {noise!r}"
    )
