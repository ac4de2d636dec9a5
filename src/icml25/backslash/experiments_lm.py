"""BackSlash's language-model block: SmolLM2-135M-Instruct (the tiny random Llama in the
``tiny`` budget) fine-tuned on standard-library source with and without the rate step
(:mod:`icml25.backslash.lm`), one lambda selected on validation perplexity, and the LM
claims measured on the test text with their null arms and gates (:func:`lm_block`). It runs
when the ``[llm]`` extra and the model are present and says plainly when not.

- :func:`delta_for_bits`: the quantisation step at which the normal fine-tune has the
  selected model's bits (lm_perplexity's null arm);
- the measurements' forms: a size ratio over the weight tensors, a log-perplexity difference
  and a perplexity change over the test chunks, the file ratio over the weight tensors;
- :func:`_lm_report`: the report's lines.
"""

from __future__ import annotations

import copy
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml25.backslash.experiments import LMBudget
from icml25.backslash.experiments_arms import pair
from icml25.core.claims import Measurement, gate_key, null_key
from icml25.core.runner import RunContext

LM_DELTA = 0.01
CHECKPOINT_EVERY = 5  # LM fine-tuning steps between checkpoints


def _load_lm(tiny: bool) -> tuple[Any, Any]:
    """``(model, tokenizer)``: SmolLM2 (``[llm]`` extra and model needed), or the tiny random
    Llama for the ``tiny`` budget. Raises ImportError / FileNotFoundError when unavailable."""
    from icml25.core.llm import load_causal_lm, tiny_llama

    if tiny:
        return tiny_llama(layers=2, hidden=32, heads=4, seed=0, kv_heads=2)
    return load_causal_lm(quiet=True)


def delta_for_bits(
    bits_at: Callable[[float], float], target: float, delta: float, evals: int
) -> float:
    """The quantisation step at which ``bits_at(step)`` (bits per weight, falling in the step)
    meets ``target`` from below, searched on log step in [delta, 4 delta] by regula falsi with
    the Illinois rule (a bracket that shrinks from both ends; ``evals`` evaluations of
    ``bits_at``, each a pass of the coder over every weight). Returns the bracket's upper end,
    whose bits are <= target."""
    lo, hi = math.log(delta), math.log(4 * delta)
    f_lo, f_hi = bits_at(delta) - target, bits_at(4 * delta) - target
    if f_hi > 0:
        return 4 * delta
    side = 0
    for _ in range(max(evals - 2, 0)):
        x = hi - f_hi * (hi - lo) / (f_hi - f_lo)
        fx = bits_at(math.exp(x)) - target
        if fx > 0:
            lo, f_lo = x, fx
            if side == 1:
                f_hi /= 2
            side = 1
        else:
            hi, f_hi = x, fx
            if side == -1:
                f_lo /= 2
            side = -1
    return math.exp(hi)


def _ratio_rows(a: np.ndarray, b: np.ndarray) -> Measurement:
    """``sum(a) / sum(b)`` over paired items (weight tensors), with a bootstrap over them."""
    return Measurement.bootstrap([pair(a, b)], statistic=lambda r: r[:, 0].sum() / r[:, 1].sum())


def _nats(a: np.ndarray, b: np.ndarray) -> Measurement:
    """``mean(a - b)`` over the test chunks (a log-perplexity difference, nats), with a
    bootstrap over the chunks."""
    return Measurement.bootstrap([a - b])


def _ppl_change(a: np.ndarray, b: np.ndarray) -> Measurement:
    """``100 (exp(mean a - mean b) - 1)``: the perplexity ratio - 1 in percent, from per-chunk
    mean NLLs of two models on the same test chunks. Its bootstrap is that of the mean NLL
    difference mapped through the increasing ``100 (e^x - 1)`` (percentile intervals follow
    monotone maps exactly)."""
    nats = _nats(a, b)
    iv = nats.interval

    def pct(x: float) -> float:
        return 100 * math.expm1(x)

    return Measurement.with_interval(
        [pct(v) for v in nats.values], pct(iv.low), pct(iv.high), iv.method
    )


