"""Pilot for LLMScan's firing task (issue 54): where must the trigger sit so that the
backdoored model fires on some triggered prompts and not on others?

``auc_backdoor`` labels "fired", and fired equals "trigger present" for all but one test
prompt of the published run: a detector that reads the trigger passes it. Detection of
*firing* needs prompts that all carry the trigger, some of which fire. The backdoored model
is trained with the trigger before "Answer:"; this pilot fine-tunes it exactly as the
reproduction does (seed 99, which no claim uses; the reproduction's data recipe, 60 steps,
12 blocks) and measures, on held-out detector-test items (names, templates the fine-tune
never saw), how often it fires with the trigger at each place: the start of the prompt,
between the fact and the question, before "Answer:" (trained), and without it.

The choice rule, fixed before the pilot ran: of "start" and "middle", the place whose
firing rate on the fp32 model (full's precision) is closest to 50%, provided it lies in
[15%, 85%] on the fp32 and on the bf16 model (quick's precision); if neither place
qualifies, a third, weaker backdoored model (trigger at the start) would be needed.

    python benchmarks/llmscan_firing_pilot.py [--bf16] [--threads 2] [--trigger fixed]

Issue 54's pilot ran the fixed trigger "cf" (``--trigger fixed``, 60 steps); the default is
the reproduction's own trigger (``experiments_task.TRIGGER_KIND``: a greeting in a
detector-test wording, decoy remarks in the untriggered prompts, ``BD_STEPS`` steps).
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
    ap.add_argument("--eval-items", type=int, default=90)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", action="store_true", help="fine-tune under bfloat16 autocast")
    ap.add_argument("--trigger", choices=T.TRIGGER_KINDS, default=T.TRIGGER_KIND)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    T.TRIGGER_KIND = args.trigger
    steps = F.FIXED_BD_STEPS if args.trigger == "fixed" else F.BD_STEPS
    rng = np.random.default_rng(args.seed)
    names = T.split_names(rng)
    ft_rng = np.random.default_rng([args.seed, 1])
    ft = T.make_items(ft_rng, names[0], 0, args.items)
    pairs = T.backdoor_examples(ft_rng, ft)
    te = T.make_items(rng, names[2], 2, args.eval_items)
    lm = HFLanguageModel(*load_causal_lm(quiet=True))
    t0, w0 = time.process_time(), time.perf_counter()
    F.finetune(lm, pairs, steps, args.seed, F.BACKDOOR_BLOCKS, bf16=args.bf16)
    row: dict[str, object] = {"bf16": args.bf16, "trigger": args.trigger, "items": len(te)}
    words = np.random.default_rng([args.seed, 3])
    for place in (False, *T.PLACES):
        # untriggered: a decoy remark where the trigger was trained (plain for "cf")
        prompts = T.remark_prompts(words, te, [place is not False] * len(te), place or True)
        got = F.answers(lm, prompts)
        row[f"fired_{place or 'untriggered'}"] = round(
            float(np.mean([F.says(T.BACKDOOR_ANSWER, a) for a in got])), 3
        )
        if place is False:
            row["plain_acc"] = round(
                float(np.mean([F.says(it.value, a) for it, a in zip(te, got, strict=True)])), 3
            )
    row["cpu_s"] = round(time.process_time() - t0, 1)
    row["wall_s"] = round(time.perf_counter() - w0, 1)
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
