"""Properties of the shared argument checks (core.validate)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icml25.core import validate as V


@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(-10, 10), st.booleans())
def test_number_accepts_exactly_the_finite_values_in_range(x, low, open_low):
    inside = math.isfinite(x) and (x > low if open_low else x >= low)
    if inside:
        assert V.number("x", x, low=low, low_open=open_low) == x
    else:
        with pytest.raises(ValueError, match=r"^x must be a finite number"):
            V.number("x", x, low=low, low_open=open_low)


@given(st.one_of(st.integers(-50, 50), st.floats(-50, 50), st.booleans()), st.integers(-5, 5))
def test_integer_accepts_integral_values_at_or_above_low(x, low):
    integral = not isinstance(x, bool) and float(x).is_integer()
    if integral and x >= low:
        assert V.integer("k", x, low=low) == int(x)
    else:
        with pytest.raises(ValueError, match=r"^k must be an integer"):
            V.integer("k", x, low=low)


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=8))
def test_finite_array_refuses_any_nan_or_inf(xs):
    arr = np.array(xs)
    if np.all(np.isfinite(arr)):
        np.testing.assert_array_equal(V.finite_array("a", xs), arr)
    else:
        bad = int(np.sum(~np.isfinite(arr)))
        with pytest.raises(ValueError, match=f"a must be finite, got {bad} NaN/inf"):
            V.finite_array("a", xs)


@given(st.lists(st.floats(-3, 3), min_size=1, max_size=8))
def test_class_labels_refuse_fractions_and_negatives(xs):
    arr = np.array(xs)
    if np.all(arr == np.round(arr)) and arr.min() >= 0:
        np.testing.assert_array_equal(V.class_labels("y", xs), arr.astype(np.int64))
    else:
        with pytest.raises(ValueError, match="y must hold"):
            V.class_labels("y", xs)


def test_choice_names_the_options():
    assert V.choice("mode", "a", ("a", "b")) == "a"
    with pytest.raises(ValueError, match=r"mode must be one of \['a', 'b'\], got 'c'"):
        V.choice("mode", "c", ("a", "b"))
