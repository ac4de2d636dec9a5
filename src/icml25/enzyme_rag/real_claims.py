"""Claims of the reproduction on real enzymes (issue 52, item 5): rules, null arms and gates.

Committed on their own, before any run on the real data judged them. The measurements come
from :mod:`icml25.enzyme_rag.experiments_real`; where the data or tools are absent (or the real
path is not selected for the budget), every measurement below is NaN and every claim is *out of
scale* by its gate, with a note saying why.

Activity proxy. Nothing offline predicts kcat or pLDDT, so the paper's activity comparisons are
measured as membership of the target's enzyme family: the HMMER3 bit score (pyhmmer) of a
sequence under a profile HMM built from a Clustal Omega alignment of the natural enzymes that
share an EC number with the held-out target, *leaving out the target's own enzymes* (so that
the natural enzymes are not scored against themselves and can serve as the ceiling). The
generator, classifier and guidance never see these profiles.
"""

from __future__ import annotations

from icml25.core.claims import Claim, Gate, Null, Rule

HMM = (
    "profile-HMM bit score under the target EC's natural enzymes (leave-target-out; no hit = 0 "
    "bits)"
)
PER_TARGET = (
    "mean over at most {{n_real_test}} held-out substrates (those whose EC has >= 2 other "
    "natural enzymes; samples averaged per target)"
)
RANDOM_ENZYME = "a generator that ignores its input and emits a random natural training enzyme"
UNAVAILABLE = "(NaN where the real data, the tools or the budget's real path are absent)"

NATURAL_BEATS_COPY = Gate(
    "the issue's gate: the target's natural enzymes minus the copied top retrieved enzyme, "
    f"{HMM}, 90% bootstrap low over targets > 0 (a perfect generator could not pass otherwise) "
    + UNAVAILABLE,
    Rule(">", 0.0),
)
REAL_COMPARED: dict[str, tuple[str, ...]] = {
    "real_full_vs_copy": ("full",),
    "real_full_vs_unconditional": ("full", "uncond"),
    "real_retrieval_gain": ("full",),
    "real_novelty": ("full",),
}
"""Per claim, the trained generators whose samples its measurement compares: each is gated on
the "generator learned" check (issue 66; the rule: :mod:`icml25.enzyme_rag.claims`)."""
REAL_PRECONDITIONS: dict[str, Gate] = {
    # the gates of issue 52, fixed before the runs that judged them
    "real_full_vs_copy": NATURAL_BEATS_COPY,
    "real_full_vs_unconditional": Gate(
        "ceiling: the target's natural enzymes minus a random natural training enzyme, "
        f"{HMM}, 90% bootstrap low > 0 " + UNAVAILABLE,
        Rule(">", 0.0),
    ),
    "real_retrieval_gain": Gate(
        "premise: copying the top retrieved enzyme minus a random natural training enzyme, "
        f"{HMM}, 90% bootstrap low > 0 " + UNAVAILABLE,
        Rule(">", 0.0),
    ),
}
"""The claims' own preconditions, kept inside their "generator learned" gate."""
REAL_LEARNED_RULE = Rule(">=", 0.5)
GENERATOR_NAMES = {"full": "full", "uncond": "unconditional"}


def real_learned_gate(claim_id: str) -> Gate:
    """The "generator learned" gate of a real-data claim: the lowest, over the generators of
    :data:`REAL_COMPARED`, of the mean HMM score of their samples / that of the targets'
    natural enzymes; NaN where the claim's own precondition fails."""
    who = REAL_COMPARED[claim_id]
    names = " and ".join(GENERATOR_NAMES[g] for g in who)
    plural = "s" if len(who) > 1 else ""
    check = (
        f"the {names} generator{plural} learned enzyme families: mean HMM score of the samples "
        "/ that of the target's natural enzymes"
        + (", the lower of the two" if plural else "")
        + " (NaN, failed, where the natural enzymes score <= 0 bits) "
        + UNAVAILABLE
    )
    own = REAL_PRECONDITIONS.get(claim_id)
    if own is not None:
        own_check = own.check.removesuffix(" " + UNAVAILABLE)
        check += f"; NaN where the claim's own precondition fails ({own_check})"
    return Gate(check, REAL_LEARNED_RULE)


