"""Likelihood models for FedGVI. Each holds one client's data and maps parameter samples
``theta`` (an ``(S, d)`` float64 tensor) to per-point log-likelihoods ``(S, N)``.

- :class:`GaussianLocation` -- ``x_i ~ N(theta, sigma2 I)``: the conjugate model of the
  paper's synthetic experiments (closed-form expectations, see :mod:`.losses`).
- :class:`LogisticRegression` -- binary labels, ``p(y=1 | x) = sigmoid(x^T theta)``.
- :class:`MLPClassifier` -- softmax over ``K`` classes from an MLP whose weights are the
  flat vector ``theta`` (``hidden=()`` is multinomial logistic regression); a Bayesian
  neural network under a Gaussian posterior.

``take(idx)`` gives the same model on a minibatch. ``log_power_integral(theta, c)`` is
``log int p(z | x_i, theta)^c dz`` (a sum over classes for classifiers); the density-power
and gamma losses need it.
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from icml25.core import validate as V
from icml25.fedgvi.checks import as_tensor

Tensor = torch.Tensor


def _float_matrix(x: Any, name: str) -> Tensor:
    t = torch.as_tensor(V.real_array(name, x, finite=False))
    if t.ndim == 1:
        t = t[:, None]
    if t.ndim != 2 or t.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty (n, d) array, got shape {tuple(t.shape)}")
    if not torch.all(torch.isfinite(t)):
        raise ValueError(f"{name} must be finite")
    return t


def _labels(y: Any, n: int, num_classes: int) -> Tensor:
    arr = np.asarray(y.detach().cpu() if isinstance(y, torch.Tensor) else y)
    if arr.shape != (n,):
        raise ValueError(f"y must have shape ({n},), got {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"y must hold integer class labels, got an array of dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not (np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
        raise ValueError("y must hold integer class labels")
    if arr.min() < 0 or arr.max() >= num_classes:
        raise ValueError(f"y must lie in [0, {num_classes - 1}], got [{arr.min()}, {arr.max()}]")
    return torch.as_tensor(arr.astype(np.int64))


def check_theta(theta: Any, d: int) -> Tensor:
    theta = as_tensor("theta", theta)
    if theta.ndim == 1:
        theta = theta[None]
    if theta.ndim != 2 or theta.shape[1] != d:
        raise ValueError(f"theta must have shape (S, {d}), got {tuple(theta.shape)}")
    return theta


def _features(X: Any, d: int) -> Tensor:
    """New inputs for a fitted model: an ``(n, d)`` array with the training feature count."""
    t = _float_matrix(X, "X")
    if t.shape[1] != d:
        raise ValueError(
            f"X must have {d} features (the model's training data has {d}), got {t.shape[1]}"
        )
    return t


class GaussianLocation:
    """``x_i ~ N(theta, sigma2 I_d)`` with known ``sigma2``: the conjugate location model.

    Parameters
    ----------
    x
        ``(N, d)`` observations of one client (float64 inside).
    sigma2
        Known noise variance (positive).

    ``n = N``, ``dim = d``; :meth:`log_lik` maps ``theta`` ``(S, d)`` (or ``(d,)``) to ``(S, N)``.
    """

    def __init__(self, x: Any, sigma2: float = 1.0) -> None:
        try:
            self.sigma2 = V.number("sigma2", sigma2, low=0.0, low_open=True)
        except ValueError:
            raise ValueError(f"sigma2 must be a positive number, got {sigma2!r}") from None
        self.x = _float_matrix(x, "x")

    @property
    def n(self) -> int:
        return int(self.x.shape[0])

    @property
    def dim(self) -> int:
        return int(self.x.shape[1])

    def log_lik(self, theta: Tensor) -> Tensor:
        """Per-point log-likelihoods ``(S, N)`` of ``theta`` ``(S, d)``."""
        theta = check_theta(theta, self.dim)
        sq = ((self.x[None] - theta[:, None]) ** 2).sum(-1)
        return -0.5 * sq / self.sigma2 - 0.5 * self.dim * math.log(2 * math.pi * self.sigma2)

    def take(self, idx: Tensor) -> GaussianLocation:
        """The same model on the points ``idx`` (a minibatch)."""
        out = copy.copy(self)
        out.x = self.x[idx]
        return out

    def log_power_integral(self, theta: Tensor, c: float) -> Tensor:
        """``log int N(z; theta, sigma2 I)^c dz``, the same for every theta and point."""
        c = V.positive("c", c)
        theta = check_theta(theta, self.dim)
        value = 0.5 * self.dim * ((1 - c) * math.log(2 * math.pi * self.sigma2) - math.log(c))
        return torch.full((theta.shape[0], self.n), value, dtype=torch.float64)


class LogisticRegression:
    """Binary logistic regression, ``p(y = 1 | x) = sigmoid(x^T theta)``; add a column of ones
    to ``X`` for an intercept.

    Parameters
    ----------
    X
        ``(N, d)`` features of one client (float64 inside).
    y
        ``(N,)`` labels in ``{0, 1}``.

    ``n = N``, ``dim = d``; :meth:`log_lik` maps ``theta`` ``(S, d)`` (or ``(d,)``) to ``(S, N)``;
    :meth:`predict_proba` gives ``(n, 2)`` probabilities of new ``(n, d)`` features, averaged
    over the ``S`` samples (labels: its ``argmax(1)``).
    """

    num_classes = 2

    def __init__(self, X: Any, y: Any) -> None:
        self.X = _float_matrix(X, "X")
        self.y = _labels(y, self.n, 2)

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def dim(self) -> int:
        return int(self.X.shape[1])

    def take(self, idx: Tensor) -> LogisticRegression:
        """The same model on the points ``idx`` (a minibatch)."""
        out = copy.copy(self)
        out.X, out.y = self.X[idx], self.y[idx]
        return out

    def _logits(self, theta: Tensor, X: Tensor | None = None) -> Tensor:
        theta = check_theta(theta, self.dim)
        return theta @ (self.X if X is None else _features(X, self.dim)).T  # (S, N)

    def log_lik(self, theta: Tensor) -> Tensor:
        """Per-point log-likelihoods ``(S, N)`` of ``theta`` ``(S, d)``."""
        a = self._logits(theta)
        sign = 2.0 * self.y.to(torch.float64) - 1.0
        return F.logsigmoid(sign * a)

    def log_power_integral(self, theta: Tensor, c: float) -> Tensor:
        """``log sum_y p(y | x_i, theta)^c``, ``(S, N)``."""
        c = V.positive("c", c)
        a = self._logits(theta)
        return torch.logaddexp(c * F.logsigmoid(a), c * F.logsigmoid(-a))

    def predict_proba(self, theta: Tensor, X: Any) -> np.ndarray:
        """Class probabilities ``(n, 2)`` averaged over the samples ``theta``."""
        p1 = torch.sigmoid(self._logits(theta, X)).mean(0).numpy()
        return np.stack([1 - p1, p1], axis=1)


class MLPClassifier:
    """Softmax classifier ``x -> K`` classes through ``hidden`` ReLU layers; ``theta`` is the
    flat vector of all weights and biases, layer by layer (weights ``(in, out)`` first).

    Parameters
    ----------
    X
        ``(N, d)`` features of one client (float64 inside).
    y
        ``(N,)`` labels in ``[0, num_classes)``.
    num_classes
        ``K`` (at least 2).
    hidden
        Widths of the hidden ReLU layers; ``()`` is multinomial logistic regression.

    ``n = N``; ``dim`` is the total number of weights and biases (``(d + 1) K`` with no hidden
    layer); ``shapes`` lists each layer's ``(in, out)``. :meth:`logits` maps ``theta``
    ``(S, dim)`` (or ``(dim,)``) to ``(S, N, K)``, :meth:`log_lik` to ``(S, N)``;
    :meth:`predict_proba` gives ``(n, K)`` probabilities of new ``(n, d)`` features, averaged
    over the ``S`` samples (labels: its ``argmax(1)``).
    """

    def __init__(self, X: Any, y: Any, num_classes: int, hidden: tuple[int, ...] = ()) -> None:
        if not (isinstance(num_classes, int) and num_classes >= 2):
            raise ValueError(f"num_classes must be an integer >= 2, got {num_classes!r}")
        if isinstance(hidden, (str, bytes)) or not isinstance(hidden, (tuple, list)):
            raise ValueError(
                f"hidden must be a tuple of positive layer widths such as (16,), got {hidden!r}"
            )
        if any(not (isinstance(h, int) and not isinstance(h, bool) and h > 0) for h in hidden):
            raise ValueError(f"hidden must hold positive integers, got {hidden!r}")
        hidden = tuple(hidden)
        self.X = _float_matrix(X, "X")
        self.num_classes = num_classes
        self.y = _labels(y, self.n, num_classes)
        widths = [self.X.shape[1], *hidden, num_classes]
        self.shapes = list(itertools.pairwise(widths))

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def dim(self) -> int:
        return sum(i * o + o for i, o in self.shapes)

    def take(self, idx: Tensor) -> MLPClassifier:
        """The same model on the points ``idx`` (a minibatch)."""
        out = copy.copy(self)
        out.X, out.y = self.X[idx], self.y[idx]
        return out

    def logits(self, theta: Tensor, X: Tensor | None = None) -> Tensor:
        """Logits ``(S, N, K)`` of ``theta`` ``(S, dim)`` on the client's data, or on new
        ``(N, d)`` features ``X``."""
        theta = check_theta(theta, self.dim)
        feats = self.X if X is None else _features(X, self.shapes[0][0])
        h = feats.expand(theta.shape[0], -1, -1)  # (S, N, in)
        at = 0
        for k, (i, o) in enumerate(self.shapes):
            W = theta[:, at : at + i * o].reshape(-1, i, o)
            b = theta[:, at + i * o : at + i * o + o]
            at += i * o + o
            h = torch.baddbmm(b[:, None, :], h, W)
            if k < len(self.shapes) - 1:
                h = torch.relu(h)
        return h  # (S, N, K)

    def log_lik(self, theta: Tensor) -> Tensor:
        """Per-point log-likelihoods ``(S, N)`` of ``theta`` ``(S, dim)``."""
        logp = torch.log_softmax(self.logits(theta), -1)
        return logp.gather(-1, self.y.expand(logp.shape[0], -1)[..., None])[..., 0]

    def log_power_integral(self, theta: Tensor, c: float) -> Tensor:
        """``log sum_k p(k | x_i, theta)^c``, ``(S, N)``."""
        return torch.logsumexp(c * torch.log_softmax(self.logits(theta), -1), -1)

    def predict_proba(self, theta: Tensor, X: Any) -> np.ndarray:
        """Class probabilities ``(n, K)`` averaged over the samples ``theta``."""
        logits = self.logits(theta, X)
        return torch.softmax(logits, -1).mean(0).numpy()
