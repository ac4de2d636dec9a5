"""The class-heterogeneity sweep on images, run as the official code runs its MNIST experiment.

Every arm (local training, FedCLUP at one lambda, FedAvg) trains ``K`` clients with minibatch
SGD (fixed local learning rate, batch ``B``, ``E`` epochs a round, no momentum). All arms and
all clients are trained at once: their parameters are stacked (leading dims ``(arms, clients)``)
and one batched forward pass (matmuls, grouped convolutions) gives every model's minibatch
gradient. The arms see the same initial model and the same
minibatch order (common random numbers), so their accuracies are paired.

- **local** (``lam = 0``): each client keeps its own model across rounds.
- **FedCLUP** (``lam > 0``): each client runs SGD on ``CE + (lam/2) ||w - w_g||^2`` from its own
  previous ``w_i``; the server averages (``w_g <- mean_i w_i``: the official code's global step
  with ``global_lr = 1/mu``).
- **FedAvg** (``lam = inf``): the server's model is sent to every client, which runs SGD on its
  cross-entropy; the server averages. Its personalized score is the *global* model's.
- **adaptive** (``lam = nan``): local training for the first half of the rounds; then
  ``R = mean_i ||w_i - mean_j w_j||`` and ``lam = 5/(n R^2)`` (:func:`adaptive_lambda`) for the
  rest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from icml25.pfl_tradeoff.fedclup import adaptive_lambda


@dataclass
class Clients:
    """``K`` clients of equal size: training ``(K, n, D)``, ``(K, n)``; test ``(K, t, D)``."""

    X: torch.Tensor
    y: torch.Tensor
    Xt: torch.Tensor
    yt: torch.Tensor
    classes: list[list[int]]


def split_by_classes(
    X: np.ndarray,
    y: np.ndarray,
    Xt: np.ndarray,
    yt: np.ndarray,
    c: int,
    rng: np.random.Generator,
    *,
    clients: int = 10,
    train: int = 180,
    test: int = 100,
) -> Clients:
    """Client ``i`` holds the ``c`` classes ``perm[(i + j) % 10]``, ``j < c`` (each class goes to
    ``c`` clients), ``train`` training images split evenly over them, and ``test`` test images
    of the same classes drawn from the test split (disjoint between clients)."""
    if not 1 <= c <= 10:
        raise ValueError(f"c must be in [1, 10], got {c}")
    perm = rng.permutation(10)
    pools = {k: list(rng.permutation(np.flatnonzero(y == k))) for k in range(10)}
    tpools = {k: list(rng.permutation(np.flatnonzero(yt == k))) for k in range(10)}
    out: tuple[list[np.ndarray], ...] = ([], [], [], [])
    classes = []
    for i in range(clients):
        cls = [int(perm[(i + j) % 10]) for j in range(c)]
        classes.append(cls)
        parts = []
        for pool, total in ((pools, train), (tpools, test)):
            take: list[int] = []
            for j, k in enumerate(cls):
                want = total // c + (1 if j < total % c else 0)
                if len(pool[k]) < want:
                    raise ValueError(f"class {k} has too few images left for {clients} clients")
                take += [pool[k].pop() for _ in range(want)]
            parts.append(rng.permutation(take))
        out[0].append(X[parts[0]])
        out[1].append(y[parts[0]])
        out[2].append(Xt[parts[1]])
        out[3].append(yt[parts[1]])
    return Clients(
        torch.tensor(np.stack(out[0]), dtype=torch.float32),
        torch.tensor(np.stack(out[1]), dtype=torch.long),
        torch.tensor(np.stack(out[2]), dtype=torch.float32),
        torch.tensor(np.stack(out[3]), dtype=torch.long),
        classes,
    )


LOCAL, FEDAVG, ADAPTIVE = 0.0, math.inf, math.nan


class BatchedModel:
    """Many models of one architecture at once: parameters with leading dims ``(A, K)``.

    ``A`` arms times ``K`` clients: :meth:`init` draws one model's parameters (no leading
    dims), :func:`run_arms` stacks them to ``(A, K, ...)``, and :meth:`forward` maps features
    ``(1 or A, K, B, ...)`` (shared by the arms, or one copy per arm) to logits
    ``(A, K, B, classes)``.
    """

    def prepare(self, X: torch.Tensor) -> torch.Tensor:
        """Features of images ``(..., 784)`` (computed once per data set)."""
        return X

    def init(self, gen: torch.Generator) -> dict[str, torch.Tensor]:
        """One model's parameters, by name, drawn from ``gen`` (``nn.Linear``/``nn.Conv2d``'s
        uniform initialisation)."""
        raise NotImplementedError

    def forward(self, p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """Logits ``(A, K, B, classes)`` of features ``(1 or A, K, B, ...)``."""
        raise NotImplementedError


def _uniform(gen: torch.Generator, shape: tuple[int, ...], fan_in: int) -> torch.Tensor:
    bound = 1 / math.sqrt(fan_in)
    return (torch.rand(shape, generator=gen) * 2 - 1) * bound


class LogReg(BatchedModel):
    """Multinomial logistic regression on raw pixels (``nn.Linear(784, 10)``, its init).

    Parameters ``W`` ``(dim, classes)`` and ``b`` ``(classes,)``; features ``(1 or A, K, B,
    dim)`` to logits ``(A, K, B, classes)``.
    """

    def __init__(self, dim: int = 784, classes: int = 10) -> None:
        self.dim, self.classes = dim, classes

    def init(self, gen: torch.Generator) -> dict[str, torch.Tensor]:
        return {
            "W": _uniform(gen, (self.dim, self.classes), self.dim),
            "b": _uniform(gen, (self.classes,), self.dim),
        }

    def forward(self, p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        return x @ p["W"] + p["b"].unsqueeze(-2)


def _grouped_conv(
    h: torch.Tensor, w: torch.Tensor, b: torch.Tensor, groups: int, **kw: int
) -> torch.Tensor:
    """One convolution per model: ``h`` ``(B, groups * in, H, W)``, ``w`` ``(A, K, out, in, k,
    k)`` and ``b`` ``(A, K, out)`` with the models in ``(K, A)`` order on the channel axis."""
    A, K, out = w.shape[:3]
    wk = w.transpose(0, 1).reshape(K * A * out, *w.shape[3:])
    return nn.functional.conv2d(h, wk, b.transpose(0, 1).reshape(-1), groups=groups, **kw)


def _images(x: torch.Tensor, A: int) -> tuple[torch.Tensor, int]:
    """Features ``(1 or A, K, B, 784)`` as ``(B, K [* A], 28, 28)`` and the first layer's groups
    (``K`` when the arms share the images: each client's images feed all its arms' models)."""
    S, K, B = x.shape[:3]
    img = x.permute(2, 1, 0, 3).reshape(B, K * S, 28, 28)
    return img, K * S if S > 1 else K


def _dense(h: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-model linear layer: ``h`` ``(B, K, A, F)`` -> ``(B, K, A, O)``."""
    return torch.einsum("bkaf,akfo->bkao", h, w) + b.transpose(0, 1)


