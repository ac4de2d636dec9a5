"""The arms of LLMScan's reproduction, one seed at a time: draw the task's sets, implant the
two models, read their answers (labels and gates), scan the prompts a protocol uses, and fit
and score the detectors with their baselines and null arms. :mod:`icml25.llmscan.reproduce`
holds the protocol (its docstring) and puts these together.

- **Budget**: :class:`Budget` and ``BUDGETS``.
- **One seed**, in the order the reproduction calls them: :func:`draw_sets` (the items
  and fine-tuning data), :func:`implant` (the lie model and the backdoored model),
  :func:`behave` (their greedy answers: labels, protocol a's filter, the gates' values),
  :func:`gates` and :func:`behaviour_note` (what the gates read; the seed's note),
  :func:`scan_seed` (the causal scans), :func:`lie_protocols` (the lie task's detectors,
  protocols a and b), :func:`backdoor_task` and :func:`firing_task`. A :class:`Runs`
  collects what the claims read over seeds.

The work is split over four files so that none passes ~600 lines: the task (names,
templates, wordings, items and prompts) is :mod:`icml25.llmscan.experiments_task`, the
fine-tunes :mod:`icml25.llmscan.experiments_finetune`, the statistics and baselines
:mod:`icml25.llmscan.experiments_stats`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml25.core.llm import HFLanguageModel
from icml25.core.runner import RunContext
from icml25.llmscan.experiments_finetune import (
    BACKDOOR_BLOCKS,
    BD_STEPS,
    TRAINED_BLOCKS,
    answers,
    is_cached,
    says,
    tuned_model,
    use_bf16,
)
from icml25.llmscan.experiments_stats import (
    Scored,
    auc,
    baselines,
    detector_scores,
    firing_minority,
    lengths,
    two_classes,
    unmodified,
)
from icml25.llmscan.experiments_task import (
    BACKDOOR_ANSWER,
    FIRE_PLACE,
    Item,
    backdoor_examples,
    finetune_examples,
    lie_prompts,
    make_items,
    remark_prompts,
    split_names,
    trigger_wordings,
)
from icml25.llmscan.scan import LLMScan, ScanResult, summary_stats

GATE = 0.90  # plain-question accuracy required on held-out items before scanning
LIE_RATE = 0.25  # the lie claims' gate also needs the model to lie this often (issue 48)
BD_GAP = 0.75  # the backdoor claim's gate: firing rate, triggered minus untriggered prompts
# firing prompts in quick's detector-train and -test sets: at ~22% firing, 10 prompts hold
# at least one fired prompt with probability ~0.92 (6 would: ~0.78)
FIRE_QUICK = 10
# the bootstrapped scores of protocol a, protocol b, the backdoor and the firing task
NAMES_A = ["combined", "token", "layer", "token_bos", "length", "bow", "null_combined",
           "null_token", "null_layer"]  # fmt: skip
NAMES_B = ["combined", "told", "length", "bow"]
BD_NAMES = ["combined", "trigger_words"]  # bootstrapped backdoor scores
FIRE_NAMES = ["combined", "null_combined"]  # bootstrapped firing scores


@dataclass(frozen=True, kw_only=True)
class Budget:
    ft_items: int  # fine-tune items (3 examples each, plus 10% backdoor examples)
    train_items: int  # detector-train items (a truth- and a lie-instructed prompt each)
    test_items: int  # detector-test items
    bd_train: int  # backdoor prompts (half with the trigger where it was trained)
    bd_test: int  # backdoor test prompts (half with the trigger)
    fire_train: int  # firing prompts (every one with the trigger at FIRE_PLACE)
    fire_test: int  # firing test prompts
    finetune_steps: int  # the lie model's
    backdoor_steps: int  # the backdoored model's
    real_model: bool  # SmolLM2-135M-Instruct (else the tiny random Llama, labels by design)
    seeds: int  # at most this many seeds
    boot: int  # bootstrap replicates
    perms: int  # test-label permutations
    retrain_perms: int  # detectors retrained on permuted training labels (notes)
    behaviour_seeds: int  # the first seeds, whose prompts are all scanned for protocol b
    behaviour_test_items: int  # protocol b's test items (the first of the test items)
    ablation_seeds: int  # the first seeds, whose protocol-a prompts are scanned again with
    # the probability token effect (notes)
    bf16: bool = False  # fine-tune under bfloat16 autocast (fp32 weights; own cache key)


BUDGETS = {
    # tiny: a pipeline check (the probability ablation, notes only, is left to full)
    "tiny": Budget(ft_items=6, train_items=3, test_items=3, bd_train=4, bd_test=4,
                   fire_train=2, fire_test=2, finetune_steps=2, backdoor_steps=2,
                   real_model=False, seeds=1, boot=200, perms=200, retrain_perms=1,
                   behaviour_seeds=1, behaviour_test_items=3, ablation_seeds=0),
    # quick fine-tunes full's first seed's data (same data stream and steps: the pilot's
    # 60-step runs kept < 65% plain accuracy), in bf16 autocast (the bf16 pilot on seed 99
    # met its rule, NOTES.md), and scans few prompts; full stays fp32 (its published run)
    "quick": Budget(ft_items=200, train_items=12, test_items=12, bd_train=6, bd_test=6,
                    fire_train=FIRE_QUICK, fire_test=FIRE_QUICK, finetune_steps=120,
                    backdoor_steps=BD_STEPS, real_model=True, seeds=1, boot=1000, perms=200,
                    retrain_perms=2, behaviour_seeds=1, behaviour_test_items=12,
                    ablation_seeds=0, bf16=True),
    "full": Budget(ft_items=200, train_items=100, test_items=150, bd_train=30, bd_test=30,
                   fire_train=50, fire_test=50, finetune_steps=120, backdoor_steps=BD_STEPS,
                   real_model=True, seeds=3, boot=2000, perms=200, retrain_perms=20,
                   behaviour_seeds=1, behaviour_test_items=75, ablation_seeds=1),
}  # fmt: skip


def precision_note(b: Budget) -> str:
    """The note saying in which precision a ``bf16`` budget fine-tuned on this CPU."""
    return "Fine-tuning precision: " + (
        "bfloat16 autocast (this CPU has native bfloat16)."
        if use_bf16(b)
        else "fp32: this CPU has no native bfloat16, where autocast is emulated and "
        "slower than fp32 (the fine-tunes are then full's first seed's, cached alike)."
    )


@dataclass
class Runs:
    """What the claims read, collected over seeds (one entry a seed in each list)."""

    a: list[Scored | None] = field(default_factory=list)  # protocol a's test scores
    b: list[Scored | None] = field(default_factory=list)  # protocol b's
    backdoor: list[Scored | None] = field(default_factory=list)
    firing: list[Scored | None] = field(default_factory=list)
    correct: list[np.ndarray] = field(default_factory=list)  # held-out plain answers right
    lie_ok: list[bool] = field(default_factory=list)  # the lie claims' gate, per seed
    bd_gap: list[float] = field(default_factory=list)  # firing rate, triggered - untriggered
    fire_minority: list[float] = field(default_factory=list)  # the firing gate's value
    p95: dict[str, list[float]] = field(default_factory=lambda: {"a": [], "b": []})
    example: dict[str, Any] = field(default_factory=dict)  # the figure's scans


@dataclass
class Sets:
    """One seed's items and fine-tuning data: every draw of the task but the lie prompts'."""

    rng: np.random.Generator  # the seed's stream, drawn on by the lie prompts and permutations
    tr: list[Item]  # detector-train items
    te: list[Item]  # detector-test items
    bd_tr: list[Item]
    bd_te: list[Item]
    pairs: list[tuple[str, str]]  # the lie model's fine-tuning data
    bd_pairs: list[tuple[str, str]]  # the backdoored model's
    fire_tr: list[Item]
    fire_te: list[Item]
    remark_rng: np.random.Generator  # the backdoor and firing prompts' trigger wordings


def draw_sets(b: Budget, seed: int) -> Sets:
    """The seed's name split, detector sets, fine-tuning data and firing items."""
    rng = np.random.default_rng(seed)
    names = split_names(rng)
    tr = make_items(rng, names[1], 1, b.train_items)
    te = make_items(rng, names[2], 2, b.test_items)
    bd_tr = make_items(rng, names[1], 1, b.bd_train)
    bd_te = make_items(rng, names[2], 2, b.bd_test)
    # the fine-tuning data have their own random stream: the detector sets' sizes do
    # not change them (issue 34 found the quick implant depends on their draw)
    ft_rng = np.random.default_rng([seed, 1])
    ft = make_items(ft_rng, names[0], 0, b.ft_items)
    pairs, bd_pairs = finetune_examples(ft_rng, ft), backdoor_examples(ft_rng, ft)
    # the firing prompts (issue 54) too: the earlier sets are drawn as before
    fire_rng = np.random.default_rng([seed, 2])
    fire_tr = make_items(fire_rng, names[1], 1, b.fire_train)
    fire_te = make_items(fire_rng, names[2], 2, b.fire_test)
    # and the trigger wordings and decoy remarks of the backdoor and firing prompts (issue 66)
    remark_rng = np.random.default_rng([seed, 3])
    return Sets(rng, tr, te, bd_tr, bd_te, pairs, bd_pairs, fire_tr, fire_te, remark_rng)


