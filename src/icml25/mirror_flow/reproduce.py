"""Reproduction of "Mirror, Mirror of the Flow" at laptop scale.

Four settings, as in the paper, each trained by plain gradient descent with weight decay that
is never on, always on, or switched off after T steps:

1. Sparse regression with ``x = u * v`` (batched NumPy GD): the Legendre parameter ``c_T``
   against its prediction, the GD limit against ``argmin_{Ax=y} R_{c_T}``, the type of bias
   (l1 norm falling as T grows), the positional bias (``x0 != 0``), and recovery errors.
2. Matrix sensing ``X = U U^T`` (symmetric, batched NumPy GD).
3. Single-layer attention logits ``s(q, k) = q^T W_Q W_K^T k`` on generated token pairs: the
   balancedness ``W_Q^T W_Q - W_K^T W_K`` against its predicted decay, and recovery errors.
4. LoRA fine-tuning (torch SGD + :class:`WeightDecaySwitch`) of a small MLP trained on the spot.

Claims and rules were fixed before the first run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from icml25.core.claims import Claim, Rule
from icml25.core.runner import RunContext
from icml25.mirror_flow.legendre import c_gd, implicit_bias_solution
from icml25.mirror_flow.schedule import WeightDecaySwitch

CLAIMS = (
    Claim(
        id="c_prediction",
        statement="Weight decay only moves the Legendre parameter: c_T = c_0 (1 - eta alpha)^(2T) "
        "(c_0 e^(-2 alpha t) in the flow).",
        where="Sparse coding example (time-dependent Legendre function)",
        metric="max over switch times of |median c_T / predicted - 1|, u * v sparse regression",
        paper_value="exact (theorem, flow)",
        rule=Rule("<=", 0.01, partial=0.05),
    ),
    Claim(
        id="argmin_match",
        statement="After weight decay is switched off, GD converges to argmin_{Ax=y} R_{c_T}(x).",
        where="Main theorem applied to sparse coding",
        metric="max relative distance ||x_GD - argmin R_{c_T}|| / ||argmin|| over switch times "
        "whose run has converged (residual <= 1e-6)",
        paper_value="exact (theorem)",
        rule=Rule("<=", 0.01, partial=0.05),
    ),
    Claim(
        id="type_of_bias",
        statement="Type of bias: longer weight decay (smaller c_T) moves the bias from l2-like "
        "towards l1, lowering ||x||_1 of the interpolating solution.",
        where="Three effects: type of bias",
        metric="fraction of successive switch times (none < T1 < T2 < T3 < T4) whose solution has "
        "a smaller l1 norm",
        paper_value="monotone",
        rule=Rule(">=", 1.0, partial=0.75),
    ),
    Claim(
        id="positional_bias",
        statement="Positional bias: with x_0 != 0 the limit is "
        "argmin R_{c_T}(x) - <grad R_{c_0}(x_0), x>.",
        where="Three effects: positional bias",
        metric="relative distance of the GD limit (u0 = 1, v0 = 0.5, weight decay off at T) to "
        "the positional prediction",
        paper_value="exact (theorem)",
        rule=Rule("<=", 0.01, partial=0.05),
    ),
    Claim(
        id="sparse_switch_vs_none",
        statement="Switching weight decay off improves generalization over never using it "
        "(sparse regression).",
        where="Sparse coding experiment",
        metric="recovery error ||x - x*||/||x*||, switch off at T3 / never",
        paper_value="better",
        rule=Rule("<=", 0.5, partial=0.9),
    ),
    Claim(
        id="sparse_switch_vs_always",
        statement="...and over keeping it on, while still interpolating (sparse regression).",
        where="Sparse coding experiment",
        metric="recovery error, switch off at T4 / always on (switched run must interpolate: "
        "residual <= 1e-3 ||y||, else the value is set to inf)",
        paper_value="better",
        rule=Rule("<=", 1.0, partial=1.5),
    ),
    Claim(
        id="sensing_switch_vs_none",
        statement="Switching weight decay off improves matrix sensing over never using it.",
        where="Matrix sensing experiment",
        metric="||X - X*||_F/||X*||_F, switch off at T2 / never",
        paper_value="better",
        rule=Rule("<=", 0.25, partial=0.9),
    ),
    Claim(
        id="sensing_switch_vs_always",
        statement="...and over keeping it on (matrix sensing).",
        where="Matrix sensing experiment",
        metric="recovery error, switch off at T2 / always on",
        paper_value="better",
        rule=Rule("<=", 1.0, partial=1.5),
    ),
    Claim(
        id="attention_balancedness",
        statement="In single-layer attention W_Q W_K^T, weight decay decays the balancedness "
        "W_Q^T W_Q - W_K^T W_K as (1 - eta alpha)^(2t) (e^(-2 alpha t) in the flow).",
        where="Single-layer attention",
        metric="|‖B_T‖_F / ‖B_0‖_F / predicted - 1| at the switch time",
        paper_value="exact (theorem, flow)",
        rule=Rule("<=", 0.01, partial=0.05),
    ),
    Claim(
        id="attention_switch_vs_none",
        statement="Switching weight decay off improves the attention logits' recovery over "
        "never using it.",
        where="Single-layer attention experiment",
        metric="||W_Q W_K^T - W*||_F/||W*||_F, switch off at T / never",
        paper_value="better",
        rule=Rule("<=", 0.5, partial=0.9),
    ),
    Claim(
        id="lora_switch",
        statement="In LoRA fine-tuning, switching weight decay off generalizes better than "
        "never using it and than keeping it on.",
        where="LoRA experiment",
        metric="test MSE of switch-off / min(test MSE never, test MSE always on)",
        paper_value="better",
        rule=Rule("<=", 1.0, partial=1.1),
    ),
)


@dataclass(frozen=True)
class Config:
    """Step counts per budget."""

    sparse_steps: int
    """Total GD steps in sparse regression."""
    sparse_switch: tuple[int, int, int, int]
    """Switch-off times T1..T4."""
    sensing_steps: int
    sensing_switch: tuple[int, int]
    attention_steps: int
    attention_switch: int
    lora_steps: int
    lora_switch: int


CONFIGS = {
    "tiny": Config(3_000, (50, 100, 200, 400), 2_000, (200, 400), 2_000, 300, 200, 50),
    "quick": Config(
        150_000, (500, 1_000, 2_000, 20_000), 30_000, (3_000, 6_000), 30_000, 5_000, 3_000, 1_000
    ),
    "full": Config(
        400_000, (500, 1_000, 2_000, 20_000), 60_000, (3_000, 6_000), 60_000, 5_000, 6_000, 2_000
    ),
}

SPARSE: dict[str, Any] = {"n": 40, "d": 100, "k": 5, "lr": 0.05, "alpha": 0.02}
SENSING: dict[str, Any] = {"d": 20, "rank": 2, "m": 120, "lr": 2e-3, "alpha": 0.5, "u0": 0.5}
ATTENTION: dict[str, Any] = {"d": 20, "rank": 2, "m": 150, "lr": 0.05, "alpha": 0.05, "q0": 0.5}
LORA: dict[str, Any] = {
    "d_in": 20,
    "hidden": 64,
    "rank": 4,
    "n_train": 64,
    "n_test": 2_000,
    "lr": 0.05,
    "alpha": 0.01,
}


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


# ---- 1. sparse regression, x = u * v -------------------------------------------------------------


def sparse_gd(A, y, u0, v0, lr, alpha, off, steps):  # type: ignore[no-untyped-def]
    """Batched GD on 1/2 ||A (u*v) - y||^2 + alpha/2 (||u||^2 + ||v||^2); run r has weight decay
    for its first ``off[r]`` steps. Returns x = u*v, c = u^2 - v^2 at each switch, and c_end."""
    R = len(off)
    U = np.tile(np.asarray(u0, dtype=np.float64), (R, 1))
    V = np.tile(np.asarray(v0, dtype=np.float64), (R, 1))
    off = np.asarray(off)[:, None]
    c_switch = np.full(U.shape, np.nan)
    for k in range(steps):
        at = k == off[:, 0]
        if at.any():
            c_switch[at] = (U * U - V * V)[at]
        g = ((U * V) @ A.T - y) @ A
        a = np.where(k < off, alpha, 0.0)
        U, V = U - lr * (V * g + a * U), V - lr * (U * g + a * V)
    return U * V, c_switch, U * U - V * V


def _sparse_instance(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian design A (n x d, scaled by 1/sqrt(n)) and a k-sparse x*."""
    p = SPARSE
    A = rng.standard_normal((p["n"], p["d"])) / np.sqrt(p["n"])
    xs = np.zeros(p["d"])
    xs[rng.choice(p["d"], p["k"], replace=False)] = rng.standard_normal(p["k"])
    return A, xs


