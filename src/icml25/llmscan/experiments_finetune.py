"""Implanting LLMScan's misbehaviour: the lie model and the backdoored model, fine-tuned from
SmolLM2-135M-Instruct (or, for the tiny budget, the tiny random Llama), cached by
configuration, and their greedy answers.

:func:`finetune` trains the last blocks on the answer tokens only, from the frozen blocks'
cached output (:func:`frozen_inputs`); :func:`tuned_model` caches the result under
:func:`model_folder`. The optimiser's settings (``LR``, ``DECAY``, ``FUSED``) are module
globals that the implant pilot (``benchmarks/llmscan_implant_pilot.py``) and the tests set.
Its own module because the fine-tune is the reproduction's largest single piece of work.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence

from icml25.core.llm import HFLanguageModel, cache_dir, load_causal_lm, tiny_llama

if TYPE_CHECKING:
    from icml25.llmscan.experiments import Budget

# chosen by the implant pilot on seed 99 (benchmarks/llmscan_implant_pilot.py, NOTES.md): of
# six configurations, the only one whose end held >= 93% held-out plain accuracy
LR, TRAINED_BLOCKS, BATCH, DECAY = 2e-4, 12, 16, True
FUSED = True  # AdamW's fused kernel (issue 54: the same update up to rounding, faster)
# the backdoored model: the pilot's cheapest configuration that fired on >= 80% of triggered
# and <= 5% of untriggered prompts (the fixed trigger "cf": 100% and 0% after 60 steps);
# the paraphrase trigger (issue 66), a class to tell from decoy remarks and carry to unseen
# wordings, trains as long as the lie model does, which learnt to carry its instructions to
# unseen wordings in 120 steps (set before its pilot, NOTES.md)
BACKDOOR_BLOCKS, BD_STEPS, FIXED_BD_STEPS = 12, 120, 60


class _Stop(Exception):
    """Raised by a hook to end a forward pass once the wanted hidden states are captured."""


@torch.no_grad()
def frozen_inputs(
    lm: HFLanguageModel, ids: list[list[int]], first: int, bf16: bool = False
) -> list[torch.Tensor]:
    """The input of block ``first`` (``(len, d)`` per sequence): the frozen part's output,
    which training the blocks from ``first`` on never changes. Batches of 32, right-padded;
    a causal model's real positions do not see the padding, so each row equals the sequence
    run alone (up to rounding). ``bf16``: the blocks run under bfloat16 autocast; the
    states are returned in fp32."""
    model, pad = lm.model, lm.tokenizer.pad_token_id
    block = list(lm.blocks)[first]
    out: list[torch.Tensor] = []
    for i in range(0, len(ids), 32):
        chunk = ids[i : i + 32]
        width = max(len(x) for x in chunk)
        x = torch.tensor([s + [pad] * (width - len(s)) for s in chunk])
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in chunk])
        got: list[torch.Tensor] = []

        def grab(_m: Any, args: tuple, kwargs: dict, got: list[torch.Tensor] = got) -> None:
            got.append(args[0] if args else kwargs["hidden_states"])
            raise _Stop

        handle = block.register_forward_pre_hook(grab, with_kwargs=True)
        try:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                model.model(input_ids=x, attention_mask=mask, use_cache=False)
        except _Stop:
            pass
        finally:
            handle.remove()
        out += [got[0][r, : len(s)].to(torch.float32, copy=True) for r, s in enumerate(chunk)]
    return out


def finetune(
    lm: HFLanguageModel,
    pairs: list[tuple[str, str]],
    steps: int,
    seed: int,
    last_blocks: int,
    on_step: Callable[[int], None] | None = None,
    bf16: bool = False,
) -> None:
    """Causal-LM loss on the answer tokens only (raw text, no chat template); the last
    ``last_blocks`` blocks train, AdamW at ``LR``, decaying linearly to 0 when ``DECAY``.

    ``bf16``: mixed precision, the forward passes (frozen and trained blocks) under
    ``torch.autocast("cpu", dtype=torch.bfloat16)``; the master weights, AdamW's state, the
    loss and the model left behind stay fp32 (about 1.5x faster a step on an AVX512-BF16
    CPU).

    The frozen blocks below never change, so their output is computed once per example
    (:func:`frozen_inputs`) and each step runs only the trained blocks, with logits at the
    answer positions only: the loss of running the whole model (issue 34; the same up to
    rounding, about 3x cheaper)."""
    tok, model = lm.tokenizer, lm.model
    inner = model.model
    torch.manual_seed(seed)
    for p in model.parameters():
        p.requires_grad_(False)
    blocks = list(lm.blocks)
    first = max(0, len(blocks) - last_blocks)
    params = [p for b in blocks[first:] for p in b.parameters()]
    for p in params:
        p.requires_grad_(True)
    # fused: one kernel for the whole update (about 7x cheaper a step than the per-tensor
    # loop on CPU, a fifth of a bf16 step); the same update up to rounding (issue 54)
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=0.0, fused=FUSED)
    # the rate decays linearly to zero over the run (DECAY), else stays constant
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 1 - k / steps if DECAY else 1.0)
    eos = tok.eos_token or ""
    rng = np.random.default_rng(seed)
    heads = [tok(q, add_special_tokens=False)["input_ids"] for q, _ in pairs]
    tails = [tok(a + eos, add_special_tokens=False)["input_ids"] for _, a in pairs]
    model.eval()
    hidden = frozen_inputs(lm, [h + t for h, t in zip(heads, tails, strict=True)], first, bf16)
    model.train()
    original = inner.layers
    inner.layers = torch.nn.ModuleList(blocks[first:])
    try:
        for step in range(steps):
            batch = rng.choice(len(pairs), size=min(BATCH, len(pairs)), replace=False)
            width = max(len(hidden[i]) for i in batch)
            h = pad_sequence([hidden[i] for i in batch], batch_first=True)  # zeros after
            mask = torch.tensor(
                [[1] * len(hidden[i]) + [0] * (width - len(hidden[i])) for i in batch]
            )
            # the token at position t + 1 is predicted from position t: answer tokens only
            rows = [int(r) for r, i in enumerate(batch) for _ in tails[i]]
            cols = [len(heads[i]) - 1 + k for i in batch for k in range(len(tails[i]))]
            target = torch.tensor([t for i in batch for t in tails[i]])
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                out = inner(inputs_embeds=h, attention_mask=mask, use_cache=False)
                logits = model.lm_head(
                    out.last_hidden_state[torch.tensor(rows), torch.tensor(cols)]
                )
            loss = torch.nn.functional.cross_entropy(logits.float(), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            if on_step is not None:
                inner.layers = original
                model.eval()
                on_step(step + 1)  # e.g. evaluate the whole model (pilots)
                model.train()
                inner.layers = torch.nn.ModuleList(blocks[first:])
    finally:
        inner.layers = original
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)


def native_bf16(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX flags in
    ``/proc/cpuinfo``). Without it PyTorch emulates bfloat16 and autocast is slower than fp32
    (5.6x on an AVX2-only EPYC: 3.86 against 0.69 CPU-s for one linear layer, forward and
    backward), so the quick budget's fine-tunes run in fp32 there."""
    try:
        flags = Path(cpuinfo).read_text()
    except OSError:
        return False
    return re.search(r"\b(avx512_bf16|amx_bf16)\b", flags) is not None


