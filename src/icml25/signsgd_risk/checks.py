"""Argument checks shared by the signSGD modules, worded as :mod:`icml25.core.validate`.

Numbers given as strings, booleans where a number is meant, arrays of strings and
non-callables where a callable is meant are refused here with the argument's name, rather than
converted by ``float(...)`` / ``np.asarray(..., dtype=float)`` (which accept ``"0.3"``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from icml25.core.validate import integer, number


def real_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array, refusing strings, booleans and ragged or object input
    (finiteness and shape are the caller's to check)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be an array of real numbers, got a string {value!r}")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nested lists
        raise TypeError(f"{name} must be an array of real numbers: {exc}") from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(
            f"{name} must be an array of real numbers, got dtype {arr.dtype} "
            f"(numbers passed as strings or booleans are refused): {_short(value)}"
        )
    return arr.astype(np.float64)


def real_number(name: str, value: Any, *, low: float = 0.0, allow_inf: bool = False) -> float:
    """A real number ``>= low`` (``+inf`` allowed only with ``allow_inf``); strings, booleans
    and NaN are refused."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.dtype == torch.bool:
        value = value.item()
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    v = float(value) if ok else math.nan
    if not ok or math.isnan(v) or v < low or (math.isinf(v) and not allow_inf):
        what = "a number" if allow_inf else "a finite number"
        raise ValueError(f"{name} must be {what} >= {low:g}, got {value!r}")
    return v


def positive(name: str, value: Any) -> float:
    """A finite number > 0 (the wording of :func:`icml25.core.validate.number`)."""
    return number(name, value, low=0.0, low_open=True)


def seed_tuple(name: str, seeds: Any) -> tuple[int, ...]:
    """A non-empty sequence of integers >= 0 (``1.5``, ``"01"`` and ``True`` are refused)."""
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence | np.ndarray):
        hint = (
            f" (e.g. range({seeds}) for {seeds} seeds, or [{seeds}])"
            if isinstance(seeds, int)
            else ""
        )
        raise TypeError(f"{name} must be a sequence of non-negative integers, got {seeds!r}{hint}")
    out = tuple(integer(name, s, low=0) for s in seeds)
    if not out:
        raise ValueError(f"{name} must be a non-empty sequence of non-negative integers, got []")
    return out


def optional_callable(name: str, value: Any, what: str) -> Any:
    """``value`` if it is None or callable (``what`` says what it is called as)."""
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be a callable {what} (or None), got {value!r}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
