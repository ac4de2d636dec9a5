"""The claims of the drift-calibration reproduction: what the paper says, the rule that decides
it and its null arm (the MSC claims: a content-free shift; the calibration claims: an A/A
replicate trained again from another seed), and the gate of ``msc_last_gain`` (exact old means
on the same backbone). The measurements come from :mod:`icml25.drift_calibration.experiments`.
Claims and rules were fixed in code before the first run; the null arms and the gate were
committed before the runs that judge them.
"""

from __future__ import annotations

from icml25.core.claims import Claim, Gate, Null, Rule

AA_NULL = "the same comparison with the calibration removed from the treated arm: LoRA with "

CLAIMS = (
    Claim(
        id="msc_mean_error",
        statement="Mean-shift compensation estimates the drift of old class means from "
        "current-task embedding changes (compensated means closer to the true ones than stale).",
        where="Sec. 3 (mean shift compensation); ablation tables",
        metric="sum over old classes of ||mu_msc - mu_true|| / same for stale means, msc run, "
        "after the last task (true = mean of the class's training images, final network)",
        paper_value="qualitative",
        rule=Rule("<=", 0.7, partial=0.9),
        null=Null(
            arm="a content-free shift: each old mean moved as far as MSC moves it, in a random "
            "direction (msc_random)"
        ),
    ),
    Claim(
        id="msc_last_gain",
        statement="Adding mean-shift compensation raises the last accuracy over stale means.",
        where="Ablation table (MSC row)",
        metric="last accuracy msc - stale, percentage points (t over seeds)",
        paper_value="gain (table not retrieved)",
        rule=Rule(">=", 0.5, partial=0.0),
        null=Null(
            arm="a content-free shift: each old mean moved as far as MSC moves it, in a random "
            "direction (msc_random - stale)"
        ),
        gate=Gate(
            "exact old means on the same backbone reach the rule: last accuracy oracle_stale - "
            "stale (a ceiling for any mean update)"
        ),
    ),
    Claim(
        id="cc_last_gain",
        statement="Adding covariance calibration (with self-distillation) on top of mean shift "
        "raises the last accuracy further.",
        where="Ablation table (MSC + CC row)",
        metric="last accuracy full - msc, percentage points",
        paper_value="gain (table not retrieved)",
        rule=Rule(">=", 0.5, partial=0.0),
        null=Null(arm=AA_NULL + "mean shift trained again from another seed (msc_b - msc)"),
    ),
    Claim(
        id="full_last_gain",
        statement="The full method beats LoRA with stale class statistics on last accuracy.",
        where="Ablation table (baseline vs full)",
        metric="last accuracy full - stale, percentage points",
        paper_value="gain (table not retrieved)",
        rule=Rule(">=", 1.0, partial=0.0),
        null=Null(arm=AA_NULL + "stale means trained again from another seed (stale_b - stale)"),
    ),
    Claim(
        id="full_avg_gain",
        statement="The full method beats LoRA with stale class statistics on average accuracy.",
        where="Ablation table (baseline vs full)",
        metric="average accuracy (over tasks) full - stale, percentage points",
        paper_value="gain (table not retrieved)",
        rule=Rule(">=", 1.0, partial=0.0),
        null=Null(arm=AA_NULL + "stale means trained again from another seed (stale_b - stale)"),
    ),
    Claim(
        id="cov_drift_ratio",
        statement="The Mahalanobis constraint reduces the covariance shift of old classes.",
        where="Sec. 3 (covariance calibration)",
        metric="mean over old classes of ||S_final - S_learned||_F / ||S_learned||_F, "
        "full / msc (test images, unnormalised features)",
        paper_value="lower with calibration",
        rule=Rule("<=", 0.9, partial=1.0),
        null=Null(
            arm="the covariance drift of the msc backbone trained again from another seed, over "
            "that of msc (msc_b / msc): no calibration in either"
        ),
    ),
    Claim(
        id="full_vs_frozen",
        statement="Control: adapting with LoRA plus calibration is worth it against a frozen "
        "backbone with classifier alignment only.",
        where="control (the brief's 'alignment only' ablation)",
        metric="last accuracy full - frozen, percentage points",
        rule=Rule(">=", 0.0, partial=-1.0),
        kind="control",
    ),
    Claim(
        id="oracle_gap",
        statement="Control: exact old class means (from old data) help, i.e. mean drift matters.",
        where="control (the brief's oracle ablation)",
        metric="last accuracy oracle - cc, percentage points",
        rule=Rule(">=", 0.5, partial=0.0),
        kind="control",
    ),
)
