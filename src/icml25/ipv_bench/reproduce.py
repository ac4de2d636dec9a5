"""Reproduction of "Impossible Videos" (IPV-Bench) at laptop scale.

The official benchmark (902 generated videos, Video-LLMs, GPT-4o judge) cannot run offline.
What runs here is the benchmark *harness* (the official task formats, parsers and metrics) on a
procedurally rendered stand-in: clips of one small physics world, plausible or breaking one
law (seven temporal violations, three spatial ones; :mod:`icml25.ipv_bench.generator`), every
label confirmed by a physics check. Three small video models are trained on the spot
(single-frame, frame-average, temporal) and answer the judgement, multiple-choice and
open-ended tasks; the random baseline answers as the released scripts' random test.

Claims and rules were fixed before the first run. Budgets: ``tiny`` (smoke test), ``quick``
(models trained once, on the first seed), ``full`` (larger sets, models trained on five
seeds; fewer given on the command line are extended by the next integers).

Issues 48 and 54, before their runs: the random-predictor rows became controls (they check the
metric code); ``single_frame_temporal_gap`` is ruled on what the paper claims, a direction
(spatial minus temporal accuracy > 0), not the brief's 30 points; the model claims got null
arms (the temporal model for the two gaps, the order-blind frame-average model for the
temporal model's accuracy) and intervals (a bootstrap over test items with fewer than three
trained seeds, else t over seeds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.core.claims import Claim, Measurement, Null, Rule, null_key
from icml25.core.runner import RunContext
from icml25.ipv_bench.bench import (
    BenchScores,
    GeneratedBenchmark,
    Replies,
    build_benchmark,
    evaluate,
    random_replies,
    replies_from_probs,
)
from icml25.ipv_bench.generator import (
    CLASS_NAMES,
    PLAUSIBLE,
    VIOLATIONS,
    generate_clip,
    generate_clips,
    physics_check,
)
from icml25.ipv_bench.models import MODELS, predict_proba, train_video_model
from icml25.ipv_bench.tasks import parse_mcqa

TEMPORAL_NULL = Null(
    arm="the temporal model (the same measurement on a model that reasons over time: what "
    "the claim says is missing is present)"
)

CLAIMS = (
    Claim(
        id="random_judgement",
        kind="control",
        statement="A random predictor scores 50% on judgement (the paper's Random row; a check "
        "of the metric code).",
        where="Table (video understanding), Random row",
        metric="|judgement accuracy (all items) of uniform yes/no replies - 50| in points, "
        "mean over 20 draws on the {{n_test}} generated test clips; t over seeds",
        paper_value=50.0,
        rule=Rule("<=", 3.0, partial=6.0),
    ),
    Claim(
        id="random_mcqa",
        kind="control",
        statement="A random predictor scores 20% on multiple choice (the paper's Random row; a "
        "check of the metric code).",
        where="Table (video understanding), Random row",
        metric="|MCQA accuracy of uniform A-E replies - 20| in points, mean over 20 draws on "
        "the MCQA items (the impossible clips among the {{n_test}} generated test clips); t "
        "over seeds",
        paper_value=20.0,
        rule=Rule("<=", 3.0, partial=6.0),
    ),
    Claim(
        id="single_frame_temporal_gap",
        statement="Temporal impossibility is harder than spatial impossibility for models "
        "without temporal reasoning: the paper finds Video-LLMs less accurate on temporal "
        "than on spatial items (a direction, no size); here a single-frame model.",
        where="Findings (spatial vs temporal breakdown)",
        metric="single-frame model MCQA accuracy on spatial minus temporal items, points "
        "(models trained on {{trained_seeds}}: bootstrap over items stratified by kind with "
        "fewer than 3 trained seeds, else t over seeds)",
        paper_value="temporal < spatial for Video-LLMs",
        rule=Rule(">", 0.0),
        null=TEMPORAL_NULL,
    ),
    Claim(
        id="frame_average_temporal_gap",
        statement="The same holds for a model that sees every frame but not their order.",
        where="Findings (temporal dynamics need reasoning over time)",
        metric="frame-average model MCQA accuracy on spatial minus temporal items, points",
        paper_value="temporal < spatial for Video-LLMs",
        rule=Rule(">=", 10.0, partial=0.0),
        null=TEMPORAL_NULL,
    ),
    Claim(
        id="temporal_model_temporal_mcqa",
        statement="Temporal reasoning is what understanding temporal impossibility needs: a "
        "model that reasons over time answers temporal items well.",
        where="Findings; brief's pass rule",
        metric="temporal model MCQA accuracy on temporal items, percent",
        paper_value="(brief: >= 80)",
        rule=Rule(">=", 80.0, partial=60.0),
        null=Null(arm="the frame-average model (the same encoder and data, blind to frame order)"),
    ),
    Claim(
        id="videollm_scores",
        statement="Video-LLMs: judgement 72-76% acc., MCQA 27-86%, open-ended 14-43 (GPT-4o "
        "judge); humans 94.0 MCQA.",
        where="Table (video understanding)",
        metric="none",
        paper_value="Qwen2-VL 76.2 / 71.4 / 31.7",
        rule=None,
        out_of_scale="needs the 3 GB video release, 7B Video-LLMs and GPT-4o; the harness "
        "(load_ipv_bench, parsers, metrics, LLMJudge) runs them when given the data and a model",
    ),
    Claim(
        id="t2v_ipv_score",
        statement="Text-to-video models rarely follow impossible prompts (IPV Score 10-37%).",
        where="Table (video generation)",
        metric="none",
        paper_value="Mochi 1 37.3 ... LTX 10.0",
        rule=None,
        out_of_scale="needs text-to-video models and human annotation; ipv_score() implements "
        "the score from annotations",
    ),
    Claim(
        id="temporal_beats_frame_average",
        kind="control",
        statement="Order matters: the temporal model beats the order-blind frame-average model "
        "on temporal items.",
        where="ours",
        metric="temporal minus frame-average MCQA accuracy on temporal items, points",
        rule=Rule(">=", 15.0, partial=5.0),
    ),
    Claim(
        id="frame_shuffle_control",
        kind="control",
        statement="Shuffling the frames of test clips destroys the temporal model's advantage "
        "on temporal items (it uses order, not frame content).",
        where="ours (brief: frame-shuffled control)",
        metric="temporal model MCQA accuracy on temporal items: intact minus frame-shuffled, "
        "points",
        rule=Rule(">=", 15.0, partial=5.0),
    ),
    Claim(
        id="low_level_control",
        kind="control",
        statement="Low-level statistics are matched: a classifier on colour histograms of the "
        "whole clip judges plausible vs impossible near chance.",
        where="ours (brief pitfall: matched low-level statistics)",
        metric="judgement accuracy of logistic regression on 3 x 16-bin colour histograms, percent",
        rule=Rule("<=", 65.0, partial=75.0),
    ),
    Claim(
        id="physics_check_agreement",
        kind="control",
        statement="Every generated label is confirmed by the physics check (impossible clips "
        "break exactly their law, plausible clips none).",
        where="ours",
        metric="share of test clips whose physics check equals the label",
        rule=Rule(">=", 1.0),
    ),
)


@dataclass(frozen=True)
class Config:
    n_train: int
    n_test: int
    epochs: dict[str, int]
    width: int
    train_seeds: int
    """How many of the run's seeds train models (the rest of the work uses every seed)."""