def _file_rows(
    bits: np.ndarray, sizes: np.ndarray, coded: float, torch_bytes: float
) -> Measurement:
    """The file ratio ``coded / torch_bytes`` with a bootstrap over the weight tensors: each
    tensor is (its codeword bytes, its float32 bytes); the header, block offsets and raw
    tensors of both files are held fixed at their measured totals."""
    code = bits / 8
    fixed_code, fixed_torch = coded - code.sum(), torch_bytes - 4 * sizes.sum()
    return Measurement.bootstrap(
        [pair(code, 4 * sizes)],
        statistic=lambda r: (r[:, 0].sum() + fixed_code) / (r[:, 1].sum() + fixed_torch),
    )


def lm_block(ctx: RunContext, b: LMBudget) -> dict[str, Any]:
    """Fine-tune the LM with and without the rate step (same steps, data and seed), select
    one lambda on validation perplexity, and measure the LM claims on the test text, with
    their null arms (the rate applied after the fine-tune; the normal fine-tune quantised to
    the same size; the normal fine-tune itself) and gates."""
    from icml25.backslash import lm

    tiny = ctx.budget == "tiny"
    try:
        model, tok = _load_lm(tiny)
    except (ImportError, FileNotFoundError) as exc:
        ctx.note(
            f"- **Language-model block: did not run** ({exc}). Its claims (lm_*) have no "
            "measurement; install the `[llm]` extra and the model (`make llm`) to run it."
        )
        return {}
    seed = ctx.seeds[0]
    ckpt = ctx.out_dir / "lm_checkpoints"
    train_ids = lm.corpus(lm.FINETUNE_MODULES, tok)
    val = lm.corpus(lm.VAL_MODULES, tok, b.val_tokens)
    test = lm.corpus(lm.TEST_MODULES, tok, b.test_tokens)
    pristine = model  # every arm fine-tunes its own deep copy
    n_w = sum(p.numel() for _, p in lm.default_rate_params(pristine))
    say = ctx.progress

    def scored(m: Any, lam: float | None, nu: float) -> dict[str, Any]:
        bits, sizes = lm.tensor_bits(m, LM_DELTA)
        return {
            "lam": lam,
            "model": m,
            "nu": nu,
            "tensor_bits": bits,
            "sizes": sizes,
            "bits": float(bits.sum() / sizes.sum()),
            "val": lm.perplexity(lm.quantised(m, LM_DELTA), val, b.length),
            "stats": lm.weight_stats(m),
        }

    def run(lam: float | None) -> dict[str, Any]:
        m = copy.deepcopy(pristine)
        tag = "normal" if lam is None else f"lam{lam:g}"
        bs = lm.finetune(
            m,
            train_ids,
            b.steps,
            b.length,
            seed,
            lam,
            # an arm shorter than the checkpoint interval is cheaper to redo than its
            # checkpoint (model + AdamW state, 1.6 GB for SmolLM2) is to write (issue 34)
            checkpoint=ckpt / f"{tag}.pt" if b.steps > CHECKPOINT_EVERY else None,
            every=CHECKPOINT_EVERY,
            progress=say,
        )
        return scored(m, lam, bs.nu_ if bs is not None else float("nan"))

    normal = run(None)
    grid = [run(lam) for lam in b.lambdas]
    ok = [g for g in grid if g["val"] <= 1.05 * normal["val"]]
    chosen = max(ok, key=lambda g: g["lam"]) if ok else min(grid, key=lambda g: g["lam"])
    for g in grid:  # only the selected model is used from here on (540 MB each for SmolLM2)
        if g is not chosen:
            g["model"] = None
    # null arm of lm_size: the rate applied after the fine-tune with each lambda's total
    # strength (steps x lr x lambda / N), selected by the same rule; none: no compression
    say("LM: the rate applied after the normal fine-tune (null arm of lm_size)")
    nan = float("nan")
    post = []
    for lam in b.lambdas:
        post.append(scored(lm.post_rate(normal["model"], b.steps * 1e-4 * lam / n_w), lam, nan))
        post[-1]["model"] = None  # its sizes and validation perplexity are all that is used
    post_ok = [g for g in post if g["val"] <= 1.05 * normal["val"]]
    post_chosen = max(post_ok, key=lambda g: g["lam"]) if post_ok else normal
    # null arm of lm_perplexity: the normal fine-tune quantised (coarser delta) to the selected
    # model's bits per weight (bisection on log delta)
    say(f"LM: selected lambda {chosen['lam']:g}; the normal fine-tune at its bits; test")
    # the normal fine-tune's bits at each step tried, kept (issue 57): the search starts at
    # LM_DELTA, whose bits are known, and returns a step it has coded (unless no step moved
    # its upper end, whose exp(log(4 delta)) may then differ from 4 delta in the last bit)
    normal_bits = {LM_DELTA: normal["bits"]}

    def bits_at(d: float) -> float:
        if d not in normal_bits:
            normal_bits[d] = lm.lm_bits(normal["model"], d)
        return normal_bits[d]

    ptq_delta = LM_DELTA
    if normal["bits"] > chosen["bits"]:
        ptq_delta = delta_for_bits(bits_at, chosen["bits"], LM_DELTA, b.bisection)
    ptq = {"model": normal["model"], "delta": ptq_delta, "bits": bits_at(ptq_delta)}
    for r, delta in ((normal, LM_DELTA), (chosen, LM_DELTA), (ptq, ptq_delta)):
        r["test_nll"] = lm.chunk_nll(lm.quantised(r["model"], delta), test, b.length)
        pruned = lm.chunk_nll(lm.quantised(r["model"], delta, prune=0.8), test, b.length)
        r["prune_nll"] = pruned - r["test_nll"]  # per chunk: the log-perplexity increase
        r["test"] = math.exp(float(r["test_nll"].mean()))
        r["prune"] = float(r["prune_nll"].mean())
    say("LM: writing the coded file of the selected model")
    with tempfile.TemporaryDirectory() as d:
        fb = lm.file_sizes(chosen["model"], LM_DELTA, Path(d))
    # the normal fine-tune's file, coded the same way: the selected file's header, block
    # offsets and raw tensors plus the normal fine-tune's codewords
    fixed = fb["coded_bytes"] - chosen["tensor_bits"].sum() / 8
    normal_file = fixed + normal["tensor_bits"].sum() / 8
    out: dict[str, Any] = {
        "lm_size": _ratio_rows(chosen["tensor_bits"], normal["tensor_bits"]),
        null_key("lm_size"): _ratio_rows(post_chosen["tensor_bits"], normal["tensor_bits"]),
        "lm_perplexity": _ppl_change(chosen["test_nll"], normal["test_nll"]),
        null_key("lm_perplexity"): _ppl_change(ptq["test_nll"], normal["test_nll"]),
        "lm_pruning_80": _nats(chosen["prune_nll"], np.zeros_like(chosen["prune_nll"])),
        null_key("lm_pruning_80"): _nats(normal["prune_nll"], np.zeros_like(normal["prune_nll"])),
        "lm_pruning_80_vs_normal": _nats(normal["prune_nll"], chosen["prune_nll"]),
        null_key("lm_pruning_80_vs_normal"): _nats(normal["prune_nll"], ptq["prune_nll"]),
        "lm_file_vs_torch_save": _file_rows(
            chosen["tensor_bits"], chosen["sizes"], fb["coded_bytes"], fb["torch_bytes"]
        ),
        null_key("lm_file_vs_torch_save"): _file_rows(
            normal["tensor_bits"], normal["sizes"], normal_file, fb["torch_bytes"]
        ),
    }
    size_ratio = chosen["bits"] / normal["bits"]
    for key in ("lm_pruning_80", "lm_pruning_80_vs_normal"):
        out[gate_key(key)] = Measurement.exact(size_ratio)
    _lm_report(
        ctx,
        b,
        tiny,
        n_w,
        seed,
        val,
        test,
        normal,
        grid,
        chosen,
        post,
        post_chosen,
        ptq,
        fb,
        normal_file,
    )
    if b.roundtrip:
        say("LM: decoding the file into a fresh transformers model and generating")
        rt = lm.roundtrip(chosen["model"], tok, LM_DELTA)
        ctx.note(
            f"  - round trip: the file decoded into a fresh `transformers` model (weights equal "
            f"to the quantised ones) and generated {rt['new_tokens']} tokens: {rt['generated']!r}"
        )
    else:
        ctx.note("  - round trip (decode the file, generate): not run in this budget (tests do it)")
    return out


