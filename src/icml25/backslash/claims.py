"""BackSlash's claims: the two model families' (image MLP, text transformer), the ablations
against fixed priors, and the language-model block's (``LM_CLAIMS``), with their rules, null
arms and gates. The rules were fixed before the first run; issue 54 restated
``small_lambda_generalization``'s before its run (see its metric).

The measurements come from :mod:`icml25.backslash.experiments` (the families) and
:mod:`icml25.backslash.experiments_lm` (the language model); :func:`icml25.backslash.reproduce
.claim_sizes` fills the ``{{...}}`` sizes the LM claims name.
"""

from __future__ import annotations

from icml25.core.claims import Claim, Gate, Null, Rule

FAMILIES = ("image", "text")
LABEL = {"image": "MLP / Fashion-MNIST", "text": "transformer / fortunes"}

LM = "{{lm}}"
"""The language model the LM claims name: SmolLM2, or the tiny random Llama of the tiny budget
(:func:`icml25.backslash.reproduce.claim_sizes`)."""
SPARSE_GATE = Gate(
    "the rate made the selected model sparse: its coded size is within the paper's range "
    "(bits / normal's <= 0.4), the premise of keeping accuracy when 80% of the weights go",
    Rule("<=", 0.4),
)
SELECTION = (
    "selected on the validation split (disjoint from training and test): the largest lambda "
    "whose validation difference, mean over seeds, has its 90% lower bound (paired SE over "
    "items) at >= -1 point (issue 54's margin)"
)
POST_RATE = (
    "the rate applied after training instead of during it: the rate's proximal step (nu "
    "estimated from the normal model)"
)

# The texts the image and text families' claims share (each family's claim adds its label).
SIZE_STATEMENT = (
    "At equal quantisation step, BackSlash's coded model is 60-90% smaller than normal training's."
)
SIZE_NULL = Null(
    arm=f"{POST_RATE} with each lambda's total strength (steps x lr x lambda / N) on the normal "
    "model, selected by the same validation rule (none qualifying: no compression, ratio 1)"
)
ACCURACY_NULL = Null(
    arm="compression after training to the same size: the best of post-training quantisation "
    "and per-tensor magnitude pruning of the normal model at the selected model's bits, test "
    "accuracy - normal's"
)
POST_TRAINING_STATEMENT = (
    "BackSlash gives significant compression gain over compressing after training."
)
POST_TRAINING_NULL = Null(
    arm=f"{POST_RATE}, its strength bisected to the selected model's bits, in BackSlash's place"
)
PRUNING_NULL = Null(arm="no rate: the normal model's drop at 80% per-tensor pruning")
PRUNING_VS_NORMAL_NULL = Null(
    arm="no rate in either arm: drop(normal) - drop(a second normal training, seed + 1000)"
)
GLOBAL_STATEMENT = (
    "Control: the same comparison with one global magnitude threshold over all tensors "
    "(scales differ by ~15x across the text model's tensors, so global pruning removes whole "
    "tensors whatever the training)."
)


def _size_metric(label: str) -> str:
    return (
        f"coded bits of the selected BackSlash model / coded bits of normal training, same "
        f"delta, {label}; {SELECTION}"
    )


def _accuracy_metric(label: str) -> str:
    return (
        f"test accuracy (decoded) of the selected BackSlash model - normal training's, points, "
        f"{label}; {SELECTION}"
    )


def _post_training_metric(label: str) -> str:
    return (
        "test accuracy of BackSlash - best of (post-training quantisation, magnitude pruning + "
        f"quantisation) of the normal model at the same bits, points, {label}"
    )


def _pruning_metric(label: str) -> str:
    return (
        "test accuracy drop of the selected BackSlash model after 80% magnitude pruning of "
        f"each weight tensor, points, {label}"
    )


def _ablation_null(k: int) -> Null:
    return Null(
        arm="the estimated-nu rate removed: the normal model post-training quantised to the "
        f"selected bits in the estimated-nu arm's place, minus the nu = {k} arm"
    )


