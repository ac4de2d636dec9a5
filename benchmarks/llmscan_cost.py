"""LLMScan's cost per prompt against one forward pass, and batched against naive interventions.

A scan of one prompt runs ``P`` token interventions and ``L`` layer skips. Batched (the
library's default) puts each kind in one forward pass; naive (``max_batch=1``) runs one
sequence at a time, as a loop over interventions would. Printed: seconds per prompt for one
plain forward pass, the batched scan and the naive scan, and the ratios.
Model: SmolLM2-135M-Instruct when installed (``make llm``), else the tiny random Llama;
``--model tiny`` forces the latter. Run: ``python benchmarks/llmscan_cost.py``.
"""

from __future__ import annotations

import argparse

import torch

from _timing import mean_seconds
from icml25.core.llm import HFLanguageModel, smollm2_gguf, tiny_llama
from icml25.llmscan import LLMScan

PROMPT = "Tell a lie. What is the capital of Portugal?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", choices=("auto", "tiny", "smollm2"), default="auto")
    args = ap.parse_args()
    use_real = args.model == "smollm2"
    if args.model == "auto":
        try:
            smollm2_gguf()
            use_real = True
        except FileNotFoundError:
            use_real = False
    if use_real:
        lm = HFLanguageModel.load(system="Answer in one sentence.")
        name = "SmolLM2-135M-Instruct"
    else:
        lm = HFLanguageModel(*tiny_llama(layers=8, hidden=128))
        name = "tiny random Llama (8 blocks, width 128)"
    ids = lm.encode(PROMPT)
    batched, naive = LLMScan(lm), LLMScan(lm, max_batch=1)
    _, pos = batched._encode(PROMPT)

    def forward() -> None:
        with torch.no_grad():
            lm.model(input_ids=ids[None])

    t_fwd = mean_seconds(forward, repeats=5)
    t_batched = mean_seconds(lambda: batched.scan(PROMPT), repeats=2)
    t_naive = mean_seconds(lambda: naive.scan(PROMPT), repeats=1)
    print(
        f"model: {name}; prompt of {len(ids)} tokens, {len(pos)} intervened, "
        f"{len(lm.blocks)} blocks"
    )
    print(f"{'one forward pass':>22}: {t_fwd:8.3f} s")
    print(f"{'scan, batched':>22}: {t_batched:8.3f} s  ({t_batched / t_fwd:6.1f} x forward)")
    print(f"{'scan, naive loop':>22}: {t_naive:8.3f} s  ({t_naive / t_fwd:6.1f} x forward)")
    print(f"{'naive / batched':>22}: {t_naive / t_batched:8.2f}")


if __name__ == "__main__":
    main()
