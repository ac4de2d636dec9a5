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
(569 x 30, standardised, plus an intercept). A stratified 50% (285 points) is the clean test
split; the rest is split IID over 3 clients. "Contaminated": on every client, 30% of the
class-1 labels are flipped to 0 (asymmetric; set by a pilot on seed 100 so that PVI loses
>= 3 points, see the README). Priors: tight ``N(0, 0.01 I)`` and broad ``N(0, I)``.
Methods: PVI (NLL + KL), FedGVI-GCE (generalised cross-entropy, ``b = 0.5``), FedGVI-AR
(NLL, AR server), GCE+AR; all mean-field, Adam on reparameterised Monte Carlo samples,
damping ``1/M``. FedAvg (point-estimate logistic regression, local gradient steps) is the
frequentist baseline. Metrics on the test split: accuracy, NLL, ECE (15 bins, from
:func:`icml25.core.metrics.ece`), with the predictive averaged over 500 draws.

**(C) A Bayesian neural network on images with flipped labels** (issue 37: at a scale where
the data, not the prior, decide): Fashion-MNIST (MNIST-5k without it) average-pooled to 7x7,
3 IID clients of 3,000 images (full budget), 20% of the training labels flipped to a random
other class on every client, the whole clean test split (10,000). A 49-16-10 ReLU MLP (970
weights), mean-field Gaussian posterior, prior ``N(0, I)``, initial variance 1e-3 around
He-initialised means. Local problems as the official code: Adam (rate from the pilot), 10
Monte Carlo samples, minibatches of 256, epochs until the epoch's objective has not improved
for ``patience`` epochs (the best epoch's ``q`` is kept); damping ``1/M``; the predictive
averages 200 draws. Arms: PVI (NLL + KL); FedGVI with GCE (``delta = 0.5``) and
alpha-Renyi(2.5) at the clients, as the official Fashion-MNIST runs; the same with
``delta = 1.0`` (the official runs' other value; its own claim); the ``delta = 0.5`` arm with
the GCE term *summed* over the Monte Carlo samples (the official code's convention) as a
labelled ablation; FedAvg on the same MLP (same initial means, rate, batches; fixed local
epochs).

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
# (B)'s contamination, set by the pilot on seed 100 (README): the first of (20%, 2 clients),
# (30%, 3), (40%, 3), (50%, 3) flipped class-1 labels that cost PVI >= 3 points
LR_FLIP_RATE, LR_FLIPPED_CLIENTS = 0.3, 3
LR_TEST_SIZE = 0.5  # 285 test points (was 0.3: 171)

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
        where="BNN experiments on MNIST / Fashion-MNIST with 10-20% flipped labels; the "
        "official runs' GCE with alpha-Renyi(2.5) at the clients",
        metric="test accuracy of FedGVI (GCE delta 0.5 + client AR 2.5) - PVI's, points, "
        "20% flipped labels",
        paper_value="> 0",
        rule=Rule(">=", 0.0, partial=-1.0),
    ),
    Claim(
        id="bnn_gce1_gain_noisy",
        statement="The same with the official runs' other GCE parameter, delta = 1.0: with "
        "flipped labels, FedGVI's BNN is more accurate than PVI's.",
        where="BNN experiments; the official Fashion-MNIST runs use GCE delta in {1.0, 0.5} "
        "with alpha-Renyi(2.5) at the clients (added in issue 37 before the second full run)",
        metric="test accuracy of FedGVI (GCE delta 1.0 + client AR 2.5) - PVI's, points, "
        "20% flipped labels",
        paper_value="> 0",
        rule=Rule(">=", 0.0, partial=-1.0),
    ),
    Claim(
        id="bnn_beats_fedavg_noisy",
        statement="With flipped labels, FedGVI's BNN is more accurate than FedAvg's network.",
        where="BNN experiments (FedAvg baseline)",
        metric="test accuracy of the better of FedGVI (GCE + AR) and PVI - FedAvg's, points",
        paper_value="> 0",
        rule=Rule(">=", 0.0, partial=-1.0),
    ),
    Claim(
        id="lr_contamination_bites",
        statement="Control: the label contamination costs PVI at least 3 accuracy points, so "
        "that a 1.5-point recovery is measurable (issue 37).",
        where="added check",
        metric="PVI's test accuracy clean - contaminated, points, mean over priors",
        paper_value=None,
        rule=Rule(">=", 3.0, partial=1.5),
        kind="control",
    ),
    Claim(
        id="bnn_data_dominated",
        statement="Control: in the BNN the data term, not the prior, decides the posterior: "
        "FedGVI lowers the data term by more than the KL to the prior it pays (issue 37).",
        where="added check",
        metric="(sum_i E[GCE] at the initialisation - at q) / KL(q || prior), FedGVI GCE + AR",
        paper_value=None,
        rule=Rule(">=", 1.0, partial=0.5),
        kind="control",
    ),
    Claim(
        id="bnn_local_converged",
        statement="Control: the BNN's local problems run to convergence (early stopping, as "
        "the official code), not to an epoch cap.",
        where="added check",
        metric="share of local problems ended by early stopping, mean over the three arms "
        "PVI, GCE (0.5) + AR and its sum-S ablation",
        paper_value=None,
        rule=Rule(">=", 0.9, partial=0.5),
        kind="control",
    ),
)


@dataclass(frozen=True)
class Budget:
    seeds: int  # how many of the run's seeds are used (the first ones)
    location_reps: int  # data sets per seed
    location_eps: tuple[float, ...]  # contaminations run in (A) (0 and 0.2 decide claims)
    location_rounds: int
    lr_rounds: int
    lr_steps: int
    lr_samples: int
    bnn_train: int  # training images per client
    bnn_rounds: int
    bnn_epochs: int  # most epochs of a local problem (early stopping ends it sooner)
    bnn_patience: int
    bnn_fedavg_epochs: int  # FedAvg's local epochs a round
    bnn_seeds: int  # how many of the used seeds also run (C)


BUDGETS = {
    "tiny": Budget(1, 1, (0.0, 0.2), 5, 2, 20, 10, 100, 1, 2, 1, 1, 1),
    # quick: one seed, the claims' contaminations only, (B) and (C) cut for time (README)
    "quick": Budget(1, 1, (0.0, 0.2), 30, 4, 60, 20, 2000, 3, 8, 2, 2, 1),
    # full: three seeds everywhere, cut for time after a first start at (3 data sets, 8 x 150 x
    # 50 in (B), 5,000 images a client, 6 rounds, patience 10, cap 25) ran at ~11% of a core
    # on the shared machine (README): (C) with 3,000 images a client (9,000 against 970
    # weights), 4 rounds. Local problems (second full run, decided before its claims ran):
    # the official patience of 10 and a cap of 300 epochs, by the rule in
    # benchmarks/fedgvi_bnn_convergence.py (the first round's problems ran to the pilot's
    # cap of 300 on seed 100; projected ~700 s of CPU on one core). First full run: 5 and 15.
    "full": Budget(3, 1, CONTAMINATION, 30, 5, 80, 20, 3000, 4, 300, 10, 3, 3),
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
        (eps, pn, m): [] for eps in b.location_eps for pn in PRIORS for m in LOCATION_METHODS
    }
    rounds: list[int] = []
    exact_err: list[float] = []
    client_ar: list[tuple[float, int | None]] = []
    for _ in range(b.location_reps):
        for eps in b.location_eps:
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
    seed: int,
    contaminated: bool,
    rate: float = 0.2,
    flipped_clients: int = 2,
    test_size: float = 0.3,
) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray, np.ndarray]:
    """3 IID clients; contaminated: ``rate`` of the class-1 labels flipped to 0 on the first
    ``flipped_clients`` clients."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_size, stratify=y, random_state=seed)
    scaler = StandardScaler().fit(Xtr)
    Xtr = np.hstack([scaler.transform(Xtr), np.ones((len(Xtr), 1))])
    Xte = np.hstack([scaler.transform(Xte), np.ones((len(Xte), 1))])
    rng = np.random.default_rng(seed)
    parts = np.array_split(rng.permutation(len(Xtr)), 3)
    clients = []
    for k, idx in enumerate(parts):
        yk = ytr[idx].copy()
        if contaminated and k < flipped_clients:
            ones = np.flatnonzero(yk == 1)
            flip = rng.choice(ones, size=round(rate * ones.size), replace=False)
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
        clients, Xte, yte = breast_cancer_clients(
            seed, contaminated, LR_FLIP_RATE, LR_FLIPPED_CLIENTS, LR_TEST_SIZE
        )
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
        "lr_contamination_bites": float(
            np.mean([r[f"clean|{p}|PVI"]["acc"] - r[f"{c}|{p}|PVI"]["acc"] for p in priors])
        ),
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
BNN_POOL = 4  # 28x28 images average-pooled to 7x7 (49 inputs)
BNN_HIDDEN = 16  # 49-16-10: 970 weights, so that the data term dominates the prior KL
BNN_FLIP = 0.2  # share of the training labels flipped to a random other class (all clients)
BNN_GCE = 0.5  # the official runs' GCE delta in {1.0, 0.5}; 0.5 fixed before the first run
BNN_GCE1 = 1.0  # the official runs' other delta, added (its own claim) before the second full run
BNN_LR = 1e-3  # Adam's rate (official 5e-4 with up to 2,500 epochs); set by the pilot (README)
# arm -> (GCE delta or None for the NLL, Monte Carlo convention)
BNN_SPEC: dict[str, tuple[float | None, str]] = {
    "PVI": (None, "mean"),
    "FedGVI-GCE+AR": (BNN_GCE, "mean"),
    "FedGVI-GCE+AR sum-S": (BNN_GCE, "sum"),
    "FedGVI-GCE(1.0)+AR": (BNN_GCE1, "mean"),
}
BNN_ARMS = tuple(BNN_SPEC)
# the arms that bnn_local_converged averages over (fixed when the control was written)
BNN_CONTROL_ARMS = ("PVI", "FedGVI-GCE+AR", "FedGVI-GCE+AR sum-S")


def bnn_data(
    seed: int, per_client: int
) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray, np.ndarray, str]:
    """3 IID clients of ``per_client`` pooled images each, ``BNN_FLIP`` of their labels
    flipped; the whole clean test split (Fashion-MNIST: 10,000; MNIST-5k: 1,000)."""
    from icml25.core.data import load_image_benchmark

    X, y, Xt, yt, name = load_image_benchmark(1000)
    n = min(3 * per_client, len(X))
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(X), n, replace=False)
    Xs, ys = _pool(X[idx]), y[idx].astype(np.int64)
    flip = rng.random(n) < BNN_FLIP
    ys[flip] = (ys[flip] + rng.integers(1, 10, int(flip.sum()))) % 10
    return [(Xs[i::3], ys[i::3]) for i in range(3)], _pool(Xt), yt.astype(np.int64), name


def _pool(X: np.ndarray) -> np.ndarray:
    k = BNN_POOL
    side = 28 // k
    return X.reshape(-1, side, k, side, k).mean((2, 4)).reshape(len(X), -1).astype(np.float64)


def _bnn_accuracy(model: MLPClassifier, q: NatGaussian, X: np.ndarray, y: np.ndarray) -> float:
    """Test accuracy of the predictive averaged over 200 draws (the official count)."""
    theta = sample(q, 200, 7)
    p = sum(model.predict_proba(t, X) for t in torch.split(theta, 25)) / 8
    return 100 * float(np.mean(np.asarray(p).argmax(1) == y))


def _data_term(models: list[MLPClassifier], loss: Any, q: NatGaussian) -> float:
    """``sum_i E_q[loss]`` over every client's training points (50 draws)."""
    theta = sample(q, 50, 11)
    with torch.no_grad():
        return float(sum(loss.per_point(m, theta).sum(1).mean(0) for m in models))