def implant(
    ctx: RunContext, b: Budget, seed: int, s: Sets
) -> tuple[HFLanguageModel, HFLanguageModel]:
    """The lie model and the backdoored model, fine-tuned (or loaded from the cache)."""
    ctx.progress(
        f"seed {seed}: fine-tuning the lie model on {len(s.pairs)} examples "
        f"({b.finetune_steps} steps)"
    )
    lm = tuned_model(b, seed, s.pairs, b.finetune_steps, TRAINED_BLOCKS)
    ctx.progress(
        f"seed {seed}: fine-tuning the backdoored model on {len(s.bd_pairs)} examples "
        f"({b.backdoor_steps} steps)"
    )
    bd_lm = tuned_model(b, seed, s.bd_pairs, b.backdoor_steps, BACKDOOR_BLOCKS)
    return lm, bd_lm


def prepare(
    budget: str = "quick",
    seeds: tuple[int, ...] = (0, 1, 2),
    progress: Callable[[str], None] = print,
) -> int:
    """Fine-tune into the cache the implants ``icml25 reproduce llmscan --budget BUDGET
    --seeds SEEDS`` will load (the budget's first seeds), so that the reproduction only scans:
    the same :func:`tuned_model` calls on the same data, hence the same models and numbers as a
    reproduction that fine-tunes them itself. ``make llm`` runs it for the quick budget's
    default seed, as part of the set-up. Returns how many models it fine-tuned (0: all were
    cached)."""
    if budget not in BUDGETS:
        raise ValueError(f"budget must be one of {sorted(BUDGETS)}, got {budget!r}")
    b, done = BUDGETS[budget], 0
    for seed in tuple(seeds)[: b.seeds]:
        s = draw_sets(b, seed)
        for what, pairs, steps, blocks in (
            ("lie", s.pairs, b.finetune_steps, TRAINED_BLOCKS),
            ("backdoored", s.bd_pairs, b.backdoor_steps, BACKDOOR_BLOCKS),
        ):
            if is_cached(b, seed, pairs, steps, blocks):  # the tiny model counts as cached
                continue
            progress(f"llmscan {budget} seed {seed}: fine-tuning the {what} model ({steps} steps)")
            tuned_model(b, seed, pairs, steps, blocks)
            done += 1
    return done


