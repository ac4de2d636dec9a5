"""LLMScan (Zhang, Goh, Zhang, Sun, Lin Xin & Zhang, ICML 2025): causal scans of a language
model's prompt tokens and layers, and a detector on top.

For one prompt, with ``y*`` the model's own most likely next token after the prompt and
``P(y*)`` its probability:

- **Token effects.** Each prompt token in turn is replaced by an explicit intervention token,
  and the prompt is re-run. Two variants, as in the paper:
  - ``"attention"`` (default): the Euclidean distance between the concatenated attention
    maps of layers {first, middle, last} x heads {first, middle, last}, intervened against
    original. This is what the official lie pipeline computes
    (``causality_analysis_prompt.py``, ``get_attention_features``); the brief read the
    probability variant as the lie-task choice, but it is commented out there.
  - ``"probability"`` (an ablation): the effect is ``|P_i(y*) - P(y*)|``.
  The list is reduced to five statistics: mean, standard deviation, range, kurtosis and
  skewness (scipy's; a constant list has zero kurtosis and skewness by convention).
- **Layer effects.** Each decoder block in turn is skipped (its output replaced by its input:
  identity, not zero), and ``|P_skip(y*) - P(y*)|`` is recorded: one value per block.

Computation is reused (``reuse=True``, the default): an intervention at position ``i``
leaves the prefix ``[0, i)`` untouched, so its keys and values come from the unmodified
pass's KV cache and only the suffix is run; skipping block ``l`` leaves the hidden states
below it untouched, so the batch row that skips ``l`` starts from the unmodified pass's
input to block ``l`` and only blocks ``l + 1 ...`` are computed (about half the blocks on
average). Only the last position's logits are computed. ``reuse=False`` runs every
intervention in full (batched), as a check and for the cost benchmark; both give the same
effects (tested). Layer skipping without reuse is a forward hook on every block that copies
the block's input to its output for the batch row that skips it. This works on any Hugging
Face decoder-only LM with Llama-style ``model.layers``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy import stats

from icml25.core.llm import HFLanguageModel

STAT_NAMES = ("mean", "std", "range", "kurtosis", "skewness")
# A forward pass costs about as much as this many (row x token) positions more, whatever its
# size (it reads every weight once: memory-bound for small batches); measured on
# SmolLM2-135M with 2 threads (benchmarks/llmscan_cost.py). Token interventions are grouped
# by :func:`reuse_groups` to minimise the total.
FORWARD_OVERHEAD = 64


def reuse_groups(
    positions: Sequence[int], length: int, max_batch: int, overhead: float | None = None
) -> list[list[int]]:
    """Sorted positions cut into runs of consecutive ones, each run one batch that reuses the
    prefix before its first position and runs the ``length - first`` tokens after it for
    every row. The cut minimises ``sum(overhead + rows x (length - first))`` over runs of
    at most ``max_batch`` rows (dynamic programming over the cut points): one batch from
    the start recomputes the whole prompt for every row, one batch per position pays the
    fixed cost of a forward pass each time. ``overhead=None``: :data:`FORWARD_OVERHEAD`, read
    at the call."""
    if overhead is None:
        overhead = FORWARD_OVERHEAD
    pos = sorted(int(p) for p in positions)
    if not (isinstance(max_batch, int) and max_batch > 0):
        raise ValueError(f"max_batch must be a positive integer, got {max_batch!r}")
    if pos and not 0 <= pos[0] <= pos[-1] < length:
        raise ValueError(f"positions must lie in [0, length={length}), got {pos}")
    n = len(pos)
    best = [0.0] + [float("inf")] * n  # best[j]: cheapest cut of pos[:j]
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(max(0, j - max_batch), j):
            cost = best[i] + overhead + (j - i) * (length - pos[i])
            if cost < best[j]:
                best[j], cut[j] = cost, i
    runs, j = [], n
    while j > 0:
        runs.append(pos[cut[j] : j])
        j = cut[j]
    return runs[::-1]


def summary_stats(values: Any) -> np.ndarray:
    """Mean, std, range, kurtosis (Fisher) and skewness of a list of effects."""
    if isinstance(values, (str, bytes)) or np.asarray(values).dtype.kind in "US":
        raise ValueError(f"effects must be numbers, not strings, got {values!r}")
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ValueError(f"effects must be a non-empty finite list, got {v}")
    if np.ptp(v) == 0:
        return np.array([v.mean(), 0.0, 0.0, 0.0, 0.0])
    return np.array([v.mean(), v.std(), np.ptp(v), stats.kurtosis(v), stats.skew(v)])


@dataclass
class ScanResult:
    token_effects: np.ndarray  # (P,) one per intervened prompt token
    layer_effects: np.ndarray  # (L,) one per decoder block
    positions: np.ndarray  # token positions that were intervened
    tokens: list[str]  # the whole encoded input, for plots
    top_token: str  # y*, the model's own next token
    top_prob: float

    def features(self, which: str = "both") -> np.ndarray:
        tok = summary_stats(self.token_effects)
        if which == "token":
            return tok
        if which == "layer":
            return self.layer_effects.copy()
        return np.concatenate([tok, self.layer_effects])


class LLMScan:
    """Causal scanner for a :class:`~icml25.core.llm.HFLanguageModel`.

    ``intervention_token``: a string that must encode to exactly one token, a token id, or
    ``"bos"`` for the tokenizer's BOS token (an ablation: the official code's
    ``tokenizer('-')['input_ids'][0]`` is the BOS for Llama tokenizers).
    ``token_effect``: ``"attention"`` (official, default) or ``"probability"`` (ablation).
    ``positions="prompt"`` intervenes on the user prompt's tokens only (not the chat
    template around it); ``"all"`` on every token. ``reuse``: reuse the unmodified pass's KV
    cache and hidden states (default) or run every intervention in full."""

    def __init__(
        self,
        lm: HFLanguageModel,
        *,
        intervention_token: str | int = "-",
        token_effect: str = "attention",
        positions: str = "prompt",
        chat: bool = True,
        max_batch: int = 64,
        reuse: bool = True,
    ) -> None:
        if token_effect not in ("probability", "attention"):
            raise ValueError(
                f"token_effect must be 'probability' or 'attention', got {token_effect!r}"
            )
        if positions not in ("prompt", "all"):
            raise ValueError(f"positions must be 'prompt' or 'all', got {positions!r}")
        if not (isinstance(max_batch, int) and max_batch > 0):
            raise ValueError(f"max_batch must be a positive integer, got {max_batch!r}")
        self.lm, self.token_effect, self.positions = lm, token_effect, positions
        self.chat, self.max_batch, self.reuse = chat, max_batch, bool(reuse)
        self.intervention_id = self._intervention_id(intervention_token)
        if token_effect == "attention":
            set_impl = getattr(lm.model, "set_attn_implementation", None)
            if set_impl is not None:
                set_impl("eager")  # SDPA kernels do not return attention maps
            else:  # pragma: no cover - older transformers
                lm.model.config._attn_implementation = "eager"

    def _intervention_id(self, token: str | int) -> int:
        vocab = int(self.lm.model.get_input_embeddings().weight.shape[0])
        if isinstance(token, (int, np.integer)) and not isinstance(token, bool):
            if not 0 <= int(token) < vocab:
                raise ValueError(f"intervention_token id must lie in [0, {vocab}), got {token}")
            return int(token)
        if token == "bos":
            bos = self.lm.tokenizer.bos_token_id
            if bos is None:
                raise ValueError("intervention_token='bos' but the tokenizer has no BOS token")
            return int(bos)
        if not isinstance(token, str) or not token:
            raise ValueError(f"intervention_token must be a token id or a string, got {token!r}")
        ids = self.lm.tokenizer(token, add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            raise ValueError(
                f"intervention_token {token!r} encodes to {len(ids)} tokens {ids}; "
                "pass a string that is one token, or a token id"
            )
        return int(ids[0])

    # --- encoding ------------------------------------------------------------------------
    def _encode(self, prompt: str) -> tuple[torch.Tensor, np.ndarray]:
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError(f"prompt must be a non-empty string, got {prompt!r}")
        text = self.lm.text(prompt, chat=self.chat)
        enc = self.lm.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = torch.tensor(enc["input_ids"], device=self.lm.device)  # where the model is
        if self.positions == "all":
            return ids, np.arange(len(ids))
        start = text.rfind(prompt)
        end = start + len(prompt)
        pos = [
            i for i, (a, b) in enumerate(enc["offset_mapping"]) if a >= start and b <= end and b > a
        ]
        if not pos:
            raise ValueError("no token of the prompt was found in the encoded input")
        return ids, np.array(pos)

    # --- forward passes ------------------------------------------------------------------
    def _forward(self, ids: torch.Tensor, attentions: bool = False, **kw: Any) -> Any:
        return self.lm.model(input_ids=ids, output_attentions=attentions, logits_to_keep=1, **kw)

    def _chunks(self, n: int) -> list[slice]:
        return [slice(i, min(n, i + self.max_batch)) for i in range(0, n, self.max_batch)]

    def _attention_vector(self, attentions: Sequence[torch.Tensor], start: int = 0) -> torch.Tensor:
        """Maps of layers {first, middle, last} x heads {first, middle, last}, query rows
        from ``start`` on, flattened: ``(B, 9 (T - start) T)``."""
        L = len(attentions)
        H = attentions[0].shape[1]
        layers = sorted({0, L // 2, L - 1})
        heads = sorted({0, H // 2, H - 1})
        return torch.cat(
            [attentions[k][:, h, start:].flatten(1) for k in layers for h in heads],
            dim=1,
        )

    @torch.no_grad()
    def _base(self, prompt: str) -> tuple[torch.Tensor, np.ndarray, Any, int, torch.Tensor]:
        """The encoded prompt, its intervened positions, the unmodified forward pass (with
        attention maps for the attention variant, its KV cache and each block's input
        when reusing), ``y*`` and the next-token probabilities."""
        ids, pos = self._encode(prompt)
        inputs: list[torch.Tensor] = []
        handles = []
        if self.reuse:
            for block in self.lm.blocks:
                handles.append(
                    block.register_forward_pre_hook(
                        lambda _m, a, k: inputs.append(a[0] if a else k["hidden_states"]),
                        with_kwargs=True,
                    )
                )
        try:
            base = self._forward(
                ids[None], attentions=self.token_effect == "attention", use_cache=self.reuse
            )
        finally:
            for h in handles:
                h.remove()
        base.block_inputs = inputs
        p0 = torch.softmax(base.logits[0, -1].float(), -1)
        return ids, pos, base, int(p0.argmax()), p0

    @torch.no_grad()
    def _token_effects(
        self, ids: torch.Tensor, pos: np.ndarray, base: Any, y_star: int, p0: torch.Tensor
    ) -> np.ndarray:
        attn = self.token_effect == "attention"
        if self.reuse:
            return self._token_effects_reused(ids, pos, base, y_star, p0)
        batch = ids.repeat(len(pos), 1)
        dev = ids.device
        batch[torch.arange(len(pos), device=dev), torch.as_tensor(pos, device=dev)] = (
            self.intervention_id
        )
        effects = []
        for sl in self._chunks(len(pos)):
            out = self._forward(batch[sl], attentions=attn, use_cache=False)
            if attn:
                # the difference in float32 (of half-precision maps it would be rounded)
                diff = (
                    self._attention_vector(out.attentions).float()
                    - self._attention_vector(base.attentions).float()
                )
                effects.append(torch.linalg.vector_norm(diff, dim=1))
            else:
                p = torch.softmax(out.logits[:, -1].float(), -1)[:, y_star]
                effects.append((p - p0[y_star]).abs())
        return torch.cat(effects).cpu().numpy().astype(np.float64)

    def _token_effects_reused(
        self, ids: torch.Tensor, pos: np.ndarray, base: Any, y_star: int, p0: torch.Tensor
    ) -> np.ndarray:
        """Positions in runs of consecutive ones (:func:`reuse_groups`): a run starting at
        ``i`` takes the prefix's keys and values from the unmodified pass and runs only
        ``ids[i:]`` (one batch row per position). Attention rows before a row's intervened
        position are unchanged, so the distance over the rows from ``i`` on is the distance
        over the whole maps."""
        attn = self.token_effect == "attention"
        cache = getattr(base, "cache", None)
        if cache is None:  # pragma: no cover - transformers < 5
            cache = base.past_key_values
        effects: list[float] = []
        order = np.argsort(pos, kind="stable")
        for group in reuse_groups(pos.tolist(), len(ids), self.max_batch):
            i = group[0]
            suffix = ids[i:].repeat(len(group), 1)
            rows = torch.arange(len(group), device=ids.device)
            suffix[rows, torch.tensor(group, device=ids.device) - i] = self.intervention_id
            if i == 0:  # nothing to reuse
                out = self._forward(suffix, attentions=attn, use_cache=False)
            else:
                prefix = copy.deepcopy(cache)
                if prefix.get_seq_length() > i:
                    prefix.crop(i - prefix.get_seq_length())  # a negative count removes tokens
                prefix.batch_repeat_interleave(len(group))
                out = self._forward(suffix, attentions=attn, cache=prefix, use_cache=True)
            if attn:
                # the difference in float32 (of half-precision maps it would be rounded)
                diff = (
                    self._attention_vector(out.attentions).float()
                    - self._attention_vector(base.attentions, start=i).float()
                )
                effects += torch.linalg.vector_norm(diff, dim=1).tolist()
            else:
                p = torch.softmax(out.logits[:, -1].float(), -1)[:, y_star]
                effects += (p - p0[y_star]).abs().tolist()
        result = np.empty(len(pos))
        result[order] = effects
        return result

    @torch.no_grad()
    def _layer_effects(
        self, ids: torch.Tensor, y_star: int, p0: torch.Tensor, base: Any = None
    ) -> np.ndarray:
        blocks = list(self.lm.blocks)
        effects = []
        for sl in self._chunks(len(blocks)):
            # row r of this batch skips block skip[r] (host-side bookkeeping: on the CPU)
            skip = torch.arange(len(blocks), device="cpu")[sl]
            if self.reuse and base is not None:
                with _resume_blocks(self.lm, base.block_inputs, skip):
                    out = self._forward(ids.repeat(len(skip), 1), use_cache=False)
            else:
                with skip_blocks(blocks, skip):
                    out = self._forward(ids.repeat(len(skip), 1), use_cache=False)
            p = torch.softmax(out.logits[:, -1].float(), -1)[:, y_star]
            effects.append((p - p0[y_star]).abs())
        return torch.cat(effects).cpu().numpy().astype(np.float64)

    def token_effects(self, prompt: str) -> tuple[np.ndarray, np.ndarray, int, float]:
        """Effects of replacing each prompt token, their positions, ``y*`` and ``P(y*)``."""
        ids, pos, base, y_star, p0 = self._base(prompt)
        return self._token_effects(ids, pos, base, y_star, p0), pos, y_star, float(p0[y_star])

    def layer_effects(self, prompt: str) -> np.ndarray:
        """``|P_skip(y*) - P(y*)|`` for skipping each decoder block (identity replacement)."""
        ids, _, base, y_star, p0 = self._base(prompt)
        return self._layer_effects(ids, y_star, p0, base)

    def scan(self, prompt: str) -> ScanResult:
        """Both scans of one prompt, sharing one encoding and one unmodified forward pass."""
        ids, pos, base, y_star, p0 = self._base(prompt)
        tok = self._token_effects(ids, pos, base, y_star, p0)
        layers = self._layer_effects(ids, y_star, p0, base)
        tokens = [self.lm.tokenizer.decode([int(i)]) for i in ids]
        top = self.lm.tokenizer.decode([y_star])
        return ScanResult(tok, layers, pos, tokens, top, float(p0[y_star]))

    def features(
        self,
        prompts: Sequence[str],
        which: str = "both",
        progress: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        """``(n, 5 + L)`` features ([token statistics, layer effects]) of many prompts."""
        if which not in ("both", "token", "layer"):
            raise ValueError(f"which must be 'both', 'token' or 'layer', got {which!r}")
        if isinstance(prompts, str):
            raise ValueError("prompts must be a list of strings, got one string")
        rows = []
        for i, p in enumerate(prompts):
            rows.append(self.scan(p).features(which))
            if progress is not None:
                progress(i + 1, len(prompts))
        return np.stack(rows)


class _Resume(torch.nn.Module):
    """Block ``k`` in a batch whose row ``r`` skips block ``skip[r]``: rows that skip a later
    block replay the unmodified pass's output of block ``k`` (nothing below their skip
    changed), the row that skips ``k`` passes its input through, and only rows that skipped
    an earlier block run the block."""

    def __init__(self, block: torch.nn.Module, k: int, skip: torch.Tensor, replay: Any) -> None:
        super().__init__()
        self.block, self.k, self.skip, self.replay = block, k, skip, replay

    def forward(self, hidden_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        out = hidden_states.clone()
        later = self.skip > self.k
        if bool(later.any()):
            out[later] = self.replay.to(out.dtype)
        run = torch.nonzero(self.skip < self.k).flatten()
        if run.numel():
            B = hidden_states.shape[0]
            res = self.block(
                hidden_states[run],
                *args,
                **{key: _rows(v, run, B) for key, v in kwargs.items()},
            )
            out[run] = res[0] if isinstance(res, tuple) else res
            if isinstance(res, tuple):
                return (out, *res[1:])
        return out


def _rows(value: Any, rows: torch.Tensor, batch: int) -> Any:
    if isinstance(value, torch.Tensor) and value.dim() and value.shape[0] == batch > 1:
        return value[rows]
    if isinstance(value, tuple):
        return tuple(_rows(v, rows, batch) for v in value)
    return value


class _resume_blocks:
    """Context manager: the model's blocks replaced by :class:`_Resume` wrappers."""

    def __init__(self, lm: HFLanguageModel, block_inputs: list[torch.Tensor], skip: Any) -> None:
        inner = lm.model.model
        self.inner, self.original = inner, inner.layers
        skip = torch.as_tensor(skip, device="cpu")
        n = len(self.original)
        self.wrapped = torch.nn.ModuleList(
            [
                _Resume(b, k, skip, block_inputs[k + 1] if k + 1 < n else None)
                for k, b in enumerate(self.original)
            ]
        )

    def __enter__(self) -> _resume_blocks:
        self.inner.layers = self.wrapped
        return self

    def __exit__(self, *exc: object) -> None:
        self.inner.layers = self.original


