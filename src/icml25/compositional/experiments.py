"""The arms of the compositional reproduction: the budgets, the from-scratch runs on item x
colour images, the synthetic embeddings and the text stand-in, and their statistics.
:mod:`icml25.compositional.claims` holds the claims and
:mod:`icml25.compositional.reproduce` puts these together.

- **Budgets**: :class:`Budget`, :data:`BUDGETS`.
- **From scratch** (part 1): :func:`load_data` (real grey images, pooled to 14 x 14),
  :func:`scratch` (per seed: the k axis, the scale-up, the placebo and the n axis, each an MLP
  trunk with one head per concept trained for a fixed number of steps), then
  :func:`scratch_measures` (the claims' values, null arms and gates) and
  :func:`scratch_notes` (the per-run table).
- **Synthetic embeddings** (part 2, Prop. 4.1): :func:`synthetic` (factored against
  entangled, linear probes trained on ``S_2``).
- **A pretrained encoder, text stand-in** (part 3): :func:`text_probe` (all-MiniLM-L6-v2 or a
  tiny random word-embedding encoder on "colour x object" sentences) and :func:`wilson` (its
  interval).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy.stats import spearmanr
from torch import nn

from icml25.compositional.data import (
    ChannelWarning,
    colour_palette,
    disjoint_channel_pairs,
    make_compositional_images,
)
from icml25.compositional.designs import cyclic_design, full_grid, seen_mask
from icml25.compositional.encoders import embed
from icml25.compositional.metrics import combination_means, linear_factorization
from icml25.compositional.probes import MultiHeadNet, unseen_combination_accuracy
from icml25.core.claims import Measurement
from icml25.core.claims import gate_key as gk
from icml25.core.claims import null_key as nk
from icml25.core.data import load_image_benchmark
from icml25.core.llm import load_minilm
from icml25.core.runner import RunContext

N_VALUES = 10
K_HIGH, K_LOW = 5, 1
N_AXIS = (4, 6, 10)
"""The paper's from-scratch axis: the number of values per concept grows at k = 2."""
K_N_AXIS = 2


@dataclass(frozen=True, kw_only=True)
class Budget:
    ks: tuple[int, ...]
    """The k axis: combinations seen per value, at n = 10 and N = ``n_small``."""
    n_small: int  # N, training images of a run (the scale-up trains on scale * n_small)
    scale: int  # the scale-up factor of N (at k = 5)
    steps: int  # Adam steps of every run (fixed: a larger N is more data, not more compute)
    batch: int  # images per step
    eval_per_combo: int  # evaluation images per combination of the full n x n grid
    synth_per_combo: int  # synthetic embeddings per combination (train and test)
    text_model: str  # "minilm" or "tiny"
    seeds: int
    """At least this many seeds (the given ones, extended consecutively)."""


BUDGETS = {
    "tiny": Budget(ks=(1, 2, 5), n_small=200, scale=4, steps=20, batch=32, eval_per_combo=2,
                   synth_per_combo=5, text_model="tiny", seeds=1),
    "quick": Budget(ks=(1, 2, 3, 5), n_small=1000, scale=4, steps=400, batch=64,
                    eval_per_combo=20, synth_per_combo=20, text_model="minilm", seeds=3),
    "full": Budget(ks=(1, 2, 3, 5, 7), n_small=1000, scale=4, steps=800, batch=64,
                   eval_per_combo=40, synth_per_combo=40, text_model="minilm", seeds=5),
}  # fmt: skip


# ----------------------------------------------------------------------------- part 1
def _pool2(X: np.ndarray) -> np.ndarray:
    """28 x 28 -> 14 x 14 by 2 x 2 averaging."""
    return X.reshape(-1, 14, 2, 14, 2).mean(axis=(2, 4)).astype(np.float32)


def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """Fashion-MNIST (MNIST-5k where it is absent) train and test images pooled to 14 x 14,
    their classes and the data's name."""
    Xtr, ytr, Xte, yte, name = load_image_benchmark(mnist_test=1000)
    return _pool2(Xtr), ytr, _pool2(Xte), yte, name