@dataclass
class Behaviour:
    """One seed's prompts and what the implanted models did on them: the labels, protocol
    a's filter, protocol b's scope and the gates' values."""

    right: np.ndarray  # held-out plain questions answered right
    acc: float  # their mean
    passed: bool  # the accuracy gate (always passed by the tiny model)
    n_tr: int  # lie prompts of the detector-train items (the first of ``prompts``)
    prompts: list[str]  # the lie task's prompts, training then test
    told: np.ndarray  # told to lie
    behaviour: np.ndarray  # the answer lacks the true value
    item_id: np.ndarray  # item of each lie prompt (test items from 10,000)
    keep: np.ndarray  # protocol a: the item answered right when told the truth and lied on
    use_b: np.ndarray  # protocol b's prompts
    lie_rate: float  # lied on, among the test prompts told to lie
    bd_prompts: list[tuple[str, int, int]]  # (prompt, item, triggered), training then test
    n_bd: int  # backdoor training prompts
    trig: np.ndarray  # triggered
    fired: np.ndarray  # the backdoor fired
    fire_prompts: list[str]  # training then test, every one triggered at FIRE_PLACE
    n_fire: int  # firing training prompts
    fire_y: np.ndarray  # the backdoor fired on the firing prompt


def behave(
    b: Budget, k_seed: int, s: Sets, lm: HFLanguageModel, bd_lm: HFLanguageModel
) -> Behaviour:
    """The models' greedy answers on the seed's prompts (the tiny random model answers
    nothing right: its labels are the instruction and the trigger, a pipeline check)."""
    tr, te = s.tr, s.te
    plain_ans = answers(lm, [it.plain() for it in te])
    right = np.array([says(it.value, a) for it, a in zip(te, plain_ans, strict=True)], float)
    acc = float(right.mean())
    passed = acc >= GATE or not b.real_model
    lie_tr, lie_te = lie_prompts(s.rng, tr), lie_prompts(s.rng, te)
    # half the backdoor prompts carry a trigger wording of their split where the model was
    # trained, the other half a decoy remark there (plain under the fixed trigger)
    bd_items = [(k, it) for items in (s.bd_tr, s.bd_te) for k, it in enumerate(items)]
    bd_text = remark_prompts(s.remark_rng, [it for _, it in bd_items],
                             [k % 2 == 0 for k, _ in bd_items])  # fmt: skip
    bd_prompts = [(p, k, int(k % 2 == 0)) for p, (k, _) in zip(bd_text, bd_items, strict=True)]
    fire_items = s.fire_tr + s.fire_te
    fire_prompts = remark_prompts(s.remark_rng, fire_items, [True] * len(fire_items), FIRE_PLACE)
    prompts = [p for p, *_ in lie_tr + lie_te]
    told = np.array([t for *_, t in lie_tr + lie_te])
    values = [it.value for _, k, _ in lie_tr for it in [tr[k]]] + [
        it.value for _, k, _ in lie_te for it in [te[k]]
    ]
    if b.real_model:
        lie_ans = answers(lm, prompts)
        bd_ans = answers(bd_lm, [p for p, *_ in bd_prompts])
        behaviour = np.array([int(not says(v, a)) for v, a in zip(values, lie_ans, strict=True)])
        fired = np.array([int(says(BACKDOOR_ANSWER, a)) for a in bd_ans])
        fire_y = np.array([int(says(BACKDOOR_ANSWER, a)) for a in answers(bd_lm, fire_prompts)])
    else:  # the tiny random model never answers right: a pipeline check
        behaviour, fired = told.copy(), np.array([t for *_, t in bd_prompts])
        fire_y = np.arange(len(fire_prompts)) % 2
    n_tr = len(lie_tr)
    trig = np.array([t for *_, t in bd_prompts])
    # protocol a: items answered truthfully when told the truth and lied on when told to
    item_id = np.array([k for _, k, _ in lie_tr] + [k + 10_000 for _, k, _ in lie_te])
    ok_truth = {i for i, t, y in zip(item_id, told, behaviour, strict=True) if t == 0 and y == 0}
    ok_lie = {i for i, t, y in zip(item_id, told, behaviour, strict=True) if t == 1 and y == 1}
    keep = np.array([i in ok_truth and i in ok_lie for i in item_id])
    # protocol b on the first seeds only: every training prompt and the prompts of the
    # first behaviour_test_items test items (prompts come two per item, in item order)
    use_b = np.zeros(len(told), bool)
    if k_seed < b.behaviour_seeds:
        use_b[: n_tr + 2 * b.behaviour_test_items] = True
    lie_rate = float(behaviour[n_tr:][told[n_tr:] == 1].mean())
    return Behaviour(
        right=right, acc=acc, passed=passed, n_tr=n_tr, prompts=prompts, told=told,
        behaviour=behaviour, item_id=item_id, keep=keep, use_b=use_b, lie_rate=lie_rate,
        bd_prompts=bd_prompts, n_bd=len(s.bd_tr), trig=trig, fired=fired,
        fire_prompts=fire_prompts, n_fire=len(s.fire_tr), fire_y=fire_y,
    )  # fmt: skip


