"""Every image and text split a reproduction draws has every class in training and test, on
both data sources: the Debian layout (small stand-ins from conftest) and the fallback."""

import numpy as np
import pytest


def _splits():
    from icml25.backslash import experiments as bs
    from icml25.fedgvi import experiments_bnn as fg
    from icml25.it3 import experiments as it3
    from icml25.pointwise_info import experiments as pi

    tiny_pi = pi.BUDGETS["tiny"]
    tiny_bs = bs.BUDGETS["tiny"]
    yield (
        "pointwise_info cnn",
        lambda: (lambda s: (s.y.numpy(), s.y_test, s.data))(pi._split("cnn", tiny_pi, 0)),
    )
    yield (
        "pointwise_info mlp",
        lambda: (lambda s: (s.y.numpy(), s.y_test, s.data))(pi._split("mlp", tiny_pi, 0)),
    )
    yield (
        "backslash image",
        lambda: (lambda t: (t.y.numpy(), t.y_test.numpy(), t.data))(
            bs.image_task(tiny_bs, 0, True)
        ),
    )
    yield (
        "backslash text",
        lambda: (lambda t: (t.y.numpy(), t.y_test.numpy(), t.data))(bs.text_task(tiny_bs, 0, True)),
    )
    yield "it3 image", lambda: (lambda d: (d[1], d[3], d[4]))(it3.image_data(600, 400, 0))
    yield (
        "fedgvi bnn",
        lambda: (lambda d: (np.concatenate([c[1] for c in d[0]]), d[2], d[3]))(fg.bnn_data(0, 600)),
    )


SPLITS = dict(_splits())


@pytest.mark.parametrize("source", ["fallback", "debian"])
@pytest.mark.parametrize("name", sorted(SPLITS))
def test_every_class_in_both_parts(name, source, request):
    if source == "debian":
        request.getfixturevalue("debian_data")
    y_train, y_test, data = SPLITS[name]()
    classes = np.union1d(y_train, y_test)
    assert len(classes) >= 2
    assert set(np.unique(y_train)) == set(classes), f"{data}: training part lacks a class"
    assert set(np.unique(y_test)) == set(classes), f"{data}: test part lacks a class"
    debian = data.startswith(("Fashion-MNIST", "fortunes"))
    reads_debian = name != "pointwise_info mlp"  # the paper's MNIST MLP setting: MNIST-5k always
    assert debian == (source == "debian" and reads_debian), data
