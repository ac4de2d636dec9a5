"""PVI, PMI and PSI follow scikit-learn's estimator conventions (issue 56 item 4), checked with
scikit-learn's own estimator checks rather than a copy of them."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils import estimator_checks as checks

from icml25.pointwise_info import PMI, PSI, PVI

CONVENTIONS = [
    "check_no_attributes_set_in_init",
    "check_parameters_default_constructible",
    "check_get_params_invariance",
    "check_set_params",
    "check_estimator_cloneable",
    "check_do_not_raise_errors_in_init_or_set_params",
]


@pytest.mark.parametrize("make", [lambda: PVI(epochs=2, null_epochs=2), PMI, PSI])
@pytest.mark.parametrize("check", CONVENTIONS)
def test_scikit_learn_conventions(make, check):
    est = make()
    getattr(checks, check)(type(est).__name__, est)


def test_a_clone_fits_like_the_original():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    est = PVI(epochs=3, null="prior", hidden=(8,), random_state=1)
    twin = clone(est)
    assert twin is not est and twin.get_params() == est.get_params()
    assert "hidden=(8,)" in repr(est) and "epochs=3" in repr(est)
    np.testing.assert_allclose(est.fit(X, y).score_samples(X), twin.fit(X, y).score_samples(X))
    assert clone(PSI(n_slices=7)).set_params(n_bins=5).get_params()["n_bins"] == 5


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(96, 5)).astype(np.float32)
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize(
    "make",
    [
        lambda d: PVI(epochs=2, null_epochs=2, hidden=(8,), device=d),
        lambda d: PMI(epochs=2, hidden=8, embed_dim=4, batch_size=16, device=d),
    ],
)
def test_device_argument(make):
    """Issue 56 item 4: a device argument, validated by name; the CPU spelled any way gives the
    default's scores exactly."""
    import torch

    X, y = _data()
    want = make("cpu").fit(X, y).score_samples(X)
    got = make(torch.device("cpu")).fit(X, y).score_samples(X)
    np.testing.assert_array_equal(got, want)
    assert isinstance(got, np.ndarray)
    with pytest.raises(ValueError, match=r"device must be a torch device.*'gpu0'"):
        make("gpu0").fit(X, y)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"device 'cuda:0' is not available on this machine"):
            make("cuda:0").fit(X, y)


def test_progress_reports_each_epoch():
    X, y = _data()
    lines: list[str] = []
    PVI(epochs=3, null="prior", hidden=(8,), progress=lines.append).fit(X, y)
    assert [ln.split(":")[0] for ln in lines] == [f"PVI g' epoch {e}" for e in (1, 2, 3)]
