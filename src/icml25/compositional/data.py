"""Controlled compositional image sets built offline from real grey-scale images.

Each image has ``K`` concepts: the *item* (the class of a real image, e.g. a Fashion-MNIST
garment or an MNIST digit), its *colour* (the grey image tinted by one colour of a palette), and
optionally its *position* (horizontal place on a wider canvas). The combinations that occur are
given by a design (:func:`~icml25.compositional.cyclic_design`), and the number of images ``N``
is chosen separately: images are spread evenly over the design's combinations.
"""

from __future__ import annotations

import colorsys
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.compositional.designs import _as_labels
from icml25.core import validate as V

CONCEPTS = ("item", "colour", "position")


@dataclass(frozen=True)
class CompositionalImages:
    """Images and their concept labels.

    Attributes
    ----------
    images
        ``(N, 3, H, W)`` float32 RGB in [0, 1].
    labels
        ``(N, K)`` int64 concept values (column ``h`` is concept ``concepts[h]``).
    concepts
        Names of the concepts (``("item", "colour")`` or ``("item", "colour", "position")``).
    source_index
        ``(N,)`` index of the grey source image each one was made from.
    """

    images: np.ndarray
    labels: np.ndarray
    concepts: tuple[str, ...]
    source_index: np.ndarray


def colour_palette(n: int) -> np.ndarray:
    """``n`` saturated colours at evenly spaced hues, ``(n, 3)`` float32 RGB in [0, 1]."""
    m = V.integer("n", n, low=1)
    return np.array(
        [colorsys.hsv_to_rgb(i / m, 1.0, 1.0) for i in range(m)], dtype=np.float32
    ).reshape(m, 3)


class ChannelWarning(UserWarning):
    """A design leaves an item's unseen colours in colour channels that its seen colours never
    light: no pixel model has seen the item's shape there, so its unseen-combination accuracy
    says more about the palette's order than about composition."""


def lit_channels(palette: Any, *, threshold: float = 0.5) -> np.ndarray:
    """``(n_colours, 3)`` booleans: which RGB channels each colour lights above ``threshold``."""
    pal = V.finite_array("palette", palette, ndim=2)
    if pal.shape[1] != 3:
        raise ValueError(f"palette must be (n_colours, 3) RGB, got shape {pal.shape}")
    threshold = V.number("threshold", threshold, low=0.0, high=1.0)
    return pal > threshold


def disjoint_channel_pairs(
    combinations: Any, palette: Any, *, threshold: float = 0.5
) -> list[tuple[int, int]]:
    """The (item, colour) pairs left out of a design whose colour lights only channels that
    none of the item's seen colours light (see :class:`ChannelWarning`).

    Parameters
    ----------
    combinations
        ``(m, K)`` design; column 0 is the item, column 1 the colour.
    palette
        ``(n_colours, 3)`` RGB tints; every colour of ``palette`` is a candidate unseen colour.
    threshold
        A channel is lit when the tint exceeds it.
    """
    combos = np.unique(_as_labels("combinations", combinations)[:, :2], axis=0)
    lit = lit_channels(palette, threshold=threshold)
    if combos[:, 1].max() >= len(lit):
        raise ValueError(
            f"palette must give a colour for every colour value in combinations "
            f"(>= {int(combos[:, 1].max()) + 1}), got {len(lit)}"
        )
    out = []
    for item in np.unique(combos[:, 0]):
        seen = set(combos[combos[:, 0] == item, 1].tolist())
        reach = lit[sorted(seen)].any(axis=0)
        for c in range(len(lit)):
            if c not in seen and lit[c].any() and not (lit[c] & reach).any():
                out.append((int(item), c))
    return out