def run_bnn(b: Budget, seed: int, rounds: int | None = None) -> dict[str, Any]:
    """(C) on one seed; ``rounds`` overrides the budget's (the cap pilot runs one round)."""
    from icml25.fedgvi.gaussian import kl as kl_div

    rounds = b.bnn_rounds if rounds is None else rounds

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
    out: dict[str, Any] = {"data": name, "n": sum(m.n for m in models), "d": d}
    gce = GeneralisedCrossEntropy(BNN_GCE)
    for arm in BNN_ARMS:
        delta, mc = BNN_SPEC[arm]
        opt = LocalOptimizer(
            method="adam",
            steps=b.bnn_epochs,
            lr=BNN_LR,
            samples=10,
            batch_size=256,
            patience=b.bnn_patience,
            mc=mc,
        )
        if delta is None:
            cl = [Client(m, NLL(), damping=1 / 3) for m in models]
        else:
            loss = GeneralisedCrossEntropy(delta)
            cl = [Client(m, loss, AlphaRenyi(2.5), damping=1 / 3) for m in models]
        res = fedgvi(prior, cl, rounds, optimizer=opt, init=init, seed=seed)
        out[arm] = _bnn_accuracy(models[0], res.q, Xte, yte)
        out[f"{arm}|stopped"] = res.events["early-stopped"] / max(res.events["solves"], 1)
        out[f"{arm}|epochs"] = res.events["epochs"] / max(res.events["solves"], 1)
        if arm == "FedGVI-GCE+AR":
            m_q, v_q = (torch.as_tensor(a) for a in res.q.moments())
            m_p, v_p = (torch.as_tensor(a) for a in prior.moments())
            m_0, v_0 = (torch.as_tensor(a) for a in init.moments())
            out["kl_q"] = float(kl_div(m_q, v_q, m_p, v_p))
            out["kl_init"] = float(kl_div(m_0, v_0, m_p, v_p))
            out["data_init"] = _data_term(models, gce, init)
            out["data_q"] = _data_term(models, gce, res.q)
    w = fedavg_mlp(models, init_mean, rounds, b.bnn_fedavg_epochs, seed)
    p = models[0].predict_proba(torch.as_tensor(w)[None], Xte)
    out["FedAvg"] = 100 * float(np.mean(p.argmax(1) == yte))
    return out


