"""Which combinations of concept values a training set sees: the (n, k) designs.

A *design* is an integer array ``(m, K)``: ``m`` distinct combinations of ``K`` concepts, each
entry a value index in ``[0, n_h)``. The cyclic design

.. math:: S_k = \\{(a, (a + j) \\bmod n, (a + 2j) \\bmod n, \\ldots) : a < n,\\ j < k\\}

shows every value of every concept in exactly ``k`` combinations, whatever the number of images
drawn from it, so diversity (``k``) and scale (``N``) move independently. For ``k >= 2`` (two
concepts) it is *connected*: the graph whose nodes are the concept values and whose edges join
the values that appear together is connected, which is what makes the additive model
:math:`\\phi(c) = \\mu + \\sum_h u_h(c_h)` identifiable (up to the usual sum-to-zero choice).
``k = 1`` is a perfect matching: every value of one concept always comes with the same value of
the other, so nothing can tell the concepts apart.

References
----------
A. Uselis, A. Dittadi, S. J. Oh. Does Data Scaling Lead to Visual Compositional
Generalization? ICML 2025 (arXiv 2507.07102), Sec. 3.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from icml25.core import validate as V


def cyclic_design(n_values: int, k: int, *, n_concepts: int = 2) -> np.ndarray:
    """The cyclic design ``S_k``: ``n * k`` combinations, each value seen in ``k`` of them.

    Parameters
    ----------
    n_values
        Values per concept ``n`` (>= 2).
    k
        Combinations per value, ``1 <= k <= n``; ``k = n`` with two concepts is the full grid.
    n_concepts
        Number of concepts ``K`` (>= 2). Concept ``h`` takes the value ``(a + h j) mod n`` in
        combination ``(a, j)``: the first two columns make the combinations distinct, and for
        every ``j`` each column is a permutation of the values, so each value is seen ``k``
        times in every concept. With ``K >= 3`` a column can repeat another (``2 j = 0 mod n``
        for every ``j < k``, e.g. ``n = 2``), so the additive model may not be identifiable:
        :func:`check_design` says so.

    Returns
    -------
    numpy.ndarray
        ``(n * k, n_concepts)`` int64, rows sorted by ``(j, a)``.
    """
    n = V.integer("n_values", n_values, low=2)
    k = V.integer("k", k, low=1, high=n)
    K = V.integer("n_concepts", n_concepts, low=2)
    a = np.tile(np.arange(n), k)
    j = np.repeat(np.arange(k), n)
    return np.stack([(a + h * j) % n for h in range(K)], axis=1).astype(np.int64)


def _as_labels(name: str, labels: Any, n_values: Sequence[int] | None = None) -> np.ndarray:
    """``labels`` as an ``(N, K)`` int64 array with ``K >= 2``, values >= 0 (and < n_values)."""
    if hasattr(labels, "detach"):
        labels = labels.detach().cpu().numpy()
    arr = np.asarray(labels)
    if arr.ndim != 2 or arr.shape[1] < 2 or arr.shape[0] < 1:
        raise ValueError(
            f"{name} must be a 2-D integer array (rows, concepts) with at least 2 concepts "
            f"(columns), got shape {arr.shape}"
        )
    cols = [V.class_labels(f"{name}[:, {h}]", arr[:, h]) for h in range(arr.shape[1])]
    out = np.stack(cols, axis=1)
    if n_values is not None:
        if len(n_values) != out.shape[1]:
            raise ValueError(
                f"n_values must give one count per concept ({out.shape[1]}), got {list(n_values)}"
            )
        for h, n in enumerate(n_values):
            if out[:, h].max() >= n:
                raise ValueError(
                    f"{name}[:, {h}] must hold values < n_values[{h}] = {n}, got "
                    f"{int(out[:, h].max())}"
                )
    return out


def design_components(combinations: Any) -> int:
    """Number of connected components of the design's value graph (nodes: the values that
    occur, one per concept and value; each combination joins its values)."""
    combos = np.unique(_as_labels("combinations", combinations), axis=0)
    K = combos.shape[1]
    offsets = np.concatenate([[0], np.cumsum(combos.max(axis=0) + 1)])
    parent = np.arange(int(offsets[-1]))

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return int(root)

    for row in combos:
        nodes = [int(offsets[h] + row[h]) for h in range(K)]
        r0 = find(nodes[0])
        for v in nodes[1:]:
            parent[find(v)] = r0
    used = {int(offsets[h] + v) for h in range(K) for v in np.unique(combos[:, h])}
    return len({find(v) for v in used})


def design_is_connected(combinations: Any) -> bool:
    """Whether the design's value graph is connected (see :func:`design_components`)."""
    return design_components(combinations) == 1