LM_CLAIMS = (
    Claim(
        id="lm_size",
        statement="At equal quantisation step, BackSlash's coded model is 60-90% smaller "
        "than normal training's (the paper's subject: LLMs).",
        where="Abstract; Fig. 5",
        metric="Exp-Golomb bits per weight of every Linear/Embedding weight, selected "
        "BackSlash fine-tune / normal fine-tune, same {{lm_steps}} steps and delta, "
        f"{LM}; interval: bootstrap over "
        "{{lm_tensors}}",
        paper_value="0.1-0.4 (60-90% less)",
        rule=Rule("<=", 0.4, partial=0.7),
        null=Null(
            arm="the rate applied after the fine-tune instead of during it (post-training "
            "shrinkage): the rate's proximal step with each lambda's total strength (steps x "
            "lr x lambda / N, nu estimated from the weights) on the normal fine-tune, selected "
            "by the same validation rule (no lambda qualifying: no compression, ratio 1)"
        ),
    ),
    Claim(
        id="lm_perplexity",
        statement="... without accuracy loss.",
        where="Abstract; Fig. 5",
        metric=f"held-out perplexity of the decoded BackSlash model / the decoded normal "
        f"fine-tune's - 1, percent, {LM}; interval: bootstrap over test chunks "
        "({{lm_test_tokens}} test tokens in chunks of {{lm_length}})",
        paper_value="~0 (no accuracy loss)",
        rule=Rule("<=", 5.0, partial=20.0),
        null=Null(
            arm="compression after the fine-tune to the same size: the normal fine-tune "
            "quantised with a coarser delta to the selected model's bits per weight"
        ),
    ),
    Claim(
        id="lm_pruning_80",
        statement="BackSlash keeps its accuracy at 80% pruning.",
        where="Abstract",
        metric=f"log(perplexity after 80% per-tensor magnitude pruning / before), decoded "
        f"selected BackSlash model, nats, {LM}; interval: bootstrap over test chunks",
        paper_value="maintains accuracy",
        rule=Rule("<=", 0.05, partial=0.2),
        null=Null(arm="no rate: the normal fine-tune's increase at 80% pruning"),
        gate=SPARSE_GATE,
    ),
    Claim(
        id="lm_pruning_80_vs_normal",
        statement="... where normal training loses accuracy.",
        where="Abstract",
        metric=f"log-perplexity increase at 80% per-tensor pruning: normal - BackSlash, nats, "
        f"{LM}; interval: bootstrap over test chunks",
        paper_value="> 0",
        rule=Rule(">=", 0.05, partial=0.0),
        null=Null(
            arm="a model compressed after the fine-tune in BackSlash's place: normal - the "
            "normal fine-tune quantised to the selected model's bits (lm_perplexity's null)"
        ),
        gate=SPARSE_GATE,
    ),
    Claim(
        id="lm_file_vs_torch_save",
        statement="BackSlash reduces the memory of the stored model by 60-90%.",
        where="Abstract",
        metric=f"bytes of the save_compressed file of the selected BackSlash model / bytes of "
        f"torch.save of the same model's state_dict (float32), {LM}; interval: bootstrap over "
        "the weight tensors (header and raw tensors fixed)",
        paper_value="0.1-0.4 (60-90% less)",
        rule=Rule("<=", 0.4, partial=0.7),
        null=Null(
            arm="no rate: the normal fine-tune coded the same way (quantisation + Exp-Golomb, "
            "the same header and raw tensors), over its torch.save bytes"
        ),
    ),
)

