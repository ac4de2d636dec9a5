"""Estimating a target data set's domain weights from a small sample of it.

Each pretraining domain is summarised by the centroid of its samples' embeddings; each target
sample goes to its nearest centroid, and the histogram of these assignments is ``h``: the
procedure of Grangier et al. (2024) that Soup-of-Experts uses (its Algorithm 3), where the
domains are clusters of Sentence-BERT embeddings and the centroids are the cluster centres.
Any embedding works: a sentence encoder, TF-IDF vectors, the LM's own features.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.core import validate as V


def domain_centroids(features: Any, labels: Any, n_domains: int) -> np.ndarray:
    """``(n_domains, d)`` mean feature vector of each domain's samples.

    Parameters
    ----------
    features
        ``(m, d)`` embeddings of pretraining samples.
    labels
        ``(m,)`` domain index of each sample, in ``0..n_domains-1``; every domain needs a sample.
    n_domains
        Number of domains.
    """
    X = V.finite_array("features", features, ndim=2)
    n_domains = V.integer("n_domains", n_domains, low=1)
    y = V.class_labels("labels", labels, n=len(X))
    if y.max() >= n_domains:
        raise ValueError(f"labels must be in 0..{n_domains - 1}, got {int(y.max())}")
    counts = np.bincount(y, minlength=n_domains)
    if (counts == 0).any():
        raise ValueError(
            f"labels must give every domain at least one sample, got none for domains "
            f"{np.flatnonzero(counts == 0).tolist()}"
        )
    C = np.zeros((n_domains, X.shape[1]))
    np.add.at(C, y, X)
    return C / counts[:, None]


def estimate_domain_weights(
    target_features: Any, centroids: Any, *, metric: str = "cosine", smoothing: float = 0.0
) -> np.ndarray:
    """Domain weights of a target set: the histogram of its samples' nearest centroids.

    .. math::  \\hat h_i = \\frac{\\#\\{x : \\arg\\min_j d(x, c_j) = i\\} + \\lambda}
               {m + k \\lambda}

    Parameters
    ----------
    target_features
        ``(m, d)`` embeddings of ``m`` target samples (a few hundred suffice).
    centroids
        ``(k, d)`` domain centroids (:func:`domain_centroids`).
    metric
        ``"cosine"`` (largest cosine similarity) or ``"euclidean"`` (smallest distance).
    smoothing
        ``lambda >= 0``, added to every count (Laplace smoothing).

    Returns
    -------
    numpy.ndarray
        ``h``, shape ``(k,)``, on the simplex.

    References
    ----------
    D. Grangier, S. Seto, et al. "Task-Adaptive Pretrained Language Models via Clustered
    Importance Sampling", 2024; Ablin et al., Soup-of-Experts, ICML 2025 (Alg. 3).
    """
    X = V.finite_array("target_features", target_features, ndim=2)
    C = V.finite_array("centroids", centroids, ndim=2)
    if X.shape[1] != C.shape[1]:
        raise ValueError(
            f"target_features must have the centroids' dimension {C.shape[1]}, got {X.shape[1]}"
        )
    metric = V.choice("metric", metric, ("cosine", "euclidean"))
    smoothing = V.number("smoothing", smoothing, low=0.0)
    if metric == "cosine":
        Xn = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
        Cn = C / np.maximum(np.linalg.norm(C, axis=1, keepdims=True), 1e-12)
        nearest = np.argmax(Xn @ Cn.T, axis=1)
    else:
        d2 = (X**2).sum(1)[:, None] - 2 * X @ C.T + (C**2).sum(1)[None, :]
        nearest = np.argmin(d2, axis=1)
    counts = np.bincount(nearest, minlength=len(C)).astype(np.float64) + smoothing
    return counts / counts.sum()
