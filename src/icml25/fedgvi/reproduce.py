"""Reproduction of FedGVI's robustness claims at laptop scale.

**(A) The contaminated 1-D Gaussian location model** (the paper's synthetic setting, the
brief's sizes).
- Data: ``theta* = 0``, ``sigma2 = 1``, 5 clients with 50 points each. On 2 clients a
  fraction ``eps`` of the points are outliers drawn from ``N(8, 1)``; ``eps = 0.2`` for the
  claims, ``eps`` in {0, 0.1, 0.2, 0.3} for the figure.
- Priors: a broad ``N(0, 10)`` and a confident wrong ``N(3, 0.1)``.
- Methods (all through :func:`~icml25.fedgvi.fedgvi.fedgvi`, damping 1, at most 30 rounds):
  - PVI: NLL loss, KL everywhere (conjugate);
  - FedGVI-IMQ: weighted score matching with the IMQ weight, ``c = 1`` (conjugate);
  - FedGVI-beta: density-power loss, ``beta = 1.5`` (exact expectations, L-BFGS);
  - FedGVI-AR: NLL at the clients, alpha-Renyi (``alpha = 2.5``) at the server, where the
    prior enters;
  - FedGVI-IMQ+AR: both.
- Metric: the bias ``|E_q[theta] - theta*|``, the mean over data sets.

**(B) Bayesian logistic regression on a real data set**: scikit-learn's breast cancer data
(569 x 30, standardised, plus an intercept). A stratified 30% is the clean test split; the
rest is split IID over 3 clients. "Contaminated": on 2 of the 3 clients, 20% of the
class-1 labels are flipped to 0 (asymmetric). Priors: tight ``N(0, 0.01 I)`` and broad
``N(0, I)``. Methods: PVI (NLL + KL), FedGVI-GCE (generalised cross-entropy, ``b = 0.5``),
FedGVI-AR (NLL, AR server), GCE+AR; all mean-field, Adam on reparameterised Monte Carlo
samples, damping ``1/M`` (the paper's choice for its BNNs; with damping 1 the synchronous
updates oscillated, PVI's included, in the first tiny run). FedAvg (point-estimate logistic
regression, local gradient steps) is the frequentist baseline. Metrics on the test split:
accuracy, NLL, ECE (15 bins, from :func:`icml25.core.metrics.ece`), with the
predictive averaged over 500 draws.

**(C) A Bayesian neural network on images with flipped labels**: Fashion-MNIST (MNIST-5k
without it), 3000 training images split IID over 3 clients, 20% of the training labels
flipped to a random other class, 2000 clean test images. A one-hidden-layer MLP (50 ReLU
units, 39,760 weights), mean-field Gaussian posterior, prior ``N(0, I)`` (the paper's),
optimisation started from He-initialised means with variance 1e-3; Adam (lr 1e-3) on
minibatches of 128 with 5 Monte Carlo samples, 100 steps per round, damping ``1/M``.
Methods: PVI (NLL) and FedGVI-GCE (``b = 0.8``, the paper's BNN choice), against FedAvg
on the same MLP (same init, optimiser, steps and rounds). The quick budget runs (C) on the
first seed only.

The claims' rules come from the brief and were fixed before the first run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.core.claims import Claim, Rule
from icml25.core.runner import RunContext
from icml25.fedgvi.fedgvi import (
    KL,
    AlphaRenyi,
    Client,
    LocalOptimizer,
    fedgvi,
    sample,
)
from icml25.fedgvi.gaussian import NatGaussian
from icml25.fedgvi.losses import NLL, DensityPowerLoss, GeneralisedCrossEntropy, IMQScoreMatching
from icml25.fedgvi.models import GaussianLocation, LogisticRegression, MLPClassifier

CONTAMINATION = (0.0, 0.1, 0.2, 0.3)
PRIORS = {"broad N(0, 10)": (0.0, 10.0), "wrong N(3, 0.1)": (3.0, 0.1)}
LOCATION_METHODS = ("PVI", "FedGVI-IMQ", "FedGVI-beta", "FedGVI-AR", "FedGVI-IMQ+AR")
LR_METHODS = ("PVI", "FedGVI-GCE", "FedGVI-AR", "FedGVI-GCE+AR")

CLAIMS = (
    Claim(
        id="pvi_exact",
        statement="FedGVI with the NLL loss and KL divergences is PVI, and on a conjugate model "
        "one round with damping 1 gives the exact posterior.",
        where="Sec. 3 (PVI as a special case); brief's pass criterion",
        metric="max |moment error| against the exact posterior after one round "
        "(contaminated data, both priors)",
        paper_value="0 (exact)",
        rule=Rule("<=", 1e-8),
    ),
    Claim(
        id="imq_cuts_outlier_bias",
        statement="A robust loss (IMQ-weighted score matching, conjugate) removes most of the "
        "bias that outliers give PVI.",
        where="Synthetic location experiments; brief: robust losses at most half PVI's bias",
        metric="bias(FedGVI-IMQ) / bias(PVI), eps = 0.2, broad prior",
        paper_value="<= 0.5",
        rule=Rule("<=", 0.5, partial=0.8),
    ),
    Claim(
        id="beta_cuts_outlier_bias",
        statement="The density-power (beta) loss also removes most of the outliers' bias.",
        where="Synthetic location experiments; brief: robust losses at most half PVI's bias",
        metric="bias(FedGVI-beta) / bias(PVI), eps = 0.2, broad prior",
        paper_value="<= 0.5",
        rule=Rule("<=", 0.5, partial=0.8),
    ),
    Claim(
        id="ar_cuts_prior_bias",
        statement="An alpha-Renyi divergence (alpha > 1) to the prior gives less bias than the "
        "KL under a confident wrong prior.",
        where="Prior-misspecification experiments; brief's pass criterion",
        metric="bias(FedGVI-AR) / bias(PVI), clean data, prior N(3, 0.1)",
        paper_value="< 1",
        rule=Rule("<=", 0.9, partial=1.0),
    ),
    Claim(
        id="both_misspecified",
        statement="Robust loss plus AR divergence handles outliers and a wrong prior together.",
        where="Abstract (robust to prior and likelihood misspecification)",
        metric="bias(FedGVI-IMQ+AR) / bias(PVI), eps = 0.2, prior N(3, 0.1)",
        paper_value="< 1 (brief: <= 0.5)",
        rule=Rule("<=", 0.5, partial=0.8),
    ),
    Claim(
        id="few_rounds",
        statement="FedGVI converges in few rounds.",
        where="Fixed-point analysis; brief: within 20 rounds",
        metric="largest number of rounds until the global mean moves <= 1e-6, over methods, "
        "priors and data sets (eps = 0.2)",
        paper_value="<= 20",
        rule=Rule("<=", 20, partial=30),
    ),
    Claim(
        id="lr_accuracy_gain_contaminated",
        statement="Under label contamination FedGVI predicts better than PVI.",
        where="Logistic-regression experiments; brief: best FedGVI >= PVI + 1.5 points",
        metric="best FedGVI variant's test accuracy - PVI's, points, mean over both priors",
        paper_value=">= 1.5",
        rule=Rule(">=", 1.5, partial=0.5),
    ),
    Claim(
        id="lr_no_loss_clean",
        statement="On clean data FedGVI loses no accuracy against PVI.",
        where="Logistic-regression experiments; brief: within +-1 point",
        metric="|best FedGVI variant's test accuracy - PVI's|, points, clean, mean over priors",
        paper_value="<= 1",
        rule=Rule("<=", 1.0, partial=2.0),
    ),
    Claim(
        id="lr_nll_contaminated",
        statement="Under contamination the robust loss improves the predictive NLL.",
        where="Logistic-regression experiments (NLL)",
        metric="test NLL of FedGVI-GCE - PVI's, contaminated, mean over priors",
        paper_value="< 0",
        rule=Rule("<=", 0.0, partial=0.02),
    ),
    Claim(
        id="lr_ece_contaminated",
        statement="Under contamination the robust loss is better calibrated.",
        where="Logistic-regression experiments (calibration)",
        metric="test ECE of FedGVI-GCE - PVI's, points, contaminated, mean over priors",
        paper_value="< 0",
        rule=Rule("<=", 0.0, partial=1.0),
    ),
    Claim(
        id="lr_beats_fedavg",
        statement="Under contamination FedGVI is at least as accurate as FedAvg.",
        where="Logistic-regression experiments (FedAvg baseline)",
        metric="best FedGVI variant's test accuracy - FedAvg's, points, contaminated, "
        "mean over priors",
        paper_value=">= 0",
        rule=Rule(">=", 0.0, partial=-1.0),
    ),
    Claim(
        id="bnn_gce_gain_noisy",
        statement="With flipped labels, a BNN trained by FedGVI with a robust loss is more "
        "accurate than PVI's.",
        where="BNN experiments on MNIST / Fashion-MNIST with 10-20% flipped labels",
        metric="test accuracy of FedGVI-GCE - PVI's, points, 20% flipped labels",
        paper_value="> 0",
        rule=Rule(">=", 0.0, partial=-1.0),
    ),
    Claim(
        id="bnn_beats_fedavg_noisy",
        statement="With flipped labels, FedGVI's BNN is more accurate than FedAvg's network.",
        where="BNN experiments (FedAvg baseline)",
        metric="test accuracy of the better of FedGVI-GCE and PVI - FedAvg's, points",
        paper_value="> 0",
        rule=Rule(">=", 0.0, partial=-1.0),
    ),
)


@dataclass(frozen=True)
class Budget:
    location_reps: int  # data sets per seed
    location_rounds: int
    lr_rounds: int
    lr_steps: int
    lr_samples: int
    bnn_train: int
    bnn_rounds: int
    bnn_seeds: int  # how many of the run's seeds also run (C)


BUDGETS = {
    "tiny": Budget(1, 5, 2, 20, 10, 300, 1, 1),
    "quick": Budget(3, 30, 6, 150, 50, 3000, 8, 1),
    # (B) with the paper's 150 samples and 10 rounds, 250 steps a round (the paper: 500)
    "full": Budget(10, 30, 10, 250, 150, 3000, 20, 1),
}


# --- (A) the location model ----------------------------------------------------------------
def location_data(rng: np.random.Generator, eps: float) -> list[np.ndarray]:
    xs = [rng.normal(0.0, 1.0, 50) for _ in range(5)]
    k = round(eps * 50)
    for x in xs[:2]:
        x[:k] = rng.normal(8.0, 1.0, k)
    return xs


def location_run(
    xs: list[np.ndarray], method: str, prior: tuple[float, float], rounds: int
) -> tuple[float, int | None, NatGaussian]:
    loss: Any = IMQScoreMatching(1.0) if "IMQ" in method else NLL()
    if method == "FedGVI-beta":
        loss = DensityPowerLoss(1.5)
    server: Any = AlphaRenyi(2.5) if method.endswith("AR") else KL()
    clients = [Client(GaussianLocation(x), loss) for x in xs]
    p = NatGaussian.from_moments([prior[0]], [prior[1]])
    res = fedgvi(p, clients, rounds, server_divergence=server, tol=1e-9)
    return abs(float(res.q.mean[0])), res.rounds_to_converge(1e-6), res.q


def exact_posterior(xs: list[np.ndarray], prior: tuple[float, float]) -> tuple[float, float]:
    x = np.concatenate(xs)
    prec = 1 / prior[1] + x.size
    return (prior[0] / prior[1] + x.sum()) / prec, 1 / prec


def run_location(b: Budget, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    bias: dict[tuple[float, str, str], list[float]] = {
        (eps, pn, m): [] for eps in CONTAMINATION for pn in PRIORS for m in LOCATION_METHODS
    }
    rounds: list[int] = []
    exact_err: list[float] = []
    client_ar: list[tuple[float, int | None]] = []
    for _ in range(b.location_reps):
        for eps in CONTAMINATION:
            xs = location_data(rng, eps)
            for pn, prior in PRIORS.items():
                for m in LOCATION_METHODS:
                    bias_m, r, _q = location_run(xs, m, prior, b.location_rounds)
                    bias[(eps, pn, m)].append(bias_m)
                    if eps == 0.2:
                        rounds.append(r if r is not None else 10**6)
                if eps == 0.2:
                    one = fedgvi(
                        NatGaussian.from_moments([prior[0]], [prior[1]]),
                        [Client(GaussianLocation(x)) for x in xs],
                        1,
                    )
                    mean, var = exact_posterior(xs, prior)
                    exact_err.append(
                        max(abs(float(one.q.mean[0]) - mean), abs(float(one.q.var[0]) - var))
                    )
        # diagnostic: the AR divergence at the clients instead of the server
        xs = location_data(rng, 0.2)
        clients = [Client(GaussianLocation(x), NLL(), AlphaRenyi(2.5)) for x in xs]
        res = fedgvi(NatGaussian.from_moments([3.0], [0.1]), clients, b.location_rounds)
        client_ar.append((float(res.q.var[0]), res.rounds_to_converge(1e-6)))
    return {
        "bias": {k: float(np.mean(v)) for k, v in bias.items()},
        "rounds": max(rounds),
        "exact_err": max(exact_err),
        "client_ar": client_ar,
    }


# --- (B) logistic regression ------------------------------------------------------------------
def breast_cancer_clients(
    seed: int, contaminated: bool
) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray, np.ndarray]:
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
    scaler = StandardScaler().fit(Xtr)
    Xtr = np.hstack([scaler.transform(Xtr), np.ones((len(Xtr), 1))])
    Xte = np.hstack([scaler.transform(Xte), np.ones((len(Xte), 1))])
    rng = np.random.default_rng(seed)
    parts = np.array_split(rng.permutation(len(Xtr)), 3)
    clients = []
    for k, idx in enumerate(parts):
        yk = ytr[idx].copy()
        if contaminated and k < 2:
            ones = np.flatnonzero(yk == 1)
            flip = rng.choice(ones, size=round(0.2 * ones.size), replace=False)
            yk[flip] = 0
        clients.append((Xtr[idx], yk))
    return clients, Xte, yte


def fedavg_logistic(
    clients: list[tuple[np.ndarray, np.ndarray]], rounds: int, steps: int, lr: float = 0.1
) -> np.ndarray:
    """FedAvg on the mean logistic loss: ``steps`` local gradient steps, data-size weights."""
    w = np.zeros(clients[0][0].shape[1])
    sizes = np.array([len(y) for _, y in clients], dtype=float)
    for _ in range(rounds):
        local = []
        for X, y in clients:
            v = w.copy()
            for _ in range(steps):
                p = 1 / (1 + np.exp(-X @ v))
                v -= lr * X.T @ (p - y) / len(y)
            local.append(v)
        w = np.average(local, axis=0, weights=sizes)
    return w


def _metrics(p1: np.ndarray, y: np.ndarray) -> dict[str, float]:
    from icml25.core.metrics import ece

    p1 = np.clip(p1, 1e-12, 1 - 1e-12)
    pred = (p1 >= 0.5).astype(int)
    conf = np.where(pred == 1, p1, 1 - p1)
    return {
        "acc": 100 * float(np.mean(pred == y)),
        "nll": float(-np.mean(np.where(y == 1, np.log(p1), np.log(1 - p1)))),
        "ece": 100 * float(ece(conf, pred == y)),
    }


def run_logistic(b: Budget, seed: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    opt = LocalOptimizer(method="adam", steps=b.lr_steps, lr=0.01, samples=b.lr_samples)
    for contaminated in (False, True):
        clients, Xte, yte = breast_cancer_clients(seed, contaminated)
        tag = "contaminated" if contaminated else "clean"
        w = fedavg_logistic(clients, b.lr_rounds, b.lr_steps // 10)
        out[f"{tag}|FedAvg"] = _metrics(1 / (1 + np.exp(-Xte @ w)), yte)
        for pname, pvar in (("tight", 0.01), ("broad", 1.0)):
            d = Xte.shape[1]
            prior = NatGaussian.from_moments(np.zeros(d), np.full(d, pvar))
            for m in LR_METHODS:
                loss: Any = GeneralisedCrossEntropy(0.5) if "GCE" in m else NLL()
                server: Any = AlphaRenyi(2.5) if m.endswith("AR") else KL()
                rho = 1 / len(clients)  # synchronous updates need damping (see the README)
                cl = [Client(LogisticRegression(X, y), loss, damping=rho) for X, y in clients]
                res = fedgvi(
                    prior, cl, b.lr_rounds, server_divergence=server, optimizer=opt, seed=seed
                )
                theta = sample(res.q, 500, seed)
                p1 = torch.sigmoid(theta @ torch.as_tensor(Xte).T).mean(0).numpy()
                out[f"{tag}|{pname}|{m}"] = _metrics(p1, yte)
    return out


def _lr_claims(r: dict[str, dict[str, float]]) -> dict[str, float]:
    fed = [m for m in LR_METHODS if m != "PVI"]

    def best_gain(tag: str, pname: str) -> float:
        return max(r[f"{tag}|{pname}|{m}"]["acc"] for m in fed) - r[f"{tag}|{pname}|PVI"]["acc"]

    priors = ("tight", "broad")
    c = "contaminated"
    return {
        "lr_accuracy_gain_contaminated": float(np.mean([best_gain(c, p) for p in priors])),
        "lr_no_loss_clean": float(np.mean([abs(best_gain("clean", p)) for p in priors])),
        "lr_nll_contaminated": float(
            np.mean([r[f"{c}|{p}|FedGVI-GCE"]["nll"] - r[f"{c}|{p}|PVI"]["nll"] for p in priors])
        ),
        "lr_ece_contaminated": float(
            np.mean([r[f"{c}|{p}|FedGVI-GCE"]["ece"] - r[f"{c}|{p}|PVI"]["ece"] for p in priors])
        ),
        "lr_beats_fedavg": float(
            np.mean(
                [
                    max(r[f"{c}|{p}|{m}"]["acc"] for m in fed) - r[f"{c}|FedAvg"]["acc"]
                    for p in priors
                ]
            )
        ),
    }


# --- (C) a Bayesian neural network ----------------------------------------------------------
BNN_HIDDEN = 50


def bnn_data(
    seed: int, n_train: int
) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray, np.ndarray, str]:
    from icml25.core.data import load_image_benchmark

    X, y, Xt, yt, name = load_image_benchmark(1000)
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(X), n_train, replace=False)
    Xs, ys = X[idx].reshape(n_train, -1).astype(np.float64), y[idx].astype(np.int64)
    flip = rng.random(n_train) < 0.2
    ys[flip] = (ys[flip] + rng.integers(1, 10, int(flip.sum()))) % 10
    te = rng.choice(len(Xt), min(2000, len(Xt)), replace=False)
    Xte = Xt[te].reshape(te.size, -1).astype(np.float64)
    return [(Xs[i::3], ys[i::3]) for i in range(3)], Xte, yt[te], name


def run_bnn(b: Budget, seed: int) -> dict[str, Any]:
    clients, Xte, yte, name = bnn_data(seed, b.bnn_train)
    models = [MLPClassifier(X, y, 10, (BNN_HIDDEN,)) for X, y in clients]
    d, n_in = models[0].dim, Xte.shape[1]
    rng = np.random.default_rng(seed + 1)
    init_mean = np.concatenate(
        [
            rng.normal(0, (2 / n_in) ** 0.5, n_in * BNN_HIDDEN),
            np.zeros(BNN_HIDDEN),
            rng.normal(0, (2 / BNN_HIDDEN) ** 0.5, BNN_HIDDEN * 10),
            np.zeros(10),
        ]
    )
    init = NatGaussian.from_moments(init_mean, np.full(d, 1e-3))
    prior = NatGaussian.from_moments(np.zeros(d), np.ones(d))
    opt = LocalOptimizer(method="adam", steps=100, lr=1e-3, samples=5, batch_size=128)
    out: dict[str, Any] = {"data": name}
    for m, loss in (("PVI", NLL()), ("FedGVI-GCE", GeneralisedCrossEntropy(0.8))):
        cl = [Client(model, loss, damping=1 / len(models)) for model in models]
        res = fedgvi(prior, cl, b.bnn_rounds, optimizer=opt, init=init, seed=seed)
        p = models[0].predict_proba(sample(res.q, 50, seed), Xte)
        out[m] = 100 * float(np.mean(p.argmax(1) == yte))
    w = fedavg_mlp(models, init_mean, b.bnn_rounds, steps=100, seed=seed)
    p = models[0].predict_proba(torch.as_tensor(w)[None], Xte)
    out["FedAvg"] = 100 * float(np.mean(p.argmax(1) == yte))
    return out


def fedavg_mlp(
    models: list[MLPClassifier], w0: np.ndarray, rounds: int, steps: int, seed: int
) -> np.ndarray:
    """FedAvg on the same MLP: Adam (lr 1e-3) on minibatches of 128, equal client weights."""
    g = torch.Generator().manual_seed(seed)
    w = torch.as_tensor(w0).clone()
    for _ in range(rounds):
        local = []
        for model in models:
            theta = w.clone()[None].requires_grad_(True)
            opt = torch.optim.Adam([theta], lr=1e-3)
            for _ in range(steps):
                idx = torch.randperm(model.n, generator=g)[:128]
                opt.zero_grad()
                loss = -model.take(idx).log_lik(theta).mean()
                loss.backward()
                opt.step()
            local.append(theta.detach()[0])
        w = torch.stack(local).mean(0)
    return w.numpy()


def reproduce(ctx: RunContext) -> dict[str, list[float]]:
    b = BUDGETS[ctx.budget]
    out: dict[str, list[float]] = {c.id: [] for c in CLAIMS}
    loc: list[dict[str, Any]] = []
    lr: list[dict[str, dict[str, float]]] = []
    bnn: list[dict[str, Any]] = []
    for seed in ctx.seeds:
        ctx.progress(
            f"location model seed {seed}: {b.location_reps} data sets x "
            f"{len(CONTAMINATION)} contaminations x {len(PRIORS)} priors x "
            f"{len(LOCATION_METHODS)} methods"
        )
        s = run_location(b, seed)
        loc.append(s)
        bias = s["bias"]
        pvi_b, pvi_w = bias[(0.2, "broad N(0, 10)", "PVI")], bias[(0.0, "wrong N(3, 0.1)", "PVI")]
        out["pvi_exact"].append(s["exact_err"])
        out["imq_cuts_outlier_bias"].append(bias[(0.2, "broad N(0, 10)", "FedGVI-IMQ")] / pvi_b)
        out["beta_cuts_outlier_bias"].append(bias[(0.2, "broad N(0, 10)", "FedGVI-beta")] / pvi_b)
        out["ar_cuts_prior_bias"].append(bias[(0.0, "wrong N(3, 0.1)", "FedGVI-AR")] / pvi_w)
        out["both_misspecified"].append(
            bias[(0.2, "wrong N(3, 0.1)", "FedGVI-IMQ+AR")] / bias[(0.2, "wrong N(3, 0.1)", "PVI")]
        )
        out["few_rounds"].append(float(s["rounds"]))
        ctx.progress(f"logistic regression seed {seed}: breast cancer, 3 clients")
        r = run_logistic(b, seed)
        lr.append(r)
        for k, v in _lr_claims(r).items():
            out[k].append(v)
        if len(bnn) < b.bnn_seeds:
            ctx.progress(f"BNN seed {seed}: 3 clients, 20% flipped labels, {b.bnn_rounds} rounds")
            c = run_bnn(b, seed)
            bnn.append(c)
            out["bnn_gce_gain_noisy"].append(c["FedGVI-GCE"] - c["PVI"])
            out["bnn_beats_fedavg_noisy"].append(max(c["FedGVI-GCE"], c["PVI"]) - c["FedAvg"])
    _report(ctx, loc, lr, bnn)
    return out


def _report(
    ctx: RunContext,
    loc: list[dict[str, Any]],
    lr: list[dict[str, dict[str, float]]],
    bnn: list[dict[str, Any]],
) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=False)
    for ax, pn in zip(axes, PRIORS, strict=True):
        for m in LOCATION_METHODS:
            ys = [np.mean([s["bias"][(eps, pn, m)] for s in loc]) for eps in CONTAMINATION]
            ax.plot(CONTAMINATION, ys, marker="o", label=m)
        ax.set_xlabel("outlier fraction on 2 of 5 clients")
        ax.set_ylabel("|posterior mean - theta*|")
        ax.set_title(f"prior {pn}")
        ax.set_yscale("log")
    axes[0].legend(fontsize=8)
    fig.suptitle("Posterior bias vs contamination (1-D Gaussian location model)")
    ctx.save_figure(fig, "location_bias")

    lines = ["Location model, mean bias |E_q[theta]| over data sets and seeds:", ""]
    lines.append("| eps | prior | " + " | ".join(LOCATION_METHODS) + " |")
    lines.append("|---|---|" + "---|" * len(LOCATION_METHODS))
    for eps in CONTAMINATION:
        for pn in PRIORS:
            vals = [np.mean([s["bias"][(eps, pn, m)] for s in loc]) for m in LOCATION_METHODS]
            lines.append(f"| {eps} | {pn} | " + " | ".join(f"{v:.4f}" for v in vals) + " |")
    ctx.note("\n".join(lines))
    ar = [v for s in loc for v in s["client_ar"]]
    ctx.note(
        "Diagnostic (no claim): NLL with the AR divergence at the *clients* (to the cavity) "
        f"instead of the server, prior N(3, 0.1), eps = 0.2: final variance "
        f"{np.mean([a for a, _ in ar]):.2e} (PVI's exact one: about 3.8e-3); converged "
        f"(mean moves <= 1e-6) within the round limit in {sum(r is not None for _, r in ar)} "
        f"of {len(ar)} runs."
    )
    keys = sorted({k for r in lr for k in r}, key=lambda k: (k.split("|")[0], k))
    rows = ["Logistic regression (breast cancer, test split), mean over seeds:", ""]
    rows.append("| setting | accuracy % | NLL | ECE % |")
    rows.append("|---|---|---|---|")
    for k in keys:
        acc, nll, e = (np.mean([r[k][f] for r in lr]) for f in ("acc", "nll", "ece"))
        rows.append(f"| {k.replace('|', ' / ')} | {acc:.2f} | {nll:.4f} | {e:.2f} |")
    ctx.note("\n".join(rows))

    fig, ax = plt.subplots(figsize=(7, 3.6))
    for tag, style in (("clean", "o"), ("contaminated", "s")):
        names = [f"{p}|{m}" for p in ("tight", "broad") for m in LR_METHODS]
        accs = [np.mean([r[f"{tag}|{n}"]["acc"] for r in lr]) for n in names]
        ax.plot(range(len(names)), accs, style, label=tag)
        ax.axhline(float(np.mean([r[f"{tag}|FedAvg"]["acc"] for r in lr])), ls=":", lw=1)
        ax.set_xticks(range(len(names)), [n.replace("|", "\n") for n in names], fontsize=7)
    if bnn:
        summary = ", ".join(
            f"{m} {np.mean([c[m] for c in bnn]):.2f}" for m in ("PVI", "FedGVI-GCE", "FedAvg")
        )
        ctx.note(
            f"BNN ({bnn[0]['data']}, 20% flipped labels, {len(bnn)} seed(s)): test accuracy % "
            f"{summary}."
        )
    ax.set_ylabel("test accuracy %")
    ax.set_title("Bayesian logistic regression, 3 clients (dotted: FedAvg)")
    ax.legend()
    ctx.save_figure(fig, "logistic_accuracy")
