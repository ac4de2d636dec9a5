"""The synthetic benchmark of the SENZ reproduction: its budgets, the models and arms of one
seed, and their statistics. :mod:`icml25.enzyme_rag.reproduce` holds the protocol;
:mod:`icml25.enzyme_rag.experiments_real` is the part on real enzymes.

- :class:`Budget` and :data:`BUDGETS`: the sizes of the ``tiny``, ``quick`` and ``full`` runs;
- :func:`synthetic_seed`: one seed end to end: the benchmark (:func:`make_benchmark`: real
  molecules, synthetic enzymes, a hidden oracle), the retriever, the guidance classifier and
  an untrained one (content-free guidance), four generators (full, no guidance, content-free
  guidance, unconditional), every arm sampled on the held-out substrates and scored by the
  oracle (per target, in SD units of the natural test enzymes' activity);
- :func:`boot_low`: the 2.5% bootstrap quantile of a mean over held-out substrates;
- :func:`learned_gates`: the "generator learned" gate of every claim that compares generator
  outputs (synthetic and real), with each claim's own precondition inside it;
- :func:`seed_note`: the report's line of one seed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.core.claims import Claim, Measurement, gate_key
from icml25.core.runner import RunContext
from icml25.enzyme_rag.chem import molecule_features
from icml25.enzyme_rag.claims import precondition_rule
from icml25.enzyme_rag.metrics import diversity, max_identity
from icml25.enzyme_rag.model import AxialMSADiffusion, EnzymeSubstrateClassifier, sample_oadm
from icml25.enzyme_rag.retrieval import SubstrateRetriever
from icml25.enzyme_rag.synthetic import Benchmark, make_benchmark
from icml25.enzyme_rag.training import retrieval_table, train_classifier, train_generator


@dataclass(frozen=True, kw_only=True)
class Budget:
    """The sizes of the synthetic benchmark's run (the real-data part's are
    :data:`~icml25.enzyme_rag.experiments_real.REAL_CONFIGS`)."""

    n_train: int  # training substrates of the benchmark
    n_test: int  # held-out substrates (zero-shot: new molecules, new enzyme families)
    length: int  # residues of an enzyme (columns of the benchmark's global alignment)
    dim: int  # generator width
    layers: int  # axial blocks of the generator
    gen_steps: int  # training steps of each of the four generators
    clf_steps: int  # training steps of the guidance classifier
    batch: int  # generator batch (training pairs a step)
    samples: int
    """Sequences generated per held-out substrate (paper: 10)."""
    depths: tuple[int, ...]
    """Training depths and the sweep; the main arms use the largest."""
    positions_per_step: int
    """Positions unmasked per sampling step (the paper's k, with k T = L)."""


BUDGETS = {
    "tiny": Budget(
        n_train=40, n_test=8, length=24, dim=16, layers=1, gen_steps=15, clf_steps=15,
        batch=8, samples=2, depths=(0, 1, 2), positions_per_step=4,
    ),
    "quick": Budget(
        n_train=300, n_test=20, length=40, dim=32, layers=1, gen_steps=100, clf_steps=100,
        batch=16, samples=3, depths=(0, 1, 3, 7), positions_per_step=4,
    ),
    "full": Budget(
        n_train=800, n_test=80, length=40, dim=32, layers=2, gen_steps=2500, clf_steps=600,
        batch=16, samples=10, depths=(0, 1, 3, 7), positions_per_step=4,
    ),
}  # fmt: skip
LR = 5e-3
NULL_MOL_PROB = 0.1
BOOT = 2000


def _per_target(values: np.ndarray, n_targets: int, samples: int) -> np.ndarray:
    return values.reshape(n_targets, samples).mean(axis=1)


def boot_low(diff: np.ndarray, seed: int) -> float:
    rng = np.random.default_rng(seed)
    idx = rng.integers(len(diff), size=(BOOT, len(diff)))
    return float(np.quantile(diff[idx].mean(axis=1), 0.025))


def learned_gates(
    claims: Sequence[Claim],
    compared: Mapping[str, tuple[str, ...]],
    learned: Mapping[str, Measurement],
    own: Mapping[str, Measurement],
) -> tuple[dict[str, Measurement], str]:
    """The "generator learned" gate (issue 66, :mod:`icml25.enzyme_rag.claims`) of each claim of
    ``claims`` in ``compared`` (claim id -> the generators its measurement compares): per seed,
    the lowest learned ratio of those generators (``learned``: one measurement per generator
    name, all with the same number of values), NaN where the
    claim's own precondition (``own[claim id]``, read on its mean as a gate is) fails; and a
    note giving both values of every gate."""
    gates: dict[str, Measurement] = {}
    shown = []
    for c in claims:
        who, grule = compared.get(c.id), c.gate_rule
        if who is None or grule is None:
            continue
        per = [learned[g] for g in who]
        values = np.min(np.array([m.values for m in per], dtype=float), axis=0)  # NaN stays NaN
        text = f"{c.id}: learned {float(values.mean()):.3g} ({grule.op} {grule.threshold:g})"
        rule = precondition_rule(c)
        if rule is not None:
            mean = own[c.id].mean
            holds = math.isfinite(mean) and rule.holds(mean)
            text += f", own precondition {mean:.3g} ({rule.op} {rule.threshold:g}: "
            text += "holds)" if holds else "fails: gate NaN)"
            if not holds:
                values = np.full_like(values, np.nan)
        exact = all(
            m.given_interval is not None and m.given_interval.method == "exact" for m in per
        )
        vals = [float(v) for v in values]
        gates[gate_key(c.id)] = Measurement.exact(vals) if exact else Measurement.of(vals)
        shown.append(text)
    return gates, "generator-learned gates (issue 66): " + "; ".join(shown)


def _auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """Mann-Whitney AUC (ties count half)."""
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


def _train_generator(
    cfg: Budget,
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


def synthetic_seed(cfg: Budget, seed: int, ctx: RunContext) -> dict[str, Any]:
    """One seed of the synthetic benchmark: per held-out substrate, the mean oracle activity
    and foldability of every arm and the paired differences (``diff``, in SD units), the
    classifier's AUC (trained and untrained), novelty, diversity and the split's identity."""
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
        return out.cpu().numpy()

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
            pos = c(x_t, torch.as_tensor(mol_test[tp[:, 0]])).cpu().numpy()
            neg = c(x_t, torch.as_tensor(mol_test[shuffled])).cpu().numpy()
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
        "learned": {n: float(f[n].mean()) / fold_nat for n in ("full", "noguide", "uncond")},
        "auc": aucs["trained"],
        "auc_null": aucs["untrained"],
        "split_identity": bench.split_identity,
        "novelty": float(np.median(novelty)),
        "novelty_null": float(np.median(max_identity(copy, bench.sequences))),
        "diversity": div,
        "d_max": d_max,
        "seed": seed,
    }


def seed_note(r: dict[str, Any]) -> str:
    """The report's line of one seed: mean activity and foldability per arm, the sweep, the
    standard errors of the paired differences, the classifier's AUC and the diversity."""
    s = r["seed"]
    se = {k: round(float(v.std(ddof=1) / np.sqrt(len(v))), 3) for k, v in r["diff"].items()}
    return (
        f"seed {s}: SD of natural activity {r['sd_nat']:.3f}; mean activity "
        + ", ".join(f"{n} {v:.3f}" for n, v in r["act"].items())
        + "; foldability "
        + ", ".join(f"{n} {v:.3f}" for n, v in r["fold"].items())
        + f"; sweep d -> activity {r['sweep_act']}, foldability {r['sweep_fold']}"
        + f"; standard errors (SD units) of the paired differences: {se}"
        + f"; classifier AUC {r['auc']:.3f} (untrained {r['auc_null']:.3f})"
        + f"; diversity within a target {r['diversity']:.3f}; d_max {r['d_max']}"
    )
