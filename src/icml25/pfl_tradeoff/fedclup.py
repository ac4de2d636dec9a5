"""FedCLUP: personalized federated learning with a personalization degree lambda.

The objective, over a global model ``w_g`` and one model ``w_i`` per client, is

    min  sum_i p_i [ L_i(w_i) + (lambda / 2) ||w_g - w_i||^2 ].

``lambda = 0`` is purely local training and ``lambda -> inf`` is FedAvg's single model.

**Client step.** Each round, every client runs ``E`` gradient steps on
``L_i(w) + (lambda/2) ||w - w_g||^2``. It starts from its *own* previous ``w_i`` and uses step
``1 / (L + lambda)``.

**Server step.** ``w_g <- w_g - eta_g lambda (w_g - sum_i p_i w_i)`` with
``eta_g = 1/lambda + 1/L``. This is a gradient step on the Moreau envelopes of the ``L_i``,
whose smoothness is ``lambda L / (lambda + L)``.

Problems are plain "vector problems": ``loss(w)``, ``grad(w)`` and a smoothness constant
``L``. :class:`LeastSquares` and :class:`SoftmaxRegression` are closed-form NumPy problems.
:class:`TorchProblem` wraps any ``nn.Module`` and its data, flattening the parameters. So the
same algorithm runs a linear model and a CNN, in process (:func:`fedclup`) or on Flower
(:mod:`icml25.pfl_tradeoff.flower`).

References
----------
Yu, He, Sun, Xue & Li, "Understanding the Statistical Accuracy-Communication Trade-off in
Personalized Federated Learning with Minimax Guarantees", ICML 2025 (arXiv:2410.08934).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from icml25.core import validate as V


class Problem(Protocol):
    """A client's local problem on a flat parameter vector."""

    dim: int
    smoothness: float
    n: int

    def loss(self, w: np.ndarray) -> float: ...

    def grad(self, w: np.ndarray) -> np.ndarray: ...


