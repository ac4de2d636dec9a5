"""The claims of the pointwise-information reproduction: the paper's failure-prediction and
calibration claims for each of the two settings (CNN / Fashion-MNIST, then MLP / MNIST-5k), each
with its null arm (the same PVI with the classifier itself as g', the paper's "no training"
variant) and, for the calibration-vs-MSP claims, a gate (temperature scaling of the classifier
must improve over MSP); then the controls shared by both settings. The measurements come from
:mod:`icml25.pointwise_info.experiments`. The rules were written for issue 21; the null arms,
gates and controls of issue 53 were committed before the runs that judge them.
"""

from __future__ import annotations

from icml25.core.claims import Claim, Gate, Null, Rule

MIN_ERRORS = 200
"""Classifier errors each seed must have in every setting (the power control)."""

ABSTRACT_2025_08 = (
    "OpenReview abstract (revision of 16 Aug 2025): 'For confidence calibration, PVI matches "
    "the performance of temperature-scaled softmax, which is already regarded as a highly "
    "effective baseline.'"
)
ABSTRACT_FAILURE = (
    "OpenReview abstract (16 Aug 2025): 'PVI consistently outperforms PMI, PSI and existing "
    "post-hoc baselines in failure prediction across metrics'"
)
G_IS_F = (
    "g' = f: the same measurement for PVI with the classifier itself as g' (the paper's 'no "
    "training' variant: no separately trained model)"
)
G_IS_F_CAL = (
    "g' = f: the same measurement for the temperature-calibrated PVI with the classifier itself "
    "as g' (same null model, same softmax base)"
)
TS_CEILING = (
    "a ceiling: temperature scaling of the classifier improves its SCE over MSP, "
    "100 (SCE(MSP) - SCE(TS)) / SCE(MSP) (no room to calibrate otherwise)"
)
CNN_TABLE = "Failure-prediction table, CNN / Fashion-MNIST"
MLP_TABLE = "MLP / MNIST (paper's pair)"
SCALED = "softmax over classes at y_hat (base e, the authors' code)"

