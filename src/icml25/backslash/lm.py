"""BackSlash on a pretrained causal language model (SmolLM2-135M-Instruct through
:mod:`icml25.core.llm`, or any Hugging Face causal LM; tests use the tiny random Llama).

- :func:`corpus` tokenises an offline text: the source files of standard-library modules
  (the fine-tuning, validation and test modules are disjoint).
- :func:`finetune` fine-tunes with AdamW (lr 1e-4, no weight decay, batch 1, windows of
  ``length`` tokens at random offsets), with BackSlash's rate step attached when ``lam`` is
  given; it checkpoints every ``every`` steps and resumes from the checkpoint, printing a
  progress line per step.
- :func:`perplexity` is exp(mean next-token NLL) over whole ``length``-token chunks.
- :func:`quantised` is the decoded model (every Linear/Embedding weight quantised with
  ``delta``; what :func:`icml25.backslash.load_compressed` returns from the file).
- :func:`roundtrip` writes the model with :func:`icml25.backslash.save_compressed`, reads it
  into a fresh model of the same configuration, checks the weights, and generates a few tokens
  with ``transformers``.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from icml25.backslash.coding import (
    MAX_Q,
    load_compressed,
    magnitude_prune,
    quantize,
    save_compressed,
)
from icml25.backslash.rate import BackSlash, default_rate_params, gg_shape_pooled, prox_power
from icml25.core import validate as V
from icml25.core.llm import finetune_windows

FINETUNE_MODULES = ("configparser", "calendar", "fractions", "statistics", "shlex", "ipaddress")
VAL_MODULES = ("argparse",)
TEST_MODULES = ("difflib", "tarfile")


def corpus(names: tuple[str, ...], tok: Any, max_tokens: int | None = None) -> torch.Tensor:
    """Token ids (1-D) of the source files of the standard-library modules ``names``, joined,
    cut to ``max_tokens``."""
    parts = []
    for name in names:
        path = inspect.getsourcefile(importlib.import_module(name))
        if path is None:
            raise FileNotFoundError(f"no source file for the standard-library module {name!r}")
        text = Path(path).read_text(encoding="utf-8")
        parts.append(torch.tensor(tok(text, add_special_tokens=False)["input_ids"]))
    ids = torch.cat(parts)
    return ids[:max_tokens] if max_tokens is not None else ids


@torch.no_grad()
def chunk_nll(model: Any, ids: torch.Tensor, length: int) -> np.ndarray:
    """Mean next-token NLL (nats) of each whole ``length``-token chunk of ``ids``: the items
    of the perplexity's bootstrap (every chunk scores ``length - 1`` tokens, so the mean of
    these is the mean NLL)."""
    V.integer("length", length, low=2)
    if len(ids) < length:
        raise ValueError(f"ids has {len(ids)} tokens: fewer than one chunk of {length}")
    model.eval()
    chunks = ids[: len(ids) // length * length].reshape(-1, length)
    batch = max(1, 2048 // length)
    out = []
    for i in range(0, len(chunks), batch):
        x = chunks[i : i + batch]
        logits = model(input_ids=x).logits[:, :-1]
        nll = F.cross_entropy(logits.transpose(1, 2), x[:, 1:], reduction="none")
        out.append(nll.double().mean(dim=1).numpy())
    return np.concatenate(out)


def perplexity(model: Any, ids: torch.Tensor, length: int) -> float:
    """exp(mean next-token NLL) over the whole ``length``-token chunks of ``ids``."""
    return math.exp(float(chunk_nll(model, ids, length).mean()))


def finetune(
    model: Any,
    ids: torch.Tensor,
    steps: int,
    length: int,
    seed: int,
    lam: float | None = None,
    *,
    checkpoint: Path | None = None,
    every: int = 25,
    progress: Callable[[str], None] | None = None,
) -> BackSlash | None:
    """Fine-tune in place (AdamW lr 1e-4, batch 1, random ``length``-token windows); with
    ``lam``, BackSlash's rate step (estimated ``nu``) follows every optimizer step.

    With ``checkpoint`` the model, optimizer, sampler and rate-step state are saved there
    every ``every`` steps and at the end; a call that finds the file resumes from it, and the
    result equals an uninterrupted run's. Returns the (detached) BackSlash object."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    bs = BackSlash(model, lam).attach(opt) if lam is not None else None
    name = "normal" if bs is None else f"BackSlash lambda={lam:g}"
    extra = None
    if bs is not None:

        def get() -> dict[str, Any]:
            return {"bs_steps": bs.steps, "bs_nu": bs.nu_}

        def put(state: dict[str, Any]) -> None:
            bs.steps, bs.nu_ = state["bs_steps"], state["bs_nu"]

        extra = (get, put)

    def report(msg: str) -> None:
        if progress is not None:
            progress(f"{name}: {msg}" + (f", nu {bs.nu_:.2f}" if bs is not None else ""))

    finetune_windows(
        model,
        opt,
        ids,
        steps,
        length,
        seed,
        checkpoint=checkpoint,
        every=every,
        progress=report,
        extra_state=extra,
    )
    if bs is not None:
        bs.detach()
    return bs