def _data(X: Any, y: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    X = V.finite_array(f"{name}: X", X, ndim=2)
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != len(X):
        raise ValueError(
            f"{name}: y must be 1-D with one entry per row of X ({len(X)}), got shape {y.shape}"
        )
    return X, y


def _features(name: str, X: Any, d: int) -> np.ndarray:
    """``(m, d)`` finite float64 features to predict on."""
    X = V.finite_array(f"{name}: X", X, ndim=2)
    if X.shape[1] != d:
        raise ValueError(f"{name}: X must have {d} columns (as the training X), got {X.shape[1]}")
    return X


def _model(w: Any, dim: int) -> np.ndarray:
    """A finite flat ``(dim,)`` model."""
    w = V.finite_array("w", w, ndim=1)
    if len(w) != dim:
        raise ValueError(f"w must have the model dimension {dim}, got {len(w)}")
    return w


class LeastSquares:
    """A client's least-squares problem: ``L(w) = ||X w - y||^2 / (2n)``.

    Parameters
    ----------
    X
        ``(n, d)`` features (finite).
    y
        ``(n,)`` targets (finite).

    Attributes
    ----------
    n, dim
        Rows ``n`` and model dimension ``d``: ``w`` is a flat ``(d,)`` vector.
    smoothness
        ``L = lambda_max(X^T X / n)``, the gradient's Lipschitz constant.
    A, b
        ``(d, d)`` ``X^T X / n`` and ``(d,)`` ``X^T y / n`` (the gradient is ``A w - b``).
    """

    def __init__(self, X: Any, y: Any) -> None:
        self.X, y = _data(X, y, "LeastSquares")
        self.y = V.finite_array("LeastSquares: y", y, ndim=1)
        self.n, self.dim = self.X.shape
        self.A = self.X.T @ self.X / self.n
        self.b = self.X.T @ self.y / self.n
        self.smoothness = float(np.linalg.eigvalsh(self.A)[-1])

    def loss(self, w: np.ndarray) -> float:
        """``L(w)`` for a ``(d,)`` model."""
        r = self.X @ w - self.y
        return float(r @ r / (2 * self.n))

    def grad(self, w: np.ndarray) -> np.ndarray:
        """``(d,)`` gradient ``A w - b``."""
        return self.A @ w - self.b

    def predict(self, w: np.ndarray, X: Any) -> np.ndarray:
        """``(m,)`` predictions ``X w`` of a ``(d,)`` model on ``(m, d)`` features."""
        return _features("LeastSquares.predict", X, self.dim) @ _model(w, self.dim)


class SoftmaxRegression:
    """A client's multinomial logistic regression: mean cross-entropy of the scores ``X W``.

    The model is a flat ``(d * K,)`` vector ``w``, read as ``W = w.reshape(d, K)`` (no
    intercept: append a column of ones to ``X`` for one). :meth:`predict` gives labels,
    :meth:`decision_function` the ``(m, K)`` scores and :meth:`predict_proba` their softmax, for
    a model ``w`` that :func:`fedclup` returns (``w_global`` or one of ``w_locals``)::

        accuracy = np.mean(problem.predict(res.w_locals[i], X_test) == y_test)

    Parameters
    ----------
    X
        ``(n, d)`` features (finite).
    y
        ``(n,)`` integer labels in ``[0, num_classes)``.
    num_classes
        ``K`` (at least 2; a client may hold fewer of them).

    Attributes
    ----------
    n, k, dim
        Rows ``n``, classes ``K`` and model dimension ``d * K``.
    smoothness
        ``lambda_max(X^T X / n) / 2``, a bound on the gradient's Lipschitz constant.
    """

    def __init__(self, X: Any, y: Any, num_classes: int) -> None:
        self.X, y = _data(X, y, "SoftmaxRegression")
        num_classes = V.integer("num_classes", num_classes, low=2)
        self.y = V.class_labels("SoftmaxRegression: y", y)
        if self.y.max() >= num_classes:
            raise ValueError(
                f"labels must be in [0, {num_classes}), got [{self.y.min()}, {self.y.max()}]"
            )
        self.n, d = self.X.shape
        self.k = num_classes
        self.dim = d * num_classes
        self.Y = np.eye(num_classes)[self.y]
        self.smoothness = float(np.linalg.eigvalsh(self.X.T @ self.X / self.n)[-1]) / 2

    def _probs(self, w: np.ndarray) -> np.ndarray:
        z = self.X @ w.reshape(-1, self.k)
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)

    def loss(self, w: np.ndarray) -> float:
        """Mean cross-entropy on the client's data for a ``(d * K,)`` model."""
        p = self._probs(w)
        return float(-np.mean(np.log(p[np.arange(self.n), self.y] + 1e-300)))

    def grad(self, w: np.ndarray) -> np.ndarray:
        """``(d * K,)`` gradient of :meth:`loss`."""
        return (self.X.T @ (self._probs(w) - self.Y) / self.n).ravel()

    def decision_function(self, w: np.ndarray, X: Any) -> np.ndarray:
        """``(m, K)`` class scores ``X W`` of a ``(d * K,)`` model on ``(m, d)`` features."""
        d = self.dim // self.k
        X = _features("SoftmaxRegression.decision_function", X, d)
        return X @ _model(w, self.dim).reshape(d, self.k)

    def predict_proba(self, w: np.ndarray, X: Any) -> np.ndarray:
        """``(m, K)`` class probabilities: the softmax of :meth:`decision_function`."""
        z = self.decision_function(w, X)
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, w: np.ndarray, X: Any) -> np.ndarray:
        """``(m,)`` int64 labels, the argmax of :meth:`decision_function` (ties: lowest)."""
        return self.decision_function(w, X).argmax(axis=1).astype(np.int64)


class TorchProblem:
    """Any ``nn.Module`` with its data as a vector problem (full-batch cross-entropy).

    The model vector ``w`` is the module's parameters flattened in ``parameters()`` order,
    ``(dim,)`` with ``dim`` their total size (:meth:`initial` gives the module's own). Non-convex,
    so ``smoothness`` is a step-size hint that the user gives (``1 / lr``). To predict with a
    trained ``w``: ``nn.utils.vector_to_parameters(torch.as_tensor(w, dtype=torch.float32),
    model.parameters())``, then ``model(X).argmax(1)``.

    Parameters
    ----------
    model
        Maps ``X`` to ``(n, K)`` logits; its parameters are overwritten by every call.
    X
        ``(n, ...)`` inputs the model takes (finite).
    y
        ``(n,)`` int64 labels in ``[0, K)``.
    smoothness
        Positive: the local step is ``1 / (smoothness + lambda)``.
    """

    def __init__(
        self, model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, smoothness: float
    ) -> None:
        if len(X) != len(y) or len(X) == 0:
            raise ValueError(
                f"X and y must be non-empty and of one length, got {len(X)} and {len(y)}"
            )
        smoothness = V.positive("smoothness", smoothness)
        V.finite_tensor("TorchProblem: X", X)
        self.model, self.X, self.y = model, X, y
        self.n = len(X)
        self.dim = sum(p.numel() for p in model.parameters())
        self.smoothness = float(smoothness)

    def _set(self, w: np.ndarray) -> None:
        nn.utils.vector_to_parameters(
            torch.as_tensor(w, dtype=torch.float32), self.model.parameters()
        )

    def loss(self, w: np.ndarray) -> float:
        """Mean cross-entropy of the ``(dim,)`` model on the client's data."""
        self._set(w)
        with torch.no_grad():
            return float(nn.functional.cross_entropy(self.model(self.X), self.y))

    def grad(self, w: np.ndarray) -> np.ndarray:
        """``(dim,)`` float64 gradient of :meth:`loss`."""
        self._set(w)
        self.model.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(self.model(self.X), self.y).backward()
        grads = [
            p.grad if p.grad is not None else torch.zeros_like(p) for p in self.model.parameters()
        ]
        return np.concatenate([g.detach().double().flatten().numpy() for g in grads])

    def initial(self) -> np.ndarray:
        """The module's current parameters as a ``(dim,)`` float64 vector (a ``w0``)."""
        return nn.utils.parameters_to_vector(self.model.parameters()).detach().double().numpy()


