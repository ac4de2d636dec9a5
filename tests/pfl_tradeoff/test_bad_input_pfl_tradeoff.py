"""Bad input to FedCLUP gets errors that say what to do."""

import pytest


def test_raw_client_data_gets_an_error_that_says_how_to_wrap_it():
    """Issue 56 item 10: fedclup([(X, y), ...]) raised "'tuple' object has no attribute 'dim'"."""
    import numpy as np

    from icml25.pfl_tradeoff import fedclup

    X = np.random.default_rng(0).normal(size=(20, 3))
    y = X[:, 0]
    with pytest.raises(TypeError, match=r"problems\[0\].*LeastSquares\(X, y\)"):
        fedclup([(X, y), (X, y)], 0.1)


def _two_clients():
    import numpy as np

    from icml25.pfl_tradeoff import LeastSquares

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    return [LeastSquares(X, X @ w) for w in rng.normal(size=(2, 3))]


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (("not a function", 2, 0.5), {}, TypeError, r"problem_fn must be callable"),
        ((None, 0, 0.5), {}, ValueError, r"num_clients must be an integer >= 1, got 0"),
        ((None, "2", 0.5), {}, ValueError, r"num_clients must be an integer"),
        ((None, 2, -1.0), {}, ValueError, r"lam"),
        ((None, 2, 0.5), {"rounds": 0}, ValueError, r"rounds must be an integer >= 1"),
        ((None, 2, 0.5), {"local_steps": 0}, ValueError, r"local_steps"),
        ((None, 2, 0.5), {"w0": [0.0] * 4}, ValueError, r"w0 must have the model dimension 3"),
        ((None, 2, 0.5), {"smoothness": 0.0}, ValueError, r"smoothness"),
        ((("raw",), 2, 0.5), {}, TypeError, r"problem_fn\(0, 2\).*LeastSquares\(X, y\)"),
    ],
)
def test_the_flower_in_process_runner_refuses_bad_input_by_name(args, kwargs, error, match):
    """Issue 56: run_in_process used to fail with raw errors ('str' object is not callable,
    list index out of range, a matmul mismatch, KeyError 'w-local') before any check."""
    from icml25.pfl_tradeoff.flower import run_in_process

    clients = _two_clients()
    fn, *rest = args
    if fn is None:
        fn = lambda i, _n: clients[i]  # noqa: E731
    elif isinstance(fn, tuple):
        fn = lambda i, _n: (clients[i].X, clients[i].y)  # noqa: E731
    with pytest.raises(error, match=match):
        run_in_process(fn, *rest, **kwargs)
