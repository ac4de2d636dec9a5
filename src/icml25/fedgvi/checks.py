"""Argument checks shared by FedGVI's public entry points (issue 54: a clear error for bad input).

Each check names the argument, says what it must be and shows what it got, in the wording of
:mod:`icml25.core.validate`. Numbers and arrays given as strings are refused rather than
converted (NumPy would read ``"1"`` as 1.0), a class passed where an instance is expected gets
its own message (``NLL`` for ``NLL()``), and sequences of clients or factors are checked item
by item.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from icml25.core import validate as V


def _kind(value: Any) -> str:
    return type(value).__name__


def numeric_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array, refusing strings, objects and ragged nesting."""
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be an array of numbers, got the string {value!r}")
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        raw = np.asarray(value)
    except ValueError as exc:  # ragged
        raise ValueError(
            f"{name} must be an array of numbers, got a ragged {_kind(value)}"
        ) from exc
    if raw.dtype.kind not in "biuf":
        raise ValueError(
            f"{name} must be an array of numbers, got an array of dtype {raw.dtype} "
            f"(numbers passed as strings or objects are not converted)"
        )
    return raw.astype(np.float64)


def as_tensor(name: str, value: Any) -> torch.Tensor:
    """A float64 tensor from a tensor or an array of numbers (strings refused)."""
    if isinstance(value, torch.Tensor):
        if value.is_complex():
            raise ValueError(f"{name} must hold real numbers, got dtype {value.dtype}")
        return value if value.dtype == torch.float64 else value.to(torch.float64)
    return torch.as_tensor(numeric_array(name, value))


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


def generator(name: str, value: Any) -> torch.Generator | None:
    if value is not None and not isinstance(value, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator or None, got {_kind(value)}")
    return value


def flag(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def function(name: str, value: Any) -> Callable[..., Any] | None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be callable or None, got {_kind(value)}")
    return value


def seed(value: Any) -> int:
    return V.integer("seed", value, low=0)


def damping(value: Any) -> float:
    try:
        return V.number("damping", value, low=0.0, high=1.0, low_open=True)
    except ValueError:
        raise ValueError(f"damping must lie in (0, 1], got {value!r}") from None


def positive_integer(name: str, value: Any) -> int:
    """An integer >= 1 (NumPy integers accepted; booleans, floats and strings refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


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
