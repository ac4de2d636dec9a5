"""The claims of the personalization trade-off (FedCLUP): (A) the synthetic linear-regression
claims at the exact PFL optimum, (B) the class-heterogeneity sweep on images, and the controls
this reproduction adds, each with its rule, null arm and gate. Claims and rules were fixed
before the first run; the settings are in :mod:`icml25.pfl_tradeoff.reproduce`.
"""

from __future__ import annotations

from icml25.core.claims import Claim, Gate, Null, Rule

RIDGE_NULL = (
    "no collaboration: the same lambda grid pulling each client toward the origin instead of "
    "the global model (ridge, w_i = argmin L_i + lambda/2 ||w_i||^2)"
)
NO_PULL_NULL = (
    "no pull: every FedCLUP lambda arm trained as local training (lambda = 0; the arms are "
    "paired, so its accuracy is local training's), leaving only the two ends to move"
)
NO_PULL_LAMBDA_NULL = (
    "no pull: every FedCLUP lambda arm trained as local training (lambda = 0; the arms are "
    "paired, so its accuracy is local training's): the lambda arms tie at every c, so the best "
    "lambda cannot move (0 by the statistic; only the ends, left out, could move)"
)
ENDS_GATE = (
    "the sweep spans both regimes: local beats FedAvg at the smallest c and FedAvg beats local "
    "at the largest (the control image_ends_cross, logistic regression, mean over seeds)"
)
CNN_GATE = (
    "the CNN is trained: it beats logistic regression under local training (the control "
    "cnn_beats_logreg_locally, mean over seeds)"
)

