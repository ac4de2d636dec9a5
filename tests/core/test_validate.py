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


def test_a_value_of_the_wrong_kind_is_both_a_type_and_a_value_error():
    import numpy as np
    import pytest

    from icml25.core import validate as V

    for call in (
        lambda: V.integer("k", "3"),
        lambda: V.integer("k", True),
        lambda: V.number("x", "0.3"),
        lambda: V.number("x", False),
        lambda: V.finite_array("a", [True, False]),
        lambda: V.finite_array("a", ["1", "2"]),
        lambda: V.real_array("a", "1.0"),
        lambda: V.real_array("a", [[1, 2], [3]]),
        lambda: V.real_array("a", np.array([True])),
    ):
        with pytest.raises(V.InvalidTypeError) as info:
            call()
        assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
    # a bad value of the right kind is a ValueError only
    with pytest.raises(ValueError) as info:
        V.integer("k", 0, low=1)
    assert not isinstance(info.value, TypeError)


def test_real_array_options():
    import math

    import numpy as np
    import pytest

    from icml25.core import validate as V

    assert V.real_array("a", 2).shape == ()
    assert V.real_array("a", [1, 2], shape=(2,)).dtype == np.float64
    with pytest.raises(ValueError, match=r"a must be a number or have shape \(3,\)"):
        V.real_array("a", [1, 2], shape=(3,))
    with pytest.raises(ValueError, match="a must be finite"):
        V.real_array("a", [1, math.nan])
    assert math.isnan(V.real_array("a", [1, math.nan], allow_nan=True)[1])
    assert math.isinf(V.real_array("a", [math.inf], finite=False)[0])
    with pytest.raises(ValueError, match="a must be > 0"):
        V.real_array("a", [1, 0], low=0, low_open=True)
    with pytest.raises(ValueError, match="whole numbers"):
        V.real_array("a", [1.5], integer=True)


def test_number_allow_inf_and_seeds_and_callables():
    import math

    import pytest

    from icml25.core import validate as V

    assert V.number("r", math.inf, low=0.0, allow_inf=True) == math.inf
    for bad in (math.nan, -1.0):
        with pytest.raises(ValueError, match="r must be a number >= 0"):
            V.number("r", bad, low=0.0, allow_inf=True)
    assert V.seeds("seeds", range(3)) == (0, 1, 2)
    with pytest.raises(TypeError, match=r"e\.g\. range\(3\)"):
        V.seeds("seeds", 3)
    with pytest.raises(ValueError, match="non-empty"):
        V.seeds("seeds", [])
    with pytest.raises(V.InvalidTypeError):
        V.seeds("seeds", [True])
    assert V.optional_callable("f", None) is None
    with pytest.raises(TypeError, match="f must be a callable"):
        V.optional_callable("f", 3)


def test_flag_and_generator():
    import numpy as np
    import pytest
    import torch

    from icml25.core import validate as V

    assert V.flag("f", np.bool_(True)) is True
    for bad in (1, 0, "yes", None):
        with pytest.raises(TypeError, match="f must be True or False"):
            V.flag("f", bad)
    g = torch.Generator()
    assert V.generator("g", g) is g and V.generator("g", None) is None
    with pytest.raises(TypeError, match=r"g must be a torch\.Generator or None, got int"):
        V.generator("g", 3)
