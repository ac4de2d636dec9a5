"""Reproduction of SENZ (retrieval-augmented zero-shot enzyme generation) at laptop scale.

Real chemistry (RDKit Morgan fingerprints and functional groups of real NCI molecules), real
model and training (axial OADM generator, classifier, Gumbel-softmax guidance); synthetic
enzymes and a hidden activity oracle (:mod:`icml25.enzyme_rag.oracle`) that the training code
never imports. Zero-shot split: held-out substrates, test enzymes < 30% identical to training.

Arms on every held-out substrate: copy the top-1 retrieved enzyme; the full model
(Tanimoto retrieval, guidance); the same model with random retrieval; the same model
unconditional (no rows, null molecule); a second model trained without guidance; and a sweep
of the number of retrieved rows d. Claims and rules were fixed before the first run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.core.claims import Claim, Gate, Measurement, Null, Rule, gate_key, null_key
from icml25.core.runner import RunContext
from icml25.enzyme_rag.chem import molecule_features
from icml25.enzyme_rag.metrics import diversity, max_identity
from icml25.enzyme_rag.model import AxialMSADiffusion, EnzymeSubstrateClassifier, sample_oadm
from icml25.enzyme_rag.real import REAL_CONFIGS, real_measurements
from icml25.enzyme_rag.real_claims import REAL_CLAIMS
from icml25.enzyme_rag.retrieval import SubstrateRetriever
from icml25.enzyme_rag.synthetic import Benchmark, make_benchmark
from icml25.enzyme_rag.training import retrieval_table, train_classifier, train_generator

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


@dataclass(frozen=True)
class Config:
    n_train: int
    n_test: int
    length: int
    dim: int
    layers: int
    gen_steps: int
    clf_steps: int
    batch: int
    samples: int
    """Sequences generated per held-out substrate (paper: 10)."""
    depths: tuple[int, ...]
    """Training depths and the sweep; the main arms use the largest."""
    positions_per_step: int
    """Positions unmasked per sampling step (the paper's k, with k T = L)."""


CONFIGS = {
    "tiny": Config(40, 8, 24, 16, 1, 15, 15, 8, 2, (0, 1, 2), 4),
    "quick": Config(300, 20, 40, 32, 1, 100, 100, 16, 3, (0, 1, 3, 7), 4),
    "full": Config(800, 80, 40, 32, 2, 2500, 600, 16, 10, (0, 1, 3, 7), 4),
}
LR = 5e-3
NULL_MOL_PROB = 0.1
BOOT = 2000


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them."""
    cfg = CONFIGS[budget]
    real = REAL_CONFIGS[budget]
    return {
        "n_test": cfg.n_test,
        "d_max": max(cfg.depths),
        "n_real_test": real.n_test,
        "real_d": real.d,
    }


def _per_target(values: np.ndarray, n_targets: int, samples: int) -> np.ndarray:
    return values.reshape(n_targets, samples).mean(axis=1)


def _boot_low(diff: np.ndarray, seed: int) -> float:
    rng = np.random.default_rng(seed)
    idx = rng.integers(len(diff), size=(BOOT, len(diff)))
    return float(np.quantile(diff[idx].mean(axis=1), 0.025))


def _auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """Mann-Whitney AUC (ties count half)."""
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


def _train_generator(
    cfg: Config,
    seed: int,
    bench: Benchmark,
    mol_train: np.ndarray,
    contexts: np.ndarray,
    *,
    classifier: EnzymeSubstrateClassifier | None,
    unconditional: bool = False,
) -> AxialMSADiffusion:
    torch.manual_seed(seed)
    model = AxialMSADiffusion(
        mol_dim=mol_train.shape[1], dim=cfg.dim, heads=4, layers=cfg.layers, max_length=cfg.length
    )
    train_generator(
        model,
        sequences=bench.sequences,
        mol_features=mol_train,
        pairs=bench.pairs,
        contexts=contexts,
        depths=(0,) if unconditional else cfg.depths,
        classifier=classifier,
        guidance_weight=0.0 if classifier is None else 1.0,
        null_mol_prob=1.0 if unconditional else NULL_MOL_PROB,
        steps=cfg.gen_steps,
        batch_size=cfg.batch,
        lr=LR,
        seed=seed,
    )
    return model


def _consensus(rows: np.ndarray) -> np.ndarray:
    """Column-wise most frequent residue of each target's rows ``(n, d, L) -> (n, L)``."""
    counts = (rows[..., None] == np.arange(20)).sum(axis=1)  # (n, L, 20)
    return counts.argmax(axis=2)


def _run_seed(cfg: Config, seed: int, ctx: RunContext) -> dict[str, Any]:
    ctx.progress(f"seed {seed}: benchmark ({cfg.n_train} train / {cfg.n_test} held-out substrates)")
    bench: Benchmark = make_benchmark(
        n_train=cfg.n_train, n_test=cfg.n_test, length=cfg.length, seed=seed
    )
    oracle = bench.oracle
    s_train = len(bench.train_smiles)
    enz_of = [bench.pairs[bench.pairs[:, 0] == s, 1] for s in range(s_train)]
    retriever = SubstrateRetriever().fit(bench.train_smiles, enz_of)
    d_max = max(cfg.depths)
    sim_train = retriever.similarity(bench.train_smiles)
    contexts = retrieval_table(retriever, d=max(d_max, 1), similarity=sim_train)
    mol_train = molecule_features(bench.train_smiles)
    mol_test = molecule_features(bench.test_smiles)

    ctx.progress(f"seed {seed}: classifier ({cfg.clf_steps} steps)")
    torch.manual_seed(seed)
    clf = EnzymeSubstrateClassifier(length=cfg.length, mol_dim=mol_train.shape[1])
    train_classifier(
        clf,
        sequences=bench.sequences,
        mol_features=mol_train,
        pairs=bench.pairs,
        steps=cfg.clf_steps,
        batch_size=128,
        lr=LR,
        seed=seed,
    )
    # content-free guidance (null arm): the same architecture, untrained, frozen
    torch.manual_seed(seed + 7)
    clf0 = EnzymeSubstrateClassifier(length=cfg.length, mol_dim=mol_train.shape[1]).eval()
    for prm in clf0.parameters():
        prm.requires_grad_(False)

    models = {}
    for name, c in (("full", clf), ("noguide", None), ("nullguide", clf0)):
        ctx.progress(f"seed {seed}: generator '{name}' ({cfg.gen_steps} steps)")
        models[name] = _train_generator(cfg, seed, bench, mol_train, contexts, classifier=c)
    ctx.progress(f"seed {seed}: unconditional generator ({cfg.gen_steps} steps)")
    models["uncond"] = _train_generator(
        cfg, seed, bench, mol_train, contexts, classifier=None, unconditional=True
    )

    # ---- held-out substrates: retrieval and arms
    n_t, k = cfg.n_test, cfg.samples
    sim_test = retriever.similarity(bench.test_smiles)
    ranked = np.stack(
        [
            retriever.retrieve(s, d=max(d_max, 1), similarity=sim_test[i]).enzymes
            for i, s in enumerate(bench.test_smiles)
        ]
    )
    rng = np.random.default_rng(seed + 1000)
    n_seq = len(bench.sequences)
    random_rows = rng.integers(n_seq, size=(n_t, max(d_max, 1)))
    random_rows2 = rng.integers(n_seq, size=(n_t, max(d_max, 1)))
    shift = rng.integers(1, n_t)  # a derangement: target i gets target (i + shift)'s inputs
    other = (np.arange(n_t) + shift) % n_t
    seqs = torch.as_tensor(bench.sequences)
    groups_rep = np.repeat(bench.test_groups, k, axis=0)

    def sample(
        model: AxialMSADiffusion, rows: np.ndarray | None, mol: np.ndarray | None, tag: int
    ) -> np.ndarray:
        ctx_t = None
        if rows is not None and rows.shape[1] > 0:
            ctx_t = seqs[torch.as_tensor(np.repeat(rows, k, axis=0))]
        mol_t = None if mol is None else torch.as_tensor(np.repeat(mol, k, axis=0))
        gen = torch.Generator().manual_seed(seed * 100 + tag)
        out = sample_oadm(
            model,
            length=cfg.length,
            n=n_t * k,
            context=ctx_t,
            mol=mol_t,
            generator=gen,
            positions_per_step=cfg.positions_per_step,
        )
        assert isinstance(out, torch.Tensor)
        return out.numpy()

    arms: dict[str, np.ndarray] = {}
    ctx.progress(f"seed {seed}: sampling {n_t} x {k} sequences per arm")
    full = models["full"]
    arms["full"] = sample(full, ranked[:, :d_max], mol_test, 1)
    arms["noguide"] = sample(models["noguide"], ranked[:, :d_max], mol_test, 2)
    arms["nullguide"] = sample(models["nullguide"], ranked[:, :d_max], mol_test, 5)
    arms["random"] = sample(full, random_rows[:, :d_max], mol_test, 3)
    arms["random2"] = sample(full, random_rows2[:, :d_max], mol_test, 6)
    arms["random_d1"] = sample(full, random_rows[:, :1], mol_test, 7)
    arms["other_target"] = sample(full, ranked[other, :d_max], mol_test[other], 8)
    arms["uncond"] = sample(models["uncond"], None, None, 4)
    sweep = {d_max: arms["full"]}
    for i, d in enumerate(cfg.depths):
        if d != d_max:
            sweep[d] = sample(full, ranked[:, :d] if d else None, mol_test, 10 + i)

    def act(tokens: np.ndarray, groups: np.ndarray, per: int) -> np.ndarray:
        return oracle.activity(tokens, groups).reshape(n_t, per).mean(axis=1)

    def fold(tokens: np.ndarray, per: int) -> np.ndarray:
        return oracle.foldability(tokens).reshape(n_t, per).mean(axis=1)

    copy = bench.sequences[ranked[:, 0]]
    rand_enz = bench.sequences[rng.integers(n_seq, size=n_t * k)]  # k random enzymes per target
    consensus = _consensus(bench.sequences[ranked[:, :d_max]])
    nat_each = oracle.activity(bench.test_sequences, bench.test_groups[bench.test_pairs[:, 0]])
    sd_nat = float(nat_each.std(ddof=1))
    nat = np.array([nat_each[bench.test_pairs[:, 0] == s].mean() for s in range(n_t)])
    fold_nat = float(oracle.foldability(bench.test_sequences).mean())
    a = {name: act(x, groups_rep, k) for name, x in arms.items()}
    a["copy"] = act(copy, bench.test_groups, 1)
    a["random_enzyme"] = act(rand_enz, groups_rep, k)
    a["consensus"] = act(consensus, bench.test_groups, 1)
    a["natural"] = nat
    f = {name: fold(x, k) for name, x in arms.items()}
    f["copy"] = fold(copy, 1)
    f["random_enzyme"] = fold(rand_enz, k)
    f["consensus"] = fold(consensus, 1)
    sweep_act = {d: act(x, groups_rep, k) for d, x in sweep.items()}
    sweep_fold = {d: fold(x, k) for d, x in sweep.items()}
    rand_seq = rng.integers(20, size=(n_t * k, cfg.length))
    a["random_seq"] = act(rand_seq, groups_rep, k)

    # classifier AUC on held-out substrates: natural pairs vs the same enzymes re-paired
    tp = bench.test_pairs
    shuffled = rng.permutation(tp[:, 0])
    same = bench.test_groups[tp[:, 0]] == bench.test_groups[shuffled]
    keep = ~same.all(axis=1)  # re-pairings with identical pocket requirements are not negatives
    aucs = {}
    with torch.no_grad():
        x_t = torch.as_tensor(bench.test_sequences[tp[:, 1]])
        for name, c in (("trained", clf), ("untrained", clf0)):
            pos = c(x_t, torch.as_tensor(mol_test[tp[:, 0]])).numpy()
            neg = c(x_t, torch.as_tensor(mol_test[shuffled])).numpy()
            aucs[name] = _auc(pos, neg[keep])

    novelty = max_identity(arms["full"], bench.sequences)
    div = (
        float(np.mean([diversity(arms["full"][i * k : (i + 1) * k]) for i in range(n_t)]))
        if k >= 2
        else float("nan")
    )
    std = lambda x: x / sd_nat  # noqa: E731
    has01 = 0 in sweep_act and 1 in sweep_act
    return {
        "sd_nat": sd_nat,
        "act": {n: float(v.mean()) for n, v in a.items()},
        "fold": {n: float(v.mean()) for n, v in f.items()} | {"natural": fold_nat},
        "sweep_act": {d: float(v.mean()) for d, v in sweep_act.items()},
        "sweep_fold": {d: float(v.mean()) for d, v in sweep_fold.items()},
        "diff": {
            "copy": std(a["full"] - a["copy"]),
            "random_enzyme_copy": std(a["random_enzyme"] - a["copy"]),
            "natural_copy": std(a["natural"] - a["copy"]),
            "copy_random_enzyme": std(a["copy"] - a["random_enzyme"]),
            "noguide": std(a["full"] - a["noguide"]),
            "nullguide": std(a["nullguide"] - a["noguide"]),
            "noguide_copy": std(a["noguide"] - a["copy"]),
            "uncond_copy": std(a["uncond"] - a["copy"]),
            "random": std(a["full"] - a["random"]),
            "random2": std(a["random2"] - a["random"]),
            "uncond": std(a["full"] - a["uncond"]),
            "other_uncond": std(a["other_target"] - a["uncond"]),
            "natural_random_enzyme": std(a["natural"] - a["random_enzyme"]),
            "natural": std(a["full"] - a["natural"]),
            "random_enzyme_natural": std(a["random_enzyme"] - a["natural"]),
            "sweep01": std(sweep_act[1] - sweep_act[0]) if has01 else np.full(n_t, np.nan),
            "sweep01_null": std(a["random_d1"] - sweep_act[0]) if has01 else np.full(n_t, np.nan),
            "sweep_more": std(sweep_act[d_max] - sweep_act[1]),
            "sweep_more_null": std(a["random"] - a["random_d1"]),
            "consensus_copy": std(a["consensus"] - a["copy"]),
            "oracle": std(a["natural"] - a["random_seq"]),
        },
        "fold_diff": f["full"] - f["copy"],
        "fold_diff_null": f["random_enzyme"] - f["copy"],
        "fold_more": sweep_fold[d_max] - sweep_fold[1],
        "fold_more_null": f["random"] - f["random_d1"],
        "fold_consensus": f["consensus"] - f["copy"],
        "learned": {n: float(f[n].mean()) / fold_nat for n in ("full", "noguide")},
        "auc": aucs["trained"],
        "auc_null": aucs["untrained"],
        "split_identity": bench.split_identity,
        "novelty": float(np.median(novelty)),
        "novelty_null": float(np.median(max_identity(copy, bench.sequences))),
        "diversity": div,
        "d_max": d_max,
        "seed": seed,
    }


def _figures(ctx: RunContext, runs: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = runs[0]
    names = ["random_seq", "uncond", "copy", "random", "noguide", "full", "natural"]
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    vals = [r["act"][n] for n in names]
    ax[0].bar(range(len(names)), vals, color="tab:blue")
    ax[0].set_xticks(range(len(names)), names, rotation=30)
    ax[0].set_ylabel("oracle activity (held-out substrates)")
    ax[0].set_title(f"arms, seed {r['seed']}")
    ds = sorted(r["sweep_act"])
    ax[1].plot(ds, [r["sweep_act"][d] for d in ds], "o-", label="activity")
    ax[1].plot(ds, [r["sweep_fold"][d] for d in ds], "s--", label="foldability proxy")
    ax[1].set_xlabel("retrieved enzymes d")
    ax[1].legend()
    ax[1].set_title("sweep of d (full model)")
    ctx.save_figure(fig, "enzyme_rag_arms")


def reproduce(ctx: RunContext) -> dict[str, Any]:
    cfg = CONFIGS[ctx.budget]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small tensors: one thread wastes the least CPU
    try:
        runs = [_run_seed(cfg, s, ctx) for s in ctx.seeds]
    finally:
        torch.set_num_threads(threads)

    def per_seed(get: Any) -> list[float]:
        return [float(get(r)) for r in runs]

    def mean_of(key: str) -> list[float]:
        return per_seed(lambda r: r["diff"][key].mean())

    def low_of(key: str, offset: int) -> list[float]:
        return per_seed(lambda r: _boot_low(r["diff"][key], r["seed"] + offset))

    learned_full = Measurement.of(per_seed(lambda r: r["learned"]["full"]))
    out: dict[str, Any] = {
        # t intervals over seeds (>= 3 seeds in quick and full; the tiny smoke test has one)
        "full_vs_copy": mean_of("copy"),
        null_key("full_vs_copy"): mean_of("random_enzyme_copy"),
        gate_key("full_vs_copy"): mean_of("natural_copy"),
        "full_vs_copy_ci": low_of("copy", 0),
        null_key("full_vs_copy_ci"): low_of("random_enzyme_copy", 0),
        gate_key("full_vs_copy_ci"): low_of("natural_copy", 0),
        "full_vs_noguidance": mean_of("noguide"),
        null_key("full_vs_noguidance"): mean_of("nullguide"),
        gate_key("full_vs_noguidance"): per_seed(lambda r: r["auc"]),
        "full_vs_noguidance_ci": low_of("noguide", 1),
        null_key("full_vs_noguidance_ci"): low_of("nullguide", 1),
        gate_key("full_vs_noguidance_ci"): per_seed(lambda r: r["auc"]),
        "noguidance_near_retrieved": per_seed(lambda r: abs(r["diff"]["noguide_copy"].mean())),
        null_key("noguidance_near_retrieved"): per_seed(
            lambda r: abs(r["diff"]["uncond_copy"].mean())
        ),
        gate_key("noguidance_near_retrieved"): per_seed(lambda r: r["learned"]["noguide"]),
        "retrieval_vs_random": low_of("random", 2),
        null_key("retrieval_vs_random"): low_of("random2", 2),
        gate_key("retrieval_vs_random"): low_of("copy_random_enzyme", 2),
        "full_vs_unconditional": mean_of("uncond"),
        null_key("full_vs_unconditional"): mean_of("other_uncond"),
        gate_key("full_vs_unconditional"): mean_of("natural_random_enzyme"),
        "full_vs_natural": mean_of("natural"),
        null_key("full_vs_natural"): mean_of("random_enzyme_natural"),
        gate_key("full_vs_natural"): learned_full,
        "fold_below_retrieved": per_seed(lambda r: r["fold_diff"].mean()),
        null_key("fold_below_retrieved"): per_seed(lambda r: r["fold_diff_null"].mean()),
        gate_key("fold_below_retrieved"): learned_full,
        "sweep_gain_0_to_1": mean_of("sweep01"),
        null_key("sweep_gain_0_to_1"): mean_of("sweep01_null"),
        gate_key("sweep_gain_0_to_1"): mean_of("copy_random_enzyme"),
        "sweep_more_activity": mean_of("sweep_more"),
        null_key("sweep_more_activity"): mean_of("sweep_more_null"),
        gate_key("sweep_more_activity"): mean_of("consensus_copy"),
        "sweep_less_foldable": per_seed(lambda r: r["fold_more"].mean()),
        null_key("sweep_less_foldable"): per_seed(lambda r: r["fold_more_null"].mean()),
        gate_key("sweep_less_foldable"): per_seed(lambda r: r["fold_consensus"].mean()),
        "novelty": per_seed(lambda r: r["novelty"]),
        null_key("novelty"): per_seed(lambda r: r["novelty_null"]),
        gate_key("novelty"): learned_full,
        "classifier_auc": per_seed(lambda r: r["auc"]),
        null_key("classifier_auc"): per_seed(lambda r: r["auc_null"]),
        "split_identity": Measurement.exact(max(r["split_identity"] for r in runs)),
        "oracle_sanity": mean_of("oracle"),
    }
    for r in runs:
        s = r["seed"]
        se = {k: round(float(v.std(ddof=1) / np.sqrt(len(v))), 3) for k, v in r["diff"].items()}
        ctx.note(
            f"seed {s}: SD of natural activity {r['sd_nat']:.3f}; mean activity "
            + ", ".join(f"{n} {v:.3f}" for n, v in r["act"].items())
            + "; foldability "
            + ", ".join(f"{n} {v:.3f}" for n, v in r["fold"].items())
            + f"; sweep d -> activity {r['sweep_act']}, foldability {r['sweep_fold']}"
            + f"; standard errors (SD units) of the paired differences: {se}"
            + f"; classifier AUC {r['auc']:.3f} (untrained {r['auc_null']:.3f})"
            + f"; diversity within a target {r['diversity']:.3f}; d_max {r['d_max']}"
        )
    _figures(ctx, runs)
    out.update(real_measurements(ctx, REAL_CONFIGS[ctx.budget]))
    return out
