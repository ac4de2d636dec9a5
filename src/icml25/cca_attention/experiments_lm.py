"""Part (c) of CCA-Attention's reproduction: a pretrained LM (SmolLM2-135M) with CCA swapped
in, fine-tuned, and its perplexity; and (d)'s decoding memory of the same model after a
prefill. A file of its own beside :mod:`icml25.cca_attention.experiments` (the budgets and
the needle task), which would pass ~600 lines with it.

- :func:`module_tokens` (standard-library source as text), :func:`token_nlls` /
  :func:`perplexity` (over the positions >= ``skip`` of every chunk).
- :class:`Recipe` and :func:`finetune_lm` (the official recipe's shape: AdamW, linear warm-up
  then a constant rate, gradient clipping, gradient accumulation, resumable).
- :func:`use_local` (CCA's own window without its core tokens: the null arm), :func:`set_arm`,
  :func:`load_lm` and :func:`finetune_comparison` (every arm before and after the same
  fine-tune).
- :func:`pretrained_lm` (the comparison and the decoding memory at a budget's sizes) and
  :func:`lm_measures` (the claims: bootstraps over blocks of :data:`BLOCK` evaluated tokens).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F

from icml25.cca_attention.attention import expand_kv, visible_groups
from icml25.core import validate as V
from icml25.core.claims import Measurement, gate_key, null_key
from icml25.core.llm import cache_dir, finetune_windows
from icml25.core.runner import RunContext

if TYPE_CHECKING:
    from icml25.cca_attention.experiments import Budget

LM_G, LM_S = 16, 128
EVAL_MODULES = ("argparse", "tarfile", "difflib")
FINETUNE_MODULES = (
    "configparser",
    "calendar",
    "fractions",
    "statistics",
    "shlex",
    "ipaddress",
    "pickletools",
    "smtplib",
    "imaplib",
    "mailbox",
    "pydoc",
    "inspect",
    "typing",
    "dataclasses",
    "enum",
)
BLOCK = 64  # evaluated tokens per bootstrap item in (c)


@dataclass(frozen=True)
class Recipe:
    """The fine-tune: the official recipe's shape at a laptop's length.

    The official ``run_scripts/finetune.sh`` (chenyaofo/CCA-Attention at 052cc8e) trains with
    AdamW (weight decay 0) at lr 2e-5, 20 linear warm-up steps then a constant rate
    (``constant_with_warmup``), gradient clipping at norm 2.0, 1 sequence x 4 accumulation
    steps x 8 GPUs per update, at the evaluation length, for 1,000 updates (about 262M
    tokens on 7-8B models). Here: the same schedule shape, clipping and loss, at ``lr``
    (the package's 1e-4 for a 135M model, fixed before any run) and over ``steps`` updates of
    ``accumulate`` windows of ``length`` tokens each."""

    lr: float = 1e-4
    warmup: int = 0
    """Linear warm-up updates (the rate grows from lr/warmup to lr), then constant."""
    clip: float | None = 2.0
    accumulate: int = 1

    def rate(self, update: int) -> float:
        """The learning rate of update ``update`` (0-based)."""
        return self.lr * min(1.0, (update + 1) / self.warmup) if self.warmup else self.lr


def _exp_mean(d: np.ndarray) -> float:
    """exp(mean log-perplexity difference): the perplexity ratio from per-block differences."""
    return math.exp(float(d.mean()))


def _closure(rows: np.ndarray) -> float:
    """Log-perplexity gap after / before from paired per-block differences; with no gap before,
    0 if there is none after either and 1e3 (unbounded) if there is."""
    after, before = float(rows[:, 0].mean()), float(rows[:, 1].mean())
    if before > 0:
        return after / before
    return 0.0 if after <= 0 else 1e3


def _blocks(nll: np.ndarray) -> np.ndarray:
    """Mean NLL of each block of :data:`BLOCK` evaluated tokens, chunk by chunk."""
    if nll.shape[1] % BLOCK:
        raise ValueError(f"{nll.shape[1]} evaluated tokens per chunk: not blocks of {BLOCK}")
    return nll.reshape(nll.shape[0], -1, BLOCK).mean(-1).ravel()


def module_tokens(names: tuple[str, ...], tok: Any) -> list[torch.Tensor]:
    """Token ids of the source files of standard-library modules (one 1-D tensor each)."""
    import importlib
    import inspect

    out = []
    for name in names:
        path = inspect.getsourcefile(importlib.import_module(name))
        if path is None:
            raise FileNotFoundError(f"no source file for the standard-library module {name!r}")
        text = Path(path).read_text(encoding="utf-8")
        out.append(torch.tensor(tok(text, add_special_tokens=False, verbose=False)["input_ids"]))
    return out


@torch.no_grad()
def token_nlls(model: Any, docs: list[torch.Tensor], length: int, skip: int) -> np.ndarray:
    """Next-token NLLs ``(chunks, length - skip)`` of the tokens at positions >= ``skip`` of
    every ``length``-token chunk of every document (each document holds a whole number of
    chunks; a trailing partial chunk is dropped), in document and chunk order."""
    if not 0 <= skip < length:
        raise ValueError(f"skip must be in [0, length = {length}), got {skip}")
    if not docs or min(len(d) for d in docs) < length:
        raise ValueError(f"every document must hold at least one chunk of {length} tokens")
    model.eval()
    batch = max(1, 4096 // length)  # about 4K tokens a forward pass
    rows = []
    for doc in docs:
        chunks = doc[: len(doc) // length * length].reshape(-1, length)
        for i in range(0, len(chunks), batch):
            ids = chunks[i : i + batch]
            logits = model(input_ids=ids).logits[:, :-1]
            nll = F.cross_entropy(logits.float().transpose(1, 2), ids[:, 1:], reduction="none")
            rows.append(nll[:, max(0, skip - 1) :].double().numpy())  # targets at >= skip
    return np.concatenate(rows)


def perplexity(model: Any, docs: list[torch.Tensor], length: int, skip: int) -> float:
    """exp(mean next-token NLL) over the tokens at positions >= ``skip`` of every
    ``length``-token chunk of every document (see :func:`token_nlls`)."""
    return math.exp(float(token_nlls(model, docs, length, skip).mean()))


def finetune_lm(
    model: Any,
    text: torch.Tensor,
    steps: int,
    length: int,
    seed: int,
    *,
    recipe: Recipe = Recipe(),
    checkpoint: Path | None = None,
    every: int = 25,
    progress: Callable[[str], None] | None = None,
) -> None:
    """Fine-tune ``model`` in place by :class:`Recipe`: ``steps`` updates, each over
    ``recipe.accumulate`` windows of ``length`` tokens of the 1-D ``text`` at offsets drawn
    from a generator seeded with ``seed`` (next-token loss, averaged over the windows).
    Leaves the model in eval mode.

    With ``checkpoint``, the model, optimizer, generator and update are saved there every
    ``every`` updates and at the end, through a temporary file; a call that finds the file
    resumes from it, and the result equals an uninterrupted run's."""
    V.integer("steps", steps, low=0)
    V.integer("length", length, low=2)
    V.integer("every", every, low=1)
    V.integer("recipe.accumulate", recipe.accumulate, low=1)
    V.integer("recipe.warmup", recipe.warmup, low=0)
    V.positive("recipe.lr", recipe.lr)
    if recipe.clip is not None:
        V.positive("recipe.clip", recipe.clip)
    if not (isinstance(text, torch.Tensor) and text.dim() == 1):
        raise ValueError(f"text must be a 1-D tensor of token ids, got {type(text).__name__}")
    if len(text) <= length:
        raise ValueError(f"text has {len(text)} tokens: it needs more than length = {length}")
    finetune_windows(
        model,
        torch.optim.AdamW(model.parameters(), lr=recipe.lr, weight_decay=0.0),
        text,
        steps,
        length,
        seed,
        checkpoint=checkpoint,
        every=every,
        progress=progress,
        accumulate=recipe.accumulate,
        rate=recipe.rate,
        clip=recipe.clip,
    )


def _local_fn(group_size: int, window: int) -> Any:
    def attention(
        module: torch.nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        dropout: float = 0.0,
        scaling: float | None = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, None]:
        if query.shape[2] != key.shape[2]:
            raise NotImplementedError("the local-window arm runs whole sequences (no cache)")
        L = query.shape[2]
        k, v = expand_kv(query, key, value)
        t = torch.arange(L)
        start = group_size * visible_groups(L, group_size, window)
        mask = (t[None, :] <= t[:, None]) & (t[None, :] >= start[:, None])
        out = F.scaled_dot_product_attention(query, k, v, attn_mask=mask, scale=scaling)
        return out.transpose(1, 2).contiguous(), None

    return attention


def use_local(model: Any, *, group_size: int, window: int) -> str:
    """Switch a loaded HF model to CCA's raw window *without* its core tokens: query ``t``
    sees positions ``g J(t) .. t`` only (the null arm of the LM claims). Whole sequences
    only (no KV cache); :func:`~icml25.cca_attention.hf.use_full` switches back."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    V.integer("group_size", group_size, low=1)
    V.integer("window", window, low=0)
    name = f"cca_local_g{group_size}_s{window}"
    AttentionInterface.register(name, _local_fn(group_size, window))
    AttentionMaskInterface.register(name, sdpa_mask)
    model.set_attn_implementation(name)
    model._cca_settings = None
    return name


LM_ARMS = ("full", "cca", "local")


def set_arm(model: Any, arm: str) -> None:
    """Full attention, CCA (g = 16, s = 128) or CCA's window without core tokens."""
    from icml25.cca_attention.hf import use_cca, use_full

    V.choice("arm", arm, LM_ARMS)
    if arm == "full":
        use_full(model)
    elif arm == "cca":
        use_cca(model, group_size=LM_G, window=LM_S)
    else:
        use_local(model, group_size=LM_G, window=LM_S)


def load_lm(tiny: bool) -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct (float32), or for tests a tiny random Llama."""
    from icml25.core.llm import load_causal_lm, tiny_llama

    if tiny:
        return tiny_llama(layers=2, hidden=32, heads=4, seed=0, kv_heads=2)
    return load_causal_lm(quiet=True)


def finetune_comparison(
    model: Any,
    load: Callable[[], Any],
    docs: list[torch.Tensor],
    text: torch.Tensor,
    lengths: tuple[int, ...],
    steps: int,
    seed: int,
    *,
    window: int = 512,
    recipe: Recipe = Recipe(),
    arms: Sequence[str] = ("full", "cca"),
    checkpoints: Path | None = None,
    every: int = 25,
    progress: Callable[[str], None] = lambda _msg: None,
) -> dict[str, list[np.ndarray]]:
    """Part (c): per-token NLLs (:func:`token_nlls`, positions >= s) at each of ``lengths`` of
    ``model`` under each of ``arms`` (:func:`set_arm`), then of a fresh copy from ``load()``
    per arm after the same fine-tune on ``text`` (:func:`finetune_lm`, ``window``-token
    sequences, the same windows for every arm). Keys ``<arm>`` and ``<arm>+ft``, one array per
    length. With ``checkpoints`` (a folder) each fine-tune checkpoints there every ``every``
    updates and resumes."""
    for arm in arms:
        V.choice("arm", arm, LM_ARMS)
    progress(f"(c) perplexity before fine-tuning at L = {lengths}")
    nll: dict[str, list[np.ndarray]] = {}
    for arm in arms:
        set_arm(model, arm)
        nll[arm] = [token_nlls(model, docs, n, LM_S) for n in lengths]
    for arm in arms:
        progress(f"(c) fine-tuning a {arm}-attention copy ({steps} steps)")
        model = load()
        set_arm(model, arm)
        ckpt = None if checkpoints is None else checkpoints / f"finetune_{arm}.pt"
        finetune_lm(
            model,
            text,
            steps,
            window,
            seed,
            recipe=recipe,
            checkpoint=ckpt,
            every=every,
            progress=progress,
        )
        nll[f"{arm}+ft"] = [token_nlls(model, docs, n, LM_S) for n in lengths]
    return nll


def pretrained_lm(ctx: RunContext, b: Budget, seed: int) -> dict[str, Any]:
    """(c): :func:`finetune_comparison` of the three arms on the budget's lengths and steps
    (checkpointed under ``$ICML25_CACHE`` in the full budget, so an interrupted run resumes);
    and (d)'s decoding memory after a prefill of each of the budget's ``kv_lengths``: full
    attention with the model's own cache, CCA with :class:`CCACache`, and CCA with the
    model's own cache (the null arm)."""
    tiny = ctx.budget == "tiny"
    model, tok = load_lm(tiny)  # first: it says which extra or wheel is missing
    from transformers import DynamicCache

    from icml25.cca_attention.hf import CCACache, cache_kwarg, kv_cache_bytes

    L_max = max(b.lm_lengths)
    docs = [d[:L_max] for d in module_tokens(EVAL_MODULES[: b.lm_docs], tok)]
    text = torch.cat(module_tokens(FINETUNE_MODULES, tok))

    ctx.progress("(d) decoding memory after a prefill")
    kw = cache_kwarg(model)
    memory: dict[str, list[float]] = {"full": [], "cca": [], "cca_own_cache": []}
    kv_input = module_tokens(("tarfile",), tok)[0]  # 26K SmolLM2 tokens: enough for 4K
    for n in b.kv_lengths:
        ids = kv_input[:n][None]
        with torch.no_grad():
            for name in memory:
                set_arm(model, "full" if name == "full" else "cca")
                cache: Any = CCACache(model) if name == "cca" else DynamicCache()
                # logits of the last position only: the cache is what is measured (issue 57)
                model(input_ids=ids, use_cache=True, logits_to_keep=1, **{kw: cache})
                memory[name].append(kv_cache_bytes(model, cache) / 2**20)

    def load() -> Any:
        return load_lm(tiny)[0]

    checkpoints = None
    if ctx.budget == "full":
        config = [seed, b.lm_steps, b.lm_window, asdict(b.recipe), FINETUNE_MODULES, LM_G, LM_S]
        key = hashlib.sha256(json.dumps(config).encode()).hexdigest()[:12]
        checkpoints = cache_dir() / f"cca-finetune-{key}"
    nll = finetune_comparison(
        model,
        load,
        docs,
        text,
        b.lm_lengths,
        b.lm_steps,
        seed,
        window=b.lm_window,
        recipe=b.recipe,
        arms=LM_ARMS,
        checkpoints=checkpoints,
        every=10,
        progress=ctx.progress,
    )
    return {"nll": nll, "memory": memory}


def _lm_contrast(blocks: dict[str, np.ndarray], arm: str) -> tuple[Measurement, Measurement]:
    """``arm``'s perplexity ratio to full attention after the fine-tune, and its
    log-perplexity gap after / before the fine-tune (paired blocks)."""
    after = blocks[f"{arm}+ft"] - blocks["full+ft"]
    before = blocks[arm] - blocks["full"]
    quality = Measurement.bootstrap([after], _exp_mean)
    closes = Measurement.bootstrap([np.c_[after, before]], _closure)
    return quality, closes


def lm_measures(nll: dict[str, list[np.ndarray]], memory: dict[str, list[float]]) -> dict[str, Any]:
    """The pretrained-LM claims (part (c)) at the longest context, a bootstrap over blocks of
    :data:`BLOCK` evaluated tokens, and the decoding memory (part (d)) at the longest prefill,
    from :func:`pretrained_lm`."""
    blocks = {k: _blocks(v[-1]) for k, v in nll.items()}  # the longest context
    quality, closes = _lm_contrast(blocks, "cca")
    null_quality, null_closes = _lm_contrast(blocks, "local")
    return {
        "smollm2_quality": quality,
        "smollm2_finetune_closes_gap": closes,
        gate_key("smollm2_quality"): closes,
        null_key("smollm2_quality"): null_quality,
        null_key("smollm2_finetune_closes_gap"): null_closes,
        "decoding_memory": Measurement.exact(memory["cca"][-1] / memory["full"][-1]),
        null_key("decoding_memory"): Measurement.exact(
            memory["cca_own_cache"][-1] / memory["full"][-1]
        ),
    }