CLAIMS = (
    Claim(
        id="image_size",
        statement=SIZE_STATEMENT,
        where="Abstract; Fig. 5 (memory vs lambda)",
        metric=_size_metric(LABEL["image"]),
        paper_value="0.1-0.4 (60-90% less)",
        rule=Rule("<=", 0.4, partial=0.7),
        null=SIZE_NULL,
    ),
    Claim(
        id="text_size",
        statement=SIZE_STATEMENT,
        where="Abstract; Fig. 5 (memory vs lambda)",
        metric=_size_metric(LABEL["text"]),
        paper_value="0.1-0.4 (60-90% less)",
        rule=Rule("<=", 0.4, partial=0.7),
        null=SIZE_NULL,
    ),
    Claim(
        id="image_accuracy",
        statement="... without accuracy loss.",
        where="Abstract; Fig. 5",
        metric=_accuracy_metric(LABEL["image"]),
        paper_value="~0 (lambda = 1000: -0.02 train, -1.90 test)",
        rule=Rule(">=", -1.0, partial=-3.0),
        null=ACCURACY_NULL,
    ),
    Claim(
        id="text_accuracy",
        statement="... without accuracy loss.",
        where="Abstract; Fig. 5",
        metric=_accuracy_metric(LABEL["text"]),
        paper_value="~0 (lambda = 1000: -0.02 train, -1.90 test)",
        rule=Rule(">=", -1.0, partial=-3.0),
        null=ACCURACY_NULL,
    ),
    Claim(
        id="image_vs_post_training",
        statement=POST_TRAINING_STATEMENT,
        where="Abstract; comparison with post-training compression",
        metric=_post_training_metric(LABEL["image"]),
        paper_value="significant gain",
        rule=Rule(">=", 1.0, partial=0.0),
        null=POST_TRAINING_NULL,
    ),
    Claim(
        id="text_vs_post_training",
        statement=POST_TRAINING_STATEMENT,
        where="Abstract; comparison with post-training compression",
        metric=_post_training_metric(LABEL["text"]),
        paper_value="significant gain",
        rule=Rule(">=", 1.0, partial=0.0),
        null=POST_TRAINING_NULL,
    ),
    Claim(
        id="small_lambda_generalization",
        statement="Small Lagrange multipliers enhance generalisation.",
        where="Abstract",
        metric="test accuracy at the smallest lambda of the grid - normal training's, points, "
        "mean of both families. Rule restated by issue 54 before its run: >= 0 with no partial "
        "band (before: partial if >= -0.5, a band that a model no better than normal training "
        "passes)",
        paper_value="improves",
        rule=Rule(">=", 0.0),
        null=Null(
            arm="no rate: a second normal training (seed + 1000) in the smallest lambda's place "
            "(the difference training noise alone makes)"
        ),
    ),
    Claim(
        id="image_pruning_80",
        statement="BackSlash keeps its accuracy at 80% pruning.",
        where="Abstract",
        metric=_pruning_metric(LABEL["image"]),
        paper_value="maintains accuracy",
        rule=Rule("<=", 1.0, partial=3.0),
        null=PRUNING_NULL,
        gate=SPARSE_GATE,
    ),
    Claim(
        id="text_pruning_80",
        statement="BackSlash keeps its accuracy at 80% pruning.",
        where="Abstract",
        metric=_pruning_metric(LABEL["text"]),
        paper_value="maintains accuracy",
        rule=Rule("<=", 1.0, partial=3.0),
        null=PRUNING_NULL,
        gate=SPARSE_GATE,
    ),
    Claim(
        id="image_pruning_80_vs_normal",
        statement="... where normal training loses accuracy.",
        where="Abstract",
        metric=f"drop(normal) - drop(BackSlash) at 80% per-tensor pruning, points, "
        f"{LABEL['image']}",
        paper_value="> 0",
        rule=Rule(">=", 1.0, partial=0.0),
        null=PRUNING_VS_NORMAL_NULL,
        gate=SPARSE_GATE,
    ),
    Claim(
        id="text_pruning_80_vs_normal",
        statement="... where normal training loses accuracy.",
        where="Abstract",
        metric=f"drop(normal) - drop(BackSlash) at 80% per-tensor pruning, points, {LABEL['text']}",
        paper_value="> 0",
        rule=Rule(">=", 1.0, partial=0.0),
        null=PRUNING_VS_NORMAL_NULL,
        gate=SPARSE_GATE,
    ),
    Claim(
        id="image_pruning_80_global_vs_normal",
        statement=GLOBAL_STATEMENT,
        where="our control (issue 24)",
        metric=f"drop(normal) - drop(BackSlash) at 80% global pruning, points, {LABEL['image']}",
        paper_value="not reported",
        rule=Rule(">=", 1.0, partial=0.0),
        kind="control",
    ),
    Claim(
        id="text_pruning_80_global_vs_normal",
        statement=GLOBAL_STATEMENT,
        where="our control (issue 24)",
        metric=f"drop(normal) - drop(BackSlash) at 80% global pruning, points, {LABEL['text']}",
        paper_value="not reported",
        rule=Rule(">=", 1.0, partial=0.0),
        kind="control",
    ),
    Claim(
        id="ablation_vs_l2",
        statement="The generalized-Gaussian prior beats a Gaussian prior (nu = 2, weight "
        "decay-like) at matched bits (reviewer's ablation).",
        where="Review discussion (brief)",
        metric="best test accuracy at the selected model's bits: estimated nu - nu = 2, "
        "points, image family",
        paper_value="not reported",
        rule=Rule(">=", 0.0, partial=-1.0),
        null=_ablation_null(2),
    ),
    Claim(
        id="ablation_vs_l1",
        statement="The generalized-Gaussian prior beats a Laplace prior (nu = 1, L1) at "
        "matched bits (reviewer's ablation).",
        where="Review discussion (brief)",
        metric="best test accuracy at the selected model's bits: estimated nu - nu = 1, "
        "points, image family",
        paper_value="not reported",
        rule=Rule(">=", 0.0, partial=-1.0),
        null=_ablation_null(1),
    ),
    *LM_CLAIMS,
)
