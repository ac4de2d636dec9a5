"""Claims of the SENZ reproduction on the synthetic benchmark: rules, null arms and gates,
followed by the claims on real enzymes (:mod:`icml25.enzyme_rag.real_claims`).

Fixed before the first run; the null arms and gates of issue 48's audit were committed before
the runs that judge them (see ``NOTES.md`` for the commits). Effects are in units of the SD of
the natural test enzymes' activity under the hidden oracle
(:mod:`icml25.enzyme_rag.oracle`); the measurements come from
:mod:`icml25.enzyme_rag.experiments`.
"""

from __future__ import annotations

from icml25.core.claims import Claim, Gate, Null, Rule
from icml25.enzyme_rag.real_claims import REAL_CLAIMS

SD = "SD of natural test-enzyme activity"
# Gates and null arms (issue 48 / 52), fixed before the runs that judge them.
LEARNED = Gate(
    "the generator has learned the enzyme families: foldability proxy of its samples / that "
    "of the natural test enzymes (random sequences 0)",
    Rule(">=", 0.8),
)
NATURAL_BEATS_COPY = Gate(
    "ceiling: the target's natural enzymes minus copying the top retrieved enzyme, under the "
    "claim's rule (a perfect generator could not pass otherwise)"
)
RANDOM_ENZYME = "a generator that ignores its input and emits a random natural training enzyme"
CLAIMS = (
    Claim(
        id="full_vs_copy",
        statement="The generator beats copying the retrieved enzymes in catalytic activity on "
        "held-out substrates.",
        where="Table 3 (kcat: SENZ 0.380 vs retrieved enzymes 0.351)",
        metric="mean over the {{n_test}} held-out substrates of activity(full) - activity(copy "
        f"top-1), in {SD}",
        paper_value="+0.029 log10 kcat",
        rule=Rule(">=", 0.5, partial=0.0),
        null=Null(arm=RANDOM_ENZYME + " (random enzyme - copy)"),
        gate=NATURAL_BEATS_COPY,
    ),
    Claim(
        id="full_vs_copy_ci",
        statement="...with a bootstrap 95% CI above 0 (brief's pass rule).",
        where="Table 3 / brief",
        metric="2.5% bootstrap quantile (over the {{n_test}} held-out substrates) of full - copy, "
        f"in {SD}",
        paper_value="-",
        rule=Rule(">", 0.0),
        null=Null(arm=RANDOM_ENZYME + " (its 2.5% quantile against copy)"),
        gate=NATURAL_BEATS_COPY,
    ),
    Claim(
        id="full_vs_noguidance",
        statement="Classifier guidance raises activity: without it the generator falls back.",
        where="Fig. 2 ablation (without guidance kcat ~ retrieved enzymes)",
        metric=f"mean activity(full) - activity(model trained without guidance), in {SD}",
        paper_value="higher with guidance",
        rule=Rule(">=", 0.5, partial=0.0),
        null=Null(
            arm="content-free guidance: a model guided by a frozen untrained classifier (same "
            "steps, same seed) minus the unguided model"
        ),
        gate=Gate("the guidance classifier's held-out ROC AUC", Rule(">=", 0.7)),
    ),
    Claim(
        id="full_vs_noguidance_ci",
        statement="...with a bootstrap 95% CI above 0.",
        where="Fig. 2 / brief",
        metric=f"2.5% bootstrap quantile of full - no guidance, in {SD}",
        paper_value="-",
        rule=Rule(">", 0.0),
        null=Null(arm="content-free guidance (untrained classifier) - no guidance, 2.5% quantile"),
        gate=Gate("the guidance classifier's held-out ROC AUC", Rule(">=", 0.7)),
    ),
    Claim(
        id="noguidance_near_retrieved",
        statement="Without guidance, activity is about that of the retrieved enzymes.",
        where="Fig. 2 ablation",
        metric=f"|activity(no guidance) - activity(copy top-1)|, in {SD}",
        paper_value="about equal",
        rule=Rule("<=", 0.25, partial=0.5),
        null=Null(
            arm="no retrieval: the unconditional generator trained with equal steps, "
            "|uncond - copy|"
        ),
        gate=LEARNED,
    ),
    Claim(
        id="retrieval_vs_random",
        statement="Retrieving enzymes of Tanimoto-similar substrates beats random retrieval.",
        where="§3.1 (premise of the retrieval) / brief",
        metric=f"2.5% bootstrap quantile of full - (same model, random rows), in {SD}",
        paper_value="-",
        rule=Rule(">", 0.0),
        null=Null(arm="a second random retrieval in place of the Tanimoto one (random - random)"),
        gate=Gate(
            "the premise holds in the benchmark: copying the top retrieved enzyme minus a random "
            "training enzyme, 2.5% quantile (claim's rule)"
        ),
    ),
    Claim(
        id="full_vs_unconditional",
        statement="Substrate-specified generation beats unconditional protein generation.",
        where="Table 2-3 (vs ProtGPT2 / ProGen2)",
        metric=f"mean activity(full) - activity(unconditional model trained with equal steps: "
        f"no rows, null molecule), in {SD}",
        paper_value="higher",
        rule=Rule(">=", 0.5, partial=0.0),
        null=Null(
            arm="the same conditioned model given another held-out substrate's molecule and "
            "retrieved rows (conditioning without the target's information) - unconditional"
        ),
        gate=Gate(
            "ceiling: the target's natural enzymes minus a random natural training enzyme (a "
            "perfect conditional vs a perfect unconditional generator), claim's rule"
        ),
    ),
    Claim(
        id="full_vs_natural",
        statement="Generated enzymes reach the activity of the natural enzymes of the target.",
        where="Table 3 (kcat: SENZ 0.380 vs natural test enzymes 0.363)",
        metric=f"mean activity(full) - mean activity(natural test enzymes), in {SD}",
        paper_value="+0.017 log10 kcat",
        rule=Rule(">=", 0.0, partial=-0.5),
        null=Null(arm=RANDOM_ENZYME + " (random enzyme - natural)"),
        gate=LEARNED,
    ),
    Claim(
        id="fold_below_retrieved",
        statement="Generated enzymes fold worse than the retrieved natural enzymes.",
        where="Table 3 (pLDDT: SENZ 62.8 vs retrieved 85.9)",
        metric="mean foldability proxy(full) - foldability(copy top-1), in [0, 1] units",
        paper_value="-23.1 pLDDT",
        rule=Rule("<", 0.0),
        null=Null(arm=RANDOM_ENZYME + " (no generation: random natural enzyme - copy)"),
        gate=LEARNED,
    ),
    Claim(
        id="sweep_gain_0_to_1",
        statement="The big gain comes from retrieving one enzyme instead of none.",
        where="Fig. 2a (#retrieved 0 -> 1)",
        metric=f"mean activity(d=1) - activity(d=0) (same model, molecule given), in {SD}",
        paper_value="large gain",
        rule=Rule(">=", 0.5, partial=0.0),
        null=Null(arm="one random row instead of the retrieved one (random d=1 - d=0)"),
        gate=Gate(
            "ceiling: copying the one retrieved enzyme minus a random training enzyme, in SD "
            "(claim's rule)"
        ),
    ),
    Claim(
        id="sweep_more_activity",
        statement="More retrieved enzymes give higher activity.",
        where="Fig. 2a",
        metric="mean activity(d={{d_max}}, the largest depth) - activity(d=1), in " + SD,
        paper_value="increasing",
        rule=Rule(">", 0.0),
        null=Null(arm="random rows at both depths (random d={{d_max}} - random d=1)"),
        gate=Gate(
            "pooling more retrieved rows can help: activity of the column consensus of the "
            "{{d_max}} retrieved rows minus copy top-1, in SD (claim's rule)"
        ),
    ),
    Claim(
        id="sweep_less_foldable",
        statement="More retrieved enzymes give lower foldability (pLDDT).",
        where="Fig. 2b",
        metric="mean foldability(d={{d_max}}, the largest depth) - foldability(d=1)",
        paper_value="decreasing",
        rule=Rule("<", 0.0),
        null=Null(arm="random rows at both depths (random d={{d_max}} - random d=1)"),
        gate=Gate(
            "the benchmark has the mechanism: foldability of the column consensus of the "
            "{{d_max}} retrieved rows minus copy top-1 (claim's rule)"
        ),
    ),
    Claim(
        id="novelty",
        statement="Generated enzymes are novel (not copies of training enzymes).",
        where="Table 3 (identity to nearest Swiss-Prot) / brief",
        metric="median over generated sequences of max identity to any training enzyme",
        paper_value="novel",
        rule=Rule("<", 0.9),
        null=Null(arm="no generation: the copied top retrieved enzyme"),
        gate=LEARNED,
    ),
    Claim(
        id="classifier_auc",
        statement="Check added here: the frozen guidance classifier separates true pairs from "
        "shuffled pairs on held-out substrates (the paper reports no accuracy).",
        where="App. A.1.2 (ICLR reviewers asked for it)",
        metric="ROC AUC on held-out (substrate, natural enzyme) pairs vs random re-pairings",
        paper_value="not reported",
        rule=Rule(">=", 0.7, partial=0.6),
        kind="control",
        null=Null(arm="the same classifier untrained"),
    ),
    Claim(
        id="split_identity",
        statement="Check added here: the zero-shot split holds (test enzymes < 30% identical "
        "to any training enzyme).",
        where="§4.1 split rule",
        metric="max identity of a test enzyme to a training enzyme",
        paper_value="< 0.3",
        rule=Rule("<", 0.3),
        kind="control",
    ),
    Claim(
        id="oracle_sanity",
        statement="Check added here: the oracle rates natural test enzymes far above random "
        "sequences.",
        where="synthetic benchmark",
        metric=f"mean activity(natural test enzymes) - activity(uniform random sequences), in {SD}",
        paper_value="-",
        rule=Rule(">=", 2.0),
        kind="control",
    ),
    *REAL_CLAIMS,
)