def _sparse(
    cfg: Config, rng: np.random.Generator, out: dict[str, list[float]], log: list[Any]
) -> None:
    p = SPARSE
    A, xs = _sparse_instance(rng)
    y = A @ xs
    T = cfg.sparse_switch
    never, always = 0, cfg.sparse_steps + 1
    offs = [never, *T, always]
    X, c_sw, _ = sparse_gd(
        A, y, np.ones(p["d"]), np.zeros(p["d"]), p["lr"], p["alpha"], offs, cfg.sparse_steps
    )
    err = [_rel(x, xs) for x in X]
    resid = [float(np.linalg.norm(A @ x - y)) for x in X]
    c_dev, match = [], []
    for i, t in enumerate(offs[:-1]):
        c_t = np.ones(p["d"]) if t == 0 else c_sw[i]
        if t:
            pred = c_gd(1.0, p["lr"], p["alpha"], t)
            c_dev.append(abs(float(np.median(c_t)) / float(pred) - 1))
        if resid[i] <= 1e-6:
            match.append(_rel(X[i], implicit_bias_solution(A, y, c_t)))
    out["c_prediction"].append(max(c_dev))
    out["argmin_match"].append(max(match) if match else float("inf"))
    l1 = [float(np.abs(x).sum()) for x in X[:-1]]
    out["type_of_bias"].append(float(np.mean(np.diff(l1) < 0)))
    out["sparse_switch_vs_none"].append(err[3] / err[0])
    interpolates = resid[4] <= 1e-3 * np.linalg.norm(y)
    out["sparse_switch_vs_always"].append(err[4] / err[-1] if interpolates else float("inf"))
    from scipy.optimize import linprog

    lp = linprog(np.ones(2 * p["d"]), A_eq=np.hstack([A, -A]), b_eq=y, bounds=(0, None))
    log.append(("sparse", offs, err, resid, l1, float(lp.fun), len(match)))

    # positional bias: x0 = 0.5 != 0, weight decay off at T2
    u0, v0 = np.ones(p["d"]), np.full(p["d"], 0.5)
    t2 = T[1]
    Xp, c_sw_p, _ = sparse_gd(A, y, u0, v0, p["lr"], p["alpha"], [t2], cfg.sparse_steps)
    x0, c0 = u0 * v0, u0**2 - v0**2
    positional = implicit_bias_solution(A, y, c_sw_p[0], x0=x0, c0=c0)
    plain = implicit_bias_solution(A, y, c_sw_p[0])
    out["positional_bias"].append(_rel(Xp[0], positional))
    log.append(("positional", _rel(Xp[0], positional), _rel(Xp[0], plain)))


