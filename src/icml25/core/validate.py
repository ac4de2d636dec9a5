"""Argument checks for public entry points, worded the same way everywhere.

Every check raises an error whose message names the argument, says what it must be, and shows
what it got: ``lr must be a finite number > 0, got -0.5``. One exception type per kind of
error:

- a value of the wrong kind (a string or a boolean where a number is meant, an array of
  strings, a ragged list) raises :class:`InvalidTypeError`, which is both a ``TypeError``
  (Python's convention) and a ``ValueError`` (so code catching either catches it, as NumPy's
  ``AxisError`` is both a ``ValueError`` and an ``IndexError``);
- a value of the right kind that is out of range, of the wrong shape, NaN or infinite raises
  ``ValueError``;
- an object that is not of a required class (a tensor, a callable, a sequence) raises
  ``TypeError``.

Booleans are never numbers. The checks return the value converted (``int``, ``float``,
``np.ndarray``), so a call site reads ``steps = integer("steps", steps, low=1)``.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch


class InvalidTypeError(TypeError, ValueError):
    """An argument of the wrong kind (see the module docstring)."""


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_tensor(value: Any) -> bool:
    """Whether ``value`` is a ``torch.Tensor``, without importing torch (2 s) for methods that
    never use it: a tensor exists only once torch is imported."""
    torch_module = sys.modules.get("torch")
    return torch_module is not None and isinstance(value, torch_module.Tensor)


def _bounds(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high:g}")
    return " and ".join(parts)


def _in_bounds(
    x: float, low: float | None, high: float | None, low_open: bool, high_open: bool
) -> bool:
    if low is not None and (x <= low if low_open else x < low):
        return False
    return not (high is not None and (x >= high if high_open else x > high))


def integer(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an ``int`` in ``[low, high]``. Booleans and non-integral floats are refused
    (``2.0`` is accepted as 2)."""
    what = "an integer" + (
        f" {_bounds(low, high, False, False)}" if (low, high) != (None,) * 2 else ""
    )
    ok_type = isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real)
        and math.isfinite(float(value))
        and float(value).is_integer()
    )
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidTypeError(f"{name} must be {what}, got {value!r}")
    if not ok_type:
        raise ValueError(f"{name} must be {what}, got {value!r}")
    v = int(float(value)) if not isinstance(value, numbers.Integral) else int(value)
    if not _in_bounds(v, low, high, False, False):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return v


def number(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_inf: bool = False,
) -> float:
    """``value`` as a finite ``float`` in the given (open or closed) interval (``+-inf``
    allowed, within the bounds, with ``allow_inf``; NaN never)."""
    bounds = _bounds(low, high, low_open, high_open)
    what = ("a number" if allow_inf else "a finite number") + (f" {bounds}" if bounds else "")
    if _is_tensor(value) and value.numel() == 1:
        value = value.item()
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidTypeError(f"{name} must be {what}, got {value!r}")
    v = float(value)
    finite = math.isfinite(v) or (allow_inf and not math.isnan(v))
    if not finite or not _in_bounds(v, low, high, low_open, high_open):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return v


def positive(name: str, value: Any) -> float:
    """A finite number > 0."""
    return number(name, value, low=0.0, low_open=True)


def probability(name: str, value: Any, *, open_low: bool = False, open_high: bool = False) -> float:
    """A number in [0, 1] (ends optionally open)."""
    return number(name, value, low=0.0, high=1.0, low_open=open_low, high_open=open_high)


def choice(name: str, value: Any, options: Sequence[Any]) -> Any:
    """``value`` if it is one of ``options``."""
    if value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}")
    return value


def real_array(
    name: str,
    value: Any,
    *,
    shape: tuple[int, ...] | None = None,
    low: float | None = None,
    low_open: bool = False,
    integer: bool = False,
    allow_nan: bool = False,
    finite: bool = True,
) -> np.ndarray:
    """``value`` (a number, an array, a tensor) as a float64 array of real numbers: strings,
    booleans, objects and ragged lists are refused (:class:`InvalidTypeError`). ``shape``: a
    number or exactly this shape. ``finite``: no NaN or inf (``allow_nan``: NaN passes, a
    result's "undefined here"). ``low``: every entry ``>= low`` (``> low`` with ``low_open``).
    ``integer``: whole numbers."""
    if _is_tensor(value):
        value = value.detach().cpu().numpy()
    if isinstance(value, (str, bytes)):
        raise InvalidTypeError(
            f"{name} must be a number or an array of numbers, got a string {_show(value)}"
        )
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:  # a ragged list
        raise InvalidTypeError(
            f"{name} must be a number or an array of numbers, got {_show(value)}"
        ) from exc
    if raw.dtype.kind not in "iuf":
        raise InvalidTypeError(
            f"{name} must be a number or an array of numbers (not strings or booleans), got "
            f"dtype {raw.dtype}: {_show(value)}"
        )
    arr = raw.astype(np.float64)
    if shape is not None and arr.ndim and arr.shape != shape:
        raise ValueError(f"{name} must be a number or have shape {shape}, got shape {arr.shape}")
    if finite and not np.all(np.isfinite(arr) | (allow_nan & np.isnan(arr))):
        raise ValueError(f"{name} must be finite, got {_show(value)}")
    if integer and not np.all(arr == np.round(arr)):
        raise ValueError(f"{name} must hold whole numbers, got {_show(value)}")
    if low is not None:
        with np.errstate(invalid="ignore"):
            bad = arr <= low if low_open else arr < low
        if np.any(bad):
            what = f"{'>' if low_open else '>='} {low:g}"
            raise ValueError(f"{name} must be {what}, got {_show(value)}")
    return arr