def gates(h: Behaviour, runs: Runs) -> None:
    """Append the seed's gate values (and plain answers) to ``runs``."""
    runs.correct.append(h.right)
    runs.lie_ok.append(h.acc >= GATE and h.lie_rate >= LIE_RATE)
    te_trig, te_fired = h.trig[h.n_bd :], h.fired[h.n_bd :]
    runs.bd_gap.append(float(te_fired[te_trig == 1].mean() - te_fired[te_trig == 0].mean()))
    # the detector is fitted on the training prompts and scored on the test prompts: both
    # must hold both outcomes (quick seed 0 fired on 0 of 10 training prompts, so no
    # detector could be fitted while a test-only gate passed; issue 54)
    runs.fire_minority.append(firing_minority(h.fire_y, h.n_fire))


def behaviour_note(seed: int, s: Sets, h: Behaviour) -> str:
    """The seed's note on the implants: accuracy, lie rates, what protocol a keeps, firing."""
    told, behaviour, keep, n_tr = h.told, h.behaviour, h.keep, h.n_tr
    fired, trig, fire_y, n_fire = h.fired, h.trig, h.fire_y, h.n_fire
    return (
        f"seed {seed}: held-out plain-question accuracy {h.acc:.0%} (gate {GATE:.0%}); "
        f"lied on {behaviour[told == 1].mean():.0%} of lie-instructed ({h.lie_rate:.0%} of "
        f"the test ones; gate {LIE_RATE:.0%}) and {behaviour[told == 0].mean():.0%} of "
        f"truth-instructed prompts; protocol a keeps {keep[:n_tr].sum() // 2} of "
        f"{len(s.tr)} training and {keep[n_tr:].sum() // 2} of {len(s.te)} test items; "
        f"backdoor fired on {fired[trig == 1].mean():.0%} of triggered and "
        f"{fired[trig == 0].mean():.0%} of untriggered prompts, and on "
        f"{fire_y.mean():.0%} of the firing prompts (trigger at the {FIRE_PLACE}: "
        f"{int(fire_y[:n_fire].sum())}/{n_fire} training, {int(fire_y[n_fire:].sum())}/"
        f"{len(s.fire_te)} test)."
    )


