"""Pilot for LLMScan's lie implant (issue 25): does a fine-tune teach SmolLM2 to lie on
held-out names, templates and instruction wordings while it keeps answering plain questions?

Runs on seed 99, which no claim uses. Fine-tunes with the reproduction's own data recipe
(:func:`icml25.llmscan.experiments_task.finetune_examples`) and, at the given step counts,
measures on held-out detector-test items: plain accuracy (the gate), accuracy when told the
truth, the lie rate when told to lie (held-out wordings, and the fine-tune's own wordings
as a diagnosis), and the backdoor's firing rate with and without the trigger.

    python benchmarks/llmscan_implant_pilot.py --items 200 --lr 1e-4 --blocks 8 \
        --checkpoints 30,60,100,150

``--bf16`` fine-tunes under bfloat16 autocast (fp32 master weights; evaluated in fp32).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from icml25.core.llm import HFLanguageModel, load_causal_lm
from icml25.llmscan import experiments_finetune as F
from icml25.llmscan import experiments_task as T


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
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
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
