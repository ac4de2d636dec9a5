"""The arms of the Soup-of-Experts reproduction, apart from its claims (``claims.py``) and
protocol (``reproduce.py``).

- :class:`Budget` and :data:`BUDGETS`: the sizes of the ``tiny``, ``quick`` and ``full`` runs;
- :func:`make_setup` / :func:`load_setup`: byte streams of the train entries, validation and
  test windows;
- :func:`tune`: train one arm at every learning rate of a grid and keep the one with the
  lowest **validation** loss (test windows are never read here);
- :class:`Evaluator`: per-domain held-out losses and the loss on a target ``h``;
- :class:`Embedder` and :func:`make_pools`: sentence embeddings for the domain-weight estimate
  (the offline all-MiniLM-L6-v2, or TF-IDF where it is not installed or at the tiny budget);
- :func:`draw_targets` and :func:`measure_seed`: one seed's targets, every arm trained, tuned and
  measured on them;
- :func:`instantiation_timing`: ``instantiate(h)`` against copying the bank once and against
  a naive per-parameter sum, with a check that ``Theta(h)`` is right;
- :func:`measure`, :func:`ratio_of_means`, :func:`median_ratio`: the statistics;
  :func:`report_notes`: the report's lines.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch
from torch import nn

from icml25.core.claims import MIN_T_VALUES, Measurement
from icml25.core.llm import load_minilm, mean_pool, minilm_folder
from icml25.core.runner import RunContext
from icml25.soup_of_experts.corpora import Domains, load_domains
from icml25.soup_of_experts.estimate import domain_centroids, estimate_domain_weights
from icml25.soup_of_experts.lm import ByteGPT, encode_bytes
from icml25.soup_of_experts.soup import (
    MixtureSampler,
    SoupOfExperts,
    SparseDirichlet,
    train_on_mixture,
    train_soup,
)

M = TypeVar("M")


# ---------------------------------------------------------------------------------- budgets
@dataclass(frozen=True, kw_only=True)
class Budget:
    """The sizes of one budget. The field order is part of a saved seed's checkpoint key
    (its ``repr``): keep it."""

    dim: int  # ByteGPT width
    layers: int
    heads: int
    seq_len: int  # the model's context and the length of every training and held-out window
    batch: int  # sequences per training step
    steps: int  # training steps of every model (every arm, every learning rate)
    lr_grid: tuple[float, ...]  # the learning rates every arm is tuned on
    max_support: int  # largest number of domains in an h drawn from pi
    mix_targets: int  # targets drawn from pi, per seed
    single_targets: int  # single-domain targets per seed (at most the number of domains)
    specialists: int  # the first targets of a seed that get a specialist (the ceiling arm)
    val_windows: int  # validation windows per domain (learning-rate selection)
    test_windows: int  # test windows per domain (the claims)
    target_samples: int  # target samples the domain weights are estimated from
    pool: int  # entries per domain embedded: train entries for the centroids, test entries
    # from which the target samples are drawn
    encoder: str  # "minilm" (TF-IDF where not installed) or "tfidf"
    seeds: int
    max_domains: int | None  # None: every domain the data has
    train_bytes: int  # cap on each domain's training stream, bytes
    speed: tuple[int, int, int, int]
    """Instantiation timing: model dim, layers, experts, repeats."""


GRID = (7.5e-4, 1.5e-3, 3e-3, 6e-3, 1.2e-2)
"""The learning-rate grid every arm is tuned on in the full budget (factor 2). A pilot on seed
99 (``benchmarks/soup_of_experts_pilot.py``, grid 1.5e-3..1.2e-2) found the soup's optimum at
the lower edge, so the grid was extended down by one step before any claim was run."""

BUDGETS = {
    "tiny": Budget(
        dim=16, layers=1, heads=2, seq_len=16, batch=4, steps=10, lr_grid=(3e-3,),
        max_support=2, mix_targets=2, single_targets=2, specialists=2, val_windows=4,
        test_windows=4, target_samples=20, pool=6, encoder="tfidf", seeds=1, max_domains=4,
        train_bytes=20_000, speed=(16, 1, 4, 3),
    ),
    "quick": Budget(
        dim=32, layers=2, heads=4, seq_len=32, batch=16, steps=300, lr_grid=(1.5e-3, 6e-3),
        max_support=3, mix_targets=4, single_targets=4, specialists=2, val_windows=16,
        test_windows=32, target_samples=100, pool=20, encoder="minilm", seeds=1,
        max_domains=None, train_bytes=200_000, speed=(128, 4, 16, 7),
    ),
    "full": Budget(
        dim=48, layers=2, heads=4, seq_len=48, batch=16, steps=800, lr_grid=GRID,
        max_support=3, mix_targets=8, single_targets=6, specialists=4, val_windows=48,
        test_windows=96, target_samples=200, pool=100, encoder="minilm", seeds=5,
        max_domains=None, train_bytes=400_000, speed=(256, 4, 16, 9),
    ),
}  # fmt: skip


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


def load_setup(b: Budget) -> Setup:
    """The domains of ``b`` (:func:`~icml25.soup_of_experts.corpora.load_domains`) made into a
    :class:`Setup` of its sizes."""
    return make_setup(
        load_domains(b.max_domains),
        seq_len=b.seq_len,
        train_bytes=b.train_bytes,
        val_windows=b.val_windows,
        test_windows=b.test_windows,
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
class Embedder:
    """Sentence embeddings of texts: the offline all-MiniLM-L6-v2 (mean pooling, normalised,
    the first ``max_length`` tokens), or TF-IDF vectors fit on the texts given first."""

    def __init__(self, kind: str, *, max_length: int = 64) -> None:
        folder = minilm_folder() if kind == "minilm" else None
        self.max_length = max_length
        self.model: Any = None
        self.vectorizer: Any = None
        if folder is not None:
            self.tokenizer, self.model = load_minilm(folder)
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
            pooled = mean_pool(self.model(**enc).last_hidden_state, enc["attention_mask"])
            out.append(nn.functional.normalize(pooled, dim=-1).numpy())
        return np.concatenate(out)


@dataclass(frozen=True)
class Pools:
    """Embedded entries, fixed for the whole run: domain centroids from train entries and a
    pool of test entries per domain from which target samples are drawn."""

    centroids: np.ndarray
    test: list[np.ndarray]
    encoder: str


def make_pools(setup: Setup, b: Budget) -> Pools:
    emb = Embedder(b.encoder, max_length=32 if b.encoder == "minilm" else 64)
    rng = np.random.default_rng(777)
    d = setup.domains
    tr = [[e[i] for i in rng.permutation(len(e))[: b.pool]] for e in d.train]
    te = [[e[i] for i in rng.permutation(len(e))[: b.pool]] for e in d.test]
    X = emb([t for grp in tr for t in grp])  # TF-IDF is fit on train entries only
    y = np.concatenate([[i] * len(g) for i, g in enumerate(tr)])
    Z = emb([t for grp in te for t in grp])
    cuts = np.cumsum([len(g) for g in te])[:-1]
    return Pools(domain_centroids(X, y, len(d.names)), np.split(Z, cuts), emb.name)


# ------------------------------------------------------------------------------- one seed
def draw_targets(k: int, b: Budget, meta: SparseDirichlet, seed: int) -> list[tuple[str, Any]]:
    """Fresh draws of pi and single domains, interleaved so that specialists cover both."""
    trng = np.random.default_rng([seed, 7])
    mixes = [meta.sample(trng) for _ in range(b.mix_targets)]
    singles = [int(i) for i in trng.choice(k, size=min(b.single_targets, k), replace=False)]
    targets: list[tuple[str, Any]] = []
    for j in range(max(len(mixes), len(singles))):
        if j < len(mixes):
            targets.append((f"mix{j}", mixes[j]))
        if j < len(singles):
            targets.append((f"#{singles[j]}", np.eye(k)[singles[j]]))
    return targets


def measure_seed(
    ctx: RunContext, b: Budget, setup: Setup, pools: Pools, seed: int
) -> dict[str, Any]:
    """One seed: every arm trained at every rate of the grid and kept at its best validation
    loss, then the test loss of each on every target (a row per target), the chosen rates and
    validation losses, the sizes and ``pi``. Plain data, so that it is saved as JSON."""
    names = setup.domains.names
    k = len(names)
    torch.manual_seed(seed)
    sampler = MixtureSampler(setup.train, seq_len=b.seq_len)
    val, test = Evaluator(setup.val), Evaluator(setup.test)
    meta = SparseDirichlet(k, max_support=min(b.max_support, k))
    targets = [
        (names[int(n[1:])] if n.startswith("#") else n, h)
        for n, h in draw_targets(k, b, meta, seed)
    ]
    hs = [h for _, h in targets]

    def arch() -> ByteGPT:
        return ByteGPT(dim=b.dim, layers=b.layers, heads=b.heads, context=b.seq_len, seed=seed)

    kw: dict[str, Any] = {"steps": b.steps, "batch_size": b.batch, "seed": seed}

    def plain(h: Any) -> Any:
        def train(lr: float) -> ByteGPT:
            ctx.progress(f"seed {seed}: lr {lr:g}")
            model = arch()
            train_on_mixture(model, sampler, h, lr=lr, **kw)
            return model

        return train

    def soup_arm(router: bool) -> Any:
        def train(lr: float) -> SoupOfExperts:
            ctx.progress(f"seed {seed}: {'soup' if router else 'router-less soup'} lr {lr:g}")
            soup = SoupOfExperts(arch(), n_domains=k, n_experts=k, router=router, seed=seed)
            train_soup(soup, sampler, meta, lr=lr, **kw)
            return soup

        return train

    def mean_val(model: Any) -> float:  # h-independent models: per-domain losses once
        per = val.per_domain(model)
        return float(np.mean([val.target(per, h) for h in hs]))

    def soup_val(soup: SoupOfExperts) -> float:
        return float(np.mean([val.soup_on_target(soup, h, h) for h in hs]))

    ctx.progress(f"seed {seed}: generic model on the natural mixture")
    generic = tune(plain(sampler.natural_weights), mean_val, b.lr_grid)
    ctx.progress(f"seed {seed}: S only on the soup's stream (null arm)")
    s_only = tune(plain(meta), mean_val, b.lr_grid)
    soup = tune(soup_arm(True), soup_val, b.lr_grid)
    routerless = tune(soup_arm(False), soup_val, b.lr_grid)
    tuned = {"generic": generic, "S only": s_only, "soup": soup, "router-less": routerless}

    gen_per, so_per = test.per_domain(generic.model), test.per_domain(s_only.model)
    uniform = np.ones(k) / k
    rows = []
    spec_lrs = []
    for j, (name, h) in enumerate(targets):
        srng = np.random.default_rng([seed, 11, j])
        doms = srng.choice(k, size=b.target_samples, p=h)
        sample = np.stack([pools.test[d][srng.integers(len(pools.test[d]))] for d in doms])
        h_hat = estimate_domain_weights(sample, pools.centroids)
        h_null = meta.sample(np.random.default_rng([seed, 13, j]))
        row: dict[str, Any] = {
            "target": name,
            "h": np.round(h, 3).tolist(),
            "h_hat_tv": float(0.5 * np.abs(h_hat - h).sum()),
            "generic": test.target(gen_per, h),
            "s_only": test.target(so_per, h),
            "soup": test.soup_on_target(soup.model, h, h),
            "soup_hat": test.soup_on_target(soup.model, h_hat, h),
            "soup_null_hat": test.soup_on_target(soup.model, h_null, h),
            "soup_uniform": test.soup_on_target(soup.model, uniform, h),
            "routerless": test.soup_on_target(routerless.model, h, h),
            "specialist": None,
        }
        if j < b.specialists:
            ctx.progress(f"seed {seed}: specialist for {name}")
            spec = tune(plain(h), _target_loss(val, h), b.lr_grid)
            spec_lrs.append(spec.lr)
            row["specialist"] = test.on_target(spec.model, h)
        rows.append(row)
    return {
        "rows": rows,
        "lrs": {name: t.lr for name, t in tuned.items()} | {"specialists": spec_lrs},
        "val": {name: t.val for name, t in tuned.items()},
        "P": soup.model.num_model_parameters,
        "bank": sum(p.numel() for p in soup.model.parameters()),
        "meta": repr(meta),
    }


def _target_loss(ev: Evaluator, h: np.ndarray) -> Any:
    def loss(model: ByteGPT) -> float:
        return ev.on_target(model, h)

    return loss


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


# ----------------------------------------------------------------------------- statistics
def measure(groups: list[np.ndarray], statistic: Any = None) -> Measurement:
    """t over seeds with >= 3 seeds; else a bootstrap over the items (targets) of the seeds."""
    if len(groups) >= MIN_T_VALUES:
        f = statistic if statistic is not None else np.mean
        return Measurement.of([float(f(g)) for g in groups])
    return Measurement.bootstrap(groups, statistic)


def ratio_of_means(rows: np.ndarray) -> float:
    """mean(column 0) / mean(column 1), the denominator floored at 1e-6 (kept finite: a
    missing gain is the gate's business)."""
    return float(rows[:, 0].mean() / max(rows[:, 1].mean(), 1e-6))


def median_ratio(rows: np.ndarray) -> float:
    return float(np.median(rows[:, 0]) / np.median(rows[:, 1]))


# --------------------------------------------------------------------------------- report
def report_notes(
    b: Budget, setup: Setup, pools: Pools, runs: dict[int, Any], timing: dict[str, Any]
) -> list[str]:
    """The report's lines: data, model, learning rates, the estimate's encoder, the
    instantiation timing and a table of every seed's targets."""
    lines: list[str] = []
    note = lines.append
    r = runs[next(iter(runs))]
    names = setup.domains.names
    note(
        f"- Data: {setup.domains.source}; {len(names)} domains ({', '.join(names)}); "
        "entries split 80/10/10 into train / validation / test (fixed seed)."
    )
    note(
        f"- Model: byte-level GPT dim {b.dim}, {b.layers} layers, context {b.seq_len}; "
        f"instantiated P = {r['P']:,} parameters; soup bank S + {len(names)} dense experts + "
        f"router = {r['bank']:,} numbers. {b.steps} steps x {b.batch} sequences for every "
        f"model; pi = {r['meta']}; seeds {list(runs)}."
    )
    note(
        f"- Learning rates: grid {list(b.lr_grid)} for every arm, chosen on {b.val_windows} "
        f"validation windows per domain; claims on {b.test_windows} test windows per domain."
    )
    for seed, run in runs.items():
        lrs = ", ".join(
            f"{a} {v:g}" if not isinstance(v, list) else f"{a} {[f'{x:g}' for x in v]}"
            for a, v in run["lrs"].items()
        )
        vals = "; ".join(
            f"{a}: " + ", ".join(f"{lr:g} -> {loss:.3f}" for lr, loss in v.items())
            for a, v in run["val"].items()
        )
        note(f"- seed {seed}: chosen learning rates: {lrs}. Validation losses: {vals}.")
    note(f"- Domain weights estimated with {pools.encoder}, {b.target_samples} samples.")
    times = {key: np.median(v) * 1e3 for key, v in timing["times"].items()}
    note(
        f"- Instantiation (P = {timing['P']:,}, bank {timing['bank_bytes'] / 2**20:.0f} MiB): "
        f"copy of the bank {times['copy']:.1f} ms, instantiate {times['instantiate']:.1f} ms, "
        f"naive {times['naive']:.1f} ms (medians of {len(timing['times']['copy'])}); "
        f"Theta(h) error {timing['error']:.1e}."
    )
    note("")
    note(
        "| seed | target | generic | S only | soup(h) | soup(h_hat) | TV(h_hat,h) | "
        "soup(uniform) | soup(h from pi) | router-less | specialist |"
    )
    note("|---|---|---|---|---|---|---|---|---|---|---|")
    for seed, run in runs.items():
        for x in run["rows"]:
            spec = "-" if x["specialist"] is None else f"{x['specialist']:.3f}"
            note(
                f"| {seed} | {x['target']} | {x['generic']:.3f} | {x['s_only']:.3f} | "
                f"{x['soup']:.3f} | {x['soup_hat']:.3f} | {x['h_hat_tv']:.2f} | "
                f"{x['soup_uniform']:.3f} | {x['soup_null_hat']:.3f} | {x['routerless']:.3f} | "
                f"{spec} |"
            )
    return lines
