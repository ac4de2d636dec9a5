"""LLMScan's cost per intervention, with and without reused computation.

A scan of one prompt runs ``P`` token interventions and ``L`` layer skips. Three ways:

- **reused** (the library's default): a token intervention at position ``i`` takes the
  prefix's keys and values from the unmodified pass's KV cache and runs only ``ids[i:]``
  (consecutive positions batched by ``reuse_groups``); a layer skip starts from the
  unmodified pass's input to the skipped block and runs only the blocks above it; only the
  last position's logits are computed;
- **reused, a batch per position** (``FORWARD_OVERHEAD = 0``): the same reuse with no
  grouping, to show what the grouping saves;
- **batched** (``reuse=False``): every intervention runs in full, in one batch per kind;
- **naive** (``reuse=False, max_batch=1``): one sequence at a time.

Printed: seconds per prompt for one plain forward pass and for each scan, and the cost per
intervention in forward passes' worth (``scan time / (P + L) / forward time``; the issue's
target for the reused scan is <= 0.5). CPU time (``time.process_time``) is reported beside
wall time, since a shared machine's wall time is unreliable.
Model: SmolLM2-135M-Instruct when installed (``make llm``), else the tiny random Llama;
``--model tiny`` forces the latter. Run: ``python benchmarks/llmscan_cost.py``.
"""

from __future__ import annotations

import argparse
import time

import torch

import icml25.llmscan.scan as scan_module
from icml25.core.llm import HFLanguageModel, smollm2_gguf, tiny_llama
from icml25.llmscan import LLMScan

PROMPT = "Mia has a pet rabbit. Tell a lie. What pet does Mia have? Answer:"


def cpu_seconds(fn: object, repeats: int) -> tuple[float, float]:
    """Mean wall and CPU seconds of ``repeats`` calls after one warm-up call."""
    fn()  # type: ignore[operator]
    w, c = time.perf_counter(), time.process_time()
    for _ in range(repeats):
        fn()  # type: ignore[operator]
    return (time.perf_counter() - w) / repeats, (time.process_time() - c) / repeats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", choices=("auto", "tiny", "smollm2"), default="auto")
    ap.add_argument("--effect", choices=("attention", "probability"), default="attention")
    args = ap.parse_args()
    use_real = args.model == "smollm2"
    if args.model == "auto":
        try:
            smollm2_gguf()
            use_real = True
        except FileNotFoundError:
            use_real = False
    if use_real:
        lm = HFLanguageModel.load()
        name = "SmolLM2-135M-Instruct"
    else:
        lm = HFLanguageModel(*tiny_llama(layers=8, hidden=128))
        name = "tiny random Llama (8 blocks, width 128)"
    kw = {"chat": False, "token_effect": args.effect}
    reused = LLMScan(lm, **kw)  # type: ignore[arg-type]
    batched = LLMScan(lm, reuse=False, **kw)  # type: ignore[arg-type]
    naive = LLMScan(lm, reuse=False, max_batch=1, **kw)  # type: ignore[arg-type]
    ids, pos = reused._encode(PROMPT)
    n = len(pos) + len(lm.blocks)

    def forward() -> None:
        with torch.no_grad():
            lm.model(input_ids=ids[None])

    fw, fc = cpu_seconds(forward, 5)
    print(
        f"model: {name}; raw prompt of {len(ids)} tokens, {len(pos)} intervened, "
        f"{len(lm.blocks)} blocks: {n} interventions; {args.effect} token effect"
    )
    print(f"{'one forward pass':>20}: {fw:7.3f} s wall, {fc:7.3f} s CPU")
    grouped = scan_module.FORWARD_OVERHEAD
    for label, scan, reps, overhead in (
        ("scan, reused", reused, 2, grouped),
        ("reused, per position", reused, 2, 0),
        ("scan, batched", batched, 2, grouped),
        ("scan, naive", naive, 1, grouped),
    ):
        scan_module.FORWARD_OVERHEAD = overhead
        w, c = cpu_seconds(lambda s=scan: s.scan(PROMPT), reps)
        scan_module.FORWARD_OVERHEAD = grouped
        print(
            f"{label:>20}: {w:7.3f} s wall, {c:7.3f} s CPU; per intervention "
            f"{c / n / fc:5.2f} forward passes' worth (CPU)"
        )


if __name__ == "__main__":
    main()