# ------------------------------------------------------------------------------------ the steps


def check_lambda(lam: float) -> float:
    return V.number("lam", lam, low=0.0)


def check_problems(problems: Sequence[Problem], item: str = "problems[{i}]") -> int:
    """Every client is a problem object, all share one dimension, none is empty; returns it.
    ``item`` names client ``i`` in the errors."""
    if not problems:
        raise ValueError("problems must hold at least one client")
    for i, pr in enumerate(problems):
        if not all(hasattr(pr, a) for a in ("dim", "n", "smoothness")):
            hint = (
                ": wrap client data as LeastSquares(X, y) or SoftmaxRegression(X, y, num_classes)"
                if isinstance(pr, tuple)
                else ""
            )
            raise TypeError(
                f"{item.format(i=i)} must be a client problem (LeastSquares, SoftmaxRegression, "
                f"TorchProblem or your own with dim, n, smoothness, ...), got "
                f"{type(pr).__name__}{hint}"
            )
    dims = {p.dim for p in problems}
    if len(dims) != 1:
        raise ValueError(f"all clients must share one model dimension, got {sorted(dims)}")
    if any(p.n == 0 for p in problems):
        raise ValueError("every client needs at least one sample")
    return int(dims.pop())


def local_update(
    problem: Problem,
    w_i: np.ndarray,
    w_g: np.ndarray,
    lam: float,
    steps: int,
    lr: float | None = None,
) -> np.ndarray:
    """``steps`` GD steps on ``L_i(w) + lam/2 ||w - w_g||^2`` from ``w_i`` (step ``1/(L+lam)``)."""
    lam = check_lambda(lam)
    steps = V.integer("steps", steps, low=0)
    eta = V.positive("lr", lr) if lr is not None else 1.0 / (problem.smoothness + lam)
    w = np.array(w_i, dtype=np.float64, copy=True)
    for _ in range(steps):
        w -= eta * (problem.grad(w) + lam * (w - w_g))
    if not np.all(np.isfinite(w)):
        raise FloatingPointError("the local update diverged (non-finite weights): lower lr")
    return w


def server_update(
    w_g: np.ndarray,
    w_locals: Sequence[np.ndarray],
    weights: Sequence[float] | np.ndarray,
    lam: float,
    eta_g: float,
) -> np.ndarray:
    """``w_g - eta_g lam (w_g - sum_i p_i w_i)`` (``eta_g lam = 1``: plain averaging)."""
    p = _weights(weights, len(w_locals))
    mean = sum(pi * wi for pi, wi in zip(p, w_locals, strict=True))
    return w_g - eta_g * lam * (w_g - mean)


def _weights(weights: Any, n: int) -> np.ndarray:
    """Client weights: ``n`` finite numbers >= 0 with a positive sum, normalised."""
    p = V.finite_array("weights", weights, ndim=1)
    if len(p) != n:
        raise ValueError(f"weights must have one entry per client ({n}), got {len(p)}")
    if p.min() < 0 or p.sum() <= 0:
        raise ValueError(f"weights must be >= 0 with a positive sum, got {p.tolist()}")
    return p / p.sum()


def server_lr(lam: float, smoothness: float) -> float:
    """The code's ``eta_g = 1/lam + 1/L`` (``1/L`` alone at ``lam = 0``, unused there)."""
    lam = check_lambda(lam)
    smoothness = V.positive("smoothness", smoothness)
    return (1.0 / lam if lam > 0 else 0.0) + 1.0 / smoothness


def adaptive_lambda(r_est: float, n: int) -> float:
    """The official code's rule: ``5 / (n R^2)`` if ``R >= 1/sqrt(n)``, else ``5 / (sqrt(n) R)``."""
    r_est = V.positive("r_est", r_est)
    n = V.integer("n", n, low=1)
    return 5.0 / (n * r_est**2) if r_est >= 1 / math.sqrt(n) else 5.0 / (math.sqrt(n) * r_est)


# --------------------------------------------------------------------------- the in-process run


