"""FedGVI's claims: the paper's robustness claims in three settings, each with its rule, null
arm and gate, and the controls this reproduction adds. The rules come from the brief and were
fixed before the first run; issue 66 removed the partial bands that admitted no effect (or a
worse one) from the directional claims, citing the paper's words in their metrics (README,
"Differs from the paper"); the settings they are measured in are in
:mod:`icml25.fedgvi.reproduce` (the protocol) and the ``experiments_*`` modules.

- (A) the contaminated 1-D Gaussian location model: ``pvi_exact``, ``imq_cuts_outlier_bias``,
  ``beta_cuts_outlier_bias``, ``ar_cuts_prior_bias``, ``both_misspecified``, ``few_rounds``
  and the control ``robust_losses_learn``;
- (B) Bayesian logistic regression on the breast-cancer data: the ``lr_*`` claims and the
  control ``lr_contamination_bites``;
- (C) a Bayesian neural network on images with flipped labels: the ``bnn_*`` claims and the
  controls ``bnn_data_dominated`` and ``bnn_local_converged``.
"""

from __future__ import annotations

import numpy as np

from icml25.core.claims import Claim, Gate, Null, Rule

BNN_NULL_ARM = (
    "the robust loss and divergence removed (NLL + KL = PVI): a PVI replicate with other Monte "
    "Carlo draws and minibatch orders, - PVI"
)
LR_NULL_ARM = (
    "the robust loss removed (NLL + KL = PVI): a PVI replicate with other Monte Carlo draws, - PVI"
)
LR_NULL_ARMS = (
    "three PVI replicates with other Monte Carlo draws (the robust loss and divergence removed: "
    "NLL + KL = PVI)"
)
BNN_GATE = (
    "the data decide the BNN's posterior: (data term at the initialisation - at q) / "
    "KL(q || prior) >= 1, FedGVI GCE + AR (the rule of the control bnn_data_dominated)"
)

