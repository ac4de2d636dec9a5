"""Bad input at every public entry point of icml25.compositional: a clear error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from icml25.compositional import (
    MultiHeadNet,
    check_design,
    colour_palette,
    combination_means,
    concept_ranks,
    concept_value_means,
    cyclic_design,
    design_components,
    design_is_connected,
    disjoint_channel_pairs,
    embed,
    factorization_r2,
    full_grid,
    linear_factorization,
    lit_channels,
    make_compositional_images,
    orthogonality,
    seen_mask,
    unseen_combination_accuracy,
    whitened_r2,
)

# not entry points: CompositionalImages, Factorization, ProbeResult, ChannelWarning

LAB = np.repeat(full_grid([3, 3]), 2, axis=0)
X = np.random.default_rng(0).normal(size=(len(LAB), 4))
X_NAN = X.copy()
X_NAN[0, 0] = np.nan
ONE_VALUE = LAB.copy()
ONE_VALUE[:, 1] = 0
DISCONNECTED = np.repeat(cyclic_design(3, 1), 4, axis=0)
GREY = np.random.default_rng(1).random((8, 4, 4)).astype(np.float32)
CLASSES = np.repeat(np.arange(2), 4)

ROWS: list[tuple[str, Callable[[], Any], type[BaseException], str]] = [
    ("lit_not_rgb", lambda: lit_channels(np.ones((3, 2))), ValueError, "(n_colours, 3) RGB"),
    (
        "disjoint_not_rgb",
        lambda: disjoint_channel_pairs([[0, 0]], np.ones((3, 2))),
        ValueError,
        "(n_colours, 3) RGB",
    ),
    (
        "combination_means_rows",
        lambda: combination_means(np.ones((4, 2)), np.zeros((3, 2), int)),
        ValueError,
        "one row per row of X",
    ),
    ("cyclic_n", lambda: cyclic_design(1, 1), ValueError, "n_values must be an integer >= 2"),
    ("cyclic_k0", lambda: cyclic_design(4, 0), ValueError, "k must be an integer >= 1"),
    ("cyclic_k_big", lambda: cyclic_design(4, 5), ValueError, "k must be an integer >= 1 and <= 4"),
    ("cyclic_K", lambda: cyclic_design(4, 2, n_concepts=1), ValueError, "n_concepts"),
    ("check_disconnected", lambda: check_design(DISCONNECTED, [3, 3]), ValueError, "connected"),
    ("check_uncovered", lambda: check_design([[0, 0], [0, 1]], [2, 2]), ValueError, "never takes"),
    (
        "check_n_values",
        lambda: check_design([[0, 0]], 3),
        ValueError,
        "n_values must be a sequence",
    ),
    ("check_range", lambda: check_design([[0, 5]], [2, 2]), ValueError, "< n_values[1] = 2"),
    ("components_1d", lambda: design_components([0, 1]), ValueError, "2-D integer array"),
    ("connected_neg", lambda: design_is_connected([[0, -1]]), ValueError, ">= 0"),
    ("seen_cols", lambda: seen_mask(LAB, [[0, 0, 0]]), ValueError, "combinations must have 2"),
    ("grid_one", lambda: full_grid([3]), ValueError, "at least 2 concepts"),
    ("grid_str", lambda: full_grid("33"), ValueError, "n_values must be a sequence"),
    ("r2_nan", lambda: factorization_r2(X_NAN, LAB), ValueError, "X must be finite"),
    ("r2_one_value", lambda: factorization_r2(X, ONE_VALUE), ValueError, "at least 2 values"),
    ("r2_disconnected", lambda: factorization_r2(X[:12], DISCONNECTED), ValueError, "connected"),
    ("r2_rows", lambda: factorization_r2(X[:5], LAB), ValueError, "one row per row of X"),
    ("r2_fit", lambda: factorization_r2(X, LAB, fit="ols"), ValueError, "fit must be one of"),
    ("r2_frac", lambda: factorization_r2(X, LAB + 0.5), ValueError, "integer class labels"),
    ("whitened_nan", lambda: whitened_r2(X_NAN, LAB), ValueError, "X must be finite"),
    ("lf_whiten", lambda: linear_factorization(X, LAB, whiten=1), ValueError, "whiten must be"),
    (
        "lf_thr",
        lambda: linear_factorization(X, LAB, rank_threshold=0),
        ValueError,
        "rank_threshold",
    ),
    ("lf_1d", lambda: linear_factorization(X[:, 0], LAB), ValueError, "X must be a 2-D"),
    ("means_one", lambda: concept_value_means(X, ONE_VALUE), ValueError, "at least 2 values"),
    ("orth_nan", lambda: orthogonality(X_NAN, LAB), ValueError, "X must be finite"),
    ("ranks_thr", lambda: concept_ranks(X, LAB, threshold=1.5), ValueError, "threshold must be"),
    ("palette_n", lambda: colour_palette(0), ValueError, "n must be an integer >= 1"),
    (
        "images_range",
        lambda: make_compositional_images(
            GREY * 3, CLASSES, combinations=cyclic_design(2, 2), n_images=8
        ),
        ValueError,
        "images must hold values in [0, 1]",
    ),
    (
        "images_too_few",
        lambda: make_compositional_images(
            GREY, CLASSES, combinations=cyclic_design(2, 2), n_images=2
        ),
        ValueError,
        "n_images must be an integer >= 4",
    ),
    (
        "images_items",
        lambda: make_compositional_images(
            GREY, CLASSES, combinations=cyclic_design(3, 2), n_images=8
        ),
        ValueError,
        "items must give a class",
    ),
    (
        "images_palette",
        lambda: make_compositional_images(
            GREY, CLASSES, combinations=cyclic_design(2, 2), n_images=8, palette=np.ones((2, 4))
        ),
        ValueError,
        "palette must be",
    ),
    (
        "images_cols",
        lambda: make_compositional_images(
            GREY, CLASSES, combinations=full_grid([2, 2, 2, 2]), n_images=16
        ),
        ValueError,
        "2 or 3 columns",
    ),
    ("embed_type", lambda: embed("model", [1]), TypeError, "encoder must be"),
    ("embed_nan", lambda: embed(X_NAN), ValueError, "encoder must be finite"),
    ("embed_inputs", lambda: embed(nn.Linear(2, 2)), ValueError, "inputs must be given"),
    ("embed_array_inputs", lambda: embed(X, X), ValueError, "inputs must be None"),
    (
        "embed_nan_inputs",
        lambda: embed(nn.Linear(2, 2), torch.tensor([[np.nan, 1.0]])),
        ValueError,
        "inputs must be finite",
    ),
    (
        "embed_batch",
        lambda: embed(nn.Linear(2, 2), np.ones((2, 2)), batch_size=0),
        ValueError,
        "batch_size",
    ),
    (
        "probe_unseen_value",
        lambda: unseen_combination_accuracy(X[:12], LAB[:12], X, LAB),
        ValueError,
        "never shows value",
    ),
    (
        "probe_head",
        lambda: unseen_combination_accuracy(X, LAB, X, LAB, head="svm"),
        ValueError,
        "head must be one of",
    ),
    (
        "probe_C",
        lambda: unseen_combination_accuracy(X, LAB, X, LAB, C=0),
        ValueError,
        "C must be a finite number > 0",
    ),
    (
        "probe_cols",
        lambda: unseen_combination_accuracy(X, LAB, X[:, :2], LAB),
        ValueError,
        "X_test must have 4 columns",
    ),
    (
        "probe_nan",
        lambda: unseen_combination_accuracy(X_NAN, LAB, X, LAB),
        ValueError,
        "X_train must be finite",
    ),
    (
        "probe_one_value",
        lambda: unseen_combination_accuracy(X, ONE_VALUE, X, ONE_VALUE),
        ValueError,
        "at least 2 values",
    ),
    (
        "net_trunk",
        lambda: MultiHeadNet("mlp", feature_dim=4, n_values=[2, 2]),
        TypeError,
        "trunk must be",
    ),
    (
        "net_values",
        lambda: MultiHeadNet(nn.Identity(), feature_dim=4, n_values=[1, 2]),
        ValueError,
        "n_values[0] must be an integer >= 2",
    ),
    (
        "net_dim",
        lambda: MultiHeadNet(nn.Identity(), feature_dim=0, n_values=[2, 2]),
        ValueError,
        "feature_dim",
    ),
]


@pytest.mark.parametrize(("rid", "call", "exc", "words"), ROWS, ids=[r[0] for r in ROWS])
def test_bad_input_gives_a_clear_error(
    rid: str, call: Callable[[], Any], exc: type[BaseException], words: str
) -> None:
    with pytest.raises(exc) as info:
        call()
    assert words in str(info.value), (rid, str(info.value))