def seeds(name: str, value: Any) -> tuple[int, ...]:
    """A non-empty sequence of integers >= 0 (``1.5``, ``"01"`` and ``True`` are refused)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence | np.ndarray):
        hint = (
            f" (e.g. range({value}) for {value} seeds, or [{value}])"
            if isinstance(value, int) and not isinstance(value, bool)
            else ""
        )
        raise TypeError(f"{name} must be a sequence of non-negative integers, got {value!r}{hint}")
    out = tuple(integer(name, s, low=0) for s in value)
    if not out:
        raise ValueError(f"{name} must be a non-empty sequence of non-negative integers, got []")
    return out


def optional_callable(name: str, value: Any, what: str = "") -> Any:
    """``value`` if it is None or callable (``what`` says what it is called as)."""
    if value is not None and not callable(value):
        called = f" {what}" if what else ""
        raise TypeError(f"{name} must be a callable{called} (or None), got {_show(value)}")
    return value


def flag(name: str, value: Any) -> bool:
    """``True`` or ``False`` (NumPy booleans too); ``0``, ``1`` and strings are refused."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidTypeError(f"{name} must be True or False, got {_show(value)}")
    return bool(value)


def generator(name: str, value: Any) -> torch.Generator | None:
    """``value`` if it is a ``torch.Generator`` or None."""
    torch_module = sys.modules.get("torch")
    if value is not None and (
        torch_module is None or not isinstance(value, torch_module.Generator)
    ):
        raise TypeError(f"{name} must be a torch.Generator or None, got {type(value).__name__}")
    return value


def finite_array(
    name: str,
    value: Any,
    *,
    ndim: int | tuple[int, ...] | None = None,
    min_len: int = 1,
) -> np.ndarray:
    """``value`` as a float64 NumPy array with ``ndim`` dimensions (one of, if a tuple), at
    least ``min_len`` rows, and no NaN or inf."""
    if _is_tensor(value):
        value = value.detach().cpu().numpy()
    try:
        raw = np.asarray(value)
        if raw.dtype.kind in "bUSV":  # booleans, strings, bytes: never numbers
            raise InvalidTypeError(
                f"{name} must be an array of numbers (not strings or booleans), got dtype "
                f"{raw.dtype}"
            )
        arr = raw.astype(np.float64)
    except InvalidTypeError:
        raise
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError(
            f"{name} must be an array of numbers, got {type(value).__name__}"
        ) from exc
    dims = (ndim,) if isinstance(ndim, int) else ndim
    if dims is not None and arr.ndim not in dims:
        want = " or ".join(f"{d}-D" for d in dims)
        raise ValueError(f"{name} must be a {want} array, got shape {arr.shape}")
    if arr.ndim and arr.shape[0] < min_len:
        raise ValueError(f"{name} must have at least {min_len} rows, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {int(np.sum(~np.isfinite(arr)))} NaN/inf")
    return arr


def finite_tensor(name: str, value: Any) -> torch.Tensor:
    """A ``torch.Tensor`` with no NaN or inf (floating tensors are checked; others pass)."""
    import torch

    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.is_floating_point() and not bool(torch.isfinite(value).all()):
        bad = int((~torch.isfinite(value)).sum())
        raise ValueError(f"{name} must be finite, got {bad} NaN/inf")
    return value


def class_labels(name: str, value: Any, n: int | None = None) -> np.ndarray:
    """Integer class labels (``int64``, all >= 0); fractional, negative or non-finite labels are
    refused rather than truncated. ``n`` checks the length."""
    arr = np.asarray(value.detach().cpu() if _is_tensor(value) else value)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of class labels, got shape {arr.shape}")
    if n is not None and len(arr) != n:
        raise ValueError(f"{name} must have {n} labels (one per row), got {len(arr)}")
    if arr.dtype.kind not in "iu":
        as_float = arr.astype(np.float64)
        if not np.all(np.isfinite(as_float)) or not np.all(as_float == np.round(as_float)):
            raise ValueError(f"{name} must hold integer class labels, got dtype {arr.dtype}")
        arr = as_float
    arr = arr.astype(np.int64)
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} must hold class labels >= 0, got {int(arr.min())}")
    return arr


def device(name: str, value: Any) -> torch.device:
    """``value`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``, a ``torch.device``) as a ``torch.device``
    that exists on this machine; refused by ``name`` otherwise."""
    import torch

    try:
        dev = torch.device(value)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"{name} must be a torch device such as 'cpu', 'cuda' or 'cuda:1', got {value!r}"
        ) from exc
    available = {
        "cpu": True,
        "cuda": torch.cuda.is_available()
        and (dev.index is None or dev.index < torch.cuda.device_count()),
        "mps": torch.backends.mps.is_available(),
    }
    if not available.get(dev.type, False):
        raise ValueError(f"{name} {value!r} is not available on this machine")
    return dev


def module_device(model: Any) -> torch.device:
    """Where ``model``'s first parameter (or buffer) lives; the CPU for a stateless module: the
    device an API that wraps a model follows."""
    import torch

    for p in model.parameters():
        return p.device
    for b in model.buffers():
        return b.device
    return torch.device("cpu")
