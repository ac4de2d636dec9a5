"""Argument checks shared by the mirror-flow functions.

NumPy converts the string ``"1.0"`` to the number 1.0 and broadcasts a vector of the wrong length
into an error about "remapped shapes"; these checks refuse both with a message that names the
argument, says what it must be and shows what it got.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def real_array(
    name: str,
    value: Any,
    *,
    shape: tuple[int, ...] | None = None,
    low: float | None = None,
    low_open: bool = False,
    integer: bool = False,
    allow_nan: bool = False,
) -> np.ndarray:
    """``value`` as a float64 array of finite numbers (a number or an array; never a string or a
    boolean). ``shape``: the value must be a number or have exactly this shape. ``low``: every
    entry must be ``>= low`` (``> low`` with ``low_open``). ``integer``: integer-valued.
    ``allow_nan``: NaN entries pass (a result's "undefined here")."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        raw = np.asarray(value)
    except ValueError as exc:  # a ragged list
        what = f"{name} must be a number or an array of numbers, got {_show(value)}"
        raise ValueError(what) from exc
    if raw.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a number or an array of numbers, got {_show(value)}")
    arr = raw.astype(np.float64)
    if shape is not None and arr.ndim and arr.shape != shape:
        raise ValueError(f"{name} must be a number or have shape {shape}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr) | (allow_nan & np.isnan(arr))):
        raise ValueError(f"{name} must be finite, got {_show(value)}")
    if integer and not np.all(arr == np.round(arr)):
        raise ValueError(f"{name} must hold whole numbers (step counts), got {_show(value)}")
    if low is not None:
        with np.errstate(invalid="ignore"):
            bad = arr <= low if low_open else arr < low
        if np.any(bad):
            what = f"{'>' if low_open else '>='} {low:g}"
            raise ValueError(f"{name} must be {what}, got {_show(value)}")
    return arr


def real_number(
    name: str, value: Any, *, low: float | None = None, low_open: bool = False
) -> float:
    """A single finite number (not a string, not a boolean), ``>= low`` (``> low``)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        what = "" if low is None else f" {'>' if low_open else '>='} {low:g}"
        raise ValueError(f"{name} must be a finite number{what}, got {_show(value)}")
    return float(real_array(name, value, low=low, low_open=low_open))