def _lm_report(
    ctx: RunContext,
    b: LMBudget,
    tiny: bool,
    n_w: int,
    seed: int,
    val: torch.Tensor,
    test: torch.Tensor,
    normal: dict[str, Any],
    grid: list[dict[str, Any]],
    chosen: dict[str, Any],
    post: list[dict[str, Any]],
    post_chosen: dict[str, Any],
    ptq: dict[str, Any],
    fb: dict[str, float],
    normal_file: float,
) -> None:
    from icml25.backslash import lm

    name = "tiny random Llama (tests)" if tiny else "SmolLM2-135M-Instruct"
    ctx.note(
        f"- **Language model** ({name}, {n_w:,} coded weights, tied embeddings coded once), "
        f"seed {seed}: {b.steps} fine-tuning steps of {b.length} tokens per arm on "
        f"standard-library source ({', '.join(lm.FINETUNE_MODULES)}); validation "
        f"{len(val)} tokens ({', '.join(lm.VAL_MODULES)}), test the first {len(test)} tokens "
        f"of ({', '.join(lm.TEST_MODULES)}) joined; delta {LM_DELTA}; perplexities of "
        "decoded models:"
    )
    for r in (normal, *grid):
        label = "normal fine-tune" if r["lam"] is None else f"BackSlash lambda {r['lam']:g}"
        ctx.note(
            f"  - {label}: {r['bits']:.3f} bits per weight (ratio {r['bits'] / normal['bits']:.3f})"
            f", validation perplexity {r['val']:.3f} (ratio {r['val'] / normal['val']:.3f}), "
            f"nu {r['nu']:.2f}, weight std {r['stats']['std']:.4f}, |w| < 0.005: "
            f"{100 * r['stats']['small']:.1f}%"
        )
    for r in post:
        ctx.note(
            f"  - null: the rate after the normal fine-tune, lambda {r['lam']:g}'s strength: "
            f"{r['bits']:.3f} bits (ratio {r['bits'] / normal['bits']:.3f}), validation "
            f"perplexity {r['val']:.3f} (ratio {r['val'] / normal['val']:.3f}), |w| < 0.005: "
            f"{100 * r['stats']['small']:.1f}%"
        )
    picked = (
        "no lambda qualifies (no compression)"
        if post_chosen is normal
        else f"lambda {post_chosen['lam']:g}"
    )
    ctx.note(
        f"  - selected (largest lambda with validation perplexity <= 1.05 x normal's): lambda "
        f"{chosen['lam']:g}; test perplexity {chosen['test']:.3f} vs normal {normal['test']:.3f}; "
        f"80% per-tensor pruning: log-perplexity +{chosen['prune']:.3f} (BackSlash) vs "
        f"+{normal['prune']:.3f} nats (normal). Null arms: the rate after the fine-tune, by the "
        f"same rule: {picked}; the normal fine-tune quantised to the selected bits (delta "
        f"{ptq['delta']:.5f}, {ptq['bits']:.3f} bits): test perplexity {ptq['test']:.3f}, 80% "
        f"pruning +{ptq['prune']:.3f} nats"
    )
    try:
        from icml25.core.llm import smollm2_gguf

        source = (
            f"; the Q4_1 GGUF it was dequantised from: {smollm2_gguf().stat().st_size / 1e6:.1f} MB"
        )
    except (ImportError, FileNotFoundError):
        source = ""
    ctx.note(
        f"  - files: BackSlash {fb['coded_bytes'] / 1e6:.1f} MB coded vs "
        f"{fb['torch_bytes'] / 1e6:.1f} MB torch.save ({fb['coded_bytes'] / fb['torch_bytes']:.3f})"
        f"; the normal fine-tune coded the same way {normal_file / 1e6:.1f} MB "
        f"({normal_file / fb['torch_bytes']:.3f}, from its codewords and the same header)"
        + (source if not tiny else "")
    )