CONFIGS = {
    "tiny": Config(40, 40, {"single_frame": 1, "frame_average": 1, "temporal": 1}, 8, 1),
    "quick": Config(1000, 600, {"single_frame": 10, "frame_average": 5, "temporal": 12}, 8, 1),
    # five trained seeds (issue 48: >= 5 where a seed costs <= 5 minutes; one costs ~2.5 min
    # of CPU): fewer seeds given on the command line are extended (RunContext.seeds_run)
    "full": Config(2000, 1500, {"single_frame": 15, "frame_average": 8, "temporal": 20}, 8, 5),
}


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them."""
    cfg = CONFIGS[budget]
    n = cfg.train_seeds  # the first train_seeds of the run's seeds (extended to as many)
    return {"n_test": cfg.n_test, "trained_seeds": f"{n} seed{'s' if n != 1 else ''}"}


def _histograms(frames: np.ndarray, bins: int = 16) -> np.ndarray:
    """Per-clip colour histograms (3 channels x ``bins``), normalised."""
    x = frames.astype(np.float64) / (255.0 if frames.dtype == np.uint8 else 1.0)
    n = len(x)
    out = np.empty((n, 3 * bins))
    for c in range(3):
        vals = np.clip((x[:, :, c] * bins).astype(int), 0, bins - 1).reshape(n, -1)
        for i in range(n):
            out[i, c * bins : (c + 1) * bins] = np.bincount(vals[i], minlength=bins)
    return out / out.sum(1, keepdims=True) * 3


def _shuffle_frames(frames: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 4242])
    out = np.empty_like(frames)
    for i in range(len(frames)):
        out[i] = frames[i][rng.permutation(frames.shape[1])]
    return out


def _st_acc(s: BenchScores, which: str) -> float:
    return float(s.mcqa.by_spatial_temporal[which])


def mcqa_items(bench: GeneratedBenchmark, replies: Replies) -> np.ndarray:
    """``(n_items, 2)`` rows ``(correct, spatial)`` of the multiple-choice items: the released
    parser's letter against the gold letter, and whether the item's video is spatial."""
    rows = [
        (
            float(parse_mcqa(replies.mcqa[q]) == a["answer"]),
            float(bench.labels[a["video_name"]].spatial_temporal == "spatial"),
        )
        for q, a in bench.mcqa_answer.items()
    ]
    return np.array(rows, dtype=float).reshape(-1, 2)


def _gap(rows: np.ndarray) -> float:
    """Spatial minus temporal accuracy, points."""
    spatial = rows[:, 1] == 1
    return 100.0 * float(rows[spatial, 0].mean() - rows[~spatial, 0].mean())


def gap_measurement(groups: list[np.ndarray], *, n_boot: int = 2000) -> Measurement:
    """The spatial - temporal gap: t over seeds with >= 3 groups (seeds), else a bootstrap
    over items, stratified by kind (each resample keeps each seed's numbers of spatial and
    temporal items)."""
    values = [_gap(g) for g in groups]
    if len(groups) >= 3:
        return Measurement.of(values)
    rng = np.random.default_rng(0)
    boot = np.zeros(n_boot)
    for g in groups:
        sp, tm = g[g[:, 1] == 1, 0], g[g[:, 1] == 0, 0]
        if len(sp) < 2 or len(tm) < 2:
            raise ValueError(f"need >= 2 spatial and temporal items, got {len(sp)}, {len(tm)}")
        boot += 100.0 * (
            sp[rng.integers(0, len(sp), (n_boot, len(sp)))].mean(1)
            - tm[rng.integers(0, len(tm), (n_boot, len(tm)))].mean(1)
        )
    boot /= len(groups)
    low, high = np.quantile(boot, [0.05, 0.95])
    n = sum(len(g) for g in groups)
    how = f"bootstrap stratified by spatial/temporal ({n} items in {len(groups)} seeds)"
    return Measurement.with_interval(values, float(low), float(high), how)


def item_measurement(groups: list[np.ndarray]) -> Measurement:
    """The mean of per-item values x 100: t over seeds with >= 3 groups, else a bootstrap over
    the items of each seed."""
    groups = [100.0 * np.asarray(g, dtype=float) for g in groups]
    if len(groups) >= 3:
        return Measurement.of([float(g.mean()) for g in groups])
    return Measurement.bootstrap(groups)


def _one_seed(ctx: RunContext, cfg: Config, seed: int, train: bool) -> dict[str, Any]:
    from sklearn.linear_model import LogisticRegression

    out: dict[str, Any] = {}
    ctx.progress(f"seed {seed}: generating {cfg.n_test} test clips")
    test = generate_clips(cfg.n_test, seed=10_000 + seed, impossible_fraction=0.5, as_uint8=True)
    bench = build_benchmark(test, seed=seed)
    out["physics"] = float(
        np.mean(
            [
                physics_check(tr) == (set() if c == 0 else {CLASS_NAMES[c]})
                for tr, c in zip(test.tracks, test.labels, strict=False)
            ]
        )
    )
    rand = [evaluate(bench, random_replies(bench, seed=1000 * seed + k)) for k in range(20)]
    out["random_j"] = float(np.mean([r.judgement.accuracy for r in rand]))
    out["random_m"] = float(np.mean([r.mcqa.accuracy for r in rand]))
    if not train:
        return out
    ctx.progress(f"seed {seed}: generating {cfg.n_train} training clips")
    trainset = generate_clips(cfg.n_train, seed=seed, impossible_fraction=10 / 11, as_uint8=True)
    # balanced: the training set is 10/11 impossible, the test set half (fixed after the first
    # quick run, where the unweighted fit answered "impossible" for every clip)
    lr = LogisticRegression(max_iter=2000, class_weight="balanced").fit(
        _histograms(trainset.frames), trainset.labels > 0
    )
    lowlevel = lr.predict(_histograms(test.frames)) == (test.labels > 0)
    out["lowlevel"] = 100.0 * float(lowlevel.mean())
    out["lowlevel_items"] = lowlevel.astype(float)
    scores: dict[str, BenchScores] = {}
    items: dict[str, np.ndarray] = {}
    for name, cls in MODELS.items():
        ctx.progress(f"seed {seed}: training {name} ({cfg.epochs[name]} epochs)")
        torch.manual_seed(seed)  # the initial weights, too, come from the seed
        model = train_video_model(
            cls(n_classes=len(CLASS_NAMES), width=cfg.width),
            trainset.frames,
            trainset.labels,
            epochs=cfg.epochs[name],
            batch_size=32,
            lr=3e-3,
            seed=seed,
        )
        probs = predict_proba(model, test.frames)
        replies = replies_from_probs(bench, probs, plausible_prior=1 / 11)
        scores[name], items[name] = evaluate(bench, replies), mcqa_items(bench, replies)
        if name == "temporal":
            shuffled = _shuffle_frames(test.frames, seed)
            probs = predict_proba(model, shuffled)
            replies = replies_from_probs(bench, probs, plausible_prior=1 / 11)
            scores["temporal_shuffled"] = evaluate(bench, replies)
            items["temporal_shuffled"] = mcqa_items(bench, replies)
    out["scores"], out["items"] = scores, items
    out["n_items"] = {
        k: sum(lab.spatial_temporal == k for lab in bench.labels.values())
        for k in ("spatial", "temporal")
    }
    return out


def _note_table(ctx: RunContext, seed: int, res: dict[str, Any]) -> None:
    ctx.note(
        f"Seed {seed}: {res['n_items']['spatial']} spatial and {res['n_items']['temporal']} "
        "temporal MCQA items; random judgement "
        f"{res['random_j']:.1f}, random MCQA {res['random_m']:.1f}; colour-histogram "
        f"judgement {res['lowlevel']:.1f}."
    )
    ctx.note(
        "| model | judg. acc | F1 | yes-rate | MCQA | spatial | temporal | plausible picked "
        "| open (category judge) |"
    )
    ctx.note("|---|---|---|---|---|---|---|---|---|")
    for name, s in res["scores"].items():
        ctx.note(
            f"| {name} | {s.judgement.accuracy:.1f} | {s.judgement.f1:.1f} | "
            f"{s.judgement.yes_rate:.1f} | {s.mcqa.accuracy:.1f} | {_st_acc(s, 'spatial'):.1f} "
            f"| {_st_acc(s, 'temporal'):.1f} | {s.mcqa.plausible_choice_rate:.1f} | "
            f"{s.openqa.score:.1f} |"
        )


def _fig_examples(ctx: RunContext) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = CLASS_NAMES
    cols = (0, 4, 8, 12, 15)
    fig, axes = plt.subplots(len(names), len(cols), figsize=(1.6 * len(cols), 1.5 * len(names)))
    for r, name in enumerate(names):
        clip = generate_clip(name, seed=1)
        for k, t in enumerate(cols):
            ax = axes[r, k]
            ax.imshow(clip.frames[t].transpose(1, 2, 0), interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if k == 0:
                kind = "" if name == PLAUSIBLE else f" ({BY_KIND[name][0]})"
                ax.set_ylabel(name + kind, fontsize=6, rotation=0, ha="right", va="center")
            if r == 0:
                ax.set_title(f"frame {t}", fontsize=7)
    fig.suptitle("Generated clips: plausible vs one impossible clip per violation", fontsize=8)
    ctx.save_figure(fig, "example_frames")


BY_KIND = {v.name: ("S" if v.spatial_temporal == "spatial" else "T",) for v in VIOLATIONS}


def _fig_accuracy(ctx: RunContext, scores: dict[str, BenchScores]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 3.6), gridspec_kw={"width_ratios": [4, 1]})
    vnames = [v.name for v in VIOLATIONS]
    width = 0.8 / len(scores)
    for k, (model, s) in enumerate(scores.items()):
        xs = np.arange(len(vnames)) + k * width
        a1.bar(xs, [s.mcqa_by_violation[v] for v in vnames], width, label=model)
        a2.bar(
            np.arange(2) + k * width,
            [_st_acc(s, "spatial"), _st_acc(s, "temporal")],
            width,
            label=model,
        )
    a1.axhline(20, color="k", ls=":", lw=1, label="random (20)")
    a1.set_xticks(np.arange(len(vnames)) + 0.4 - width / 2)
    a1.set_xticklabels(
        [f"{v} ({BY_KIND[v][0]})" for v in vnames], rotation=35, ha="right", fontsize=7
    )
    a1.set_ylabel("MCQA accuracy (%)")
    a1.legend(fontsize=6, ncol=3)
    a2.set_xticks(np.arange(2) + 0.4 - width / 2)
    a2.set_xticklabels(["spatial", "temporal"])
    a2.axhline(20, color="k", ls=":", lw=1)
    a1.set_title("MCQA accuracy by violation (category)", fontsize=8)
    a2.set_title("by spatial / temporal", fontsize=8)
    ctx.save_figure(fig, "accuracy_by_category")


def reproduce(ctx: RunContext) -> dict[str, Any]:
    cfg = CONFIGS[ctx.budget]
    seeds = ctx.seeds_run(at_least=cfg.train_seeds)
    random_j, random_m, physics = [], [], []
    trained: list[dict[str, Any]] = []
    first_scores: dict[str, BenchScores] | None = None
    for i, seed in enumerate(seeds):
        res = _one_seed(ctx, cfg, seed, train=i < cfg.train_seeds)
        random_j.append(abs(res["random_j"] - 50.0))
        random_m.append(abs(res["random_m"] - 20.0))
        physics.append(res["physics"])
        if "scores" not in res:
            continue
        _note_table(ctx, seed, res)
        first_scores = first_scores or res["scores"]
        trained.append(res)
    _fig_examples(ctx)
    if first_scores is not None:
        _fig_accuracy(ctx, first_scores)

    def rows(model: str) -> list[np.ndarray]:
        return [r["items"][model] for r in trained]

    def temporal(model: str, minus: str | None = None) -> Measurement:
        """Accuracy on temporal items (or the paired difference with ``minus``), points."""
        groups = []
        for r in trained:
            a = r["items"][model]
            keep = a[:, 1] == 0
            groups.append(a[keep, 0] - (r["items"][minus][keep, 0] if minus else 0.0))
        return item_measurement(groups)

    out: dict[str, Any] = {
        "random_judgement": random_j,
        "random_mcqa": random_m,
        "physics_check_agreement": Measurement.exact(float(np.mean(physics))),
    }
    if trained:
        gap_null = gap_measurement(rows("temporal"))
        out |= {
            "single_frame_temporal_gap": gap_measurement(rows("single_frame")),
            null_key("single_frame_temporal_gap"): gap_null,
            "frame_average_temporal_gap": gap_measurement(rows("frame_average")),
            null_key("frame_average_temporal_gap"): gap_null,
            "temporal_model_temporal_mcqa": temporal("temporal"),
            null_key("temporal_model_temporal_mcqa"): temporal("frame_average"),
            "temporal_beats_frame_average": temporal("temporal", "frame_average"),
            "frame_shuffle_control": temporal("temporal", "temporal_shuffled"),
            "low_level_control": item_measurement([r["lowlevel_items"] for r in trained]),
        }
    ctx.note(
        f"Budget {ctx.budget}: {cfg.n_train} training clips (10/11 impossible), {cfg.n_test} "
        f"test clips (half impossible), epochs {cfg.epochs}, encoder width {cfg.width}; models "
        f"trained on seeds {list(seeds[: cfg.train_seeds])}, random baseline and physics check "
        f"on seeds {list(seeds)}. Intervals: t over seeds with >= 3 trained seeds, else a "
        "bootstrap over the test items."
    )
    return out