class skip_blocks:
    """Context manager: in a batch, row ``r`` runs with block ``skip[r]`` replaced by the
    identity (``skip[r] = -1``: no block skipped)."""

    def __init__(self, blocks: Sequence[torch.nn.Module], skip: torch.Tensor) -> None:
        if isinstance(skip, (str, bytes)):
            raise ValueError(
                f"skip must be a 1-D integer tensor (one entry per batch row), got {skip!r}"
            )
        self.blocks, self.skip = list(blocks), torch.as_tensor(skip, device="cpu")  # host side
        if self.skip.dim() != 1 or self.skip.dtype.is_floating_point:
            raise ValueError(
                f"skip must be a 1-D integer tensor (one entry per batch row), got {self.skip}"
            )
        if self.skip.numel() and (
            int(self.skip.min()) < -1 or int(self.skip.max()) >= len(self.blocks)
        ):
            raise ValueError(
                f"skip entries must be block indices in [0, {len(self.blocks)}) or -1, "
                f"got {self.skip.tolist()}"
            )
        self.handles: list[Any] = []

    def __enter__(self) -> skip_blocks:
        for index, block in enumerate(self.blocks):
            rows = torch.nonzero(self.skip == index).flatten()
            if rows.numel():
                self.handles.append(
                    block.register_forward_hook(_identity_hook(rows), with_kwargs=True)
                )
        return self

    def __exit__(self, *exc: object) -> None:
        for h in self.handles:
            h.remove()
        self.handles.clear()


def _identity_hook(rows: torch.Tensor) -> Callable[..., Any]:
    def hook(module: Any, args: tuple, kwargs: dict, output: Any) -> Any:
        hidden_in = args[0] if args else kwargs["hidden_states"]
        hidden_out = output[0] if isinstance(output, tuple) else output
        hidden_out = hidden_out.clone()
        hidden_out[rows] = hidden_in[rows]
        if isinstance(output, tuple):
            return (hidden_out, *output[1:])
        return hidden_out

    return hook