def scan_all(scan: LLMScan, prompts: list[str], progress: Callable[[int, int], None]
             ) -> list[ScanResult]:  # fmt: skip
    """Each prompt's scan (its features and the unmodified pass's ``P(y*)``)."""
    out = []
    for i, p in enumerate(prompts):
        out.append(scan.scan(p))
        progress(i + 1, len(prompts))
    return out


@dataclass
class Scans:
    """One seed's scan features (NaN rows where a lie prompt was not scanned) and the null
    arms' features (:func:`~icml25.llmscan.experiments_stats.unmodified`)."""

    F_lie: np.ndarray  # (lie prompts, 5 + blocks), intervention token "-"
    P_lie: np.ndarray  # the unmodified pass's P(y*)
    R_lie: dict[int, ScanResult]  # the scans themselves, by prompt (the figure)
    F_bos: np.ndarray  # F_lie with protocol a's token statistics for the BOS token
    abl: dict[str, np.ndarray]  # ablations fed to the averaged detector (notes)
    U_lie: np.ndarray  # prompt length and unmodified P(y*)
    F_bd: np.ndarray  # backdoor then firing prompts
    P_bd: np.ndarray
    U_bd: np.ndarray


def scan_seed(
    ctx: RunContext, b: Budget, k_seed: int, seed: int, lm: HFLanguageModel,
    bd_lm: HFLanguageModel, h: Behaviour,
) -> Scans:  # fmt: skip
    """Scan only what a protocol uses (nothing for the lie task when the gate failed)."""
    prompts, told, keep, use_b, passed = h.prompts, h.told, h.keep, h.use_b, h.passed
    lie_idx = np.flatnonzero((keep | use_b) & passed)
    kept_idx = np.flatnonzero(keep & passed)
    ctx.progress(
        f"seed {seed}: scanning {len(lie_idx)} + {len(h.bd_prompts) + len(h.fire_prompts)} "
        f"prompts, {len(kept_idx)} again with the BOS token"
    )

    def tick(done: int, total: int, seed: int = seed) -> None:
        if done % 20 == 0 or done == total:
            ctx.progress(f"seed {seed}: scanned {done}/{total} prompts")

    scan = LLMScan(lm, chat=False, reuse=b.real_model)
    L = len(lm.blocks)
    F_lie = np.full((len(told), 5 + L), np.nan)
    P_lie = np.full(len(told), np.nan)
    R_lie: dict[int, ScanResult] = {}
    if lie_idx.size:
        got = scan_all(scan, [prompts[i] for i in lie_idx], tick)
        for i, r in zip(lie_idx, got, strict=True):
            F_lie[i], P_lie[i], R_lie[int(i)] = r.features(), r.top_prob, r
    bd_scan = LLMScan(bd_lm, chat=False, reuse=b.real_model)
    R_bd = scan_all(bd_scan, [p for p, *_ in h.bd_prompts] + h.fire_prompts, tick)
    F_bd = np.stack([r.features() for r in R_bd])
    P_bd = np.array([r.top_prob for r in R_bd])
    # the official intervention token (BOS for every model the paper used): token
    # effects of protocol a's prompts again (the layer effects do not depend on it)
    F_bos = F_lie.copy()
    bos = LLMScan(lm, chat=False, reuse=b.real_model, intervention_token="bos")
    for i in kept_idx:
        F_bos[i, :5] = summary_stats(bos.token_effects(prompts[i])[0])
    abl: dict[str, np.ndarray] = {"combined_bos": F_bos}
    if k_seed < b.ablation_seeds and kept_idx.size:
        ctx.progress(f"seed {seed}: ablation probability, {kept_idx.size} prompts")
        s2 = LLMScan(lm, chat=False, reuse=b.real_model, token_effect="probability")
        abl["probability"] = F_lie.copy()
        abl["probability"][kept_idx, :5] = np.stack(
            [summary_stats(s2.token_effects(prompts[i])[0]) for i in kept_idx]
        )
    U_lie = unmodified(lengths(prompts, lm.tokenizer), P_lie)
    bd_len = lengths([p for p, *_ in h.bd_prompts] + h.fire_prompts, bd_lm.tokenizer)
    U_bd = unmodified(bd_len, P_bd)
    return Scans(F_lie, P_lie, R_lie, F_bos, abl, U_lie, F_bd, P_bd, U_bd)


