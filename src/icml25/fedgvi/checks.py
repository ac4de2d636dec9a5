"""Checks of FedGVI's own types at its public entry points: Gaussians in natural parameters,
losses, divergences, local optimizers, data models and sequences of them. A class passed where
an instance is expected gets its own message (``NLL`` for ``NLL()``), and sequences of clients
or factors are checked item by item. Numbers, arrays, flags and generators are checked by
:mod:`icml25.core.validate`, as in every method.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from icml25.core import validate as V


def _kind(value: Any) -> str:
    return type(value).__name__


def as_tensor(name: str, value: Any) -> torch.Tensor:
    """A float64 tensor from a tensor or an array of numbers (strings refused)."""
    if isinstance(value, torch.Tensor):
        if value.is_complex():
            raise ValueError(f"{name} must hold real numbers, got dtype {value.dtype}")
        return value if value.dtype == torch.float64 else value.to(torch.float64)
    return torch.as_tensor(V.real_array(name, value, finite=False))


def gaussian(name: str, value: Any) -> Any:
    """``value`` if it is a :class:`~icml25.fedgvi.gaussian.NatGaussian`."""
    from icml25.fedgvi.gaussian import NatGaussian

    if not isinstance(value, NatGaussian):
        raise TypeError(
            f"{name} must be a NatGaussian (e.g. NatGaussian.from_moments(mean, var)), "
            f"got {_kind(value)}"
        )
    return value


def same_space(name: str, value: Any, ref: Any, ref_name: str) -> Any:
    """``value`` (a NatGaussian) if it has ``ref``'s dimension and covariance kind."""
    gaussian(name, value)
    if value.dim != ref.dim or value.full != ref.full:
        kind = lambda g: "full" if g.full else "mean-field"  # noqa: E731
        raise ValueError(
            f"{name} must have {ref_name}'s dimension {ref.dim} and covariance kind "
            f"({kind(ref)}), got dimension {value.dim} ({kind(value)})"
        )
    return value


def loss(name: str, value: Any) -> Any:
    """A loss instance: ``per_point``, ``expected`` and ``bind`` (NLL(), not NLL)."""
    if isinstance(value, type):
        raise TypeError(f"{name} must be a loss instance, got the class {value.__name__}: call it")
    if not all(callable(getattr(value, a, None)) for a in ("per_point", "expected", "bind")):
        raise TypeError(
            f"{name} must be a FedGVI loss (NLL(), GeneralisedCrossEntropy(b), ... or one with "
            f"per_point, expected and bind), got {_kind(value)}"
        )
    return value


def divergence(name: str, value: Any) -> Any:
    """A divergence instance, callable as ``D(mq, vq, mp, vp)`` (KL(), not KL)."""
    if isinstance(value, type):
        raise TypeError(
            f"{name} must be a divergence instance, got the class {value.__name__}: call it"
        )
    if not callable(value):
        raise TypeError(
            f"{name} must be a divergence, callable as D(mean_q, var_q, mean_p, var_p) "
            f"(KL(), AlphaRenyi(2.5), ...), got {_kind(value)}"
        )
    return value


def optimizer(name: str, value: Any) -> Any:
    from icml25.fedgvi.fedgvi import LocalOptimizer

    if not isinstance(value, LocalOptimizer):
        raise TypeError(f"{name} must be a LocalOptimizer, got {_kind(value)}")
    return value


def damping(value: Any) -> float:
    try:
        return V.number("damping", value, low=0.0, high=1.0, low_open=True)
    except ValueError:
        raise ValueError(f"damping must lie in (0, 1], got {value!r}") from None


def items(name: str, value: Any, item: type, what: str) -> list[Any]:
    """A non-empty sequence (not a single item) whose entries are ``item`` instances."""
    if isinstance(value, item):
        raise TypeError(f"{name} must be a sequence of {what}, got a single {item.__name__}")
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a sequence of {what}, got {_kind(value)}")
    bad = [(i, _kind(v)) for i, v in enumerate(value) if not isinstance(v, item)]
    if bad:
        i, k = bad[0]
        raise TypeError(f"{name} must hold {what} only, got {k} at index {i}")
    if not value:
        raise ValueError(f"{name} must not be empty")
    return list(value)


def model(value: Any, dim: int | None = None, name: str = "model") -> Any:
    """``value`` if it is a FedGVI data model (``log_lik``, ``dim``, ``n``, ``take``) whose
    parameter dimension is ``dim``."""
    if isinstance(value, type):
        raise TypeError(f"{name} must be a data model instance, got the class {value.__name__}")
    if not all(hasattr(value, a) for a in ("log_lik", "dim", "n", "take")):
        raise TypeError(
            f"{name} must be a FedGVI data model (GaussianLocation, LogisticRegression, "
            f"MLPClassifier, or one with log_lik, dim, n and take), got {_kind(value)}"
        )
    if dim is not None and value.dim != dim:
        raise ValueError(
            f"the model's parameter dimension is {value.dim}, the Gaussian's dimension {dim}"
        )
    return value
