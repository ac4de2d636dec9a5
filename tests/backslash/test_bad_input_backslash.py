"""Bad input to BackSlash's public functions (issue 54, "Bad input"): numbers passed as strings,
a list or a bare tensor where tensors are expected, an object that is not an optimizer, a
bounds pair of the wrong length. Each row names the argument the message must mention; the rows
extend the package's table in ``tests/test_bad_input.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from icml25 import backslash as bs


def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))


ROWS: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    # numbers passed as strings
    ("BackSlash:lam str", lambda: bs.BackSlash(_net(), "1.0"), ValueError, "lam must be"),
    ("BackSlash:nu str", lambda: bs.BackSlash(_net(), 1.0, nu="1.5"), ValueError, "nu must be"),
    ("BackSlash:lam bool", lambda: bs.BackSlash(_net(), True), ValueError, "lam must be"),
    (
        "BackSlash:nu_bounds str",
        lambda: bs.BackSlash(_net(), 1.0, nu_bounds=("0.5", "2")),
        ValueError,
        "nu_bounds[0] must be a finite number",
    ),
    ("step:lr str", lambda: bs.BackSlash(_net(), 1.0).step(lr="0.1"), ValueError, "lr must be"),
    ("prox_power:t str", lambda: bs.prox_power(torch.ones(3), "0.1", 1.0), ValueError, "t must"),
    ("prox_power:nu str", lambda: bs.prox_power(torch.ones(3), 0.1, "1"), ValueError, "nu must"),
    ("gg_rate:nu str", lambda: bs.gg_rate([torch.ones(3)], "1.0"), ValueError, "nu must"),
    ("gg_rho:str", lambda: bs.gg_rho("1.0"), ValueError, "nu must be a number"),
    (
        "gg_shape:bounds str",
        lambda: bs.gg_shape(torch.randn(50), bounds=("0.1", "3")),
        ValueError,
        "bounds[0] must be a finite number",
    ),
    (
        "gg_shape:theta str",
        lambda: bs.gg_shape(["1", "2"]),
        ValueError,
        "theta must be a tensor or an array of numbers",
    ),
    ("quantize:str", lambda: bs.quantize(["0.1", "0.2"], 0.1), ValueError, "must be numbers"),
    (
        "magnitude_prune:fraction str",
        lambda: bs.magnitude_prune([torch.ones(3)], "0.5"),
        ValueError,
        "fraction must be",
    ),
    # lists (or a bare tensor) where tensors are expected
    (
        "BackSlash:params of lists",
        lambda: bs.BackSlash(_net(), 1.0, params=[[1.0, 2.0]]),
        TypeError,
        "params must hold torch tensors",
    ),
    (
        "BackSlash:params one tensor",
        lambda: bs.BackSlash(_net(), 1.0, params=torch.ones(3)),
        TypeError,
        "params must be an iterable of tensors",
    ),
    (
        "BackSlash:params not iterable",
        lambda: bs.BackSlash(_net(), 1.0, params=3),
        TypeError,
        "params must be an iterable",
    ),
    (
        "prox_power:list",
        lambda: bs.prox_power([1.0, 2.0], 0.1, 1.0),
        TypeError,
        "theta must be a torch.Tensor",
    ),
    ("gg_rate:list of floats", lambda: bs.gg_rate([1.0, 2.0], 1.0), TypeError, "params must"),
    (
        "magnitude_prune:one tensor",
        lambda: bs.magnitude_prune(torch.ones(3), 0.5),
        TypeError,
        "params must be a list of tensors",
    ),
    (
        "magnitude_prune:list of lists",
        lambda: bs.magnitude_prune([[1.0, 2.0]], 0.5),
        TypeError,
        "params must hold torch tensors",
    ),
    # an object that is not an optimizer where one is expected
    (
        "BackSlash.attach:not an optimizer",
        lambda: bs.BackSlash(_net(), 1.0).attach("adam"),  # type: ignore[arg-type]
        TypeError,
        "optimizer must be a torch.optim.Optimizer",
    ),
    (
        "BackSlash.step:not an optimizer",
        lambda: bs.BackSlash(_net(), 1.0).step("adam"),  # type: ignore[arg-type]
        TypeError,
        "optimizer must be a torch.optim.Optimizer",
    ),
    # a bounds pair of the wrong length, non-finite and negative values
    (
        "BackSlash:nu_bounds len",
        lambda: bs.BackSlash(_net(), 1.0, nu_bounds=(0.5,)),
        ValueError,
        "nu_bounds must be a pair",
    ),
    (
        "gg_shape:bounds len",
        lambda: bs.gg_shape(torch.randn(50), bounds=(0.1, 1.0, 3.0)),
        ValueError,
        "bounds must be a pair",
    ),
    ("gg_rate:nu<0", lambda: bs.gg_rate([torch.ones(3)], -1.0), ValueError, "nu must"),
    (
        "BackSlash:nu inf",
        lambda: bs.BackSlash(_net(), 1.0, nu=float("inf")),
        ValueError,
        "nu must be 'auto' or a finite number",
    ),
    ("step:lr<0", lambda: bs.BackSlash(_net(), 1.0).step(lr=-0.1), ValueError, "lr must be"),
]


@pytest.mark.parametrize("call,exc,words", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_input_gets_a_clear_error(call: Callable[[], Any], exc: type, words: str) -> None:
    with pytest.raises(exc) as info:
        call()
    assert words.lower() in str(info.value).lower(), str(info.value)


def test_valid_input_still_works() -> None:
    """The checks keep what worked: generators of parameters, NumPy arrays and lists of numbers
    for the NumPy-level functions, a numpy float as a step."""
    net = _net()
    b = bs.BackSlash(net, 1.0, params=(p for p in net.parameters() if p.ndim == 2))
    assert b.n_params == 3 * 4 + 4 * 2
    assert bs.gg_shape(np.random.default_rng(0).laplace(size=4000)) == pytest.approx(1.0, abs=0.1)
    np.testing.assert_array_equal(bs.quantize([0.1, -0.2], 0.1), [1, -2])
    out = bs.prox_power(torch.tensor([1.0, -0.05]), np.float64(0.1), 1.0)
    torch.testing.assert_close(out, torch.tensor([0.9, 0.0]))
    assert bs.gg_rate([torch.ones(2)], np.float32(2.0)) == pytest.approx(1.0)