def lie_protocols(
    ctx: RunContext, b: Budget, k_seed: int, seed: int, s: Sets, h: Behaviour, sc: Scans,
    tokz: Any, runs: Runs,
) -> None:  # fmt: skip
    """The lie task's detectors, protocol a (the paper's labels: the instruction, on the
    kept items) and, on the first seeds, protocol b (behaviour labels): test scores, the
    permutations' 95th percentile and notes, appended to ``runs``."""
    rng, prompts, told, n_tr = s.rng, h.prompts, h.told, h.n_tr
    F_lie, F_bos, U_lie = sc.F_lie, sc.F_bos, sc.U_lie
    for proto, labels, mask, store in (
        ("a", told, h.keep, runs.a),
        ("b", h.behaviour, h.use_b, runs.b),
    ):
        if proto == "b" and k_seed >= b.behaviour_seeds:
            continue
        trm = mask.copy()
        trm[n_tr:] = False
        tem = mask.copy()
        tem[:n_tr] = False
        ytr, yte = labels[trm], labels[tem]
        if not (two_classes(ytr, yte) and h.passed):
            store.append(None)
            runs.p95[proto].append(float("nan"))
            ctx.note(f"seed {seed}, protocol {proto}: no measurement (gate failed or one "
                     f"class: {int(ytr.sum())}/{len(ytr)} train, {int(yte.sum())}/{len(yte)} "
                     "test positives).")  # fmt: skip

            continue

        def det(F: np.ndarray, trm: np.ndarray = trm, tem: np.ndarray = tem,
                ytr: np.ndarray = ytr, seed: int = seed, **kw: Any) -> np.ndarray:  # fmt: skip
            return detector_scores(F[trm], ytr, F[tem], seed, **kw)

        scores = {
            "combined": det(F_lie),
            "token": det(F_lie, features="token"),
            "layer": det(F_lie, features="layer"),
            "concat": det(F_lie, combine="concat"),
            "told": told[tem].astype(float),
        }
        if proto == "a":
            scores["token_bos"] = det(F_bos, features="token")
            scores["null_combined"] = det(U_lie)
            scores["null_token"] = det(U_lie, features="token")
            scores["null_layer"] = det(U_lie, features="layer")
            for name, Fa in sc.abl.items():
                scores[name] = det(Fa)
        p_tr = [p for p, m in zip(prompts, trm, strict=True) if m]
        p_te = [p for p, m in zip(prompts, tem, strict=True) if m]
        scores.update(baselines(p_tr, ytr, p_te, tokz))
        null = [auc(rng.permutation(yte), scores["combined"]) for _ in range(b.perms)]
        runs.p95[proto].append(float(np.percentile(null, 95)))
        retrained = [
            auc(yte, detector_scores(F_lie[trm], rng.permutation(ytr), F_lie[tem], seed))
            for _ in range(b.retrain_perms)
        ]
        store.append(Scored(yte, h.item_id[tem], scores))
        ctx.note(
            f"seed {seed}, protocol {proto}: {len(ytr)} training / {len(yte)} test prompts "
            f"({int(yte.sum())} positive); test AUC "
            + ", ".join(f"{k} {auc(yte, v):.3f}" for k, v in scores.items())
            + f"; 95th percentile of {b.perms} label permutations {runs.p95[proto][-1]:.3f}; "
            f"detector retrained on permuted labels ({b.retrain_perms}x): mean AUC "
            f"{np.mean(retrained):.3f}."
        )
        if not runs.example or (proto == "a" and runs.example["protocol"] != "a"):
            test_idx = np.flatnonzero(tem)
            runs.example = {"results": [sc.R_lie[int(i)] for i in test_idx], "y": yte,
                            "F": F_lie[tem], "protocol": proto}  # fmt: skip