def fedavg_mlp(
    models: list[MLPClassifier], w0: np.ndarray, rounds: int, epochs: int, seed: int
) -> np.ndarray:
    """FedAvg on the same MLP: Adam (the BNN's rate) over ``epochs`` shuffled epochs in
    minibatches of 256 a round, equal client weights (the clients are the same size)."""
    g = torch.Generator().manual_seed(seed)
    w = torch.as_tensor(w0).clone()
    for _ in range(rounds):
        local = []
        for model in models:
            theta = w.clone()[None].requires_grad_(True)
            opt = torch.optim.Adam([theta], lr=BNN_LR)
            for _ in range(epochs):
                for idx in torch.split(torch.randperm(model.n, generator=g), 256):
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
    for seed in ctx.seeds[: b.seeds]:
        ctx.progress(
            f"location model seed {seed}: {b.location_reps} data sets x "
            f"{len(b.location_eps)} contaminations x {len(PRIORS)} priors x "
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
            ctx.progress(
                f"BNN seed {seed}: 3 clients x {b.bnn_train} images, {BNN_FLIP:.0%} flipped "
                f"labels, {b.bnn_rounds} rounds"
            )
            c = run_bnn(b, seed)
            bnn.append(c)
            out["bnn_gce_gain_noisy"].append(c["FedGVI-GCE+AR"] - c["PVI"])
            out["bnn_beats_fedavg_noisy"].append(max(c["FedGVI-GCE+AR"], c["PVI"]) - c["FedAvg"])
            out["bnn_data_dominated"].append((c["data_init"] - c["data_q"]) / c["kl_q"])
            out["bnn_gce1_gain_noisy"].append(c["FedGVI-GCE(1.0)+AR"] - c["PVI"])
            out["bnn_local_converged"].append(
                float(np.mean([c[f"{a}|stopped"] for a in BNN_CONTROL_ARMS]))
            )
    _report(ctx, loc, lr, bnn)
    return out


def ms_diff(rows: list[dict[str, Any]], a: str, b: str) -> str:
    v = [r[a] - r[b] for r in rows]
    se = np.std(v, ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")
    return f"{np.mean(v):+.2f} ± {se:.2f}"


def _report(
    ctx: RunContext,
    loc: list[dict[str, Any]],
    lr: list[dict[str, dict[str, float]]],
    bnn: list[dict[str, Any]],
) -> None:
    import matplotlib.pyplot as plt

    eps_run = sorted({k[0] for k in loc[0]["bias"]})
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=False)
    for ax, pn in zip(axes, PRIORS, strict=True):
        for m in LOCATION_METHODS:
            ys = [np.mean([s["bias"][(eps, pn, m)] for s in loc]) for eps in eps_run]
            ax.plot(eps_run, ys, marker="o", label=m)
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
    for eps in eps_run:
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
        arms = (*BNN_ARMS, "FedAvg")

        def ms(key: str) -> str:
            v = [c[key] for c in bnn]
            se = np.std(v, ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")
            return f"{np.mean(v):.2f} ± {se:.2f}"

        c0 = bnn[0]
        rows = [
            f"BNN ({c0['data']}; {c0['n']} training images over 3 clients, "
            f"{BNN_FLIP:.0%} flipped labels; 49-{BNN_HIDDEN}-10 MLP, {c0['d']} weights; "
            f"{len(bnn)} seed(s); mean ± SE over seeds):",
            "",
            "| arm | test accuracy % | local epochs / problem | share early-stopped |",
            "|---|---|---|---|",
        ]
        for a in arms:
            extra = (
                " | - | -" if a == "FedAvg" else f" | {ms(a + '|epochs')} | {ms(a + '|stopped')}"
            )
            rows.append(f"| {a} | {ms(a)}{extra} |")
        rows += [
            "",
            "Ablation (no claim): 'sum-S' sums the GCE term over the 10 Monte Carlo samples as "
            "the official code does, weighting the data 10x against the divergence; "
            "sum-S - mean-S accuracy: "
            + ms_diff(bnn, "FedGVI-GCE+AR sum-S", "FedGVI-GCE+AR")
            + " points.",
            f"Data term against prior (FedGVI GCE + AR): sum_i E[GCE] {ms('data_init')} at the "
            f"initialisation, {ms('data_q')} at q; KL(q || prior) {ms('kl_q')} "
            f"(KL at the initialisation: {ms('kl_init')}).",
        ]
        ctx.note("\n".join(rows))
    share = [
        np.mean(
            [
                (
                    max(r[f"contaminated|{p}|{m}"]["acc"] for m in LR_METHODS[1:])
                    - r[f"contaminated|{p}|PVI"]["acc"]
                )
                / max(r[f"clean|{p}|PVI"]["acc"] - r[f"contaminated|{p}|PVI"]["acc"], 1e-9)
                for p in ("tight", "broad")
            ]
        )
        for r in lr
    ]
    ctx.note(
        "Logistic regression (no claim): share of PVI's contamination loss that the best "
        f"FedGVI variant recovers, mean over priors and seeds: {np.mean(share):.2f}."
    )
    ax.set_ylabel("test accuracy %")
    ax.set_title("Bayesian logistic regression, 3 clients (dotted: FedAvg)")
    ax.legend()
    ctx.save_figure(fig, "logistic_accuracy")