# ---- 2. matrix sensing, X = U U^T --------------------------------------------------------------


def _sym_measurements(rng: np.random.Generator, m: int, d: int) -> np.ndarray:
    G = rng.standard_normal((m, d, d))
    return (G + G.transpose(0, 2, 1)) / 2


def _sensing(
    cfg: Config, rng: np.random.Generator, out: dict[str, list[float]], log: list[Any]
) -> None:
    p = SENSING
    d, m = p["d"], p["m"]
    Z = rng.standard_normal((d, p["rank"]))
    Xs = Z @ Z.T / d
    As = _sym_measurements(rng, m, d).reshape(m, d * d) / np.sqrt(m)
    y = As @ Xs.ravel()
    offs = np.array([0, *cfg.sensing_switch, cfg.sensing_steps + 1])
    U = np.tile(p["u0"] * np.eye(d), (len(offs), 1, 1))
    for k in range(cfg.sensing_steps):
        X = U @ U.transpose(0, 2, 1)
        r = X.reshape(len(offs), -1) @ As.T - y
        S = (r @ As).reshape(-1, d, d)
        a = np.where(k < offs, p["alpha"], 0.0)[:, None, None]
        U = U - p["lr"] * (2 * S @ U + a * U)
    X = U @ U.transpose(0, 2, 1)
    err = [_rel(x, Xs) for x in X]
    out["sensing_switch_vs_none"].append(err[2] / err[0])
    out["sensing_switch_vs_always"].append(err[2] / err[-1])
    log.append(("sensing", list(offs), err))


