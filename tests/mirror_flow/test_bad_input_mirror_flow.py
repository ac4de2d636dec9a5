"""Bad input to mirror_flow's public functions (issue 54, "Bad input"): numbers passed as
strings, arrays of the wrong length, a non-callable criterion, fractional step counts, NaN and
inf. Each row names the argument the message must mention; the rows extend the package's table
in ``tests/test_bad_input.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from icml25 import mirror_flow as mf

NAN = float("nan")
_rng = np.random.default_rng(0)
_A = _rng.standard_normal((4, 6))
_y = _A @ np.ones(6)
_u, _v = np.ones(3), np.full(3, 0.5)
_P, _Q = np.ones((3, 2)), np.ones((4, 2))


def _opt() -> torch.optim.Optimizer:
    return torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.1, weight_decay=0.1)


def _gd(**kw: Any) -> Any:
    args: dict[str, Any] = {"p": 1.5, "lr": 0.1, "alpha": 0.1, "off": [1], "steps": 3}
    return mf.power_gd(_A, _y, **{**args, **kw})


ROWS: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    # numbers passed as strings
    ("legendre:c str", lambda: mf.legendre(np.ones(2), "1.0"), ValueError, "c must be a number"),
    ("legendre:x str", lambda: mf.legendre("1, 2", 1.0), ValueError, "x must be a number"),
    ("mirror_inverse:c str", lambda: mf.mirror_inverse(np.ones(2), "1"), ValueError, "c must"),
    ("c_flow:alpha str", lambda: mf.c_flow(1.0, "0.1", 1.0), ValueError, "alpha"),
    ("c_flow:t str", lambda: mf.c_flow(1.0, 0.1, "1"), ValueError, "t must"),
    ("c_flow:c0 str", lambda: mf.c_flow("1", 0.1, 1.0), ValueError, "c0 must"),
    ("c_gd:lr str", lambda: mf.c_gd(1.0, "0.1", 0.1, 3), ValueError, "lr must be a finite number"),
    ("c_gd:steps str", lambda: mf.c_gd(1.0, 0.1, 0.1, "3"), ValueError, "steps must"),
    ("c_gd:c0 str", lambda: mf.c_gd("1", 0.1, 0.1, 3), ValueError, "c0 must"),
    ("c_gd_step:lr str", lambda: mf.c_gd_step(_u, _u, "0.1", 0.1), ValueError, "lr must"),
    ("implicit:c str", lambda: mf.implicit_bias_solution(_A, _y, "1"), ValueError, "c must"),
    ("implicit:A str", lambda: mf.implicit_bias_solution("A", _y, 1.0), ValueError, "A must"),
    ("balancedness:P str", lambda: mf.balancedness("P", _Q), ValueError, "P must"),
    (
        "balancedness_gd_step:lr str",
        lambda: mf.balancedness_gd_step(_P, _Q, np.ones((3, 4)), "0.1", 0.1),
        ValueError,
        "lr must",
    ),
    (
        "balancedness_prediction:steps str",
        lambda: mf.balancedness_prediction(np.eye(2), 0.1, 0.1, "3"),
        ValueError,
        "steps must",
    ),
    (
        "balancedness_error:lr str",
        lambda: mf.balancedness_error(np.ones((2, 2, 2)), np.eye(2), "0.1", 0.1, [0, 1]),
        ValueError,
        "lr must",
    ),
    (
        "balancedness_switch_step:target str",
        lambda: mf.balancedness_switch_step(0.1, 0.1, "0.05"),
        ValueError,
        "target must",
    ),
    ("power_x:u str", lambda: mf.power_x("u", _v, 1.5), ValueError, "u must"),
    ("predicted_invariant:A str", lambda: mf.predicted_invariant(2.0, 1.5, "0.5"), ValueError, "A"),
    ("predicted_invariant:S0 str", lambda: mf.predicted_invariant("2", 1.5, 0.5), ValueError, "S0"),
    ("dual_interval_width:S str", lambda: mf.dual_interval_width("2", 1.5), ValueError, "S must"),
    ("collapse_time:S0 str", lambda: mf.collapse_time("2", 1.5), ValueError, "S0 must"),
    ("power_gd:lr str", lambda: _gd(lr="0.1"), ValueError, "lr must"),
    ("power_gd:alpha str", lambda: _gd(alpha="0.1"), ValueError, "alpha must"),
    ("power_gd:off str", lambda: _gd(off="1"), ValueError, "off must"),
    ("power_gd:u0 str", lambda: _gd(u0="1"), ValueError, "u0 must"),
    ("power_gd:record str", lambda: _gd(record="12"), ValueError, "record must"),
    (
        "WeightDecaySwitch:after str",
        lambda: mf.WeightDecaySwitch(_opt(), at_step=3, after="0"),
        ValueError,
        "weight decay after the switch",
    ),
    (
        "WeightDecaySwitch.step:metric str",
        lambda: mf.WeightDecaySwitch(_opt(), criterion=lambda m: m < 1).step("0.5"),
        ValueError,
        "metric must be a number",
    ),
    # vectors of the wrong length
    (
        "legendre:c len",
        lambda: mf.legendre(np.ones(3), np.ones(2)),
        ValueError,
        "c must be a number or have shape (3,)",
    ),
    ("legendre_grad:c len", lambda: mf.legendre_grad(np.ones(3), np.ones(2)), ValueError, "c must"),
    ("c_gd_step:g len", lambda: mf.c_gd_step(_u, np.ones(2), 0.1, 0.1), ValueError, "g must"),
    (
        "implicit:c len",
        lambda: mf.implicit_bias_solution(_A, _y, np.ones(3)),
        ValueError,
        "c must be a number or have shape (6,)",
    ),
    (
        "implicit:x0 len",
        lambda: mf.implicit_bias_solution(_A, _y, 1.0, x0=np.ones(3)),
        ValueError,
        "x0 must have one entry per column",
    ),
    (
        "implicit:c0 len",
        lambda: mf.implicit_bias_solution(_A, _y, 1.0, x0=np.ones(6), c0=np.ones(2)),
        ValueError,
        "c0 must",
    ),
    ("power_gd:u0 len", lambda: _gd(u0=np.ones(3)), ValueError, "u0 must"),
    (
        "balancedness_error:steps len",
        lambda: mf.balancedness_error(np.ones((3, 2, 2)), np.eye(2), 0.1, 0.1, [0, 1]),
        ValueError,
        "one step per entry",
    ),
    # non-callables where a callable is expected
    (
        "WeightDecaySwitch:criterion",
        lambda: mf.WeightDecaySwitch(_opt(), criterion=3),  # type: ignore[arg-type]
        TypeError,
        "criterion must be a callable",
    ),
    # step counts that are not whole numbers, booleans, NaN / inf, negative times
    ("c_gd:steps frac", lambda: mf.c_gd(1.0, 0.1, 0.1, 2.5), ValueError, "steps must hold whole"),
    (
        "balancedness_prediction:steps frac",
        lambda: mf.balancedness_prediction(np.eye(2), 0.1, 0.1, 2.5),
        ValueError,
        "steps must hold whole",
    ),
    ("power_gd:off frac", lambda: _gd(off=[1.5]), ValueError, "off (step counts)"),
    (
        "power_gd:A nan",
        lambda: mf.power_gd(_A * NAN, _y, p=1.5, lr=0.1, alpha=0.1, off=[1], steps=3),
        ValueError,
        "A must be finite",
    ),
    (
        "WeightDecaySwitch:at_step bool",
        lambda: mf.WeightDecaySwitch(_opt(), at_step=True),
        ValueError,
        "at_step",
    ),
    (
        "WeightDecaySwitch:after inf",
        lambda: mf.WeightDecaySwitch(_opt(), at_step=3, after=float("inf")),
        ValueError,
        "finite number >= 0",
    ),
    (
        "WeightDecaySwitch.load_state_dict:missing",
        lambda: mf.WeightDecaySwitch(_opt(), at_step=3).load_state_dict({"steps": 1}),
        ValueError,
        "state_dict()",
    ),
    ("c_flow:t<0", lambda: mf.c_flow(1.0, 0.1, -1.0), ValueError, "t must be >= 0"),
    ("c_flow:c0<0", lambda: mf.c_flow(-1.0, 0.1, 1.0), ValueError, "c0 must be > 0"),
    ("c_gd:c0<0", lambda: mf.c_gd(-1.0, 0.1, 0.1, 3), ValueError, "c0 must be > 0"),
    ("collapse_time:S0 inf", lambda: mf.collapse_time(float("inf"), 1.5), ValueError, "S0"),
    # a negative or zero learning rate is refused, never turned into a value
    ("c_gd:lr<0", lambda: mf.c_gd(1.0, -0.1, 0.1, 3), ValueError, "lr must be a finite number > 0"),
    (
        "balancedness_switch_step:lr<0",
        lambda: mf.balancedness_switch_step(-0.1, 0.1, 0.05),
        ValueError,
        "lr must be a finite number > 0",
    ),
    (
        "balancedness_switch_step:alpha=0",
        lambda: mf.balancedness_switch_step(0.1, 0.0, 0.05),
        ValueError,
        "alpha must be > 0",
    ),
    (
        "balancedness_switch_step:target=1",
        lambda: mf.balancedness_switch_step(0.1, 0.1, 1.0),
        ValueError,
        "target must be < 1",
    ),
    (
        "balancedness_switch_step:lr*alpha>=1",
        lambda: mf.balancedness_switch_step(2.0, 0.5, 0.05),
        ValueError,
        "lr * alpha must be < 1",
    ),
]


@pytest.mark.parametrize("call,exc,words", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_input_gets_a_clear_error(call: Callable[[], Any], exc: type, words: str) -> None:
    with pytest.raises(exc) as info:
        call()
    assert words.lower() in str(info.value).lower(), str(info.value)


def test_valid_input_still_works() -> None:
    """The checks refuse strings but keep what worked: lists, NumPy integers, 0-d arrays,
    tensors, scalars broadcast against vectors, and NaN in an invariant (a factor at 0)."""
    assert mf.legendre([1.0, 2.0], 1.0) == pytest.approx(mf.legendre(np.array([1.0, 2.0]), 1.0))
    assert mf.c_gd(1.0, 0.1, 0.1, np.int64(3)) == pytest.approx(0.99**6)
    assert mf.c_gd(1.0, 0.1, 0.1, 3.0) == pytest.approx(0.99**6)
    np.testing.assert_allclose(mf.c_flow(np.ones(2), np.float32(0.5), np.array(1.0)), np.exp(-1))
    np.testing.assert_allclose(mf.legendre_grad(torch.ones(3), np.ones(3)), 0.5 * np.arcsinh(2))
    width = mf.dual_interval_width(np.array([1.0, np.nan]), 1.5)
    assert width[0] == pytest.approx(1 / 0.75) and np.isnan(width[1])
    sched = mf.WeightDecaySwitch(_opt(), criterion=lambda m: m < 1)
    sched.step(torch.tensor(0.5))
    assert sched.switched_at == 1
