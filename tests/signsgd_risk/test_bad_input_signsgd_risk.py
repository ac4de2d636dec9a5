"""Bad input for signsgd_risk's public API (issue 54, "Bad input"): numbers passed as strings or
booleans, arrays of strings, non-callables where a callable is meant, vectors of the wrong
length, and values that used to come back silently (a negative learning rate, a negative risk).

One row per call: the exception type and the words its message must contain (the argument's
name and what it must be). The package-wide table is ``tests/test_bad_input.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from scipy import stats
from torch import nn

from icml25 import signsgd_risk as sg
from icml25.signsgd_risk import effects as ef

_K = np.ones(4)
_t0, _ts = np.ones(4), np.zeros(4)


def _param() -> nn.Parameter:
    p = nn.Parameter(torch.ones(2))
    p.grad = torch.ones(2)
    return p


ROWS: list[tuple[str, Callable[[], Any], type[BaseException], str]] = [
    # numbers passed as strings (float("0.3") used to accept them)
    (
        "risk_ode lr str",
        lambda: sg.risk_ode(_K, _t0, _ts, lr="0.3", t_max=1.0),
        TypeError,
        "lr must be",
    ),
    ("risk_ode t_max str", lambda: sg.risk_ode(_K, _t0, _ts, t_max="2"), ValueError, "t_max"),
    (
        "risk_ode K str",
        lambda: sg.risk_ode(["1"] * 4, _t0, _ts, t_max=1.0),
        TypeError,
        "K must be a number or an array",
    ),
    (
        "risk_ode theta str",
        lambda: sg.risk_ode(_K, ["1"] * 4, _ts, t_max=1.0),
        TypeError,
        "theta0 must be a number or an array",
    ),
    ("risk_ode times str", lambda: sg.risk_ode(_K, _t0, _ts, times=["0"]), TypeError, "times"),
    (
        "risk_ode rtol str",
        lambda: sg.risk_ode(_K, _t0, _ts, rtol="1e-7", t_max=1.0),
        ValueError,
        "rtol",
    ),
    (
        "risk_ode rtol<0",
        lambda: sg.risk_ode(_K, _t0, _ts, rtol=-1.0, t_max=1.0),
        ValueError,
        "rtol",
    ),
    ("simulate t_max str", lambda: sg.simulate(_K, _t0, _ts, t_max="1"), ValueError, "t_max"),
    ("phi risk str", lambda: sg.phi("0.5"), ValueError, "risk must be a number >= 0"),
    ("Cauchy gamma str", lambda: sg.CauchyNoise("0.5"), ValueError, "gamma must be"),
    ("StudentT df str", lambda: sg.StudentTNoise("1.5"), ValueError, "df must be"),
    ("StudentT scale str", lambda: sg.StudentTNoise(3.0, scale="1"), ValueError, "scale"),
    ("Gaussian std bool", lambda: sg.GaussianNoise(True), ValueError, "std must be"),
    (
        "Custom second_moment str",
        lambda: sg.CustomNoise(lambda a: 1.0, second_moment="1"),
        ValueError,
        "second_moment",
    ),
    (
        "Custom density<0",
        lambda: sg.CustomNoise(lambda a: 1.0, density_at_zero=-1.0),
        ValueError,
        "density_at_zero",
    ),
    (
        "stationary_risk lr str",
        lambda: sg.stationary_risk(_K, lr="0.1"),
        TypeError,
        "lr must be",
    ),
    (
        "adam_coefficients beta str",
        lambda: sg.adam_coefficients([1.0], beta1="0", beta2=0.5),
        ValueError,
        "beta1",
    ),
    (
        "adam_coefficients risk str",
        lambda: sg.adam_coefficients(["1"], beta1=0.0, beta2=0.5),
        TypeError,
        "risk must be a number or an array",
    ),
    (
        "adam_coefficients window bool",
        lambda: sg.adam_coefficients([1.0], beta1=0.0, beta2=0.5, window=True),
        ValueError,
        "window",
    ),
    (
        "simulate_adam eps str",
        lambda: sg.simulate_adam(_K, _t0, _ts, eps="0", t_max=1.0),
        ValueError,
        "eps",
    ),
    (
        "adam_ode risk_grid str",
        lambda: sg.adam_ode(
            _K, _t0, _ts, noise=sg.CauchyNoise(0.5), risk_grid=["1", "2"], t_max=1.0
        ),
        TypeError,
        "risk_grid",
    ),
    (
        "SignSGD lr str",
        lambda: sg.SignSGD([_param()], lr="0.1"),
        ValueError,
        "Invalid learning rate: '0.1'",
    ),
    ("SignSGD lr bool", lambda: sg.SignSGD([_param()], lr=True), ValueError, "learning rate"),
    (
        "SignSGD weight_decay str",
        lambda: sg.SignSGD([_param()], weight_decay="0"),
        ValueError,
        "weight_decay",
    ),
    ("SignSGD momentum nan", lambda: sg.SignSGD([_param()], momentum=np.nan), ValueError, "mom"),
    ("decay_exponent str", lambda: ef.decay_exponent(["1", "2"], [1, 2]), TypeError, "eigenvalues"),
    (
        "binned_decay_rates t str",
        lambda: ef.binned_decay_rates(_K, _t0, _t0, "1"),
        ValueError,
        "t must be",
    ),
    (
        "gradient_noise_covariance risk str",
        lambda: ef.gradient_noise_covariance(_K, "sgd", risk="1", noise=0.5),
        ValueError,
        "risk",
    ),
    # seeds: fractional, a string of digits, a bare int (int(s) used to truncate or split them)
    (
        "simulate seeds 1.5",
        lambda: sg.simulate(_K, _t0, _ts, seeds=[1.5], t_max=1.0),
        ValueError,
        "seeds",
    ),
    (
        "simulate seeds '01'",
        lambda: sg.simulate(_K, _t0, _ts, seeds="01", t_max=1.0),
        TypeError,
        "seeds",
    ),
    (
        "simulate seeds 3",
        lambda: sg.simulate(_K, _t0, _ts, seeds=3, t_max=1.0),
        TypeError,
        "sequence",
    ),
    (
        "simulate seeds []",
        lambda: sg.simulate(_K, _t0, _ts, seeds=[], t_max=1.0),
        ValueError,
        "non-empty",
    ),
    (
        "simulate chunk bool",
        lambda: sg.simulate(_K, _t0, _ts, chunk=True, t_max=1.0),
        ValueError,
        "chunk",
    ),
    # issue 70: a bad chunk is named even without a horizon (it used to name t_max)
    (
        "simulate chunk 0 without t_max",
        lambda: sg.simulate(_K, _t0, _ts, chunk=0),
        ValueError,
        "chunk must be an integer >= 1, got 0",
    ),
    (
        "simulate_adam chunk 0 without t_max",
        lambda: sg.simulate_adam(_K, _t0, _ts, chunk=0),
        ValueError,
        "chunk must be an integer >= 1, got 0",
    ),
    (
        "sign_gradient_moments rng str",
        lambda: sg.sign_gradient_moments(_K, _t0, rng="a"),
        ValueError,
        "rng",
    ),
    # a non-callable where a callable is expected, and callables returning non-numbers
    (
        "Custom sampler",
        lambda: sg.CustomNoise(lambda a: 1.0, sampler=3),
        TypeError,
        "sampler must be a callable",
    ),
    (
        "SignSGD.step closure",
        lambda: sg.SignSGD([_param()]).step(closure=3),  # type: ignore[arg-type]
        TypeError,
        "closure must be a callable",
    ),
    (
        "risk_ode lr(t) str",
        lambda: sg.risk_ode(_K, _t0, _ts, lr=lambda t: "0.1", t_max=1.0),
        ValueError,
        "lr(t) must return a finite number",
    ),
    (
        "risk_ode lr(t) vector",
        lambda: sg.risk_ode(_K, _t0, _ts, lr=lambda t: np.ones(2), t_max=1.0),
        ValueError,
        "lr(t) must return",
    ),
    (
        "stationary_risk lr schedule",
        lambda: sg.stationary_risk(_K, lr=lambda t: 0.1),
        TypeError,
        "constant lr",
    ),
    (
        "Custom exp_moment > 1",
        lambda: sg.phi(0.5, sg.CustomNoise(lambda a: 2.0)),
        ValueError,
        "must be a number in [0, 1]",
    ),
    (
        "Custom exp_moment str",
        lambda: sg.phi(0.5, sg.CustomNoise(lambda a: "0.5")),
        ValueError,
        "exp_moment(a)",
    ),
    (
        "ScipyNoise unfrozen",
        lambda: sg.ScipyNoise(stats.norm),
        TypeError,
        "frozen continuous scipy.stats",
    ),
    (
        "ScipyNoise asymmetric",
        lambda: sg.ScipyNoise(stats.expon()),
        ValueError,
        "symmetric about 0",
    ),
    # vectors of the wrong length (a length-1 r used to broadcast into a wrong phi)
    ("measured_phi r len 1", lambda: ef.measured_phi(_K, [1.0], _t0), ValueError, "r must have"),
    (
        "measured_phi g len",
        lambda: ef.measured_phi(_K, _t0, np.ones(3)),
        ValueError,
        "mean_sign_gradient must have shape (4,)",
    ),
    ("measured_phi r = 0", lambda: ef.measured_phi(_K, _ts, _t0), ValueError, "r = 0"),
    ("reshaping_gaps r len", lambda: ef.reshaping_gaps(_K, [1.0]), ValueError, "r must have"),
    (
        "binned_decay_rates n_bins > d",
        lambda: ef.binned_decay_rates(_K, _t0, _t0, 1.0, n_bins=8),
        ValueError,
        "n_bins",
    ),
    (
        "binned_decay_rates n_bins 0",
        lambda: ef.binned_decay_rates(_K, _t0, _t0, 1.0, 0),
        ValueError,
        "n_bins",
    ),
    # values that came back silently
    (
        "effective_learning_rate lr<0",
        lambda: ef.effective_learning_rate([0.5], 0.5, lr=-0.3),
        ValueError,
        "lr must be a finite number > 0",
    ),
    (
        "small_risk_effective_lr lr<0",
        lambda: ef.small_risk_effective_lr(0.5, lr=-0.3),
        ValueError,
        "lr must be",
    ),
    (
        "gradient_noise_covariance risk<0",
        lambda: ef.gradient_noise_covariance(_K, "sgd", risk=-1.0, noise=0.5),
        ValueError,
        "risk must be a finite number >= 0",
    ),
]


@pytest.mark.parametrize(("call", "exc", "words"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_input_gets_a_clear_error(call: Callable[[], Any], exc: Any, words: str) -> None:
    with pytest.raises(exc) as info:
        call()
    assert words in str(info.value), str(info.value)


def test_numeric_look_alikes_are_still_accepted() -> None:
    """NumPy scalars, integer arrays and 0-d tensors are numbers, not strings: accepted."""
    curve = sg.risk_ode(np.arange(1, 5), _t0, _ts, lr=np.float32(0.2), t_max=np.int64(1))
    assert np.all(np.isfinite(curve.risk))
    assert sg.GaussianNoise(np.float32(0.5)).std == 0.5
    assert sg.phi(0.5, np.float32(0.5)) == sg.phi(0.5, 0.5)
    assert sg.simulate(_K, _t0, _ts, seeds=np.arange(2), t_max=1.0).seeds == (0, 1)
    assert sg.SignSGD([_param()], lr=torch.tensor(0.1)).defaults["lr"] == pytest.approx(0.1)
    assert sg.risk_ode(_K, _t0, _ts, lr=lambda t: np.float64(0.1), t_max=1.0).risk[-1] > 0