def _trunk() -> nn.Module:
    return nn.Sequential(
        nn.Flatten(), nn.Linear(3 * 14 * 14, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU()
    )


def _net(n: int, seed: int) -> MultiHeadNet:
    torch.manual_seed(seed)
    return MultiHeadNet(_trunk(), feature_dim=128, n_values=[n, n])


def _train(images: np.ndarray, labels: np.ndarray, n: int, b: Budget, seed: int) -> MultiHeadNet:
    model = _net(n, seed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    dev = next(model.parameters()).device  # the data go where the model is
    X = torch.from_numpy(images).to(dev)
    Y = torch.from_numpy(labels).to(dev)
    g = torch.Generator().manual_seed(seed)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    perm = torch.randperm(len(X), generator=g, device=g.device)
    pos = 0
    for _ in range(b.steps):
        if pos + b.batch > len(X):
            perm, pos = torch.randperm(len(X), generator=g, device=g.device), 0
        idx = perm[pos : pos + b.batch].to(dev)
        pos += b.batch
        logits = model(X[idx])
        loss = sum(loss_fn(lg, Y[idx, h]) for h, lg in enumerate(logits))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


@dataclass(frozen=True)
class Assignment:
    """What value indices stand for in one seed: classes for items, hues for colours."""

    items: np.ndarray
    palette: np.ndarray


def _assignment(seed: int, n_classes: int) -> Assignment:
    rng = np.random.default_rng([seed, 4049])
    return Assignment(
        items=rng.permutation(n_classes)[:N_VALUES],
        palette=colour_palette(N_VALUES)[rng.permutation(N_VALUES)],
    )


def _r2_pair(feats: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(R^2 per image, R^2 of the combination means)."""
    image = linear_factorization(feats, labels, whiten=False).r2
    means = linear_factorization(*combination_means(feats, labels), whiten=False).r2
    return float(image), float(means)


def scratch(ctx: RunContext, b: Budget, data: Any, seeds: list[int]) -> dict[str, Any]:
    """Every from-scratch run of every seed: ``runs`` (one dict per run: seed, axis, k, the k
    its images were drawn for (``label``), n, N, unseen joint / item / colour and seen joint
    accuracy, both R^2, disjoint-channel pairs), the ``untrained`` trunk's R^2 pair per seed,
    the data's ``name`` and ``n_unseen`` (unseen test images of the k = 5 run at N)."""
    Xtr, ytr, Xte, yte, name = data
    n_classes = len(np.unique(ytr))
    runs: list[dict[str, Any]] = []
    untrained: dict[int, tuple[float, float]] = {}
    n_small, n_big = b.n_small, b.n_small * b.scale
    n_unseen = 0
    for seed in seeds:
        asg = _assignment(seed, n_classes)
        evals: dict[int, Any] = {}

        def evaluation(
            n: int, seed: int = seed, asg: Assignment = asg, evals: dict[int, Any] = evals
        ) -> Any:
            if n not in evals:
                evals[n] = make_compositional_images(
                    Xte, yte, combinations=full_grid([n, n]),
                    n_images=n * n * b.eval_per_combo, items=asg.items[:n],
                    palette=asg.palette[:n], seed=12345 + seed,
                )  # fmt: skip
            return evals[n]

        ev10 = evaluation(N_VALUES)
        untrained[seed] = _r2_pair(embed(_net(N_VALUES, seed).trunk, ev10.images), ev10.labels)
        # (axis, k, n, N, k the images were drawn for); the placebo trains k = 1 on the
        # images of the run it stands for
        plan = [("k", k, N_VALUES, n_small, k) for k in b.ks]
        plan += [("k", K_HIGH, N_VALUES, n_big, K_HIGH)]
        plan += [("placebo", K_LOW, N_VALUES, n_small, k) for k in b.ks if k != K_LOW]
        plan += [("n", K_N_AXIS, n, n_small, K_N_AXIS) for n in N_AXIS if n != N_VALUES]
        plan += [("n", K_LOW, N_AXIS[0], n_small, K_LOW)]
        for axis, k, n, N, k_images in plan:
            design = cyclic_design(n, k)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ChannelWarning)  # counted below instead
                tr = make_compositional_images(
                    Xtr, ytr, combinations=design, n_images=N, items=asg.items[:n],
                    palette=asg.palette[:n], seed=1000 * seed + 10 * k_images + N + n,
                )  # fmt: skip
            model = _train(tr.images, tr.labels, n, b, seed)
            model.eval()
            ev = evaluation(n)
            with torch.no_grad():
                x_ev = torch.from_numpy(ev.images).to(next(model.parameters()).device)
                pred = torch.stack([lg.argmax(1) for lg in model(x_ev)], 1)
            feats = embed(model.trunk, ev.images)
            ok = pred.cpu().numpy() == ev.labels
            seen = seen_mask(ev.labels, design)
            r2_image, r2_means = _r2_pair(feats, ev.labels)
            if axis == "k" and k == K_HIGH and N == n_small:
                n_unseen = int((~seen).sum())
            runs.append(
                {
                    "seed": seed,
                    "axis": axis,
                    "k": k,
                    "label": k_images,
                    "n": n,
                    "N": N,
                    "unseen": float(ok[~seen].all(1).mean()),
                    "unseen_item": float(ok[~seen, 0].mean()),
                    "unseen_colour": float(ok[~seen, 1].mean()),
                    "seen": float(ok[seen].all(1).mean()),
                    "r2_image": r2_image,
                    "r2_means": r2_means,
                    "disjoint": len(disjoint_channel_pairs(design, asg.palette[:n])),
                }
            )
            ctx.progress(f"seed {seed} {axis}: k={k} n={n} N={N}: unseen {runs[-1]['unseen']:.3f}")
    return {"runs": runs, "untrained": untrained, "name": name, "n_unseen": n_unseen}


def _spearman(a: Any, b: Any) -> float:
    """Spearman's rho; 0 when either side is constant (no ordering to follow)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return 0.0
    return float(spearmanr(x, y).statistic)


def _rows_spearman(rows: np.ndarray) -> float:
    return _spearman(rows[:, 0], rows[:, 1])


def scratch_measures(b: Budget, sc: dict[str, Any], seeds: list[int]) -> dict[str, Any]:
    """The from-scratch claims' measurements, null arms and gates, from :func:`scratch`."""
    runs = sc["runs"]
    n0, n4 = b.n_small, b.n_small * b.scale

    def get(seed: int, axis: str, k: int, n: int, N: int, key: str, label: int) -> float:
        (r,) = [
            r
            for r in runs
            if (r["seed"], r["axis"], r["k"], r["n"], r["N"], r["label"])
            == (seed, axis, k, n, N, label)
        ]
        return float(r[key])

    def acc(seed: int, k: int, N: int = n0, key: str = "unseen") -> float:
        return get(seed, "k", k, N_VALUES, N, key, k)

    def placebo(seed: int, label: int, key: str = "unseen") -> float:
        if label == K_LOW:
            return acc(seed, K_LOW, key=key)
        return get(seed, "placebo", K_LOW, N_VALUES, n0, key, label)

    def n_acc(seed: int, k: int, n: int, key: str = "unseen") -> float:
        return acc(seed, k, key=key) if n == N_VALUES else get(seed, "n", k, n, n0, key, k)

    gain = [100 * (acc(s, K_HIGH) - acc(s, K_LOW)) for s in seeds]
    scale = [100 * abs(acc(s, K_HIGH, n4) - acc(s, K_HIGH)) for s in seeds]
    k_runs = [r for r in runs if r["axis"] == "k"]
    n_runs = [r for r in runs if r["axis"] == "n" or (r["axis"] == "k" and r["k"] in (1, 2))]
    spread = 100 * (max(r["unseen"] for r in k_runs) - min(r["unseen"] for r in k_runs))
    r2_gate = min(r["seen"] for r in k_runs if r["N"] == n0)

    def rises(key: str) -> list[float]:  # Spearman(k, R^2) per seed
        return [_spearman(b.ks, [acc(s, k, key=key) for k in b.ks]) for s in seeds]

    def rises_placebo(key: str) -> list[float]:
        return [_spearman(b.ks, [placebo(s, k, key) for k in b.ks]) for s in seeds]

    def predicts(key: str) -> Measurement:  # Spearman(R^2, unseen accuracy) over the k runs
        rows = np.array([[r[key], r["unseen"]] for r in k_runs])
        return Measurement.bootstrap([rows], _rows_spearman)

    def predicts_untrained(idx: int) -> Measurement:  # idx: 0 R^2 per image, 1 of the means
        null = np.array([[sc["untrained"][r["seed"]][idx], r["unseen"]] for r in k_runs])
        return Measurement.bootstrap([null], _rows_spearman)

    return {
        "saturated_diversity_gain": gain,
        nk("saturated_diversity_gain"): [100 * (placebo(s, K_HIGH) - acc(s, K_LOW)) for s in seeds],
        gk("saturated_diversity_gain"): float(np.mean([acc(s, K_HIGH, key="seen") for s in seeds])),
        "saturated_scale_flat": [0.5 * g - d for g, d in zip(gain, scale, strict=True)],
        nk("saturated_scale_flat"): [0.5 * g - abs(g) for g in gain],
        gk("saturated_scale_flat"): float(np.mean(gain)),
        "saturated_n_axis_gain": [
            100 * (n_acc(s, K_N_AXIS, N_VALUES) - n_acc(s, K_N_AXIS, N_AXIS[0])) for s in seeds
        ],
        nk("saturated_n_axis_gain"): [
            100 * (n_acc(s, K_LOW, N_VALUES) - n_acc(s, K_LOW, N_AXIS[0])) for s in seeds
        ],
        gk("saturated_n_axis_gain"): min(r["seen"] for r in n_runs),
        "saturated_high_coverage_generalises": [
            acc(s, K_HIGH, n4) / max(acc(s, K_HIGH, n4, "seen"), 1e-9) for s in seeds
        ],
        nk("saturated_high_coverage_generalises"): [
            acc(s, K_LOW) / max(acc(s, K_LOW, key="seen"), 1e-9) for s in seeds
        ],
        gk("saturated_high_coverage_generalises"): float(
            np.mean([acc(s, K_HIGH, n4, "seen") for s in seeds])
        ),
        "saturated_seen_accuracy": [min(r["seen"] for r in runs if r["seed"] == s) for s in seeds],
        "saturated_r2_rises_with_k": rises("r2_means"),
        nk("saturated_r2_rises_with_k"): rises_placebo("r2_means"),
        gk("saturated_r2_rises_with_k"): r2_gate,
        "saturated_r2_predicts_accuracy": predicts("r2_means"),
        nk("saturated_r2_predicts_accuracy"): predicts_untrained(1),
        gk("saturated_r2_predicts_accuracy"): spread,
        "saturated_r2_image_rises_with_k": rises("r2_image"),
        nk("saturated_r2_image_rises_with_k"): rises_placebo("r2_image"),
        gk("saturated_r2_image_rises_with_k"): r2_gate,
        "saturated_r2_image_predicts_accuracy": predicts("r2_image"),
        nk("saturated_r2_image_predicts_accuracy"): predicts_untrained(0),
        gk("saturated_r2_image_predicts_accuracy"): spread,
    }


def scratch_notes(ctx: RunContext, b: Budget, sc: dict[str, Any], seeds: list[int]) -> None:
    """The notes of the from-scratch runs: the protocol's sizes, the per-run-type table and
    the untrained trunk's R^2."""
    runs = sc["runs"]
    ctx.note(
        f"Saturated hues and Fashion-MNIST classes assigned to value indices by a permutation "
        f"drawn per seed (seeds {seeds}); unseen-combination test images at k={K_HIGH}, "
        f"n={N_VALUES}: {sc['n_unseen']} per run (standard error of a joint accuracy at most "
        f"{50 / np.sqrt(max(sc['n_unseen'], 1)):.1f} points); fixed {b.steps} Adam steps of "
        f"{b.batch} images per run."
    )
    header = (
        "| run | k | n | N | unseen joint | unseen item | unseen colour | seen joint | "
        "R^2 image | R^2 means | disjoint-channel pairs |"
    )
    lines = [header, "|---|---|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(r["axis"], r["k"], r["n"], r["N"], r["label"]) for r in runs})
    for axis, k, n, N, label in keys:
        rs = [
            r
            for r in runs
            if (r["axis"], r["k"], r["n"], r["N"], r["label"]) == (axis, k, n, N, label)
        ]
        f = {key: float(np.mean([r[key] for r in rs])) for key in rs[0] if key != "axis"}
        name = f"placebo for k={label}" if axis == "placebo" else f"{axis} axis"
        lines.append(
            f"| {name} | {k} | {n} | {N} | {f['unseen']:.3f} | {f['unseen_item']:.3f} | "
            f"{f['unseen_colour']:.3f} | {f['seen']:.3f} | {f['r2_image']:.3f} | "
            f"{f['r2_means']:.3f} | {f['disjoint']:.1f} |"
        )
    ctx.note("Per run type, mean over seeds:\n" + "\n".join(lines))
    unt = np.mean([v for v in sc["untrained"].values()], axis=0)
    ctx.note(
        f"Untrained trunk (null of the R^2-accuracy correlation): R^2 image {unt[0]:.3f}, "
        f"R^2 means {unt[1]:.3f} (mean over seeds)."
    )


# ----------------------------------------------------------------------------- part 2
def synthetic(seed: int, per_combo: int) -> tuple[float, float]:
    """Mean per-concept unseen-combination accuracy of linear probes trained on ``S_2``, for
    factored ``U[a] + V[b] + noise`` and for entangled ``W[a, b] + noise`` embeddings (n = 10,
    d = 32, ``per_combo`` embeddings per combination)."""
    rng = np.random.default_rng(seed)
    n, d, noise = N_VALUES, 32, 0.3
    U, Vb = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    W = rng.normal(size=(n, n, d)) * np.sqrt(2.0)  # same scale as U[a] + V[b]
    design = cyclic_design(n, 2)
    grid = full_grid([n, n])
    test = grid[~seen_mask(grid, design)]
    tr_lab = np.repeat(design, per_combo, axis=0)
    te_lab = np.repeat(test, per_combo, axis=0)
    out = []
    for kind in ("factored", "entangled"):

        def z(lab: np.ndarray, kind: str = kind) -> np.ndarray:
            base = U[lab[:, 0]] + Vb[lab[:, 1]] if kind == "factored" else W[lab[:, 0], lab[:, 1]]
            return base + noise * rng.normal(size=base.shape)

        res = unseen_combination_accuracy(z(tr_lab), tr_lab, z(te_lab), te_lab)
        out.append(res.mean)
    return out[0], out[1]


# ----------------------------------------------------------------------------- part 3
COLOURS = ("red", "blue", "green", "yellow", "black", "white", "purple", "orange", "pink", "brown")
OBJECTS = ("car", "chair", "bird", "cup", "hat", "shirt", "ball", "house", "flower", "book")
TEMPLATES = (
    "a {c} {o}",
    "a photo of a {c} {o}",
    "there is a {c} {o} on the table",
    "she bought a {c} {o} yesterday",
    "look at that {c} {o}",
    "the {o} is {c}",
)


def _text_encoder(kind: str, texts: list[str], seed: int) -> tuple[np.ndarray, str]:
    """Embeddings of ``texts``: the offline MiniLM (``kind="minilm"`` when installed) or a tiny
    random BERT with a word-level vocabulary."""
    if kind == "minilm":
        try:
            tok, model = load_minilm()
            enc = tok(texts, padding=True, return_tensors="pt")
            return embed(model, dict(enc), batch_size=128), "all-MiniLM-L6-v2 (mean pooling)"
        except (ImportError, FileNotFoundError):  # no transformers, or the wheel is absent
            pass
    words = sorted({w for t in texts for w in t.split()})
    vocab = {w: i + 1 for i, w in enumerate(words)}  # 0 is padding
    ids = [[vocab[w] for w in t.split()] for t in texts]
    input_ids = torch.zeros((len(ids), max(len(r) for r in ids)), dtype=torch.long, device="cpu")
    for i, r in enumerate(ids):
        input_ids[i, : len(r)] = torch.tensor(r, device="cpu")  # embed moves them to the encoder
    torch.manual_seed(seed)
    Z = embed(_TinyTextEncoder(len(vocab) + 1), input_ids)
    return Z, (
        "tiny random word-embedding encoder (stand-in: MiniLM not used at this budget or "
        "not installed)"
    )


class _TinyTextEncoder(nn.Module):
    """Random word embeddings, mean-pooled over non-padding tokens, then a random tanh layer."""

    def __init__(self, vocab: int, dim: int = 32) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.out = nn.Linear(dim, dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        m = (ids > 0).float().unsqueeze(-1)
        pooled = (self.emb(ids) * m).sum(1) / m.sum(1).clamp_min(1.0)
        return torch.tanh(self.out(pooled))


def text_probe(b: Budget, seed: int) -> dict[str, Any]:
    """The text stand-in: "colour x object" sentences (10 x 10 combinations, six templates)
    embedded by ``b.text_model``; linear and MLP probes trained on ``S_2`` and scored on the
    unseen combinations, and the embeddings' linear factorisation."""
    grid = full_grid([N_VALUES, N_VALUES])
    lab = np.repeat(grid, len(TEMPLATES), axis=0)
    texts = [
        TEMPLATES[i % len(TEMPLATES)].format(c=COLOURS[c], o=OBJECTS[o])
        for i, (o, c) in enumerate(lab)
    ]
    Z, which = _text_encoder(b.text_model, texts, seed)
    seen = seen_mask(lab, cyclic_design(N_VALUES, 2))
    lin = unseen_combination_accuracy(Z[seen], lab[seen], Z[~seen], lab[~seen])
    mlp = unseen_combination_accuracy(
        Z[seen], lab[seen], Z[~seen], lab[~seen], head="mlp", random_state=seed
    )
    fac = linear_factorization(Z, lab)
    return {"linear": lin, "mlp": mlp, "fac": fac, "which": which, "n_test": int((~seen).sum())}


def wilson(p: float, n: int, z: float = 1.645) -> Measurement:
    """An accuracy ``p`` on ``n`` test items with its 90% Wilson score interval."""
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return Measurement.with_interval(
        p, max(0.0, centre - half), min(1.0, centre + half), f"Wilson score ({n} sentences)"
    )