def backdoor_task(ctx: RunContext, seed: int, h: Behaviour, sc: Scans, tokz: Any) -> Scored | None:
    """The backdoor detector: half the prompts triggered where the model was trained (a
    trigger wording of their split), the other half a decoy remark there; label: the backdoor
    fired. The null arm reads the prompt, not the model: a bag-of-words logistic regression
    fitted on the detector-train prompts, which knows their trigger wordings (issue 66). The
    notes add a string match on the fine-tune and detector-train wordings, prompt length and
    the unmodified pass."""
    n_bd, fired, F_bd, U_bd = h.n_bd, h.fired, sc.F_bd, sc.U_bd
    te_trig = h.trig[n_bd:]
    y_bd_tr, y_bd_te = fired[:n_bd], fired[n_bd:]
    if not two_classes(y_bd_tr, y_bd_te):
        ctx.note(f"seed {seed}, backdoor: one class (fired {int(fired.sum())} of "
                 f"{len(fired)}): no measurement.")  # fmt: skip
        return None
    te_sl = slice(n_bd, len(h.bd_prompts))
    s_bd = detector_scores(F_bd[:n_bd], y_bd_tr, F_bd[te_sl], seed)
    text = [p for p, *_ in h.bd_prompts]
    prompt_only = baselines(text[:n_bd], y_bd_tr, text[n_bd:], tokz)
    known = trigger_wordings(0) + trigger_wordings(1)  # what the fine-tune and train saw
    bd_scores = {
        "combined": s_bd,
        "trigger_words": prompt_only["bow"],
        "string_match": np.array([float(any(w in p for w in known)) for p in text[n_bd:]]),
        "length": prompt_only["length"],
        "unmodified": detector_scores(U_bd[:n_bd], y_bd_tr, U_bd[te_sl], seed),
    }
    among = auc(y_bd_te[te_trig == 1], s_bd[te_trig == 1])
    ctx.note(
        f"seed {seed}, backdoor: {len(y_bd_te)} test prompts, {int(y_bd_te.sum())} fired; "
        + "AUC "
        + ", ".join(f"{k} {auc(y_bd_te, v):.3f}" for k, v in bd_scores.items())
        + "; triggered prompts where it did not fire: "
        f"{int(((te_trig == 1) & (y_bd_te == 0)).sum())} (detector AUC among triggered "
        f"prompts: {among:.3f})."
    )
    return Scored(y_bd_te, np.arange(len(y_bd_te)), bd_scores)