CLAIMS: tuple[Claim, ...] = (
    # CNN / Fashion-MNIST
    Claim(
        id="cnn_pvi_vs_pmi_psi",
        statement="PVI excels over PMI and PSI in failure prediction.",
        where=f"{CNN_TABLE}; {ABSTRACT_FAILURE}",
        metric=f"AUROC(PVI) - max(AUROC(PMI), AUROC(PSI)), points, {SCALED}, CNN / Fashion-MNIST",
        paper_value="+1.60 (92.98 vs 91.38 / 89.95)",
        rule=Rule(">=", 0.0, partial=-1.0),
        null=Null(arm=G_IS_F),
    ),
    Claim(
        id="cnn_pvi_vs_msp",
        statement="PVI matches or outperforms the softmax baseline (MSP) in failure prediction.",
        where=f"{CNN_TABLE}; {ABSTRACT_FAILURE}",
        metric=f"AUROC(PVI) - AUROC(MSP), points, {SCALED}, CNN / Fashion-MNIST",
        paper_value="+0.45 (92.98 vs 92.53)",
        rule=Rule(">=", -0.5, partial=-1.5),
        null=Null(arm=G_IS_F),
    ),
    Claim(
        id="cnn_pvi_eaurc",
        statement="PVI lowers the excess area under the risk-coverage curve vs MSP.",
        where=CNN_TABLE,
        metric=f"E-AURC(MSP) - E-AURC(PVI), x1000, {SCALED}, CNN / Fashion-MNIST",
        paper_value="+0.34 (5.72 -> 5.38)",
        rule=Rule(">=", 0.0, partial=-0.5),
        null=Null(arm=G_IS_F),
    ),
    Claim(
        id="cnn_pvi_sce_vs_msp",
        statement="The temperature-calibrated PVI, through a softmax, is better calibrated "
        "than the softmax (SCE).",
        where="Calibration table (SCE: MSP .15, PVI .14 on Fashion-MNIST; .28/.20 STL-10; "
        ".19/.17 CIFAR-10)",
        metric="100 (SCE(MSP) - SCE(softmax(PVI-cal))) / SCE(MSP), % relative, 15 bins, "
        "softmax base e (the authors' code: NumPy exp on PVI in bits), CNN / Fashion-MNIST",
        paper_value="+7% (.15 -> .14)",
        rule=Rule(">=", 0.0, partial=-10.0),
        null=Null(arm=G_IS_F_CAL),
        gate=Gate(TS_CEILING),
    ),
    Claim(
        id="cnn_pvi_sce_vs_ts",
        statement="The temperature-calibrated PVI matches temperature-scaled softmax in "
        "calibration (SCE).",
        where=ABSTRACT_2025_08,
        metric="100 (SCE(softmax(PVI-cal)) - SCE(TS)) / SCE(TS), % relative, 15 bins, "
        "softmax base e (the authors' code), CNN / Fashion-MNIST",
        paper_value="matches",
        rule=Rule("<=", 10.0, partial=25.0),
        null=Null(arm=G_IS_F_CAL),
    ),
    Claim(
        id="cnn_pvi_sce_vs_msp_base2",
        kind="control",
        statement="The same calibration comparison with the softmax in base 2, which undoes "
        "the bits (2^PVI: g'(k|x) / g0(k), normalised); not the authors' formula.",
        where="Issue 53 (both softmax bases)",
        metric="100 (SCE(MSP) - SCE(softmax_2(PVI-cal))) / SCE(MSP), % relative, "
        "CNN / Fashion-MNIST",
        paper_value="(not reported)",
        rule=Rule(">=", 0.0, partial=-10.0),
        null=Null(arm=G_IS_F_CAL),
    ),
    Claim(
        id="cnn_pvi_sce_vs_ts_base2",
        kind="control",
        statement="PVI-cal through a base-2 softmax against temperature-scaled softmax.",
        where="Issue 53 (both softmax bases)",
        metric="100 (SCE(softmax_2(PVI-cal)) - SCE(TS)) / SCE(TS), % relative, CNN / Fashion-MNIST",
        paper_value="(not reported)",
        rule=Rule("<=", 10.0, partial=25.0),
        null=Null(arm=G_IS_F_CAL),
    ),
    Claim(
        id="cnn_pvi_vs_ensemble",
        statement="PVI's gain is more than that of adding a second model (our control; the "
        "paper does not compare with ensembles).",
        where="Control (not in the paper)",
        metric="AUROC(PVI) - AUROC(two-model ensemble MSP), points, CNN / Fashion-MNIST",
        paper_value="not compared",
        rule=Rule(">=", 0.0, partial=-0.5),
        kind="control",
    ),
    # MLP / MNIST-5k
    Claim(
        id="mlp_pvi_vs_pmi_psi",
        statement="PVI excels over PMI and PSI in failure prediction.",
        where=f"{MLP_TABLE}; {ABSTRACT_FAILURE}",
        metric=f"AUROC(PVI) - max(AUROC(PMI), AUROC(PSI)), points, {SCALED}, MLP / MNIST-5k",
        paper_value="PVI best on every pair",
        rule=Rule(">=", 0.0, partial=-1.0),
        null=Null(arm=G_IS_F),
    ),
    Claim(
        id="mlp_pvi_vs_msp",
        statement="PVI matches or outperforms the softmax baseline (MSP) in failure prediction.",
        where=f"{MLP_TABLE}; {ABSTRACT_FAILURE}",
        metric=f"AUROC(PVI) - AUROC(MSP), points, {SCALED}, MLP / MNIST-5k",
        paper_value="PVI >= MSP",
        rule=Rule(">=", -0.5, partial=-1.5),
        null=Null(arm=G_IS_F),
    ),
    Claim(
        id="mlp_pvi_eaurc",
        statement="PVI lowers the excess area under the risk-coverage curve vs MSP.",
        where=MLP_TABLE,
        metric=f"E-AURC(MSP) - E-AURC(PVI), x1000, {SCALED}, MLP / MNIST-5k",
        paper_value="PVI lowest",
        rule=Rule(">=", 0.0, partial=-0.5),
        null=Null(arm=G_IS_F),
    ),
    Claim(
        id="mlp_pvi_sce_vs_msp",
        statement="The temperature-calibrated PVI, through a softmax, is better calibrated "
        "than the softmax (SCE).",
        where="Calibration table (SCE: MSP .15, PVI .14 on Fashion-MNIST; .28/.20 STL-10; "
        ".19/.17 CIFAR-10)",
        metric="100 (SCE(MSP) - SCE(softmax(PVI-cal))) / SCE(MSP), % relative, 15 bins, "
        "softmax base e (the authors' code: NumPy exp on PVI in bits), MLP / MNIST-5k",
        paper_value="PVI <= MSP",
        rule=Rule(">=", 0.0, partial=-10.0),
        null=Null(arm=G_IS_F_CAL),
        gate=Gate(TS_CEILING),
    ),
    Claim(
        id="mlp_pvi_sce_vs_ts",
        statement="The temperature-calibrated PVI matches temperature-scaled softmax in "
        "calibration (SCE).",
        where=ABSTRACT_2025_08,
        metric="100 (SCE(softmax(PVI-cal)) - SCE(TS)) / SCE(TS), % relative, 15 bins, "
        "softmax base e (the authors' code), MLP / MNIST-5k",
        paper_value="matches",
        rule=Rule("<=", 10.0, partial=25.0),
        null=Null(arm=G_IS_F_CAL),
    ),
    Claim(
        id="mlp_pvi_sce_vs_msp_base2",
        kind="control",
        statement="The same calibration comparison with the softmax in base 2, which undoes "
        "the bits (2^PVI: g'(k|x) / g0(k), normalised); not the authors' formula.",
        where="Issue 53 (both softmax bases)",
        metric="100 (SCE(MSP) - SCE(softmax_2(PVI-cal))) / SCE(MSP), % relative, MLP / MNIST-5k",
        paper_value="(not reported)",
        rule=Rule(">=", 0.0, partial=-10.0),
        null=Null(arm=G_IS_F_CAL),
    ),
    Claim(
        id="mlp_pvi_sce_vs_ts_base2",
        kind="control",
        statement="PVI-cal through a base-2 softmax against temperature-scaled softmax.",
        where="Issue 53 (both softmax bases)",
        metric="100 (SCE(softmax_2(PVI-cal)) - SCE(TS)) / SCE(TS), % relative, MLP / MNIST-5k",
        paper_value="(not reported)",
        rule=Rule("<=", 10.0, partial=25.0),
        null=Null(arm=G_IS_F_CAL),
    ),
    Claim(
        id="mlp_pvi_vs_ensemble",
        statement="PVI's gain is more than that of adding a second model (our control; the "
        "paper does not compare with ensembles).",
        where="Control (not in the paper)",
        metric="AUROC(PVI) - AUROC(two-model ensemble MSP), points, MLP / MNIST-5k",
        paper_value="not compared",
        rule=Rule(">=", 0.0, partial=-0.5),
        kind="control",
    ),
    # both settings
    Claim(
        id="pvi_inside_doctor",
        kind="control",
        statement="Replacing softmax outputs with PVI inside an existing confidence method "
        "improves it (here DOCTOR's sum_k p_k^2, without DOCTOR's temperature and input "
        "perturbation; the score reads g', not the classifier's prediction). A control since "
        "issue 53: the sentence left the abstract in the revision of 16 Aug 2025, and the paper "
        "names no method.",
        where="Abstract (OpenReview revision of 18 Jun 2025), last sentence; dropped from the "
        "revision of 16 Aug 2025",
        metric="AUROC(DOCTOR on softmax(PVI)) - AUROC(DOCTOR on softmax), points, mean of "
        "both settings",
        paper_value="improves",
        rule=Rule(">=", 0.0, partial=-0.5),
    ),
    Claim(
        id="pvi_inside_ts",
        statement="Temperature scaling fitted on the PVI scores calibrates better than on the "
        "logits (our control: with a near-uniform null it compares g' with f, not PVI with "
        "the softmax).",
        where="Control (not in the paper)",
        metric="ECE(TS on PVI scores) - ECE(TS on logits), points, mean of both settings",
        paper_value="not compared",
        rule=Rule("<=", 0.0, partial=1.0),
        kind="control",
    ),
    Claim(
        id="power_errors",
        statement=f"Every seed has at least {MIN_ERRORS} classifier errors in every setting, so "
        "that AUROC differences of a point are not noise (our control).",
        where="Control (issue 21: statistical power)",
        metric="min over settings of the classifier's test errors, per seed (of "
        "{{cnn_test}} CNN test images on Fashion-MNIST, {{mlp_test}} MLP test images on "
        "MNIST-5k)",
        paper_value="not stated",
        rule=Rule(">=", float(MIN_ERRORS)),
        kind="control",
    ),
)
