"""Offline data sets (see the README's data table): scikit-learn bundles, MNIST-5k, Fashion-MNIST,
Debian's fortunes (a text corpus).

Every loader returns ``(X, y)`` as NumPy arrays (``X`` float32 in [0, 1] for images, flattened
to ``(n, 784)``). Nothing is downloaded: a missing source raises ``FileNotFoundError`` saying how
to install it.
"""

from __future__ import annotations

from icml25.core.data.loaders import (
    FASHION_MNIST_DIR,
    FORTUNES_DIR,
    load_fashion_mnist,
    load_fortunes,
    load_image_benchmark,
    load_mnist_5k,
    load_sklearn,
    load_stdlib_docstrings,
    read_idx,
)

__all__ = [
    "FASHION_MNIST_DIR",
    "FORTUNES_DIR",
    "load_fashion_mnist",
    "load_fortunes",
    "load_image_benchmark",
    "load_mnist_5k",
    "load_sklearn",
    "load_stdlib_docstrings",
    "read_idx",
]