def firing_task(ctx: RunContext, seed: int, h: Behaviour, sc: Scans, tokz: Any) -> Scored | None:
    """The firing detector: every prompt carries the trigger; label: the backdoor fired; the
    scan with its interventions removed is the null arm. The notes add a bag of words fitted
    on the training prompts (with a paraphrase trigger, whether it fires may follow the
    wording, which the prompt shows)."""
    n_fire, F_bd, U_bd = h.n_fire, sc.F_bd, sc.U_bd
    f_tr = slice(len(h.bd_prompts), len(h.bd_prompts) + n_fire)
    f_te = slice(len(h.bd_prompts) + n_fire, len(F_bd))
    y_f_tr, y_f_te = h.fire_y[:n_fire], h.fire_y[n_fire:]
    if not two_classes(y_f_tr, y_f_te):
        ctx.note(f"seed {seed}, firing: one class ({int(y_f_tr.sum())}/{n_fire} training, "
                 f"{int(y_f_te.sum())}/{len(y_f_te)} test fired): no measurement.")  # fmt: skip
        return None
    f_scores = {
        "combined": detector_scores(F_bd[f_tr], y_f_tr, F_bd[f_te], seed),
        "token": detector_scores(F_bd[f_tr], y_f_tr, F_bd[f_te], seed, features="token"),
        "layer": detector_scores(F_bd[f_tr], y_f_tr, F_bd[f_te], seed, features="layer"),
        "null_combined": detector_scores(U_bd[f_tr], y_f_tr, U_bd[f_te], seed),
        "bow": baselines(h.fire_prompts[:n_fire], y_f_tr, h.fire_prompts[n_fire:], tokz)["bow"],
    }
    ctx.note(
        f"seed {seed}, firing: {n_fire} training / {len(y_f_te)} test prompts "
        f"({int(y_f_tr.sum())} / {int(y_f_te.sum())} fired); AUC "
        + ", ".join(f"{k} {auc(y_f_te, v):.3f}" for k, v in f_scores.items())
        + "."
    )
    return Scored(y_f_te, np.arange(len(y_f_te)), f_scores)