REAL_CLAIMS = (
    Claim(
        id="real_full_vs_copy",
        statement="On real held-out substrates the generator beats copying the retrieved enzyme "
        "(activity proxy: the target EC's profile HMM).",
        where="Table 3 (kcat: SENZ 0.380 vs retrieved enzymes 0.351); real data of issue 52",
        metric=f"{PER_TARGET} of {HMM}: full - copy top-1; 90% bootstrap over targets, "
        "stratified by seed",
        paper_value="+0.029 log10 kcat",
        rule=Rule(">", 0.0),
        null=Null(arm=RANDOM_ENZYME + " (random enzyme - copy)"),
        gate=real_learned_gate("real_full_vs_copy"),
    ),
    Claim(
        id="real_full_vs_unconditional",
        statement="On real held-out substrates substrate-specified generation beats "
        "unconditional protein generation.",
        where="Tables 2-3 (vs ProtGPT2 / ProGen2); real data of issue 52",
        metric=f"{PER_TARGET} of {HMM}: full - an unconditional generator trained with equal "
        "steps (no rows, null molecule)",
        paper_value="higher",
        rule=Rule(">", 0.0),
        null=Null(
            arm="the same conditioned model given another held-out substrate's molecule and "
            "retrieved rows - unconditional"
        ),
        gate=real_learned_gate("real_full_vs_unconditional"),
    ),
    Claim(
        id="real_retrieval_gain",
        statement="Retrieved enzymes carry the gain: generating with the {{real_d}} retrieved "
        "rows beats generating from the molecule alone (no retrieval).",
        where="Fig. 2a (#retrieved 0 -> 1: the big gain); real data of issue 52",
        metric=f"{PER_TARGET} of {HMM}: full model with {{{{real_d}}}} retrieved rows - the same "
        "model with none (d = 0, molecule given)",
        paper_value="large gain",
        rule=Rule(">", 0.0),
        null=Null(
            arm="{{real_d}} random training enzymes as rows instead of the retrieved ones "
            "(random rows - d = 0)"
        ),
        gate=real_learned_gate("real_retrieval_gain"),
    ),
    Claim(
        id="real_novelty",
        statement="Generated enzymes for real held-out substrates are novel (not copies of "
        "training enzymes).",
        where="Table 3 (BLASTp identity to the nearest Swiss-Prot sequence)",
        metric="median over generated sequences of the highest BLASTp identity (hits covering "
        ">= half the sample) to any training enzyme",
        paper_value="novel",
        rule=Rule("<", 0.9),
        null=Null(arm="no generation: the copied top retrieved enzyme"),
        gate=real_learned_gate("real_novelty"),
    ),
    Claim(
        id="real_kcat",
        statement="Generated enzymes have higher catalytic activity (UniKP kcat) than the "
        "retrieved and the natural enzymes.",
        where="Table 3",
        metric="UniKP log10 kcat",
        paper_value="0.380 vs 0.351 / 0.363",
        rule=None,
        out_of_scale="no offline kcat predictor (UniKP needs ProtT5 and SMILES-transformer "
        "weights that do not ship here); the profile-HMM claims stand in",
    ),
    Claim(
        id="real_plddt",
        statement="Generated enzymes fold worse than the retrieved ones (ESMFold pLDDT).",
        where="Table 3 / Fig. 2b",
        metric="ESMFold pLDDT",
        paper_value="62.8 vs 85.9",
        rule=None,
        out_of_scale="no offline structure predictor (ESMFold weights do not ship here)",
    ),
    Claim(
        id="real_classifier_auc",
        statement="Check added here: the guidance classifier, trained on real training pairs "
        "(negatives: random non-pairs 1:1), separates held-out pairs from re-pairings.",
        where="App. A.1.2 (the paper reports no accuracy)",
        metric="ROC AUC on held-out (substrate, natural enzyme) pairs vs the same enzymes "
        "paired with another held-out substrate sharing none of their EC numbers; 90% "
        "bootstrap over pairs",
        paper_value="not reported",
        rule=Rule(">=", 0.7, partial=0.6),
        kind="control",
        null=Null(arm="the same classifier untrained"),
    ),
    Claim(
        id="real_split_tanimoto",
        statement="Check added here: the real zero-shot split holds (no training substrate at "
        "Morgan/Tanimoto >= 0.8 to a held-out one).",
        where="§4.1 split rule (molecules), threshold chosen here",
        metric="highest Tanimoto of a held-out substrate to a training substrate",
        paper_value="no shared molecule",
        rule=Rule("<", 0.8),
        kind="control",
    ),
)
"""The real-data claims, appended to the synthetic benchmark's in :mod:`.reproduce`."""