# ---- 3. single-layer attention logits, W_Q W_K^T ------------------------------------------------


def _attention(
    cfg: Config, rng: np.random.Generator, out: dict[str, list[float]], log: list
) -> None:
    p = ATTENTION
    d, m = p["d"], p["m"]
    Ws = rng.standard_normal((d, p["rank"])) @ rng.standard_normal((p["rank"], d)) / d
    Qt = rng.standard_normal((m, d))  # query tokens
    Kt = rng.standard_normal((m, d))  # key tokens
    y = np.einsum("md,de,me->m", Qt, Ws, Kt)  # target logits q^T W* k
    offs = np.array([0, cfg.attention_switch, cfg.attention_steps + 1])
    WQ = np.tile(p["q0"] * np.eye(d), (len(offs), 1, 1))
    WK = np.zeros_like(WQ)
    B0 = np.linalg.norm(WQ[1].T @ WQ[1] - WK[1].T @ WK[1])
    b_ratio = np.nan
    for k in range(cfg.attention_steps):
        if k == cfg.attention_switch:
            b_ratio = float(np.linalg.norm(WQ[1].T @ WQ[1] - WK[1].T @ WK[1]) / B0)
        W = WQ @ WK.transpose(0, 2, 1)
        r = np.einsum("md,rde,me->rm", Qt, W, Kt) - y
        Gw = np.einsum("rm,md,me->rde", r, Qt, Kt) / m  # gradient wrt the product W
        a = np.where(k < offs, p["alpha"], 0.0)[:, None, None]
        WQ, WK = (
            WQ - p["lr"] * (Gw @ WK + a * WQ),
            WK - p["lr"] * (Gw.transpose(0, 2, 1) @ WQ + a * WK),
        )
    W = WQ @ WK.transpose(0, 2, 1)
    err = [_rel(w, Ws) for w in W]
    pred = c_gd(1.0, p["lr"], p["alpha"], cfg.attention_switch)
    out["attention_balancedness"].append(abs(float(b_ratio) / float(pred) - 1))
    out["attention_switch_vs_none"].append(err[1] / err[0])
    log.append(("attention", list(offs), err, float(b_ratio), float(pred)))


# ---- 4. LoRA fine-tuning ----------------------------------------------------------------


class LoRALinear(nn.Module):
    """A frozen linear layer plus a trainable low-rank update ``B @ A`` (B starts at 0)."""

    def __init__(self, base: nn.Linear, rank: int, generator: torch.Generator) -> None:
        super().__init__()
        self.base = base
        for prm in self.base.parameters():
            prm.requires_grad_(False)
        self.A = nn.Parameter(torch.randn(rank, base.in_features, generator=generator) / rank**0.5)
        self.B = nn.Parameter(torch.zeros(base.out_features, rank))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + x @ (self.B @ self.A).T