def lm_bits(model: Any, delta: float) -> float:
    """Exp-Golomb bits per coded weight (every Linear/Embedding weight, tied ones once)."""
    bits, sizes = tensor_bits(model, delta)
    return float(bits.sum() / sizes.sum())


def tensor_bits(model: Any, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """Exp-Golomb bits of each coded weight tensor and its number of weights (the items of
    the size claims' bootstrap)."""
    ps = [p for _, p in default_rate_params(model)]
    bits = np.array([_tensor_coded_bits(p, delta) for p in ps], dtype=np.float64)
    return bits, np.array([p.numel() for p in ps], dtype=np.float64)


@torch.no_grad()
def post_rate(model: Any, t: float) -> Any:
    """A copy of ``model`` whose Linear/Embedding weights take one proximal step of
    ``t |theta|^nu`` (``nu`` estimated from them as BackSlash does, clamped to [0.5, 2] as its
    default): the rate applied after training, with no gradient step to repair it."""
    out = copy.deepcopy(model)
    ps = [p for _, p in default_rate_params(out)]
    nu = gg_shape_pooled(ps, (0.5, 2.0))  # BackSlash's estimate: each tensor at its own scale
    for p in ps:
        p.copy_(prox_power(p, t, nu))
    return out.eval()


@torch.no_grad()
def quantised(model: Any, delta: float, prune: float = 0.0) -> Any:
    """A copy with every Linear/Embedding weight (optionally magnitude-pruned per tensor by
    ``prune`` first) quantised with ``delta``: the decoded model."""
    out = copy.deepcopy(model)
    ps = [p for _, p in default_rate_params(out)]
    if prune > 0:
        magnitude_prune(ps, prune)
    for p in ps:
        p.copy_(_dequantised(p, delta))
    return out.eval()


_CHUNK = 1 << 16
"""Weights per slice in :func:`_dequantised` and :func:`_tensor_coded_bits`: each slice's
float64 temporaries (512 KiB) stay in cache, where whole-tensor passes over SmolLM2's 28M-weight
embedding went through memory (issue 57: a coder-length pass over its 134.5M weights fell from
2.8 s to 0.7 s, side by side on a shared machine; elementwise, so the same numbers)."""


def _slices(p: torch.Tensor) -> list[torch.Tensor]:
    return list(p.detach().reshape(-1).split(_CHUNK))


def _symbols(x: torch.Tensor, p: torch.Tensor, delta: float) -> torch.Tensor:
    """``round(x / delta)`` for the slice ``x`` of ``p``, in float64 (round half to even, as
    :func:`quantize`; exact integers below the coder's limit), computed in place on one float64
    copy. Adding 0.0 turns the -0.0 that rounding leaves for small negative weights into +0.0,
    as :func:`quantize`'s int64 does. NaN/inf or a value beyond the coder's limit raises
    :func:`quantize`'s own error on the whole of ``p`` (its NaN count and largest value name the
    tensor, not the slice; ``max`` propagates NaN, which fails ``< MAX_Q`` as inf does)."""
    q = x.double().div_(delta).round_().add_(0.0)
    if not float(q.abs().max()) < MAX_Q:
        quantize(p, delta)
    return q


def _dequantised(p: torch.Tensor, delta: float) -> torch.Tensor:
    """``dequantize(quantize(p, delta), delta)`` as a tensor, bit for bit (the same float64
    division, rounding, product and float32 cast), without NumPy's int64 round trip: what the
    decoder returns for this weight. Slice by slice (:data:`_CHUNK`); every slice is checked
    before anything is returned."""
    out = torch.empty(p.numel(), dtype=torch.float32)
    for x, o in zip(_slices(p), out.split(_CHUNK), strict=True):
        o.copy_(_symbols(x, p, delta).mul_(delta))
    return out.reshape(p.shape)


def _tensor_coded_bits(p: torch.Tensor, delta: float) -> int:
    """``coded_bits(p, delta)``: the order-0 Exp-Golomb length ``2 floor(log2(u + 1)) + 1`` of
    each zig-zagged symbol ``u = 2|q| - (q > 0)``, summed, in float64 torch (exact: u < 2^31).
    ``floor(log2(u + 1))`` is the exponent ``e`` of ``|q| = m 2^e`` (``m`` in [0.5, 1), ``e =
    0`` at 0) for both signs: ``u + 1`` is ``2|q|`` or ``2|q| + 1``, both in ``[2^e, 2^(e+1))``.
    Slice by slice (:data:`_CHUNK`)."""
    total = 0
    for x in _slices(p):
        q = x.double().div_(delta).round_().abs_()
        if not float(q.max()) < MAX_Q:
            quantize(p, delta)
        total += int(torch.frexp(q).exponent.sum(dtype=torch.int64))
    return 2 * total + p.numel()


def file_sizes(model: Any, delta: float, folder: Path) -> dict[str, float]:
    """Bytes of ``save_compressed`` and of ``torch.save(state_dict)`` for ``model``."""
    folder.mkdir(parents=True, exist_ok=True)
    stats = save_compressed(model, folder / "model.bs", delta)
    torch.save(model.state_dict(), folder / "model.pt")
    return {
        "coded_bytes": float(stats.file_bytes),
        "torch_bytes": float((folder / "model.pt").stat().st_size),
        "bits_per_weight": stats.bits_per_coded_param,
    }


def roundtrip(
    model: Any,
    tok: Any,
    delta: float,
    prompt: str = "def main():",
    folder: Path | None = None,
) -> dict[str, Any]:
    """Write ``model`` with ``save_compressed`` (into ``folder``, kept, or a temporary one),
    load it into a fresh model built from its config, check the decoded weights equal the
    quantised ones, and generate 8 tokens greedily with ``transformers``' ``generate``.
    Returns the sizes and the generated text."""
    from transformers import AutoModelForCausalLM

    with tempfile.TemporaryDirectory() as d:
        where = Path(d) if folder is None else folder
        sizes = file_sizes(model, delta, where)
        fresh = AutoModelForCausalLM.from_config(model.config)
        load_compressed(where / "model.bs", fresh)
    fresh.eval()
    ref = dict(default_rate_params(quantised(model, delta)))
    for name, p in default_rate_params(fresh):
        if not torch.equal(p, ref[name]):
            raise AssertionError(f"decoded weight {name} differs from the quantised weight")
    if getattr(model.config, "tie_word_embeddings", False):
        a, b = fresh.get_input_embeddings().weight, fresh.get_output_embeddings().weight
        if a.data_ptr() != b.data_ptr() and not torch.equal(a, b):
            raise AssertionError("the decoded model's tied embeddings differ")
    x = tok(prompt, return_tensors="pt")
    with torch.no_grad():
        out = fresh.generate(**x, max_new_tokens=8, do_sample=False, pad_token_id=tok.eos_token_id)
    text = tok.decode(out[0, x["input_ids"].shape[1] :], skip_special_tokens=True)
    return {**sizes, "generated": text, "new_tokens": int(out.shape[1] - x["input_ids"].shape[1])}


def prune_increase(model: Any, ids: torch.Tensor, length: int, delta: float, base: float) -> float:
    """Relative test-perplexity increase (%) of the decoded model after 80% per-tensor
    magnitude pruning, against its decoded perplexity ``base``."""
    return 100 * (perplexity(quantised(model, delta, prune=0.8), ids, length) / base - 1)


def weight_stats(model: Any) -> dict[str, float]:
    """Standard deviation and fraction of |w| < 0.005 over the coded weights (diagnostic)."""
    ps = [p.detach().flatten() for _, p in default_rate_params(model)]
    n = sum(p.numel() for p in ps)
    s2 = sum(float(p.pow(2).sum(dtype=torch.float64)) for p in ps)
    small = sum(int((p.abs() < 0.005).sum()) for p in ps)
    return {"std": float(np.sqrt(s2 / n)), "small": small / n}
