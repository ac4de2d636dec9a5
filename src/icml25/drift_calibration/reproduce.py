"""Reproduction of "Navigating Semantic Drift in Task-Agnostic Class-Incremental Learning" at
laptop scale.

A :class:`~icml25.drift_calibration.TinyViT` is pretrained on the spot (all parameters, Adam) on
the first four classes of Fashion-MNIST (MNIST-5k when Fashion-MNIST is not installed), in a
class order drawn from the seed as in the official code. Class-incremental learning then runs
four tasks: task 0 = those four classes, tasks 1-3 add two classes each; LoRA on ``k`` and ``v``
of every block, one adapter per task, summed. Ablations (the brief's list), all from the same
pretrained backbone and the same task-0 learner:

- ``frozen``: no LoRA, classifier alignment only;
- ``stale``: LoRA + alignment with stale means;
- ``msc``: + mean-shift compensation;
- ``cc``: stale means + covariance calibration + distillation (the official ``cc`` flag);
- ``full``: mean shift + covariance calibration + distillation;
- ``oracle``: ``cc`` with old class means recomputed from old training data.

Null arms and a gate (issues 48 and 54), on the same backbones:

- ``msc_random``: the ``stale`` backbone with each old mean moved as far as MSC moves it, in a
  random direction (content-free shift: the null arm of the MSC claims);
- ``oracle_stale``: the ``stale`` backbone with exact old means (the gate of ``msc_last_gain``:
  a ceiling that the gain can reach at all);
- ``stale_b`` and its view ``msc_b``: the ``stale`` learner trained again from another seed
  (adapters, batch order, alignment samples): A/A arms for the calibration claims, the same
  comparison with the calibration removed from the treated arm.

Accuracy is task-agnostic top-1 over the classes seen so far on held-out test images.
Diagnostics on old classes after the last task: the error of the stored means against the
old classes' true mean under the final network (their training images), and the relative
Frobenius change of each old class's feature covariance (test images) between the network
that learned it and the final one. Claims and rules were fixed in code before the first run;
the null arms and the gate were committed before the runs that judge them. The full budget
runs at least five seeds (fewer given on the command line are extended by the next integers);
intervals are t over seeds.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from icml25.core.claims import Claim, Gate, Null, Rule, gate_key, null_key
from icml25.core.data import load_image_benchmark
from icml25.core.runner import RunContext, one_thread
from icml25.drift_calibration.backbone import TinyViT
from icml25.drift_calibration.calibration import forgetting, task_accuracies
from icml25.drift_calibration.learner import DriftCalibratedLearner

ABLATIONS = ("frozen", "stale", "msc", "cc", "full", "oracle")
NULL_ARMS = ("msc_random", "oracle_stale", "stale_b", "msc_b")
REPLICATE = 7919  # random_state offset of the A/A replicate (stale_b, msc_b)
AA_NULL = "the same comparison with the calibration removed from the treated arm: LoRA with "

CLAIMS = (
    Claim(
        id="msc_mean_error",
        statement="Mean-shift compensation estimates the drift of old class means from "
        "current-task embedding changes (compensated means closer to the true ones than stale).",
        where="Sec. 3 (mean shift compensation); ablation tables",
        metric="sum over old classes of ||mu_msc - mu_true|| / same for stale means, msc run, "
        "after the last task (true = mean of the class's training images, final network)",
        paper_value="qualitative",
        rule=Rule("<=", 0.7, partial=0.9),
        null=Null(
            arm="a content-free shift: each old mean moved as far as MSC moves it, in a random "
            "direction (msc_random)"
        ),
    ),
    Claim(
        id="msc_last_gain",
        statement="Adding mean-shift compensation raises the last accuracy over stale means.",
        where="Ablation table (MSC row)",
        metric="last accuracy msc - stale, percentage points (t over seeds)",
        paper_value="gain (table not retrieved)",
        rule=Rule(">=", 0.5, partial=0.0),
        null=Null(
            arm="a content-free shift: each old mean moved as far as MSC moves it, in a random "
            "direction (msc_random - stale)"
        ),
        gate=Gate(
            "exact old means on the same backbone reach the rule: last accuracy oracle_stale - "
            "stale (a ceiling for any mean update)"
        ),
    ),
    Claim(
        id="cc_last_gain",
        statement="Adding covariance calibration (with self-distillation) on top of mean shift "
        "raises the last accuracy further.",
        where="Ablation table (MSC + CC row)",
        metric="last accuracy full - msc, percentage points",
        paper_value="gain (table not retrieved)",
        rule=Rule(">=", 0.5, partial=0.0),
        null=Null(arm=AA_NULL + "mean shift trained again from another seed (msc_b - msc)"),
    ),
    Claim(
        id="full_last_gain",
        statement="The full method beats LoRA with stale class statistics on last accuracy.",
        where="Ablation table (baseline vs full)",
        metric="last accuracy full - stale, percentage points",
        paper_value="gain (table not retrieved)",
        rule=Rule(">=", 1.0, partial=0.0),
        null=Null(arm=AA_NULL + "stale means trained again from another seed (stale_b - stale)"),
    ),
    Claim(
        id="full_avg_gain",
        statement="The full method beats LoRA with stale class statistics on average accuracy.",
        where="Ablation table (baseline vs full)",
        metric="average accuracy (over tasks) full - stale, percentage points",
        paper_value="gain (table not retrieved)",
        rule=Rule(">=", 1.0, partial=0.0),
        null=Null(arm=AA_NULL + "stale means trained again from another seed (stale_b - stale)"),
    ),
    Claim(
        id="cov_drift_ratio",
        statement="The Mahalanobis constraint reduces the covariance shift of old classes.",
        where="Sec. 3 (covariance calibration)",
        metric="mean over old classes of ||S_final - S_learned||_F / ||S_learned||_F, "
        "full / msc (test images, unnormalised features)",
        paper_value="lower with calibration",
        rule=Rule("<=", 0.9, partial=1.0),
        null=Null(
            arm="the covariance drift of the msc backbone trained again from another seed, over "
            "that of msc (msc_b / msc): no calibration in either"
        ),
    ),
    Claim(
        id="full_vs_frozen",
        statement="Control: adapting with LoRA plus calibration is worth it against a frozen "
        "backbone with classifier alignment only.",
        where="control (the brief's 'alignment only' ablation)",
        metric="last accuracy full - frozen, percentage points",
        rule=Rule(">=", 0.0, partial=-1.0),
        kind="control",
    ),
    Claim(
        id="oracle_gap",
        statement="Control: exact old class means (from old data) help, i.e. mean drift matters.",
        where="control (the brief's oracle ablation)",
        metric="last accuracy oracle - cc, percentage points",
        rule=Rule(">=", 0.5, partial=0.0),
        kind="control",
    ),
)


@dataclass(frozen=True)
class Config:
    pre_per_class: int
    """Training images per class for pretraining (and task 0)."""
    pre_epochs: int
    per_class: int
    """Training images per class of tasks 1-3."""
    test_per_class: int
    epochs_first: int
    epochs: int
    lr: float
    rank: int
    dim: int
    depth: int
    align_samples: int = 256
    """Gaussian samples per class and alignment epoch (256 as in the official code)."""


CONFIGS = {
    "tiny": Config(40, 1, 20, 10, 1, 1, 0.005, 4, 32, 1, align_samples=32),
    "quick": Config(400, 3, 300, 300, 2, 3, 0.005, 8, 64, 3),
    "full": Config(2000, 6, 1000, 1000, 4, 6, 0.005, 16, 64, 3),
}
MIN_SEEDS = {"tiny": 1, "quick": 3, "full": 5}
"""Seeds each budget runs at least (issue 48: >= 5 in full, where a seed costs ~2 min of CPU);
fewer given on the command line are extended by the next integers."""
FIRST, STEP, TASKS = 4, 2, 4
TRAINERS = (
    ("stale", ("msc", "msc_random", "oracle_stale")),
    ("cc", ("full", "oracle")),
    ("stale_b", ("msc_b",)),
)
"""Learners that train a backbone, and the views that share it (they differ only in the mean
update, which never feeds back into training)."""
ARMS = ABLATIONS + NULL_ARMS


def _data(cfg: Config, seed: int) -> dict[str, Any]:
    Xa, ya, Xb, yb, name = load_image_benchmark(mnist_test=1000)
    order = np.random.default_rng(seed).permutation(10)
    rng = np.random.default_rng([seed, 7])
    tasks = [order[:FIRST]] + [
        order[FIRST + STEP * i : FIRST + STEP * (i + 1)] for i in range(TASKS - 1)
    ]
    train, test = [], []
    for t, cls in enumerate(tasks):
        n = cfg.pre_per_class if t == 0 else cfg.per_class
        tr = np.concatenate([rng.permutation(np.flatnonzero(ya == c))[:n] for c in cls])
        te = np.concatenate(
            [rng.permutation(np.flatnonzero(yb == c))[: cfg.test_per_class] for c in cls]
        )
        train.append((Xa[tr], ya[tr]))
        test.append((Xb[te], yb[te]))
    return {"tasks": tasks, "train": train, "test": test, "name": name}


def _pretrain(cfg: Config, seed: int, X: np.ndarray, y: np.ndarray, classes: np.ndarray) -> TinyViT:
    torch.manual_seed(seed)
    net = TinyViT(dim=cfg.dim, depth=cfg.depth)
    head = torch.nn.Linear(cfg.dim, len(classes))
    opt = torch.optim.Adam([*net.parameters(), *head.parameters()], lr=1e-3)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(np.searchsorted(np.sort(classes), y))
    gen = torch.Generator().manual_seed(seed)
    for _ in range(cfg.pre_epochs):
        perm = torch.randperm(len(Xt), generator=gen)
        for i in range(0, len(Xt), 64):
            idx = perm[i : i + 64]
            loss = F.cross_entropy(head(net(Xt[idx])[:, 0]), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return net.eval()


def _evaluate(
    learners: dict[str, DriftCalibratedLearner], data: dict[str, Any], t: int
) -> dict[str, np.ndarray]:
    """Per-task and overall accuracy of every arm on the test images seen so far. Arms that
    share a backbone (views) share its features, computed once: the same predictions as
    ``learner.predict``."""
    Xs = np.concatenate([data["test"][s][0] for s in range(t + 1)])
    ys = np.concatenate([data["test"][s][1] for s in range(t + 1)])
    feats: dict[int, torch.Tensor] = {}
    out = {}
    for ab, lr in learners.items():
        key = id(lr.backbone_)
        if key not in feats:
            feats[key] = lr.embed(Xs)
        logits = lr._all_logits(feats[key].to(lr.device_)).cpu()
        pred = lr.classes_[logits.argmax(1).numpy()]
        row = np.zeros(TASKS)
        row[: t + 1] = task_accuracies(ys, pred, [data["tasks"][s] for s in range(t + 1)])
        out[ab] = np.append(row, float(np.mean(pred == ys)))
    return out


def _diagnostics(
    learner: DriftCalibratedLearner, data: dict[str, Any], cache: dict[Any, Any]
) -> dict[str, float]:
    """Mean errors (stored vs stale against the truth) and covariance drift of old classes.
    ``cache`` keeps what depends only on the backbone (shared by its views)."""
    last = TASKS - 1
    err_est, err_stale, drift = 0.0, 0.0, []
    for c_idx, c in enumerate(learner.classes_):
        s = learner.class_task_[c_idx]
        if s == last:
            continue
        key = (id(learner.backbone_), int(c))
        if key not in cache:
            X, y = data["train"][s]
            true = learner.embed(X[y == c]).double().mean(0)
            Xt, yt = data["test"][s]
            then = torch.cov(learner.embed(Xt[yt == c], upto_task=s).double().T)
            now = torch.cov(learner.embed(Xt[yt == c]).double().T)
            cache[key] = (true, float((now - then).norm() / then.norm()))
        true, change = cache[key]
        err_est += float((learner.class_means_[c_idx].double() - true).norm())
        err_stale += float((learner.stale_means_[c_idx].double() - true).norm())
        drift.append(change)
    return {"mean_err": err_est, "stale_err": err_stale, "cov_drift": float(np.mean(drift))}


class ContentFreeShift(DriftCalibratedLearner):
    """The null arm of the MSC claims: each old mean moves as far as mean-shift compensation
    would move it, in a random direction (no information from the embedding changes)."""

    def _shift_means(self, e_old: torch.Tensor, e_new: torch.Tensor) -> None:
        before = self.class_means_.clone()
        super()._shift_means(e_old, e_new)
        size = (self.class_means_ - before).norm(dim=1, keepdim=True)
        gen = torch.Generator().manual_seed(self.random_state * 1000 + self.n_tasks + 900)
        direction = torch.randn(before.shape, generator=gen, dtype=before.dtype)
        self.class_means_ = before + size * direction / direction.norm(dim=1, keepdim=True)


def _run_seed(cfg: Config, seed: int, ctx: RunContext) -> dict[str, Any]:
    data = _data(cfg, seed)
    ctx.progress(f"seed {seed}: pretraining a TinyViT on classes {data['tasks'][0].tolist()}")
    X0, y0 = data["train"][0]
    net = _pretrain(cfg, seed, X0, y0, data["tasks"][0])
    common = dict(
        target_modules=("k", "v"),
        rank=cfg.rank,
        epochs_first=cfg.epochs_first,
        epochs=cfg.epochs,
        lr=cfg.lr,
        align_samples=cfg.align_samples,
        random_state=seed,
    )
    flags = {
        "frozen": dict(
            lora=False, mean_shift=False, covariance_calibration=False, distillation=False
        ),
        "stale": dict(mean_shift=False, covariance_calibration=False, distillation=False),
        "msc": dict(mean_shift=True, covariance_calibration=False, distillation=False),
        "cc": dict(mean_shift=False, covariance_calibration=True, distillation=True),
        "full": dict(mean_shift=True, covariance_calibration=True, distillation=True),
        "oracle": dict(
            mean_shift=False, covariance_calibration=True, distillation=True, oracle_means=True
        ),
        "oracle_stale": dict(
            mean_shift=False, covariance_calibration=False, distillation=False, oracle_means=True
        ),
    }
    flags["msc_random"] = flags["msc_b"] = flags["msc"]
    flags["stale_b"] = flags["stale"]
    base = DriftCalibratedLearner(net, **common).fit_task(X0, y0)  # type: ignore[arg-type]
    frozen = DriftCalibratedLearner(net, **common, **flags["frozen"]).fit_task(X0, y0)  # type: ignore[arg-type]
    # Mean updates and alignment never feed back into the backbone's training, so the
    # ablations that differ only there share one trained backbone: "stale" trains it and
    # "msc" is a view on it; "cc" trains the calibrated one and "full" and "oracle" are views.
    learners: dict[str, DriftCalibratedLearner] = {"frozen": frozen}
    for trainer, views in TRAINERS:
        learners[trainer] = copy.deepcopy(base)
        if trainer == "stale_b":
            learners[trainer].random_state = seed + REPLICATE
        for k, v in flags[trainer].items():
            setattr(learners[trainer], k, v)
        for ab in views:
            view = copy.copy(learners[trainer])
            if ab == "msc_random":
                view.__class__ = ContentFreeShift
            view.heads_ = torch.nn.ParameterList(
                [torch.nn.Parameter(h.detach().clone()) for h in base.heads_]
            )
            for k, v in flags[ab].items():
                setattr(view, k, v)
            learners[ab] = view
    learners = {ab: learners[ab] for ab in ARMS}
    rows = {ab: [row] for ab, row in _evaluate(learners, data, 0).items()}
    for t in range(1, TASKS):
        X, y = data["train"][t]
        ref = (
            np.concatenate([data["train"][s][0] for s in range(t)]),
            np.concatenate([data["train"][s][1] for s in range(t)]),
        )
        ctx.progress(f"seed {seed}: task {t} (classes {data['tasks'][t].tolist()})")
        frozen.fit_task(X, y)
        for trainer, views in TRAINERS:
            state = learners[trainer]._learn_task(torch.as_tensor(X), y)
            head = learners[trainer].heads_[-1].detach().clone()
            for ab in views:
                learners[ab].heads_.append(torch.nn.Parameter(head.clone()))
                learners[ab]._finish_task(state, ref)
            learners[trainer]._finish_task(state, ref)
        for ab, row in _evaluate(learners, data, t).items():
            rows[ab].append(row)
    out: dict[str, Any] = {"name": data["name"], "tasks": [c.tolist() for c in data["tasks"]]}
    cache: dict[Any, Any] = {}
    for ab in ARMS:
        acc = np.array(rows[ab])  # (tasks, TASKS + 1): per-task accuracies after each task, all
        res = {
            "curve": 100 * acc[:, -1],
            "matrix": 100 * acc[:, :TASKS].T,
            "last": 100 * acc[-1, -1],
            "avg": 100 * acc[:, -1].mean(),
            "forgetting": 100 * forgetting(acc[:, :TASKS].T),
        }
        if ab in ("msc", "full", "msc_random", "msc_b"):
            res |= _diagnostics(learners[ab], data, cache)
            w = learners[ab].shift_weights_
            assert w is not None
            w = w.double()
            res["ess_frac"] = float((1 / (w**2).sum(1)).mean() / w.shape[1])
        out[ab] = res
    return out


@one_thread()  # its torch training depends on the thread count (issue 57, README)
def reproduce(ctx: RunContext) -> dict[str, list[float]]:
    cfg = CONFIGS[ctx.budget]
    seeds = ctx.seeds_run(at_least=MIN_SEEDS[ctx.budget])
    runs = [_run_seed(cfg, seed, ctx) for seed in seeds]

    def each(f: Any) -> list[float]:
        return [float(f(r)) for r in runs]

    def mean_err(ab: str) -> list[float]:
        return each(lambda r: r[ab]["mean_err"] / r[ab]["stale_err"])

    def diff(a: str, b: str, key: str = "last") -> list[float]:
        return each(lambda r: r[a][key] - r[b][key])

    def cov(a: str, b: str) -> list[float]:
        return each(lambda r: r[a]["cov_drift"] / r[b]["cov_drift"])

    out = {
        "msc_mean_error": mean_err("msc"),
        null_key("msc_mean_error"): mean_err("msc_random"),
        "msc_last_gain": diff("msc", "stale"),
        null_key("msc_last_gain"): diff("msc_random", "stale"),
        gate_key("msc_last_gain"): diff("oracle_stale", "stale"),
        "cc_last_gain": diff("full", "msc"),
        null_key("cc_last_gain"): diff("msc_b", "msc"),
        "full_last_gain": diff("full", "stale"),
        null_key("full_last_gain"): diff("stale_b", "stale"),
        "full_avg_gain": diff("full", "stale", "avg"),
        null_key("full_avg_gain"): diff("stale_b", "stale", "avg"),
        "cov_drift_ratio": cov("full", "msc"),
        null_key("cov_drift_ratio"): cov("msc_b", "msc"),
        "full_vs_frozen": diff("full", "frozen"),
        "oracle_gap": diff("oracle", "cc"),
    }
    _report(ctx, cfg, runs, seeds)
    return out


def _report(
    ctx: RunContext, cfg: Config, runs: list[dict[str, Any]], seeds: tuple[int, ...]
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_test = cfg.test_per_class * (FIRST + STEP * (TASKS - 1))
    ctx.note(
        f"- Data: {runs[0]['name']}; {cfg.per_class} training and {cfg.test_per_class} test "
        f"images per class; the final test set has {n_test} images, so one run's last "
        f"accuracy has a standard error of about {100 * np.sqrt(0.2 * 0.8 / n_test):.1f} points "
        "at 80% (differences between ablations share the test set and backbone)."
    )
    ctx.note(
        "- The backbone is a TinyViT pretrained here on four classes, not an ImageNet-21k ViT-B/16."
    )
    ctx.note(f"- Seeds {list(seeds)} (mean ± std over them below).")
    ctx.note("")
    ctx.note("| ablation | last acc (%) | average acc (%) | forgetting (pts) |")
    ctx.note("|---|---|---|---|")
    for ab in ARMS:
        vals = {k: np.array([r[ab][k] for r in runs]) for k in ("last", "avg", "forgetting")}
        ctx.note(
            f"| {ab} | "
            + " | ".join(
                f"{v.mean():.2f} ± {v.std(ddof=1) if len(v) > 1 else 0:.2f}" for v in vals.values()
            )
            + " |"
        )
    ctx.note("")
    for ab in ("msc", "full", "msc_random", "msc_b"):
        errs = [(r[ab]["mean_err"], r[ab]["stale_err"], r[ab]["cov_drift"]) for r in runs]
        ctx.note(
            f"- {ab}: old-class mean error stored / stale = "
            + ", ".join(f"{a:.3f}/{b:.3f}" for a, b, _ in errs)
            + "; covariance drift "
            + ", ".join(f"{c:.3f}" for *_, c in errs)
            + (
                "; mean-shift weights: effective samples / N = "
                + ", ".join(f"{r[ab]['ess_frac']:.3f}" for r in runs)
                if "ess_frac" in runs[0][ab]
                else ""
            )
        )
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    x = np.arange(TASKS)
    for ab in ABLATIONS:
        curves = np.array([r[ab]["curve"] for r in runs])
        axes[0].errorbar(x, curves.mean(0), yerr=curves.std(0), marker="o", capsize=2, label=ab)
    axes[0].set_xticks(x, [f"task {t}\n({FIRST + STEP * t} cls)" for t in x], fontsize=7)
    axes[0].set_ylabel("task-agnostic accuracy over seen classes (%)")
    axes[0].set_title("Accuracy after each task (mean ± std over seeds)", fontsize=9)
    axes[0].legend(fontsize=7)
    m = np.mean([r["full"]["matrix"] for r in runs], axis=0)
    im = axes[1].imshow(m, vmin=0, vmax=100, cmap="viridis")
    for i in range(TASKS):
        for j in range(TASKS):
            axes[1].text(j, i, f"{m[i, j]:.0f}", ha="center", va="center", color="w", fontsize=8)
    axes[1].set_xticks(range(TASKS))
    axes[1].set_yticks(range(TASKS))
    axes[1].set_xlabel("after task")
    axes[1].set_ylabel("accuracy on task's classes")
    axes[1].set_title("Full method: accuracy matrix (%)", fontsize=9)
    fig.colorbar(im, ax=axes[1])
    fig.tight_layout()
    ctx.save_figure(fig, "drift_calibration")