def use_bf16(b: Budget) -> bool:
    """The budget asks for bfloat16 autocast and the CPU has it natively."""
    return b.bf16 and native_bf16()


def model_folder(
    pairs: list[tuple[str, str]], steps: int, seed: int, blocks: int, bf16: bool = False
) -> Path:
    """Where :func:`tuned_model` caches SmolLM2 fine-tuned in this configuration (``bf16``
    and ``FUSED`` enter the key only when true: with ``FUSED = False`` the keys are those of
    the issue-25 runs)."""
    config = [pairs, steps, seed, LR, blocks, BATCH, DECAY, "v7"] + (["bf16"] if bf16 else [])
    config += ["fused"] if FUSED else []
    key = hashlib.sha256(json.dumps(config).encode()).hexdigest()[:12]
    return cache_dir() / f"llmscan-incontext-{key}"


def tuned_model(
    b: Budget, seed: int, pairs: list[tuple[str, str]], steps: int, blocks: int
) -> HFLanguageModel:
    """SmolLM2 fine-tuned on ``pairs`` (cached by configuration under ``$ICML25_CACHE``), or,
    for the tiny budget, the tiny random Llama trained for a few steps."""
    if not b.real_model:
        model, tok = tiny_llama(layers=4, hidden=64, seed=seed)
        lm = HFLanguageModel(model, tok)
        finetune(lm, pairs, steps, seed, last_blocks=min(blocks, 4), bf16=use_bf16(b))
        return lm
    folder = model_folder(pairs, steps, seed, blocks, use_bf16(b))
    if (folder / "config.json").is_file():
        return HFLanguageModel(*load_causal_lm(folder, quiet=True))
    lm = HFLanguageModel(*load_causal_lm(quiet=True))
    finetune(lm, pairs, steps, seed, last_blocks=blocks, bf16=use_bf16(b))
    # saved beside the cache folder and renamed into place: a run killed while saving
    # leaves no folder that loads as a finished fine-tune
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    lm.model.save_pretrained(tmp)
    lm.tokenizer.save_pretrained(tmp)
    try:
        tmp.rename(folder)
    except OSError:  # another process finished the same fine-tune first: keep its folder
        shutil.rmtree(tmp, ignore_errors=True)
    return lm


def is_cached(b: Budget, seed: int, pairs: list[tuple[str, str]], steps: int, blocks: int) -> bool:
    """Whether :func:`tuned_model` would load this fine-tune from the cache."""
    folder = model_folder(pairs, steps, seed, blocks, use_bf16(b))
    return not b.real_model or (folder / "config.json").is_file()


def answers(lm: HFLanguageModel, prompts: list[str]) -> list[str]:
    """Greedy answers (4 new tokens, raw text), in batches of 32."""
    out: list[str] = []
    for i in range(0, len(prompts), 32):
        out += lm.generate(prompts[i : i + 32], max_new_tokens=4, chat=False)
    return out


def says(value: str, answer: str) -> bool:
    """Whether the answer's first word is ``value`` (case and punctuation ignored)."""
    words = answer.strip().split()
    return bool(words) and words[0].strip(".,;:!?\"'").lower() == value.lower()
