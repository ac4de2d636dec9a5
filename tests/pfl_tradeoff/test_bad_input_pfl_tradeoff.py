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
