"""Diagnostic (issue 25): which token effect carries the lie signal on the full run's models?

Takes seed 0's cached lie model (run ``icml25 reproduce llmscan --budget full`` first, with
the same ``$ICML25_CACHE``), the protocol-(a) prompts of its first 40 detector-test items,
and prints the AUC of each of the five token statistics alone (told to lie vs told the
truth; 0.5 is chance, and values near 0 separate as well as values near 1), for the
attention token effect (the official default) and for the probability token effect.

    python benchmarks/llmscan_token_effects.py [--lie random]

``--lie random`` finds the models of the runs before issue 66 (random lies; the default is
the reproduction's own kind, ``experiments_task.LIE_KIND``).
"""

from __future__ import annotations

import argparse

import numpy as np

from icml25.core.llm import HFLanguageModel, load_causal_lm
from icml25.llmscan import experiments as E
from icml25.llmscan import experiments_finetune as F
from icml25.llmscan import experiments_stats as S
from icml25.llmscan import experiments_task as T
from icml25.llmscan.scan import STAT_NAMES, LLMScan, summary_stats


def main(seed: int = 0, n_items: int = 40, lie: str | None = None) -> None:
    b = E.BUDGETS["full"]
    rng = np.random.default_rng(seed)  # the same draws as the reproduction's
    names = T.split_names(rng)
    tr = T.make_items(rng, names[1], 1, b.train_items)
    te = T.make_items(rng, names[2], 2, b.test_items)
    T.make_items(rng, names[1], 1, b.bd_train)
    T.make_items(rng, names[2], 2, b.bd_test)
    T.lie_prompts(rng, tr)
    lie_te = T.lie_prompts(rng, te)
    ft_rng = np.random.default_rng([seed, 1])
    pairs = T.finetune_examples(ft_rng, T.make_items(ft_rng, names[0], 0, b.ft_items), lie)
    folder = F.model_folder(pairs, b.finetune_steps, seed, F.TRAINED_BLOCKS)
    if not (folder / "config.json").is_file():
        raise SystemExit(f"no cached lie model at {folder}: run the full reproduction first")
    lm = HFLanguageModel(*load_causal_lm(folder, quiet=True))
    rows = [(p, k, t) for p, k, t in lie_te if k < n_items]
    got = F.answers(lm, [p for p, _, _ in rows])
    wrong = {(k, t): not F.says(te[k].value, a) for (_, k, t), a in zip(rows, got, strict=True)}
    kept = {k for k in range(n_items) if not wrong[(k, 0)] and wrong[(k, 1)]}
    prompts = [p for p, k, _ in rows if k in kept]
    told = np.array([t for _, k, t in rows if k in kept])
    print(f"seed {seed}: {len(prompts)} protocol-(a) prompts of {n_items} test items")
    for effect in ("attention", "probability"):
        scan = LLMScan(lm, chat=False, token_effect=effect)
        stats = np.stack([summary_stats(scan.token_effects(p)[0]) for p in prompts])
        aucs = ", ".join(f"{n} {S.auc(told, stats[:, j]):.3f}" for j, n in enumerate(STAT_NAMES))
        print(f"{effect:12s} single-statistic AUC: {aucs}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--lie", choices=T.LIE_KINDS, default=None, help="the lie model's kind")
    main(lie=ap.parse_args().lie)