def make_compositional_images(
    images: Any,
    classes: Any,
    *,
    combinations: Any,
    n_images: int,
    items: Any = None,
    palette: Any = None,
    canvas_width: int | None = None,
    seed: int = 0,
) -> CompositionalImages:
    """Build ``n_images`` tinted (and placed) images whose concept combinations are
    ``combinations``.

    Parameters
    ----------
    images
        Grey source images, ``(M, H, W)`` or ``(M, H * W)`` with ``H == W``, values in [0, 1].
    classes
        ``(M,)`` class of each source image.
    combinations
        ``(m, K)`` design with ``K = 2`` (item, colour) or ``K = 3`` (item, colour, position);
        item value ``v`` is class ``items[v]``, colour value ``c`` is ``palette[c]``, position
        value ``p`` places the item ``p * step`` pixels from the left edge.
    n_images
        Total number of images ``N`` (>= number of combinations); every combination gets
        ``N // m`` images and ``N mod m`` of them, chosen at random, one more.
    items
        Classes used as item values (default: the sorted distinct classes).
    palette
        ``(n_colours, 3)`` RGB tints (default: :func:`colour_palette` with as many colours as
        the design uses). Colour value ``c`` is ``palette[c]``: to keep the order of the hues
        from deciding which colours an item is seen in, permute the palette (e.g.
        ``colour_palette(n)[rng.permutation(n)]``). A :class:`ChannelWarning` is issued when
        the design leaves an item's unseen colours in channels its seen colours never light.
    canvas_width
        Width of the canvas when a position concept is present (default ``W + n_positions -
        1``, step 1 pixel); ignored otherwise.
    seed
        Seed of the choice of source images and of the remainder's combinations.

    Returns
    -------
    CompositionalImages
    """
    X = V.finite_array("images", images, ndim=(2, 3))
    if X.ndim == 2:
        side = round(float(np.sqrt(X.shape[1])))
        if side * side != X.shape[1]:
            raise ValueError(f"images must be square (H * W a square), got {X.shape[1]} pixels")
        X = X.reshape(len(X), side, side)
    if X.min() < 0 or X.max() > 1:
        raise ValueError(
            f"images must hold values in [0, 1], got [{float(X.min()):g}, {float(X.max()):g}]"
        )
    y = V.class_labels("classes", classes, n=len(X))
    combos = np.unique(_as_labels("combinations", combinations), axis=0)
    K = combos.shape[1]
    if K not in (2, 3):
        raise ValueError(
            f"combinations must have 2 or 3 columns (item, colour[, position]), got {K}"
        )
    N = V.integer("n_images", n_images, low=len(combos))
    rng = np.random.default_rng(V.integer("seed", seed, low=0))
    item_classes = np.unique(y) if items is None else V.class_labels("items", items)
    if combos[:, 0].max() >= len(item_classes):
        raise ValueError(
            f"items must give a class for every item value in combinations "
            f"(>= {int(combos[:, 0].max()) + 1}), got {len(item_classes)}"
        )
    pools = []
    for v, cls in enumerate(item_classes[: int(combos[:, 0].max()) + 1]):
        idx = np.flatnonzero(y == cls)
        if len(idx) == 0:
            raise ValueError(
                f"classes must contain item class {int(cls)} (item value {v}), got none"
            )
        pools.append(idx)
    n_col = int(combos[:, 1].max()) + 1
    pal = (
        colour_palette(n_col)
        if palette is None
        else V.finite_array("palette", palette, ndim=2).astype(np.float32)
    )
    if pal.shape[1] != 3 or len(pal) < n_col:
        raise ValueError(f"palette must be ({n_col} or more, 3) RGB, got shape {pal.shape}")
    disjoint = disjoint_channel_pairs(combos, pal[:n_col])
    if disjoint:
        warnings.warn(
            f"combinations leave {len(disjoint)} (item, colour) pairs whose colour lights only "
            f"channels the item is never seen in (first: {disjoint[:3]}); unseen-combination "
            "accuracy then depends on the palette's order (permute the palette)",
            ChannelWarning,
            stacklevel=2,
        )
    H, W = X.shape[1:]
    width = W
    if K == 3:
        n_pos = int(combos[:, 2].max()) + 1
        width = V.integer("canvas_width", canvas_width, low=W) if canvas_width else W + n_pos - 1
        step = (width - W) // max(n_pos - 1, 1)
        if n_pos > 1 and step < 1:
            raise ValueError(
                f"canvas_width must leave room for {n_pos} positions (>= {W + n_pos - 1}), "
                f"got {width}"
            )
    # Combinations for every image: N // m each, then the remainder at random; shuffled.
    reps = np.repeat(np.arange(len(combos)), N // len(combos))
    extra = rng.choice(len(combos), size=N - len(reps), replace=False)
    order = rng.permutation(np.concatenate([reps, extra]))
    labels = combos[order]
    # Source images: per item, a shuffled pass through its pool (repeated when it runs out).
    source = np.empty(N, dtype=np.int64)
    for v, pool in enumerate(pools):
        rows = np.flatnonzero(labels[:, 0] == v)
        take = np.concatenate(
            [rng.permutation(pool) for _ in range(-(-len(rows) // len(pool)) or 1)]
        )
        source[rows] = take[: len(rows)]
    grey = X[source].astype(np.float32)
    out = np.zeros((N, 3, H, width), dtype=np.float32)
    tint = pal[labels[:, 1]]  # (N, 3)
    coloured = tint[:, :, None, None] * grey[:, None]
    if K == 2:
        out[...] = coloured
    else:
        for p in np.unique(labels[:, 2]):
            rows = labels[:, 2] == p
            out[rows, :, :, p * step : p * step + W] = coloured[rows]
    return CompositionalImages(
        images=out, labels=labels, concepts=CONCEPTS[:K], source_index=source
    )