class ConvNet(BatchedModel):
    """``conv(5x5, stride 2, pad 2, channels) -> ReLU -> maxpool(2) -> Linear``: a one-layer CNN
    on 28x28 images (14x14 maps, 7x7 after pooling). Every model's convolution is one group of a
    grouped ``conv2d``, so all arms and clients train in one call.

    Parameters ``Wc`` ``(channels, 1, 5, 5)``, ``bc`` ``(channels,)``, ``Wf`` ``(49 channels,
    classes)``, ``bf`` ``(classes,)``; images ``(1 or A, K, B, 784)`` to logits ``(A, K, B,
    classes)``.
    """

    def __init__(self, channels: int = 8, classes: int = 10) -> None:
        self.ch, self.classes = channels, classes

    def init(self, gen: torch.Generator) -> dict[str, torch.Tensor]:
        return {
            "Wc": _uniform(gen, (self.ch, 1, 5, 5), 25),
            "bc": _uniform(gen, (self.ch,), 25),
            "Wf": _uniform(gen, (49 * self.ch, self.classes), 49 * self.ch),
            "bf": _uniform(gen, (self.classes,), 49 * self.ch),
        }

    def forward(self, p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        A, K = p["Wc"].shape[:2]
        img, groups = _images(x, A)
        B = img.shape[0]
        h = _grouped_conv(img, p["Wc"], p["bc"], groups, stride=2, padding=2)
        h = nn.functional.max_pool2d(torch.relu(h), 2)  # (B, K*A*ch, 7, 7)
        out = _dense(h.reshape(B, K, A, -1), p["Wf"], p["bf"])
        return out.permute(2, 1, 0, 3)


class TwoConvNet(BatchedModel):
    """A scaled-down version of the official two-convolution CNN (``src/models/CNN.py``: 3x3
    convolutions of 32 and 64 channels with ReLU and 2x2 max-pooling, a 128-unit layer):
    ``conv(3x3, pad 1, c1) -> ReLU -> maxpool(2) -> conv(3x3, pad 1, c2) -> ReLU -> maxpool(2)
    -> [Linear(hidden) -> ReLU] -> Linear``, trained as grouped convolutions (see :class:`ConvNet`).

    Parameters ``W1`` ``(c1, 1, 3, 3)``, ``W2`` ``(c2, c1, 3, 3)``, ``W3`` ``(49 c2, hidden or
    classes)``, ``W4`` ``(hidden, classes)`` (only with ``hidden > 0``) and their biases;
    images ``(1 or A, K, B, 784)`` to logits ``(A, K, B, classes)``.
    """

    def __init__(self, c1: int = 8, c2: int = 16, hidden: int = 0, classes: int = 10) -> None:
        if min(c1, c2) < 1 or hidden < 0:
            raise ValueError(f"c1, c2 must be >= 1 and hidden >= 0, got {c1=}, {c2=}, {hidden=}")
        self.c1, self.c2, self.hidden, self.classes = c1, c2, hidden, classes

    def init(self, gen: torch.Generator) -> dict[str, torch.Tensor]:
        flat = 49 * self.c2
        out = self.hidden or self.classes
        p = {
            "W1": _uniform(gen, (self.c1, 1, 3, 3), 9),
            "b1": _uniform(gen, (self.c1,), 9),
            "W2": _uniform(gen, (self.c2, self.c1, 3, 3), 9 * self.c1),
            "b2": _uniform(gen, (self.c2,), 9 * self.c1),
            "W3": _uniform(gen, (flat, out), flat),
            "b3": _uniform(gen, (out,), flat),
        }
        if self.hidden:
            p["W4"] = _uniform(gen, (self.hidden, self.classes), self.hidden)
            p["b4"] = _uniform(gen, (self.classes,), self.hidden)
        return p

    def forward(self, p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        A, K = p["W1"].shape[:2]
        img, groups = _images(x, A)
        B = img.shape[0]
        h = _grouped_conv(img, p["W1"], p["b1"], groups, padding=1)
        h = nn.functional.max_pool2d(torch.relu(h), 2)  # (B, K*A*c1, 14, 14)
        h = _grouped_conv(h, p["W2"], p["b2"], K * A, padding=1)
        h = nn.functional.max_pool2d(torch.relu(h), 2).reshape(B, K, A, -1)
        h = _dense(h, p["W3"], p["b3"])
        if self.hidden:
            h = _dense(torch.relu(h), p["W4"], p["b4"])
        return h.permute(2, 1, 0, 3)


@dataclass
class ArmResult:
    """One arm's outcome in :func:`run_arms` (scalars, averaged over the ``K`` clients)."""

    lam: float
    """The arm's lambda (0 local, inf FedAvg); for the adaptive arm the lambda it chose."""
    accuracy: float
    """Mean over clients of the personalized test accuracy, %."""
    train_loss: float
    """Mean over clients of the scored model's training cross-entropy."""


def run_arms(
    model: BatchedModel,
    data: Clients,
    arms: Sequence[float],
    *,
    rounds: int,
    epochs: int,
    batch: int = 32,
    lr: float = 0.01,
    seed: int = 0,
) -> tuple[list[ArmResult], float]:
    """Train every arm; return their results and FedAvg's score with the official code's
    convention (each client's model after its last local epochs), ``nan`` without a FedAvg arm."""
    gen = torch.Generator().manual_seed(seed)
    base = model.init(gen)  # one initial model for every arm and client (as the official code)
    X, Xt = model.prepare(data.X), model.prepare(data.Xt)
    A, K, n = len(arms), X.shape[0], X.shape[1]
    params = {k: v.expand(A, K, *v.shape).clone() for k, v in base.items()}
    is_avg = torch.tensor([math.isinf(a) for a in arms])
    is_ada = [math.isnan(a) for a in arms]
    lam = torch.tensor([0.0 if (math.isinf(a) or math.isnan(a)) else a for a in arms])
    w_g = {k: v.expand(A, *v.shape).clone() for k, v in base.items()}
    rows = torch.arange(K)[:, None]
    adaptive_lams: dict[int, float] = {}
    half = max(1, rounds // 2)  # with one round the adaptive arm stays local

    def flat(p: dict[str, torch.Tensor], a: int) -> torch.Tensor:
        return torch.cat([v[a].flatten(1) for v in p.values()], 1)

    for r in range(rounds):
        if r == half:
            for a in (i for i, x in enumerate(is_ada) if x):
                f = flat(params, a)
                R = float((f - f.mean(0)).norm(dim=1).mean())
                adaptive_lams[a] = adaptive_lambda(R, n) if R > 0 else 0.0
                lam[a] = adaptive_lams[a]
        with torch.no_grad():
            for k, v in params.items():  # FedAvg: send the server's model
                v[is_avg] = w_g[k][is_avg].unsqueeze(1).expand_as(v[is_avg])
        for _ in range(epochs):
            order = torch.argsort(torch.rand(K, n, generator=gen), dim=1)
            for s in range(0, n, batch):
                idx = order[:, s : s + batch]
                for v in params.values():
                    v.requires_grad_(True)
                logits = model.forward(params, X[rows, idx].unsqueeze(0))
                yb = data.y[rows, idx].expand(A, K, -1)
                # sum over models of each model's mean loss: each gradient is its own model's
                loss = (
                    nn.functional.cross_entropy(logits.flatten(0, 2), yb.flatten(), reduction="sum")
                    / idx.shape[1]
                )
                grads = torch.autograd.grad(loss, list(params.values()))
                with torch.no_grad():
                    new = {}
                    for (k, v), g in zip(params.items(), grads, strict=True):
                        lv = lam.view(A, *([1] * (v.dim() - 1)))
                        new[k] = v - lr * (g + lv * (v - w_g[k].unsqueeze(1)))
                params = new
        with torch.no_grad():
            w_g = {k: v.mean(1) for k, v in params.items()}
        if not all(torch.isfinite(v).all() for v in params.values()):
            raise FloatingPointError("SGD diverged (non-finite weights): lower lr")
    params = {k: v.detach() for k, v in params.items()}
    scored = {k: v.clone() for k, v in params.items()}
    for k, v in scored.items():  # FedAvg is scored with its global model
        v[is_avg] = w_g[k][is_avg].unsqueeze(1).expand_as(v[is_avg])

    def evaluate(p: dict[str, torch.Tensor], F: torch.Tensor, y: torch.Tensor) -> np.ndarray:
        with torch.no_grad():
            logits = model.forward(p, F.unsqueeze(0))
            yy = y.expand(A, K, -1)
            acc = (logits.argmax(-1) == yy).float().mean((1, 2))
            loss = nn.functional.cross_entropy(
                logits.flatten(0, 2), yy.flatten(), reduction="none"
            ).view(A, -1)
        return np.stack([acc.numpy(), loss.mean(1).numpy()], 1)

    test = evaluate(scored, Xt, data.yt)
    train = evaluate(scored, X, data.y)
    official = evaluate(params, Xt, data.yt)
    results = [
        ArmResult(adaptive_lams.get(a, arms[a]), 100 * float(test[a, 0]), float(train[a, 1]))
        for a in range(A)
    ]
    avg = [a for a in range(A) if math.isinf(arms[a])]
    return results, (100 * float(official[avg[0], 0]) if avg else math.nan)