CLAIMS = (
    Claim(
        id="interior_lambda",
        statement="An intermediate personalization degree beats both purely local training "
        "and FedAvg in statistical accuracy.",
        where="Main theorem (minimax rate d/N + min(R^2, d/n)); synthetic experiments",
        metric="min over lambda of the local error / min(error at lambda = 0, at 1000), R = 0.5",
        paper_value="< 1 (brief's pass: <= 0.6)",
        rule=Rule("<=", 0.6, partial=0.9),
        null=Null(arm=RIDGE_NULL),
    ),
    Claim(
        id="best_lambda_decreases_with_R",
        statement="The best personalization degree decreases as client heterogeneity grows.",
        where="Theory (lambda ~ 1/(n R^2)); synthetic experiments over R",
        metric="fraction of adjacent R pairs (0.1, 0.5, 2) whose best lambda does not increase",
        paper_value="1",
        rule=Rule(">=", 1.0, partial=0.5),
        null=Null(arm=RIDGE_NULL + "; its best lambda over the same R values"),
    ),
    Claim(
        id="rounds_grow_with_lambda",
        statement="Communication cost does not fall as lambda grows (stronger personalization "
        "needs fewer rounds).",
        where="Theory (communication complexity); synthetic experiments",
        metric="fraction of adjacent lambda pairs (0.01 ... 100) whose rounds to 1e-4 do not "
        "decrease, R = 0.5",
        paper_value="1",
        rule=Rule(">=", 1.0, partial=0.75),
        null=Null(
            exempt="a property of FedCLUP's own iteration (the paper's communication bound, "
            "monotone in lambda), counted on deterministic runs to the exact optimum at each "
            "lambda; without lambda there is no count to compare. The runner is pinned to the "
            "exact optimum by tests instead (tests/pfl_tradeoff)"
        ),
    ),
    Claim(
        id="local_error_formula",
        statement="Local training's error matches sigma^2 d / (n - d - 1).",
        where="Brief (OLS with Gaussian design)",
        metric="|local error / (sigma^2 d / (n - d - 1)) - 1|, pooled over R",
        paper_value="0",
        rule=Rule("<=", 0.1, partial=0.2),
        null=Null(
            arm="the pooled end (lambda = 1000, close to FedAvg's single model) in place of "
            "local training (the metric must tell another estimator from OLS)"
        ),
    ),
    Claim(
        id="adaptive_lambda",
        statement="The code's adaptive rule picks a lambda close to the best one.",
        where="Official code (lambda = 5/(n R^2) or 5/(sqrt(n) R))",
        metric="error at the adaptive lambda (R from the true optima) / best grid error, "
        "mean over R",
        paper_value="~1",
        rule=Rule("<=", 1.25, partial=1.6),
        null=Null(
            arm="lambda not adapted: the rule's lambda at the middle heterogeneity (R = 0.5) "
            "used for every R"
        ),
    ),
    Claim(
        id="image_best_lambda_moves_with_c",
        statement="As clients hold more classes (less heterogeneity), the best personalization "
        "degree moves from local training toward FedAvg (logistic regression).",
        where="MNIST non-IID experiments, accuracy against classes per client c = 2 ... 10",
        metric="Spearman correlation between c (c = {{lr_classes}}) and the position of the "
        "best of FedCLUP's fixed lambdas on 1e-4 < ... < 2.5 (local training and FedAvg left "
        "out, so the ends' crossing alone cannot score; ties: mean position), per seed",
        paper_value="> 0 (local best at c = 2, FedAvg-like at c = 10)",
        rule=Rule(">=", 0.7, partial=0.4),
        null=Null(arm=NO_PULL_NULL),
        gate=Gate(ENDS_GATE, Rule(">=", 0.0)),
    ),
    Claim(
        id="image_cnn_best_lambda_moves_with_c",
        statement="The same holds for a non-convex CNN: as clients hold more classes, the best "
        "FedCLUP personalization degree lambda grows (moves toward FedAvg).",
        where="MNIST CNN experiments (the non-convex check; the paper compares FedCLUP's "
        "lambda values across heterogeneity levels)",
        metric="Spearman correlation between c (c = {{cnn_classes}}) and the position of the "
        "best of FedCLUP's fixed lambdas on 1e-2 < 0.1 < 0.5 (local training and FedAvg left "
        "out, so the ends' crossing alone cannot score; ties: mean position), per seed",
        paper_value="> 0",
        rule=Rule(">=", 0.7, partial=0.4),
        null=Null(arm=NO_PULL_LAMBDA_NULL),
        gate=Gate(CNN_GATE, Rule(">=", 0.0)),
    ),
    Claim(
        id="image_logreg_interior",
        statement="On real non-IID data an intermediate lambda beats local training and "
        "FedAvg (logistic regression).",
        where="MNIST non-IID experiments",
        metric="mean over c (c = {{lr_classes}}) of (best fixed FedCLUP lambda's personalized "
        "accuracy - max(local, FedAvg)), points. Lambda = 1e-4 ties local training (0 where "
        "local wins), so only a visible gain (>= 0.5) passes; the best of the grid is biased "
        "up by selection",
        paper_value="> 0",
        rule=Rule(">=", 0.5, partial=0.0),
        null=Null(arm=NO_PULL_NULL),
        gate=Gate(ENDS_GATE, Rule(">=", 0.0)),
    ),
    Claim(
        id="image_cnn_interior",
        statement="The trade-off also holds for a non-convex CNN.",
        where="MNIST CNN experiments (the non-convex check)",
        metric="as for logistic regression, on the CNN's c values (c = {{cnn_classes}}) and "
        "lambda grid, points",
        paper_value="> 0",
        rule=Rule(">=", 0.5, partial=0.0),
        null=Null(arm=NO_PULL_NULL),
        gate=Gate(CNN_GATE, Rule(">=", 0.0)),
    ),
    Claim(
        id="image_ends_cross",
        statement="Local training beats FedAvg at c = {{c_min}} and FedAvg beats local training "
        "at c = {{c_max}} (logistic regression): the sweep spans both regimes.",
        where="Check added here",
        metric="min(local - FedAvg at c = {{c_min}}, FedAvg - local at c = {{c_max}}), points",
        paper_value="> 0",
        rule=Rule(">=", 0.0),
        kind="control",
    ),
    Claim(
        id="cnn_beats_logreg_locally",
        statement="The CNN is trained well enough to beat logistic regression under local "
        "training.",
        where="Check added here (the issue's condition for the non-convex check)",
        metric="mean over the CNN's c values (c = {{cnn_classes}}) of local CNN - local "
        "logistic regression accuracy, points (same clients and splits)",
        paper_value="> 0",
        rule=Rule(">=", 0.0, partial=-1.0),
        kind="control",
    ),
    Claim(
        id="image_adaptive_lambda",
        statement="The code's adaptive lambda is close to the best arm on images.",
        where="Check added here (official adaptive rule, R estimated halfway through training)",
        metric="mean over c (c = {{lr_classes}}) of adaptive arm's accuracy - best arm's "
        "accuracy (logistic regression), points",
        paper_value="~0",
        rule=Rule(">=", -1.0, partial=-3.0),
        kind="control",
    ),
)