@dataclass
class FedCLUPResult:
    """Final global and local models, with per-round history."""

    w_global: np.ndarray
    """``(dim,)`` global model ``w_g``."""
    w_locals: list[np.ndarray]
    """One ``(dim,)`` personalized model ``w_i`` per client, in ``problems`` order."""
    rounds: int
    """Rounds run (fewer than asked when ``tol`` stopped the run)."""
    history: list[float] = field(default_factory=list)
    """``||w_g^{t} - w_g^{t-1}||`` per round (or the distance to ``target`` if given)."""


def fedclup(
    problems: Sequence[Problem],
    lam: float,
    *,
    rounds: int = 50,
    local_steps: int = 10,
    w0: np.ndarray | None = None,
    lr_local: float | None = None,
    eta_g: float | None = None,
    tol: float | None = None,
    target: np.ndarray | None = None,
    weights: Sequence[float] | None = None,
    callback: Callable[[int, np.ndarray, list[np.ndarray]], None] | None = None,
) -> FedCLUPResult:
    """Run FedCLUP with every client participating (the in-process runner).

    Stops after ``rounds``, or earlier once the history value is at most ``tol``. The history
    value is the change of ``w_g``, or its distance to ``target``. ``lam = 0`` is local
    training: the server step is skipped and ``w_g`` is the plain average.
    """
    lam = check_lambda(lam)
    d = check_problems(problems)
    rounds = V.integer("rounds", rounds, low=1)
    local_steps = V.integer("local_steps", local_steps, low=1)
    if lr_local is not None:
        lr_local = V.positive("lr_local", lr_local)
    if eta_g is not None:
        eta_g = V.positive("eta_g", eta_g)
    if tol is not None:
        tol = V.number("tol", tol, low=0.0)
    w_g = np.zeros(d) if w0 is None else V.finite_array("w0", w0, ndim=1).copy()
    if len(w_g) != d:
        raise ValueError(f"w0 must have the model dimension {d}, got {len(w_g)}")
    if target is not None:
        target = V.finite_array("target", target, ndim=1)
        if len(target) != d:
            raise ValueError(f"target must have the model dimension {d}, got {len(target)}")
    w_locals = [w_g.copy() for _ in problems]
    p = _weights(weights if weights is not None else [1.0] * len(problems), len(problems))
    smooth = max(pr.smoothness for pr in problems)
    eg = eta_g if eta_g is not None else server_lr(lam, smooth)
    history: list[float] = []
    t = 0
    for t in range(1, rounds + 1):
        w_locals = [
            local_update(pr, wi, w_g, lam, local_steps, lr_local)
            for pr, wi in zip(problems, w_locals, strict=True)
        ]
        new = (
            server_update(w_g, w_locals, p, lam, eg)
            if lam > 0
            else np.average(w_locals, axis=0, weights=p)
        )
        value = float(np.linalg.norm(new - (target if target is not None else w_g)))
        w_g = new
        history.append(value)
        if callback is not None:
            callback(t, w_g, w_locals)
        if tol is not None and value <= tol:
            break
    return FedCLUPResult(w_g, w_locals, t, history)


def pfl_optimum(
    problems: Sequence[LeastSquares], lam: float, weights: Sequence[float] | None = None
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The exact minimiser of the PFL objective for least-squares clients.

    ``w_i = (A_i + lam I)^{-1} (b_i + lam w_g)`` and ``w_g = sum_i p_i w_i``; that is a
    ``d x d`` linear system for ``w_g``. ``lam = 0`` gives each client's own least-squares
    solution and their average.
    """
    lam = check_lambda(lam)
    if len(problems) == 0:
        raise ValueError("problems must hold at least one LeastSquares client")
    if not all(isinstance(pr, LeastSquares) for pr in problems):
        raise TypeError("pfl_optimum is exact for LeastSquares clients only")
    if len({pr.dim for pr in problems}) != 1:
        raise ValueError(f"all clients must share one dimension, got {[pr.dim for pr in problems]}")
    p = _weights(weights if weights is not None else [1.0] * len(problems), len(problems))
    d = problems[0].dim
    eye = np.eye(d)
    if lam == 0:
        locals_ = [np.linalg.solve(pr.A, pr.b) for pr in problems]
        return np.average(locals_, axis=0, weights=p), locals_
    inv = [np.linalg.inv(pr.A + lam * eye) for pr in problems]
    M = eye - lam * sum(pi * Ii for pi, Ii in zip(p, inv, strict=True))
    rhs = sum(pi * Ii @ pr.b for pi, Ii, pr in zip(p, inv, problems, strict=True))
    w_g = np.linalg.solve(M, rhs)
    return w_g, [Ii @ (pr.b + lam * w_g) for Ii, pr in zip(inv, problems, strict=True)]