def _mlp(d_in: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(), nn.Linear(hidden, 1))


def _lora(cfg: Config, seed: int, out: dict[str, list[float]], log: list[Any]) -> None:
    p = LORA
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    teacher = _mlp(p["d_in"], p["hidden"])
    # the fine-tuning task: the teacher with a rank-1 change of its first layer
    shifted = _mlp(p["d_in"], p["hidden"])
    shifted.load_state_dict(teacher.state_dict())
    with torch.no_grad():
        du = torch.randn(p["hidden"], 1, generator=g)
        dv = torch.randn(1, p["d_in"], generator=g)
        shifted[0].weight += 0.5 * du @ dv / p["d_in"] ** 0.5
    # "pretrained" model: fitted on the spot to the teacher's task with plenty of data
    pre = _mlp(p["d_in"], p["hidden"])
    Xa = torch.randn(4_000, p["d_in"], generator=g)
    with torch.no_grad():
        ya = teacher(Xa)
    opt = torch.optim.Adam(pre.parameters(), lr=3e-3)
    for _ in range(cfg.lora_steps // 2 + 100):
        opt.zero_grad()
        nn.functional.mse_loss(pre(Xa), ya).backward()
        opt.step()
    Xtr = torch.randn(p["n_train"], p["d_in"], generator=g)
    Xte = torch.randn(p["n_test"], p["d_in"], generator=g)
    with torch.no_grad():
        ytr, yte = shifted(Xtr), shifted(Xte)
    test = {}
    for name in ("never", "always", "switch"):
        model = _mlp(p["d_in"], p["hidden"])
        model.load_state_dict(pre.state_dict())
        init = torch.Generator().manual_seed(seed + 1)
        first, last = model[0], model[2]
        assert isinstance(first, nn.Linear) and isinstance(last, nn.Linear)
        model[0] = LoRALinear(first, p["rank"], init)
        model[2] = LoRALinear(last, p["rank"], init)
        params = [q for q in model.parameters() if q.requires_grad]
        wd = 0.0 if name == "never" else p["alpha"]
        opt_s = torch.optim.SGD(params, lr=p["lr"], weight_decay=wd)
        sched = WeightDecaySwitch(opt_s, at_step=cfg.lora_switch) if name == "switch" else None
        for _ in range(cfg.lora_steps):
            opt_s.zero_grad()
            nn.functional.mse_loss(model(Xtr), ytr).backward()
            opt_s.step()
            if sched is not None:
                sched.step()
        with torch.no_grad():
            test[name] = float(nn.functional.mse_loss(model(Xte), yte))
            test[name + "_train"] = float(nn.functional.mse_loss(model(Xtr), ytr))
    out["lora_switch"].append(test["switch"] / min(test["never"], test["always"]))
    log.append(("lora", test))


def reproduce(ctx: RunContext) -> dict[str, list[float]]:
    cfg = CONFIGS[ctx.budget]
    out: dict[str, list[float]] = {c.id: [] for c in CLAIMS}
    logs: dict[int, list[Any]] = {}
    for seed in ctx.seeds:
        rng = np.random.default_rng(seed)
        log: list[Any] = []
        ctx.progress(f"seed {seed}: sparse regression u*v ({cfg.sparse_steps} GD steps x 7 runs)")
        _sparse(cfg, rng, out, log)
        ctx.progress(f"seed {seed}: matrix sensing ({cfg.sensing_steps} steps x 4 runs)")
        _sensing(cfg, rng, out, log)
        ctx.progress(f"seed {seed}: attention logits ({cfg.attention_steps} steps x 3 runs)")
        _attention(cfg, rng, out, log)
        ctx.progress(f"seed {seed}: LoRA fine-tuning ({cfg.lora_steps} steps x 3 runs)")
        _lora(cfg, seed, out, log)
        logs[seed] = log
    _report(ctx, cfg, logs)
    return out


def _report(ctx: RunContext, cfg: Config, logs: dict[int, list[Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ctx.note(
        "| seed | setting | never | "
        + " | ".join(f"off@{t}" for t in cfg.sparse_switch)
        + " | always |"
    )
    ctx.note("|---|---|---|" + "---|" * len(cfg.sparse_switch) + "---|")
    for seed, log in logs.items():
        d = {entry[0]: entry for entry in log}
        _, offs, err, resid, l1, l1min, _n = d["sparse"]
        ctx.note(f"| {seed} | sparse error | " + " | ".join(f"{e:.3g}" for e in err) + " |")
        ctx.note(f"| {seed} | sparse residual | " + " | ".join(f"{r:.1e}" for r in resid) + " |")
        ctx.note(
            f"| {seed} | sparse ‖x‖₁ (min-ℓ1 {l1min:.3f}) | "
            + " | ".join(f"{v:.3f}" for v in l1)
            + " | — |"
        )
    ctx.note("")
    for seed, log in logs.items():
        d = {entry[0]: entry for entry in log}
        _, pos, plain = d["positional"]
        _, so, serr = d["sensing"]
        _, ao, aerr, bratio, bpred = d["attention"]
        _, lt = d["lora"]
        ctx.note(
            f"- seed {seed}: positional bias: distance to the positional prediction {pos:.2e}, "
            f"to plain argmin R_cT {plain:.2e}. Matrix sensing error never/off@{so[1]}/"
            f"off@{so[2]}/always: " + "/".join(f"{e:.3g}" for e in serr) + f". Attention error "
            f"never/off@{ao[1]}/always: "
            + "/".join(f"{e:.3g}" for e in aerr)
            + f", balancedness ratio {bratio:.4g} vs predicted {bpred:.4g}. LoRA test MSE "
            f"never/always/switch: {lt['never']:.4g}/{lt['always']:.4g}/{lt['switch']:.4g} "
            f"(train {lt['never_train']:.2g}/{lt['always_train']:.2g}/{lt['switch_train']:.2g})."
        )

    fig, ax = plt.subplots(figsize=(5.5, 4))
    for seed, log in logs.items():
        d = {entry[0]: entry for entry in log}
        _, offs, err, *_ = d["sparse"]
        ax.plot([max(t, 1) for t in offs[:-1]], err[:-1], "o-", label=f"seed {seed}")
        ax.axhline(err[-1], ls=":", color=ax.lines[-1].get_color())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("weight decay switched off after step T (1 = never on)")
    ax.set_ylabel("recovery error ||x - x*|| / ||x*||")
    ax.set_title("Sparse regression: error vs switch-off time (dotted: always on)")
    ax.legend(fontsize=8)
    ctx.save_figure(fig, "error_vs_switch")

    # c trajectory vs prediction (one run, seed of the first entry)
    seed = next(iter(logs))
    rng = np.random.default_rng(seed)
    p = SPARSE
    A, xs = _sparse_instance(rng)
    t_end = cfg.sparse_switch[2]
    grid = np.unique(np.linspace(1, 1.5 * t_end, 30).astype(int))
    med = [
        float(
            np.median(
                sparse_gd(
                    A,
                    A @ xs,
                    np.ones(p["d"]),
                    np.zeros(p["d"]),
                    p["lr"],
                    p["alpha"],
                    [t_end],
                    int(k),
                )[2]
            )
        )
        for k in grid
    ]
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.plot(grid, med, "o", ms=3, label="measured median c (GD)")
    pred = c_gd(1.0, p["lr"], p["alpha"], np.minimum(grid, t_end))
    ax.plot(grid, pred, "-", label="predicted c0 (1 - eta alpha)^(2 min(k, T))")
    ax.set_yscale("log")
    ax.set_xlabel("GD step k")
    ax.set_ylabel("c = u^2 - v^2")
    ax.set_title(f"Legendre parameter under weight decay, off at T = {t_end}")
    ax.legend(fontsize=8)
    ctx.save_figure(fig, "c_trajectory")
