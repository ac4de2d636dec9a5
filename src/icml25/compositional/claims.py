"""Claims of the compositional reproduction: rules, null arms and gates.

The measurements come from :mod:`icml25.compositional.experiments`. Rules are the brief's
pass rules; the ones issue 49 restated (``saturated_scale_flat`` at ``k = 5`` against half the
diversity gain, ``saturated_r2_rises_with_k`` as a monotone trend), the ``n``-axis claim, the
null arms and the gates were fixed in code before the runs that judge them.

Claim ids keep the prefix ``saturated_`` of the first protocol's saturated setting (the pastel
setting, an exploratory control added after that protocol failed, is gone: the per-seed
permutation of the hues removes the channel artefact it worked around).
"""

from __future__ import annotations

from icml25.core.claims import Claim, Gate, Null, Rule

SEEN_GATE = 0.6
"""Gate: joint accuracy on held-out images of the *seen* combinations (the model learned its
training set; chance is 1 / n^2)."""
PLACEBO = (
    "placebo k = 1: a second k = 1 model trained on the images of the run it stands for (the "
    "same comparison without added diversity)"
)
R2_MEANS = (
    "R^2 of the combination means (least squares, 128-d features averaged over the images "
    "of each combination, full evaluation grid)"
)
R2_IMAGE = "R^2 per image (least squares, 128-d features of every evaluation image)"
IMAGE_CONTROL = " (control: the metric on every image, with within-combination variation)"
K_RUNS_LEARN = Gate(
    f"the k-axis models learn: lowest seen joint accuracy (>= {SEEN_GATE})",
    Rule(">=", SEEN_GATE),
)
UNTRAINED = Null(
    arm="the untrained trunk's R^2 (same seed and images; a representation that learned "
    "nothing) against each run's accuracy"
)
SPREAD = Gate(
    "unseen accuracy varies across the runs: max - min joint accuracy, points (>= 10)",
    Rule(">=", 10.0),
)
RISES_METRIC = ", over k = {{ks}} at the smaller N = {{n_small}}, per seed (a monotone rise is 1)"
PREDICTS_METRIC = (
    " with joint unseen accuracy, over the runs of the k axis (k = {{ks}} at N = {{n_small}}, "
    "k = 5 at {{scale}}N = {{n_large}}), all seeds; bootstrap over runs"
)

CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="saturated_diversity_gain",
        statement="Compositional generalisation is driven by diversity: at fixed data size N, "
        "accuracy on unseen combinations rises with the number k of seen combinations per "
        "value.",
        where="Abstract; Sec. 4 (Fig. 3)",
        metric="joint unseen-combination accuracy, k=5 minus k=1, at the smaller N = "
        "{{n_small}} images, points (item x colour, n=10, trained from scratch, {{steps}} "
        "steps)",
        paper_value="near chance at low coverage -> >90% at high coverage",
        rule=Rule(">=", 20.0, partial=10.0),
        null=Null(arm=PLACEBO),
        gate=Gate(
            f"the model learns its training combinations: seen joint accuracy, k=5 at N = "
            f"{{{{n_small}}}} (>= {SEEN_GATE})",
            Rule(">=", SEEN_GATE),
        ),
    ),
    Claim(
        id="saturated_scale_flat",
        statement="Scaling data without adding combinations barely changes unseen-combination "
        "accuracy: {{scale}}x more images change it by less than half of what diversity does.",
        where="Sec. 4 (scale vs diversity)",
        metric="0.5 x (acc(k=5, N) - acc(k=1, N)) - |acc(k=5, {{scale}}N) - acc(k=5, N)|, N = "
        "{{n_small}} and {{scale}}N = {{n_large}} images, joint unseen accuracy, points: >= 0 "
        "when the {{scale}}x scale-up moves accuracy by less than half the diversity gain "
        "(measured at k=5, where accuracy is off the floor)",
        paper_value="barely changes",
        rule=Rule(">=", 0.0),
        null=Null(
            arm="the same comparison for a change that adds combinations (k = 1 -> 5 at N) "
            "in place of the {{scale}}x scale-up"
        ),
        gate=Gate(
            "accuracy off the floor: diversity gain k=1 -> 5 at N, points (>= 10)",
            Rule(">=", 10.0),
        ),
    ),
    Claim(
        id="saturated_n_axis_gain",
        statement="With k = 2 combinations per value, accuracy on unseen combinations rises "
        "as the number of values per concept n grows (n = 4, 6, 10).",
        where="Sec. 4 (Fig. 2: from-scratch models, n grows at k = 2)",
        metric="joint unseen-combination accuracy at n=10 minus at n=4, k=2, N = {{n_small}} "
        "images, points (raw accuracy: chance falls from 6.25 to 1 point, against the claim)",
        paper_value="rises with n",
        rule=Rule(">=", 10.0, partial=5.0),
        null=Null(arm="the same difference at k = 1 (no combination to compose from)"),
        gate=Gate(
            f"the n-axis models learn: lowest seen joint accuracy (>= {SEEN_GATE})",
            Rule(">=", SEEN_GATE),
        ),
    ),
    Claim(
        id="saturated_r2_rises_with_k",
        kind="claim",
        statement="Higher coverage produces more linearly factored representations.",
        where="Abstract; Sec. 4",
        metric="Spearman correlation of k with the " + R2_MEANS + RISES_METRIC,
        paper_value="rises with coverage",
        rule=Rule(">=", 0.6, partial=0.2),
        null=Null(arm=PLACEBO),
        gate=K_RUNS_LEARN,
    ),
    Claim(
        id="saturated_r2_predicts_accuracy",
        kind="claim",
        statement="Linear factorisation of the learned representation predicts compositional "
        "generalisation.",
        where="Sec. 4 (structure vs coverage)",
        metric="Spearman correlation of the " + R2_MEANS + PREDICTS_METRIC,
        paper_value="R^2 and OOD accuracy rise together",
        rule=Rule(">=", 0.6, partial=0.3),
        null=UNTRAINED,
        gate=SPREAD,
    ),
    Claim(
        id="saturated_high_coverage_generalises",
        statement="At high coverage, accuracy on unseen combinations approaches that on seen "
        "combinations (the paper: OOD > 90% at high coverage).",
        where="Sec. 4 (third-party note; approximate)",
        metric="joint accuracy, unseen / seen combinations (held-out test images, "
        "{{eval_per_combo}} per combination), k=5 at {{scale}}N = {{n_large}} images",
        paper_value="> 0.9 (OOD > 90% on synthetic data with ~100% ID accuracy)",
        rule=Rule(">=", 0.9, partial=0.75),
        null=Null(arm="k = 1 (no coverage) at N: unseen / seen"),
        gate=Gate(
            f"the model learns: seen joint accuracy, k=5 at {{{{scale}}}}N (>= {SEEN_GATE})",
            Rule(">=", SEEN_GATE),
        ),
    ),
    Claim(
        id="saturated_seen_accuracy",
        statement="Every model learns its training combinations (our control: a low unseen "
        "accuracy is a failure to compose, not to learn).",
        where="Control",
        metric="min over runs of joint accuracy on held-out test images of seen combinations, "
        "per seed",
        paper_value="not stated",
        rule=Rule(">=", 0.6, partial=0.4),
        kind="control",
    ),
    Claim(
        id="saturated_r2_image_rises_with_k",
        kind="control",
        statement="Higher coverage produces more linearly factored representations."
        + IMAGE_CONTROL,
        where="Abstract; Sec. 4",
        metric="Spearman correlation of k with the " + R2_IMAGE + RISES_METRIC,
        paper_value="rises with coverage",
        rule=Rule(">=", 0.6, partial=0.2),
        null=Null(arm=PLACEBO),
        gate=K_RUNS_LEARN,
    ),
    Claim(
        id="saturated_r2_image_predicts_accuracy",
        kind="control",
        statement="Linear factorisation of the learned representation predicts compositional "
        "generalisation." + IMAGE_CONTROL,
        where="Sec. 4 (structure vs coverage)",
        metric="Spearman correlation of the " + R2_IMAGE + PREDICTS_METRIC,
        paper_value="R^2 and OOD accuracy rise together",
        rule=Rule(">=", 0.6, partial=0.3),
        null=UNTRAINED,
        gate=SPREAD,
    ),
    Claim(
        id="synthetic_factored",
        statement="Linearly factored embeddings generalise perfectly from k=2 combinations "
        "per value (Prop. 4.1).",
        where="Prop. 4.1",
        metric="linear probes trained on S_2: mean per-concept accuracy on unseen combinations, "
        "factored z = U[a] + V[b] + noise (n=10, d=32)",
        paper_value="1.0",
        rule=Rule(">=", 0.95, partial=0.9),
        null=Null(arm="entangled embeddings z = W[a, b] + noise, same probes"),
    ),
    Claim(
        id="synthetic_entangled",
        statement="Entangled embeddings (one random vector per combination) do not generalise "
        "from k=2 (chance = 0.1).",
        where="Prop. 4.1 (contrapositive, brief's check)",
        metric="as above, entangled z = W[a, b] + noise",
        paper_value="chance",
        rule=Rule("<=", 0.30, partial=0.40),
        null=Null(arm="factored embeddings z = U[a] + V[b] + noise, same probes"),
    ),
    Claim(
        id="pretrained_vision",
        statement="Pretrained vision models (DINO, CLIP) are above random yet imperfect on "
        "unseen combinations.",
        where="Sec. 5",
        metric="not measured",
        paper_value="above chance, well below perfect",
        rule=None,
        out_of_scale="no pretrained vision backbone (DINO/CLIP) ships offline; the API "
        "evaluates any encoder a user supplies (see the text stand-in control)",
    ),
    Claim(
        id="text_encoder_above_chance",
        statement="A pretrained encoder is above chance on unseen combinations (our control: "
        "a text stand-in for Sec. 5, {{text_encoder}} on 'colour x object' sentences).",
        where="Control (Sec. 5 analogue, not in the paper)",
        metric="linear probes trained on S_2 (n=10): mean per-concept accuracy on unseen "
        "combinations (chance 0.1)",
        paper_value="vision: above chance, imperfect",
        rule=Rule(">=", 0.30, partial=0.20),
        kind="control",
    ),
)