def check_design(
    combinations: Any, n_values: Sequence[int], *, name: str = "combinations"
) -> np.ndarray:
    """Check that a design covers every value of every concept and is identifiable.

    Raises ``ValueError`` when a value never occurs, when the value graph is disconnected, or
    when the additive model is not identifiable on it (two concepts aliased, possible with
    three or more concepts even when connected). Returns the unique combinations.
    """
    if isinstance(n_values, (str, bytes)) or not isinstance(n_values, Sequence):
        raise ValueError(f"n_values must be a sequence of integers, got {n_values!r}")
    ns = [V.integer(f"n_values[{h}]", n, low=2) for h, n in enumerate(n_values)]
    combos = np.unique(_as_labels(name, combinations, ns), axis=0)
    for h, n in enumerate(ns):
        missing = sorted(set(range(n)) - set(combos[:, h].tolist()))
        if missing:
            raise ValueError(
                f"{name} must cover every value of every concept; concept {h} never takes "
                f"value(s) {missing[:10]}"
            )
    comps = design_components(combos)
    if comps != 1:
        raise ValueError(
            f"{name} must be connected (the additive model is not identifiable otherwise), got "
            f"{comps} disconnected groups of values; use k >= 2 combinations per value"
        )
    A = _treatment_design(combos, ns)
    rank = np.linalg.matrix_rank(A)
    if rank < A.shape[1]:
        raise ValueError(
            f"{name} must make the additive model identifiable; its design has rank {rank} < "
            f"{A.shape[1]} parameters (some concepts are aliased)"
        )
    return combos


def _treatment_design(combos: np.ndarray, n_values: Sequence[int]) -> np.ndarray:
    """Dense design of the additive model, intercept plus one column per non-reference value."""
    cols = [np.ones((len(combos), 1))]
    for h, n in enumerate(n_values):
        onehot = np.zeros((len(combos), n))
        onehot[np.arange(len(combos)), combos[:, h]] = 1.0
        cols.append(onehot[:, 1:])
    return np.concatenate(cols, axis=1)


def seen_mask(labels: Any, combinations: Any) -> np.ndarray:
    """Boolean mask of the rows of ``labels`` whose combination is in ``combinations``."""
    lab = _as_labels("labels", labels)
    combos = _as_labels("combinations", combinations)
    if combos.shape[1] != lab.shape[1]:
        raise ValueError(
            f"combinations must have {lab.shape[1]} columns like labels, got {combos.shape[1]}"
        )
    seen = {tuple(r) for r in combos.tolist()}
    return np.array([tuple(r) in seen for r in lab.tolist()], dtype=bool)


def full_grid(n_values: Sequence[int]) -> np.ndarray:
    """Every combination of the concepts' values, ``(prod n_h, K)``."""
    if isinstance(n_values, (str, bytes)) or not isinstance(n_values, Sequence):
        raise ValueError(f"n_values must be a sequence of integers, got {n_values!r}")
    if len(n_values) < 2:
        raise ValueError(f"n_values must name at least 2 concepts, got {list(n_values)}")
    ns = [V.integer(f"n_values[{h}]", n, low=1) for h, n in enumerate(n_values)]
    grids = np.meshgrid(*[np.arange(n) for n in ns], indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1).astype(np.int64)
