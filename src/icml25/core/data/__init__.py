"""Offline data sets (see the README's data table): scikit-learn bundles, MNIST-5k, Fashion-MNIST,
Debian's fortunes (a text corpus).

``ICML25_DATA=fallback`` hides the Debian data sets as if they were absent (the tests set it);
``ICML25_FASHION_MNIST_DIR`` and ``ICML25_FORTUNES_DIR`` point at copies elsewhere.

Every loader returns ``(X, y)`` as NumPy arrays (``X`` float32 in [0, 1] for images, flattened
to ``(n, 784)``). Nothing is downloaded: a missing source raises ``FileNotFoundError`` saying how
to install it.
"""

from __future__ import annotations

from icml25.core.data.loaders import (
    DATA_ENV,
    FASHION_MNIST_DIR,
    FORTUNES_DIR,
    IMAGE_SOURCES,
    load_fashion_mnist,
    load_fortunes,
    load_image_benchmark,
    load_mnist_5k,
    load_sklearn,
    load_stdlib_docstrings,
    read_idx,
)

__all__ = [
    "DATA_ENV",
    "FASHION_MNIST_DIR",
    "FORTUNES_DIR",
    "IMAGE_SOURCES",
    "load_fashion_mnist",
    "load_fortunes",
    "load_image_benchmark",
    "load_mnist_5k",
    "load_sklearn",
    "load_stdlib_docstrings",
    "read_idx",
]