SD_POST = 1 / np.sqrt(250)
"""A posterior SD of the location model with 250 points (sigma2 = 1): the gates' unit."""

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
        null=Null(arm="one round with damping 1/M (each factor moves 1/M of the way)"),
    ),
    Claim(
        id="imq_cuts_outlier_bias",
        statement="A robust loss (IMQ-weighted score matching, conjugate) removes most of the "
        "bias that outliers give PVI.",
        where="Synthetic location experiments; brief: robust losses at most half PVI's bias",
        metric="bias(FedGVI-IMQ) / bias(PVI), eps = 0.2, broad prior",
        paper_value="<= 0.5",
        rule=Rule("<=", 0.5, partial=0.8),
        null=Null(arm="the IMQ weight made flat (c = 1e6: the loss is the NLL's, i.e. PVI)"),
        gate=Gate(
            "the outliers bias PVI: bias(PVI), eps = 0.2, broad prior, >= 4 posterior SDs "
            "(4/sqrt(250) = 0.25), so that halving it clears the noise floor",
            Rule(">=", 4 * SD_POST),
        ),
    ),
    Claim(
        id="beta_cuts_outlier_bias",
        statement="The density-power (beta) loss also removes most of the outliers' bias.",
        where="Synthetic location experiments; brief: robust losses at most half PVI's bias",
        metric="bias(FedGVI-beta) / bias(PVI), eps = 0.2, broad prior",
        paper_value="<= 0.5",
        rule=Rule("<=", 0.5, partial=0.8),
        null=Null(arm="beta -> 1 (beta = 1.001: the density-power loss tends to the NLL)"),
        gate=Gate(
            "the outliers bias PVI: bias(PVI), eps = 0.2, broad prior, >= 4 posterior SDs (0.25)",
            Rule(">=", 4 * SD_POST),
        ),
    ),
    Claim(
        id="ar_cuts_prior_bias",
        statement="An alpha-Renyi divergence (alpha > 1) to the prior gives less bias than the "
        "KL under a confident wrong prior.",
        where="Prior-misspecification experiments; brief's pass criterion",
        metric="bias(FedGVI-AR) / bias(PVI), clean data, prior N(3, 0.1) (mean biases over "
        "the data sets); the brief's 'less prior bias than KL' is a ratio strictly below 1 "
        "(the partial band), the pre-set 0.9 a visible cut (reproduced); the paired contrast "
        "with the alpha -> 1 arm, bootstrapped over the data sets, decides against the null",
        paper_value="< 1",
        rule=Rule("<", 0.9, partial=1.0),
        null=Null(arm="alpha -> 1 (alpha = 1.001: the alpha-Renyi divergence tends to the KL)"),
        gate=Gate(
            "the wrong prior moves PVI: mean |E_q[theta] under N(3, 0.1) - under N(0, 10)|, "
            "clean data, >= one posterior SD (1/sqrt(250) = 0.063)",
            Rule(">=", SD_POST),
        ),
    ),
    Claim(
        id="both_misspecified",
        statement="Robust loss plus AR divergence handles outliers and a wrong prior together.",
        where="Abstract (robust to prior and likelihood misspecification)",
        metric="bias(FedGVI-IMQ+AR) / bias(PVI), eps = 0.2, prior N(3, 0.1)",
        paper_value="< 1 (brief: <= 0.5)",
        rule=Rule("<=", 0.5, partial=0.8),
        null=Null(arm="both mechanisms removed (IMQ c = 1e6, alpha = 1.001)"),
        gate=Gate(
            "the misspecification biases PVI: bias(PVI), eps = 0.2, prior N(3, 0.1), >= 4 "
            "posterior SDs (0.25)",
            Rule(">=", 4 * SD_POST),
        ),
    ),
    Claim(
        id="few_rounds",
        statement="FedGVI converges in few rounds.",
        where="Fixed-point analysis; brief: within 20 rounds",
        metric="largest number of rounds until the global mean moves <= 1e-6, over methods, "
        "priors and data sets (eps = 0.2); {{round_cap}} = not within the "
        "{{location_rounds}}-round limit",
        paper_value="<= 20",
        rule=Rule("<=", 20, partial=30),
        null=Null(
            arm="the AR divergence at the clients (to the cavity) instead of the server: the "
            "likelihood is tempered anew every round, an iteration without a fixed point "
            "(shows that the count can fail)"
        ),
    ),
    Claim(
        id="lr_accuracy_gain_contaminated",
        statement="Under label contamination FedGVI predicts better than PVI.",
        where="Logistic-regression experiments; brief: best FedGVI >= PVI + 1.5 points",
        metric="best FedGVI variant's test accuracy - PVI's, points, mean over both priors",
        paper_value=">= 1.5",
        rule=Rule(">=", 1.5, partial=0.5),
        null=Null(arm="the same best-of-three over " + LR_NULL_ARMS),
        gate=Gate(
            "the contamination costs PVI at least the claim's margin: clean - contaminated "
            "accuracy >= 1.5 points, mean over priors",
            Rule(">=", 1.5),
        ),
    ),
    Claim(
        id="lr_no_loss_clean",
        statement="On clean data FedGVI loses no accuracy against PVI.",
        where="Logistic-regression experiments; brief: within +-1 point",
        metric="|best FedGVI variant's test accuracy - PVI's|, points, clean, mean over priors",
        paper_value="<= 1",
        rule=Rule("<=", 1.0, partial=2.0),
        null=Null(arm="no client update: the prior's predictive, which ignores the data"),
    ),
    Claim(
        id="lr_nll_contaminated",
        statement="Under contamination the robust loss improves the predictive NLL.",
        where="Logistic-regression experiments (NLL)",
        metric="test NLL of FedGVI-GCE - PVI's, contaminated, mean over priors; 'improves' "
        "is a difference strictly below 0 (no partial band: the paper states a direction, "
        "no margin)",
        paper_value="< 0",
        rule=Rule("<", 0.0),
        null=Null(arm=LR_NULL_ARM),
        gate=Gate(
            "the contamination raises PVI's test NLL (contaminated - clean > 0, mean over priors)",
            Rule(">", 0.0),
        ),
    ),
    Claim(
        id="lr_ece_contaminated",
        statement="Under contamination the robust loss is better calibrated.",
        where="Logistic-regression experiments (calibration)",
        metric="test ECE of FedGVI-GCE - PVI's, points, contaminated, mean over priors; "
        "'better calibrated' is a difference strictly below 0 (no partial band: the paper "
        "states a direction, no margin)",
        paper_value="< 0",
        rule=Rule("<", 0.0),
        null=Null(arm=LR_NULL_ARM),
        gate=Gate(
            "the contamination raises PVI's test ECE (contaminated - clean > 0, mean over priors)",
            Rule(">", 0.0),
        ),
    ),
    Claim(
        id="lr_beats_fedavg",
        statement="Under contamination FedGVI is at least as accurate as FedAvg.",
        where="Logistic-regression experiments (FedAvg baseline)",
        metric="best FedGVI variant's test accuracy - FedAvg's, points, contaminated, "
        "mean over priors",
        paper_value=">= 0",
        rule=Rule(">=", 0.0, partial=-1.0),
        null=Null(arm="the best of " + LR_NULL_ARMS + ", - FedAvg"),
    ),
    Claim(
        id="bnn_gce_gain_noisy",
        statement="With flipped labels, a BNN trained by FedGVI with a robust loss is more "
        "accurate than PVI's.",
        where="BNN experiments on MNIST / Fashion-MNIST with 10-20% flipped labels; the "
        "official runs' GCE with alpha-Renyi(2.5) at the clients",
        metric="test accuracy of FedGVI (GCE delta 0.5 + client AR 2.5) - PVI's, points, "
        "20% flipped labels; 'more accurate' is a gain strictly above 0 (no partial band: "
        "the paper states a direction, no margin)",
        paper_value="> 0",
        rule=Rule(">", 0.0),
        null=Null(arm=BNN_NULL_ARM),
        gate=Gate(BNN_GATE, Rule(">=", 1.0)),
    ),
    Claim(
        id="bnn_gce1_gain_noisy",
        statement="The same with the official runs' other GCE parameter, delta = 1.0: with "
        "flipped labels, FedGVI's BNN is more accurate than PVI's.",
        where="BNN experiments; the official Fashion-MNIST runs use GCE delta in {1.0, 0.5} "
        "with alpha-Renyi(2.5) at the clients (added in issue 37 before the second full run)",
        metric="test accuracy of FedGVI (GCE delta 1.0 + client AR 2.5) - PVI's, points, "
        "20% flipped labels; 'more accurate': strictly above 0, as bnn_gce_gain_noisy",
        paper_value="> 0",
        rule=Rule(">", 0.0),
        null=Null(arm=BNN_NULL_ARM),
        gate=Gate(BNN_GATE, Rule(">=", 1.0)),
    ),
    Claim(
        id="bnn_beats_fedavg_noisy",
        statement="With flipped labels, FedGVI's BNN is more accurate than FedAvg's network.",
        where="BNN experiments (FedAvg baseline)",
        metric="test accuracy of the better of FedGVI (GCE + AR) and PVI - FedAvg's, points; "
        "'more accurate': strictly above 0 (no partial band)",
        paper_value="> 0",
        rule=Rule(">", 0.0),
        null=Null(
            arm="FedAvg given the Bayesian arms' local training (Adam to early stopping with "
            "the same patience, {{bnn_patience}} epochs, and epoch cap, {{bnn_epochs}}) - "
            "FedAvg: the training budget without a posterior"
        ),
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
        id="robust_losses_learn",
        statement="Control: the robust posteriors learn from the data (a posterior that "
        "ignored the data would sit at the broad prior's mean, theta* = 0, with no bias).",
        where="added check (issue 48 audit)",
        metric="precision gained over the prior relative to PVI's, the smaller of FedGVI-IMQ "
        "and FedGVI-beta, eps = 0.2, broad prior, mean over data sets",
        paper_value=None,
        rule=Rule(">=", 0.5, partial=0.25),
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
        metric="share of local problems ended by early stopping, mean over {{control_arms}}",
        paper_value=None,
        rule=Rule(">=", 0.9, partial=0.5),
        kind="control",
    ),
)
