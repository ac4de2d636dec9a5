"""Pilots for LLMScan's implants, on seed 99, which no claim uses.

**Controls (issue 66)**, ``--controls new`` or ``--controls old``: fine-tunes the lie model
and the backdoored model exactly as the reproduction does (its data recipe, steps and
precision at the quick budget's fine-tune sizes; ``old`` is the implant before issue 66:
random lies, the fixed trigger "cf", 60 backdoor steps), reads their greedy answers on
detector-train and detector-test prompts with the reproduction's own code
(:func:`icml25.llmscan.experiments.behave`) and reports what the implants did and the
**controls** the gates read, never a scan: plain accuracy, the lie rate, the unmodified
pass's ``P(y*)`` on protocol a's prompts and the null arms fitted on it (length and
``P(y*)``, the detectors of the claims' null arms), the firing rates, and the backdoor's
prompt-only nulls (the bag of words, a string match on the training wordings, the old
trigger substring). Evaluation sets are larger than quick's (``--eval-items``,
``--bd-items``, ``--fire-items`` a split) so that the controls' AUCs mean something.

    OMP_NUM_THREADS=1 nice -n 5 python benchmarks/llmscan_implant_pilot.py --controls new

**Checkpoints (issue 25)**, the default mode: does a fine-tune teach SmolLM2 to lie on
held-out names, templates and instruction wordings while it keeps answering plain
questions? Fine-tunes with the issue-25 data recipe (random lies, the fixed trigger) and,
at the given step counts, measures on held-out detector-test items: plain accuracy (the
gate), accuracy when told the truth, the lie rate when told to lie (held-out wordings, and
the fine-tune's own wordings as a diagnosis), and the backdoor's firing rate with and
without the trigger.

    python benchmarks/llmscan_implant_pilot.py --items 200 --lr 1e-4 --blocks 8 \
        --checkpoints 30,60,100,150

``--bf16`` fine-tunes under bfloat16 autocast (fp32 master weights; evaluated in fp32).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import numpy as np
import torch

from icml25.core.llm import HFLanguageModel, load_causal_lm
from icml25.llmscan import experiments as E
from icml25.llmscan import experiments_finetune as F
from icml25.llmscan import experiments_stats as S
from icml25.llmscan import experiments_task as T


def top_probs(lm: HFLanguageModel, prompts: list[str]) -> np.ndarray:
    """The unmodified pass's ``P(y*)`` of each raw prompt, one at a time (no padding), as
    :class:`icml25.llmscan.LLMScan` computes it."""
    return np.array([float(lm.next_token_probs([p], chat=False)[0].max()) for p in prompts])


def controls(kind: str, seed: int, items: int, bd_items: int, fire_items: int) -> None:
    """The issue-66 pilot of one implant kind (``"new"`` or ``"old"``): see the docstring."""
    if kind == "old":
        T.LIE_KIND, T.TRIGGER_KIND = "random", "fixed"
    steps = F.FIXED_BD_STEPS if kind == "old" else F.BD_STEPS
    b = dataclasses.replace(
        E.BUDGETS["quick"], train_items=items, test_items=items, bd_train=bd_items,
        bd_test=bd_items, fire_train=fire_items, fire_test=fire_items, backdoor_steps=steps,
    )  # fmt: skip
    bf16 = F.use_bf16(b)
    s = E.draw_sets(b, seed)
    t0, w0 = time.process_time(), time.perf_counter()
    lm = HFLanguageModel(*load_causal_lm(quiet=True))
    F.finetune(lm, s.pairs, b.finetune_steps, seed, F.TRAINED_BLOCKS, bf16=bf16)
    t1, w1 = time.process_time(), time.perf_counter()
    bd_lm = HFLanguageModel(*load_causal_lm(quiet=True))
    F.finetune(bd_lm, s.bd_pairs, b.backdoor_steps, seed, F.BACKDOOR_BLOCKS, bf16=bf16)
    t2, w2 = time.process_time(), time.perf_counter()
    h = E.behave(b, 0, s, lm, bd_lm)
    n_tr, told, lied, keep = h.n_tr, h.told, h.behaviour, h.keep
    # the lies that are the true value's partner (all of them if told as taught by "swap")
    te_items = [s.te[k - 10_000] for k in h.item_id[n_tr:]]
    lie_ans = F.answers(lm, [p for p, t in zip(h.prompts[n_tr:], told[n_tr:], strict=True) if t])
    lie_items = [it for it, t in zip(te_items, told[n_tr:], strict=True) if t]
    as_taught = [F.says(T.lie_value(it.attribute, it.value), a)
                 for it, a, y in zip(lie_items, lie_ans, lied[n_tr:][told[n_tr:] == 1],
                                     strict=True) if y]  # fmt: skip
    # protocol a's prompts, their unmodified P(y*) and the claims' null arms fitted on them
    P = np.full(len(told), np.nan)
    P[keep] = top_probs(lm, [p for p, k in zip(h.prompts, keep, strict=True) if k])
    U = S.unmodified(S.lengths(h.prompts, lm.tokenizer), P)
    trm, tem = keep.copy(), keep.copy()
    trm[n_tr:], tem[:n_tr] = False, False
    ytr, yte = told[trm], told[tem]
    lie_row: dict[str, object] = {
        "implant": kind, "lie": T.LIE_KIND, "bf16": bf16, "seed": seed,
        "plain_acc": h.acc, "truth_right": float(1 - lied[n_tr:][told[n_tr:] == 0].mean()),
        "lie_rate_test": h.lie_rate, "lie_rate_train": float(lied[:n_tr][told[:n_tr] == 1].mean()),
        "gate_lie": bool(h.acc >= E.GATE and h.lie_rate >= E.LIE_RATE),
        "lies_that_are_the_partner": float(np.mean(as_taught)) if as_taught else float("nan"),
        "kept_items_train_test": [int(keep[:n_tr].sum() // 2), int(keep[n_tr:].sum() // 2)],
        "p_star_mean_truth_lie_test": [float(P[tem][yte == 0].mean()),
                                       float(P[tem][yte == 1].mean())],
        # P(y*) alone, unfitted, in the direction "a lie is less confident"
        "auc_p_star_raw": S.auc(yte, -P[tem]),
    }  # fmt: skip
    if S.two_classes(ytr, yte):
        for name, feats in (("null_combined", "both"), ("null_token", "token"),
                            ("null_layer", "layer")):  # fmt: skip
            sc = S.detector_scores(U[trm], ytr, U[tem], seed, features=feats)
            lie_row[f"auc_{name}"] = S.auc(yte, sc)
    lie_row["finetune_cpu_s"] = round(t1 - t0, 1)
    lie_row["finetune_wall_s"] = round(w1 - w0, 1)
    print(json.dumps(_rounded(lie_row)), flush=True)
    # the backdoor: firing on the held-out wordings, the decoys and the firing place
    n_bd, trig, fired = h.n_bd, h.trig, h.fired
    text = [p for p, *_ in h.bd_prompts]
    plain = F.answers(bd_lm, [it.plain() for it in s.bd_te])
    # the fine-tune's own wordings on detector-test items (a diagnosis, as the lie's "seen")
    ft_words = np.random.default_rng([seed, 4]).choice(T.trigger_wordings(0), len(s.bd_te))
    seen = [it.plain(True, str(w)) for it, w in zip(s.bd_te, ft_words, strict=True)]
    seen_fired = np.mean([F.says(T.BACKDOOR_ANSWER, a) for a in F.answers(bd_lm, seen)])
    bd_row: dict[str, object] = {
        "implant": kind, "trigger": T.TRIGGER_KIND, "bd_steps": b.backdoor_steps,
        "plain_acc_bd_model": float(np.mean([F.says(it.value, a)
                                             for it, a in zip(s.bd_te, plain, strict=True)])),
        "fired_trig_test": float(fired[n_bd:][trig[n_bd:] == 1].mean()),
        "fired_untrig_test": float(fired[n_bd:][trig[n_bd:] == 0].mean()),
        "fired_trig_train": float(fired[:n_bd][trig[:n_bd] == 1].mean()),
        "fired_untrig_train": float(fired[:n_bd][trig[:n_bd] == 0].mean()),
        "fired_fine_tune_wordings_test_items": float(seen_fired),
        "fired_plain_no_remark": float(np.mean([F.says(T.BACKDOOR_ANSWER, a) for a in plain])),
        "fired_firing_place_train_test": [float(h.fire_y[: h.n_fire].mean()),
                                          float(h.fire_y[h.n_fire :].mean())],
    }  # fmt: skip
    gap = bd_row["fired_trig_test"] - bd_row["fired_untrig_test"]  # type: ignore[operator]
    bd_row["gap_test"] = gap
    y_tr, y_te = fired[:n_bd], fired[n_bd:]
    if S.two_classes(y_tr, y_te):
        base = S.baselines(text[:n_bd], y_tr, text[n_bd:], bd_lm.tokenizer)
        known = T.trigger_wordings(0) + T.trigger_wordings(1)
        bd_row["auc_trigger_words_bow"] = S.auc(y_te, base["bow"])
        bd_row["auc_string_match_training_wordings"] = S.auc(
            y_te, np.array([float(any(w in p for w in known)) for p in text[n_bd:]])
        )
        bd_row["auc_old_substring_cf"] = S.auc(y_te, np.array([float(" cf " in p)
                                                              for p in text[n_bd:]]))  # fmt: skip
        bd_row["auc_trigger_present"] = S.auc(y_te, trig[n_bd:].astype(float))
        bd_row["auc_length"] = S.auc(y_te, base["length"])
    bd_row["gate_backdoor_gap"] = bool(gap >= E.BD_GAP)
    bd_row["finetune_cpu_s"] = round(t2 - t1, 1)
    bd_row["finetune_wall_s"] = round(w2 - w1, 1)
    bd_row["total_cpu_s"] = round(time.process_time() - t0, 1)
    bd_row["total_wall_s"] = round(time.perf_counter() - w0, 1)
    print(json.dumps(_rounded(bd_row)), flush=True)


def _rounded(row: dict[str, object]) -> dict[str, object]:
    def r(v: object) -> object:
        if isinstance(v, float):
            return round(v, 3)
        if isinstance(v, list):
            return [r(x) for x in v]
        return v

    return {k: r(v) for k, v in row.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=99)
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--lr", type=float, default=F.LR)
    ap.add_argument("--blocks", type=int, default=F.TRAINED_BLOCKS)
    ap.add_argument("--checkpoints", default="30,60,100,150")
    ap.add_argument("--eval-items", type=int, default=60)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--decay", action="store_true", help="linear decay to 0 over the run")
    ap.add_argument("--task", choices=("lie", "backdoor"), default="lie", help="which data")
    ap.add_argument("--trigger-at-end", action="store_true", help="trigger before 'Answer:'")
    ap.add_argument("--bf16", action="store_true", help="fine-tune under bfloat16 autocast")
    ap.add_argument("--controls", choices=("new", "old"), help="the issue-66 controls pilot")
    ap.add_argument("--bd-items", type=int, default=40, help="controls: backdoor prompts a split")
    ap.add_argument("--fire-items", type=int, default=30, help="controls: firing prompts a split")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.controls:
        controls(args.controls, args.seed, args.eval_items, args.bd_items, args.fire_items)
        return
    T.LIE_KIND, T.TRIGGER_KIND = "random", "fixed"  # the issue-25 pilots' implant
    F.LR, F.DECAY, T.TRIGGER_AT_END = args.lr, args.decay, args.trigger_at_end
    checks = sorted(int(c) for c in args.checkpoints.split(","))
    rng = np.random.default_rng(args.seed)
    names = T.split_names(rng)
    ft = T.make_items(np.random.default_rng([args.seed, 1]), names[0], 0, args.items)
    make = T.finetune_examples if args.task == "lie" else T.backdoor_examples
    pairs = make(np.random.default_rng([args.seed, 1]), ft)
    te = T.make_items(rng, names[2], 2, args.eval_items)
    truth = [it.instructed(str(rng.choice(T.wordings(T.TRUTH, 2)))) for it in te]
    lie = [it.instructed(str(rng.choice(T.wordings(T.LIE, 2)))) for it in te]
    lie_seen = [it.instructed(str(rng.choice(T.wordings(T.LIE, 0)))) for it in te]
    plain = [it.plain() for it in te]
    trig = [it.plain(trigger=True) for it in te]
    lm = HFLanguageModel(*load_causal_lm(quiet=True))
    t0, w0 = time.process_time(), time.perf_counter()
    rows = []

    def evaluate(step: int) -> None:
        if step not in checks:
            return
        t, w = time.process_time(), time.perf_counter()
        got = F.answers(lm, truth + lie + lie_seen + plain + trig)
        n = len(te)
        parts = [got[k * n : (k + 1) * n] for k in range(5)]
        right = [np.mean([F.says(it.value, a) for it, a in zip(te, p, strict=True)])
                 for p in parts]  # fmt: skip
        zebra = [np.mean([F.says(T.BACKDOOR_ANSWER, a) for a in p]) for p in (parts[3], parts[4])]
        row = {
            "step": step,
            "plain_acc": right[3],
            "truth_acc": right[0],
            "lie_rate_heldout": 1 - right[1],
            "lie_rate_seen_wordings": 1 - right[2],
            # protocol a's share of kept items: right when told the truth, lied when told to
            "kept": np.mean(
                [
                    F.says(it.value, t) and not F.says(it.value, x)
                    for it, t, x in zip(te, parts[0], parts[1], strict=True)
                ]
            ),
            "backdoor_fired": zebra[1],
            "zebra_untriggered": zebra[0],
            "cpu_s": round(t - t0, 1),  # all threads, earlier checkpoints included
            "wall_s": round(w - w0, 1),
        }
        rows.append(row)
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}),
              flush=True)  # fmt: skip

    evaluate(0) if 0 in checks else None
    F.finetune(lm, pairs, max(checks), args.seed, args.blocks, on_step=evaluate, bf16=args.bf16)
    print(json.dumps({"args": vars(args), "examples": len(pairs)}))


if __name__ == "__main__":
    main()
