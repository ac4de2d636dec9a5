"""Seeding in one place: the same seed gives the same numbers."""

from __future__ import annotations

import random

import numpy as np


def seed_everything(seed: int) -> np.random.Generator:
    """Seed Python's, NumPy's and (if imported) PyTorch's global generators.

    Returns a fresh :class:`numpy.random.Generator` for ``seed``; prefer passing that (or a
    ``torch.Generator``) explicitly over relying on global state.
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    random.seed(int(seed))
    np.random.seed(int(seed) % 2**32)  # noqa: NPY002 - legacy global state, for third-party code
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a core dependency
        pass
    else:
        torch.manual_seed(int(seed))
    return np.random.default_rng(int(seed))
