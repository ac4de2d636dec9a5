"""Reproduction of "Mirror, Mirror of the Flow" at laptop scale.

Four settings, as in the paper, each trained by plain gradient descent with weight decay that
is never on, always on, or switched off after T steps:

1. Sparse regression with ``x = u * v`` (batched NumPy GD): the Legendre parameter ``c_T``
   against its prediction, the GD limit against ``argmin_{Ax=y} R_{c_T}``, the type of bias
   (l1 norm falling as T grows), the positional bias (``x0 != 0``), and recovery errors.
2. Matrix sensing ``X = U U^T`` (symmetric, batched NumPy GD).
3. Single-layer attention logits ``s(q, k) = q^T W_Q W_K^T k`` on generated token pairs: the
   balancedness ``W_Q^T W_Q - W_K^T W_K`` against its predicted decay, and recovery errors.
4. LoRA fine-tuning of a small tanh MLP (batched NumPy GD, weight decay switched off at T).
5. Range shrinking with the power parametrization ``x = u^p - v^p``.

Claims and rules were fixed before the first run.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.core.claims import Claim, Gate, Null, Rule, gate_key, null_key
from icml25.core.runner import RunContext
from icml25.mirror_flow.balancedness import balancedness_error, balancedness_switch_step
from icml25.mirror_flow.legendre import c_gd, implicit_bias_solution
from icml25.mirror_flow.power import (
    collapse_time,
    dual_interval_width,
    power_gd,
    predicted_invariant,
)

CLAIMS = (
    Claim(
        id="c_prediction",
        statement="Weight decay only moves the Legendre parameter: c_T = c_0 (1 - eta alpha)^(2T) "
        "(c_0 e^(-2 alpha t) in the flow).",
        where="Sparse coding example (time-dependent Legendre function)",
        metric="max over switch times (T = {{sparse_switch}} GD steps) of |median c_T / "
        "predicted - 1|, u * v sparse regression",
        paper_value="exact (theorem, flow)",
        rule=Rule("<=", 0.01, partial=0.05),
        null=Null(
            arm="no weight decay: the never-decayed run's median c at each T against the same "
            "prediction c_0 (1 - eta alpha)^(2T)"
        ),
    ),
    Claim(
        id="argmin_match",
        statement="After weight decay is switched off, GD converges to argmin_{Ax=y} R_{c_T}(x).",
        where="Main theorem applied to sparse coding",
        metric="max relative distance ||x_GD - argmin R_{c_T}|| / ||argmin|| over switch times "
        "whose run has converged (residual <= 1e-6)",
        paper_value="exact (theorem)",
        rule=Rule("<=", 0.01, partial=0.05),
        null=Null(
            arm="the time-independent bias: the same GD limits against argmin R_{c_0} (c left "
            "where it started, i.e. weight decay's effect on c ignored)"
        ),
    ),
    Claim(
        id="type_of_bias",
        statement="Type of bias: longer weight decay (smaller c_T) moves the bias from l2-like "
        "towards l1, lowering ||x||_1 of the interpolating solution.",
        where="Three effects: type of bias",
        metric="fraction of successive switch times (none < T1 < T2 < T3 < T4 = {{sparse_switch}} "
        "of {{sparse_steps}} GD steps) whose solution has a smaller l1 norm (by more than 1e-9 "
        "relative: float ties are not smaller)",
        paper_value="monotone",
        rule=Rule(">=", 1.0, partial=0.75),
        null=Null(
            arm="no reparameterisation: x = w trained by the same GD, weight decay and switch "
            "times (plain l2 weight decay leaves no lasting bias)"
        ),
    ),
    Claim(
        id="positional_bias",
        statement="Positional bias: with x_0 != 0 the limit is "
        "argmin R_{c_T}(x) - <grad R_{c_0}(x_0), x>.",
        where="Three effects: positional bias",
        metric="relative distance of the GD limit (u0 = 1, v0 = 0.5, weight decay off at T2 = "
        "{{sparse_T2}} of {{sparse_steps}} steps) to the positional prediction",
        paper_value="exact (theorem)",
        rule=Rule("<=", 0.01, partial=0.05),
        null=Null(arm="the prediction without the positional term: plain argmin R_{c_T}"),
    ),
    Claim(
        id="sparse_switch_vs_none",
        statement="Switching weight decay off improves generalization over never using it "
        "(sparse regression).",
        where="Sparse coding experiment",
        metric="recovery error ||x - x*||/||x*||, switch off at T3 = {{sparse_T3}} / never "
        "({{sparse_steps}} GD steps)",
        paper_value="better",
        rule=Rule("<=", 0.5, partial=0.9),
        null=Null(arm="no reparameterisation: x = w, same GD, weight decay and switch"),
        gate=Gate(
            "the sparse bias can help here: recovery error of the min-l1 interpolant (the c -> 0 "
            "limit) / never"
        ),
    ),
    Claim(
        id="sparse_switch_vs_always",
        statement="...and over keeping it on, while still interpolating (sparse regression).",
        where="Sparse coding experiment",
        metric="recovery error, switch off at T4 = {{sparse_T4}} / always on ({{sparse_steps}} GD "
        "steps; switched run must interpolate: "
        "residual <= 1e-3 ||y||, else the value is set to inf)",
        paper_value="better",
        rule=Rule("<=", 1.0, partial=1.5),
        null=Null(arm="no reparameterisation: x = w, same GD, weight decay and switch"),
    ),
    Claim(
        id="sensing_switch_vs_none",
        statement="Switching weight decay off improves matrix sensing over never using it.",
        where="Matrix sensing experiment",
        metric="||X - X*||_F/||X*||_F, switch off at T2 = {{sensing_T2}} / never "
        "({{sensing_steps}} GD steps)",
        paper_value="better",
        rule=Rule("<=", 0.25, partial=0.9),
        null=Null(
            arm="no factorisation: X trained directly from X_0 = U_0 U_0^T by the same GD, "
            "weight decay and switch"
        ),
    ),
    Claim(
        id="sensing_switch_vs_always",
        statement="...and over keeping it on (matrix sensing).",
        where="Matrix sensing experiment",
        metric="recovery error, switch off at T2 = {{sensing_T2}} / always on ({{sensing_steps}} "
        "GD steps)",
        paper_value="better",
        rule=Rule("<=", 1.0, partial=1.5),
        null=Null(
            arm="no factorisation: X trained directly from X_0 = U_0 U_0^T by the same GD, "
            "weight decay and switch"
        ),
    ),
    Claim(
        id="attention_balancedness",
        statement="In single-layer attention W_Q W_K^T, weight decay decays the balancedness "
        "W_Q^T W_Q - W_K^T W_K as (1 - eta alpha)^(2t) (e^(-2 alpha t) in the flow).",
        where="Single-layer attention",
        metric="max over a grid of steps k (every 1/40 of the run of {{balancedness_steps}} steps, "
        "weight decay on throughout) of "
        "||B_k - (1 - eta alpha)^(2k) B_0||_F / ||B_0||_F, at eta = 0.005 (rule of issue 23; "
        "before: |ratio of norms / prediction - 1| at the switch step, eta = 0.05)",
        paper_value="exact (theorem, flow)",
        rule=Rule("<=", 0.01, partial=0.05),
        null=Null(
            arm="no weight decay: the same error for a run without weight decay (same start, "
            "eta, grid) against the same prediction"
        ),
    ),
    Claim(
        id="attention_balancedness_eta",
        statement="Check added here: the deviation of GD from the flow's balancedness decay is "
        "first order in eta (the eta^2 term of each step, summed over t / eta steps).",
        where="Discrete GD vs gradient flow (derived here)",
        metric="|2 err(eta/2) / err(eta) - 1|, err as in attention_balancedness over the same "
        "times t = eta k, eta = 0.005",
        paper_value="first order in eta",
        rule=Rule("<=", 0.2, partial=0.5),
        kind="control",
    ),
    Claim(
        id="attention_switch_vs_none",
        statement="Switching weight decay off improves the attention logits' recovery over "
        "never using it.",
        where="Single-layer attention experiment",
        metric="||W_Q W_K^T - W*||_F/||W*||_F, switch off at T = {{attention_switch}} / never "
        "({{attention_steps}} GD steps)",
        paper_value="better",
        rule=Rule("<=", 0.5, partial=0.9),
        null=Null(
            arm="no factorisation: the logit matrix W trained directly (from W_Q0 W_K0^T = 0) by "
            "the same GD, weight decay and switch"
        ),
    ),
    Claim(
        id="lora_switch",
        statement="In LoRA fine-tuning, switching weight decay off generalizes better than "
        "never using it and than keeping it on.",
        where="LoRA experiment",
        metric="test MSE of switch-off / min(test MSE never, test MSE always on); n = 256 "
        "samples, the task is the pretrained net plus a rank-1 change of its first layer scaled "
        "to a fixed pretrained-net MSE of 0.03 (issue 54; issue 23: n = 64 -> 256); weight decay "
        "off once the predicted balancedness is down to 5% (issue 54: T = 749; before T = 250, "
        "e^-1). Rule restated by issue 54 before its run: <= 1 (the partial band <= 1.1 held a "
        "no-effect null); {{lora_steps}} GD steps in all",
        paper_value="better",
        rule=Rule("<=", 1.0),
        null=Null(
            arm="no factorisation: the first layer's weights fine-tuned directly (W1 + Delta, "
            "Delta from 0) by the same GD, weight decay and switch"
        ),
        gate=Gate(
            "the never and switch-off LoRA runs fit the task: max final train MSE / the "
            "pretrained net's (lora_converged's measurement) <= 1e-2",
            Rule("<=", 1e-2),
        ),
    ),
    Claim(
        id="lora_balancedness",
        statement="In LoRA (BA), weight decay decays the balancedness A A^T - B^T B as "
        "(1 - eta alpha)^(2k).",
        where="LoRA experiment (as described by the reviews of the ICLR 2025 submission)",
        metric="max over the steps k = 0, 25, ..., {{lora_grid_last}} (weight decay on, T = "
        "{{lora_T}}, {{lora_steps}} steps in all) of "
        "||Bal_k - (1 - eta alpha)^(2k) Bal_0||_F / ||Bal_0||_F (rank-4 LoRA on the first layer)",
        paper_value="0.368 vs 0.3677 (reviews)",
        rule=Rule("<=", 0.01, partial=0.05),
        null=Null(
            arm="no weight decay: the never run's balancedness over the same steps against the "
            "same prediction"
        ),
    ),
    Claim(
        id="lora_low_rank",
        statement="After weight decay is switched off, the LoRA update BA stays closer to low "
        "rank than without weight decay (nuclear / Frobenius ratio below).",
        where="LoRA experiment (as described by the reviews of the ICLR 2025 submission)",
        metric="||B A||_* / ||B A||_F of the LoRA update, switch-off / never. Rule restated by "
        "issue 54 before its run: <= 0.8 (partial <= 0.9), between the reviews' ratio (about "
        "0.7) and no effect (1); before: < 1, which passed at 0.956",
        paper_value="1.2-1.4 vs about 1.9 (reviews): about 0.7",
        rule=Rule("<=", 0.8, partial=0.9),
        null=Null(
            arm="no factorisation: ||Delta||_* / ||Delta||_F of the first layer fine-tuned "
            "directly by the same GD, weight decay and switch, switch-off / never"
        ),
        gate=Gate(
            "the never and switch-off LoRA runs fit the task: max final train MSE / the "
            "pretrained net's (lora_converged's measurement) <= 1e-2",
            Rule("<=", 1e-2),
        ),
    ),
    Claim(
        id="lora_converged",
        statement="Check added here: the never and switch-off LoRA runs are trained to "
        "convergence (so their test errors compare fitted models).",
        where="LoRA experiment (issue 23: train to convergence)",
        metric="max over the never and switch-off runs of final train MSE / train MSE of the "
        "pretrained net on the task (issue 54: the task's change is scaled to the same "
        "pretrained-net MSE on every seed, so the ratio is comparable across seeds)",
        paper_value="-",
        rule=Rule("<=", 1e-3, partial=1e-2),
        kind="control",
    ),
    Claim(
        id="power_invariant",
        statement="Range shrinking: for x = u^p - v^p with regularizer sum(u^p + v^p), "
        "S = u^(2-p) + v^(2-p) = S_0 - 2p(2-p)A_t along training while u, v > 0, so the dual "
        "interval has width S_t / (p|2-p|) (shrinking for p < 2, widening for p > 2).",
        where="Three effects: range shrinking (definitions from the reviews of the ICLR 2025 "
        "submission, OpenReview EreKmSOw7K; invariant derived here)",
        metric="max over p in {1.5, 4}, runs with weight decay off at A_T <= 1 (S_T >= S_0 / 4 "
        "for p = 1.5), recorded steps (every {{power_record_every}} of {{power_steps}}) and "
        "coordinates with u, v > 0 of |S / predicted - 1|",
        paper_value="exact (flow)",
        rule=Rule("<=", 0.01, partial=0.05),
        null=Null(
            arm="the prediction without the regularizer's term: the same S against S_0 on the "
            "same runs with A_T > 0"
        ),
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
    balancedness_steps: int
    """GD steps at eta = 0.005 for the balancedness check (twice as many at eta / 2)."""
    lora_steps: int
    power_steps: int
    """GD steps of the power-parametrization runs (eta = 1e-3)."""


CONFIGS = {
    "tiny": Config(3_000, (50, 100, 200, 400), 2_000, (200, 400), 2_000, 300, 200, 300, 600),
    "quick": Config(
        150_000,
        (500, 1_000, 2_000, 20_000),
        30_000,
        (3_000, 6_000),
        30_000,
        5_000,
        10_000,
        # issue 57: 1,000 LoRA steps (12,000 before). Quick could not resolve the LoRA
        # comparisons at 12,000 (their gate, lora_converged <= 1e-2, failed: out of scale);
        # lora_balancedness needs the steps to the switch (T = 749), which are unchanged.
        1_000,
        10_000,
    ),
    "full": Config(
        400_000,
        (500, 1_000, 2_000, 20_000),
        60_000,
        (3_000, 6_000),
        60_000,
        5_000,
        10_000,
        48_000,  # 4x issue 23's quick 12,000: its lora_converged showed it had not converged
        40_000,
    ),
}

SPARSE: dict[str, Any] = {"n": 40, "d": 100, "k": 5, "lr": 0.05, "alpha": 0.02}
SENSING: dict[str, Any] = {"d": 20, "rank": 2, "m": 120, "lr": 2e-3, "alpha": 0.5, "u0": 0.5}
ATTENTION: dict[str, Any] = {
    "d": 20,
    "rank": 2,
    "m": 150,
    "lr": 0.05,
    "alpha": 0.05,
    "q0": 0.5,
    "balancedness_lr": 0.005,
    "balancedness_grid": 40,
}
LORA: dict[str, Any] = {
    "d_in": 20,
    "hidden": 64,
    "rank": 4,
    "n_train": 256,
    "n_test": 2_000,
    "lr": 0.2,
    "alpha": 0.01,
    # Weight decay goes off once the predicted balancedness (1 - eta alpha)^(2T) is down to 5%
    # of its start (three time constants, e^-3): T = 749 steps. Issue 54: before, T = 250 (e^-1,
    # 2 eta alpha T = 1) left lora_switch partial, and T = 750 won on all seeds after the fact;
    # that run prompted fixing T from this target before the rerun.
    "balancedness_target": 0.05,
    # The task's rank-1 change of the first layer is scaled so that the pretrained net's train
    # MSE on the task is this on every seed (issue 54; before, a fixed scale 0.5 gave 0.033,
    # 0.03 and 0.0028 on seeds 0-2, and seed 2's task barely moved the outputs).
    "start_mse": 0.03,
    "grid": 25,
}
# Issue 54's pilot of this LoRA setting (seeds 100-103, which no claims run uses; issue 54's 12,000
# steps, T = 749): lora_converged 0.0023, 0.0031, 0.0153, 0.0041, so the LoRA claims' gate asks
# for <= 1e-2 (the runs fit the task to 1% of the pretrained net's error; the control keeps its
# 1e-3 rule); switch / min(never, always) 0.20, 0.53, 0.41, 0.25 and the nuclear / Frobenius
# ratio switch / never 0.70, 0.72, 0.73, 0.67, against 0.998-0.9995 for the direct fine-tune.
POWER: dict[str, Any] = {
    "lr": 1e-3,
    "alpha": 0.5,
    "u0": 1.0,  # u0 = v0 = 1: x0 = 0, S0 = 2
    # weight decay off once A_T = lr * alpha * T reaches these (p = 1.5 collapses at A = 4/3)
    "A_off": {1.5: (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5), 4.0: (0.0, 0.25, 0.5)},
    "claim_A_max": 1.0,
    "record_every": 100,
}


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them."""
    cfg = CONFIGS[budget]
    lora_T = balancedness_switch_step(LORA["lr"], LORA["alpha"], LORA["balancedness_target"])
    lora_grid = np.arange(0, min(lora_T, cfg.lora_steps) + 1, LORA["grid"])  # as _lora's grid
    return {
        "sparse_switch": "/".join(f"{t:,}" for t in cfg.sparse_switch),
        "sparse_T2": cfg.sparse_switch[1],
        "sparse_T3": cfg.sparse_switch[2],
        "sparse_T4": cfg.sparse_switch[3],
        "sparse_steps": cfg.sparse_steps,
        "sensing_T2": cfg.sensing_switch[1],
        "sensing_steps": cfg.sensing_steps,
        "attention_switch": cfg.attention_switch,
        "attention_steps": cfg.attention_steps,
        "balancedness_steps": cfg.balancedness_steps,
        "lora_steps": cfg.lora_steps,
        "lora_T": lora_T,
        "lora_grid_last": int(lora_grid[-1]),
        "power_steps": cfg.power_steps,
        "power_record_every": POWER["record_every"],
    }


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


# ---- 1. sparse regression, x = u * v -------------------------------------------------------------


def sparse_gd(A, y, u0, v0, lr, alpha, off, steps, record=()):  # type: ignore[no-untyped-def]
    """Batched GD on 1/2 ||A (u*v) - y||^2 + alpha/2 (||u||^2 + ||v||^2); run r has weight decay
    for its first ``off[r]`` steps; ``u0``, ``v0`` are (d,) or one row per run (R, d). Returns
    x = u*v, c = u^2 - v^2 at each switch, and c_end; with ``record``, also c at those steps
    ((len(record), R, d))."""
    R = len(off)
    d = A.shape[1]
    U = np.broadcast_to(np.asarray(u0, dtype=np.float64), (R, d)).copy()
    V = np.broadcast_to(np.asarray(v0, dtype=np.float64), (R, d)).copy()
    off = np.asarray(off)
    G, b = A.T @ A, A.T @ y  # grad f(x) = G x - b
    c_switch = np.full(U.shape, np.nan)
    rec = {int(k): i for i, k in enumerate(record)}
    c_rec = np.zeros((len(rec), R, d))
    events = set(off.tolist()) | set(rec)
    decay = np.where(off > 0, 1 - lr * alpha, 1.0)[:, None]  # (1 - eta alpha_k) per run
    # temporaries in buffers reused across steps (issue 57): the same operations in the same
    # order as ``g = (U V) G - b; U, V = decay U - lr (V g), decay V - lr (U g)``
    x, g, t, s = (np.empty_like(U) for _ in range(4))
    mm, sub, mul = np.matmul, np.subtract, np.multiply
    for k in range(steps + 1):
        if k in events:
            at = k == off
            if at.any():
                c_switch[at] = (U * U - V * V)[at]
                decay[at] = 1.0
            if k in rec:
                c_rec[rec[k]] = U * U - V * V
        if k == steps:
            break
        sub(mm(mul(U, V, out=x), G, out=g), b, out=g)
        mul(lr, mul(V, g, out=t), out=t)
        mul(lr, mul(U, g, out=s), out=s)
        sub(mul(decay, U, out=U), t, out=U)
        sub(mul(decay, V, out=V), s, out=V)
    if len(rec):
        return U * V, c_switch, U * U - V * V, c_rec
    return U * V, c_switch, U * U - V * V


def _sparse_instance(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian design A (n x d, scaled by 1/sqrt(n)) and a k-sparse x*."""
    p = SPARSE
    A = rng.standard_normal((p["n"], p["d"])) / np.sqrt(p["n"])
    xs = np.zeros(p["d"])
    xs[rng.choice(p["d"], p["k"], replace=False)] = rng.standard_normal(p["k"])
    return A, xs


def linear_gd(G, b, w0, lr, alpha, off, steps):  # type: ignore[no-untyped-def]
    """GD on the quadratic 1/2 w^T G w - b^T w + alpha/2 ||w||^2 (weight decay for run r's first
    ``off[r]`` steps, then none) from ``w0``, ``steps`` steps: the null arms without a
    reparameterisation (x = w, X or W trained directly). The iteration is linear, so it is
    computed exactly per eigendirection of G: a coordinate z with curvature a moves as
    z_k = z* + (z_0 - z*) (1 - eta a)^k, z* = b / a (z_k = z_0 + k eta b where a = 0)."""
    lam, Q = np.linalg.eigh(G)
    bt, z0 = Q.T @ b, Q.T @ w0
    tiny = 1e-12 * max(1.0, float(np.abs(lam).max()))

    def phase(z: np.ndarray, a: np.ndarray, k: int) -> np.ndarray:
        live = np.abs(a) > tiny
        star = np.where(live, bt / np.where(live, a, 1.0), 0.0)
        moved = star + (z - star) * (1 - lr * a) ** k
        return np.where(live, moved, z + k * lr * bt)

    out = []
    for t in off:
        t1 = min(int(t), steps)
        z = phase(z0, lam + alpha, t1)
        out.append(Q @ phase(z, lam, steps - t1))
    return np.array(out)


def _strictly_falling(values: list[float]) -> float:
    """Fraction of successive values that fall by more than 1e-9 relative (float ties don't)."""
    v = np.asarray(values)
    return float(np.mean(v[1:] < v[:-1] * (1 - 1e-9)))


def _sparse(
    cfg: Config, rng: np.random.Generator, out: dict[str, list[float]], log: list[Any]
) -> None:
    p = SPARSE
    A, xs = _sparse_instance(rng)
    y = A @ xs
    T = cfg.sparse_switch
    never, always = 0, cfg.sparse_steps + 1
    offs = [never, *T, always]
    # one batch: the six runs from x0 = 0 and the positional-bias run (u0 = 1, v0 = 0.5, weight
    # decay off at T2); c of every run is recorded at the switch times (the null arm of
    # c_prediction reads the never-decayed run there)
    u0, v0 = np.ones(p["d"]), np.full(p["d"], 0.5)
    t2 = T[1]
    U0 = np.vstack([np.ones((len(offs), p["d"])), u0])
    V0 = np.vstack([np.zeros((len(offs), p["d"])), v0])
    X, c_sw, _, c_at_T = sparse_gd(
        A, y, U0, V0, p["lr"], p["alpha"], [*offs, t2], cfg.sparse_steps, record=T
    )
    Xp, c_sw_p = X[len(offs) :], c_sw[len(offs) :]
    X, c_sw = X[: len(offs)], c_sw[: len(offs)]
    err = [_rel(x, xs) for x in X]
    resid = [float(np.linalg.norm(A @ x - y)) for x in X]
    c_dev, c_dev_null, match, match_null = [], [], [], []
    plain_c0 = implicit_bias_solution(A, y, np.ones(p["d"]))  # the bias at c = c_0 = 1
    for i, t in enumerate(offs[:-1]):
        c_t = np.ones(p["d"]) if t == 0 else c_sw[i]
        if t:
            pred = float(c_gd(1.0, p["lr"], p["alpha"], t))
            c_dev.append(abs(float(np.median(c_t)) / pred - 1))
            never_c = c_at_T[T.index(t), 0]  # the run without weight decay, at step t
            c_dev_null.append(abs(float(np.median(never_c)) / pred - 1))
        if resid[i] <= 1e-6:
            match.append(_rel(X[i], implicit_bias_solution(A, y, c_t)))
            if t:
                match_null.append(_rel(X[i], plain_c0))
    out["c_prediction"].append(max(c_dev))
    out[null_key("c_prediction")].append(max(c_dev_null))
    out["argmin_match"].append(max(match) if match else float("inf"))
    out[null_key("argmin_match")].append(max(match_null) if match_null else float("inf"))
    l1 = [float(np.abs(x).sum()) for x in X[:-1]]
    out["type_of_bias"].append(_strictly_falling(l1))
    out["sparse_switch_vs_none"].append(err[3] / err[0])
    interpolates = resid[4] <= 1e-3 * np.linalg.norm(y)
    out["sparse_switch_vs_always"].append(err[4] / err[-1] if interpolates else float("inf"))
    from scipy.optimize import linprog

    lp = linprog(np.ones(2 * p["d"]), A_eq=np.hstack([A, -A]), b_eq=y, bounds=(0, None))
    x_l1 = lp.x[: p["d"]] - lp.x[p["d"] :]
    out[gate_key("sparse_switch_vs_none")].append(_rel(x_l1, xs) / err[0])

    # null arm: x = w (no reparameterisation), same GD, weight decay and switch times
    W = linear_gd(A.T @ A, A.T @ y, np.zeros(p["d"]), p["lr"], p["alpha"], offs, cfg.sparse_steps)
    err_w = [_rel(w, xs) for w in W]
    resid_w = [float(np.linalg.norm(A @ w - y)) for w in W]
    l1_w = [float(np.abs(w).sum()) for w in W[:-1]]
    out[null_key("type_of_bias")].append(_strictly_falling(l1_w))
    out[null_key("sparse_switch_vs_none")].append(err_w[3] / err_w[0])
    ok_w = resid_w[4] <= 1e-3 * np.linalg.norm(y)
    out[null_key("sparse_switch_vs_always")].append(err_w[4] / err_w[-1] if ok_w else float("inf"))
    log.append(("sparse", offs, err, resid, l1, float(lp.fun), len(match), err_w, _rel(x_l1, xs)))

    # positional bias: x0 = 0.5 != 0, weight decay off at T2
    x0, c0 = u0 * v0, u0**2 - v0**2
    positional = implicit_bias_solution(A, y, c_sw_p[0], x0=x0, c0=c0)
    plain = implicit_bias_solution(A, y, c_sw_p[0])
    out["positional_bias"].append(_rel(Xp[0], positional))
    out[null_key("positional_bias")].append(_rel(Xp[0], plain))
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
    R, lr = len(offs), p["lr"]
    U = np.tile(p["u0"] * np.eye(d), (R, 1, 1))
    # U <- U - lr (2 S U + a U), S = sum_i r_i A_i; temporaries in buffers reused across steps
    # (issue 57: the same operations in the same order, so the same numbers)
    X, S, T, aU = (np.empty((R, d, d)) for _ in range(4))
    r = np.empty((R, m))
    Xf, Sf, Ut = X.reshape(R, -1), S.reshape(R, -1), U.transpose(0, 2, 1)
    mm, add, sub, mul = np.matmul, np.add, np.subtract, np.multiply
    switches = set(offs.tolist()) | {0}
    for k in range(cfg.sensing_steps):
        if k in switches:
            a = np.where(k < offs, p["alpha"], 0.0)[:, None, None]
        mm(U, Ut, out=X)
        sub(mm(Xf, As.T, out=r), y, out=r)
        mul(2, mm(r, As, out=Sf), out=Sf)
        add(mm(S, U, out=T), mul(a, U, out=aU), out=T)
        sub(U, mul(lr, T, out=T), out=U)
    X = U @ U.transpose(0, 2, 1)
    err = [_rel(x, Xs) for x in X]
    out["sensing_switch_vs_none"].append(err[2] / err[0])
    out["sensing_switch_vs_always"].append(err[2] / err[-1])
    # null arm: X trained directly from X_0 = U_0 U_0^T (GD on 1/2 ||A vec X - y||^2 + alpha/2
    # ||X||^2, the same schedule; symmetric measurements keep X symmetric)
    X0 = (p["u0"] * np.eye(d)) @ (p["u0"] * np.eye(d)).T
    Xd = linear_gd(
        As.T @ As, As.T @ y, X0.ravel(), p["lr"], p["alpha"], offs, cfg.sensing_steps
    ).reshape(-1, d, d)
    err_d = [_rel(x, Xs) for x in Xd]
    out[null_key("sensing_switch_vs_none")].append(err_d[2] / err_d[0])
    out[null_key("sensing_switch_vs_always")].append(err_d[2] / err_d[-1])
    log.append(("sensing", list(offs), err, err_d))


# ---- 3. single-layer attention logits, W_Q W_K^T ------------------------------------------------


def attention_gd(Qt, Kt, y, WQ, WK, lr, alpha, off, steps, record=()):  # type: ignore[no-untyped-def]
    """Batched GD on 1/(2m) sum_i (q_i^T W_Q W_K^T k_i - y_i)^2 + alpha/2 (||W_Q||^2 + ||W_K||^2);
    run r has weight decay for its first ``off[r]`` steps. Returns (W_Q, W_K) and the
    balancedness ``W_Q^T W_Q - W_K^T W_K`` of each run at the steps in ``record``."""
    m, d = Qt.shape
    Phi = (Qt[:, :, None] * Kt[:, None, :]).reshape(m, -1)  # logit_i = Phi_i . vec(W)
    off = np.asarray(off)
    WQ, WK = np.array(WQ, dtype=np.float64), np.array(WK, dtype=np.float64)  # updated in place
    R = len(WQ)
    rec = {int(k): i for i, k in enumerate(record)}
    Bs = np.zeros((len(rec), R, WQ.shape[2], WQ.shape[2]))
    # temporaries in buffers reused across steps, the weight decay of each run recomputed only
    # where a run switches (issue 57): the same operations in the same order, same numbers
    W, Gw, r = np.empty((R, d, d)), np.empty((R, d, d)), np.empty((R, m))
    tQ, tK, u = np.empty_like(WQ), np.empty_like(WK), np.empty_like(WQ)
    Wf, Gf, WKt, Gwt = (
        W.reshape(R, -1),
        Gw.reshape(R, -1),
        WK.transpose(0, 2, 1),
        Gw.transpose(0, 2, 1),
    )
    mm, add, sub, mul = np.matmul, np.add, np.subtract, np.multiply
    switches = set(off.tolist()) | {0}
    for k in range(steps + 1):
        if k in rec:
            Bs[rec[k]] = WQ.transpose(0, 2, 1) @ WQ - WK.transpose(0, 2, 1) @ WK
        if k == steps:
            break
        if k in switches:
            a = np.where(k < off, alpha, 0.0)[:, None, None]
        mm(WQ, WKt, out=W)
        sub(mm(Wf, Phi.T, out=r), y, out=r)  # (R, m) logits minus targets
        np.divide(mm(r, Phi, out=Gf), m, out=Gf)  # gradient wrt the product W
        add(mm(Gw, WK, out=tQ), mul(a, WQ, out=u), out=tQ)
        add(mm(Gwt, WQ, out=tK), mul(a, WK, out=u), out=tK)
        sub(WQ, mul(lr, tQ, out=tQ), out=WQ)
        sub(WK, mul(lr, tK, out=tK), out=WK)
    return WQ, WK, Bs


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
    WQ0 = np.tile(p["q0"] * np.eye(d), (len(offs), 1, 1))
    WQ, WK, _ = attention_gd(
        Qt, Kt, y, WQ0, np.zeros_like(WQ0), p["lr"], p["alpha"], offs, cfg.attention_steps
    )
    W = WQ @ WK.transpose(0, 2, 1)
    err = [_rel(w, Ws) for w in W]
    out["attention_switch_vs_none"].append(err[1] / err[0])
    # null arm: the logit matrix W trained directly from W_Q0 W_K0^T = 0, same schedule
    Phi = (Qt[:, :, None] * Kt[:, None, :]).reshape(m, -1)
    Wd = linear_gd(
        Phi.T @ Phi / m,
        Phi.T @ y / m,
        np.zeros(d * d),
        p["lr"],
        p["alpha"],
        offs,
        cfg.attention_steps,
    ).reshape(-1, d, d)
    err_d = [_rel(w, Ws) for w in Wd]
    out[null_key("attention_switch_vs_none")].append(err_d[1] / err_d[0])

    # balancedness along the trajectory, weight decay on throughout, at eta and eta / 2 over the
    # same times t = eta k
    # (at eta the batch also holds a run without weight decay: the null arm's)
    bal_err, bal_null = [], float("nan")
    for scale in (1, 2):
        lr = p["balancedness_lr"] / scale
        steps = cfg.balancedness_steps * scale
        grid = np.linspace(0, steps, p["balancedness_grid"] + 1).astype(int)
        runs = [steps + 1, 0] if scale == 1 else [steps + 1]
        start = WQ0[: len(runs)]
        _, _, Bs = attention_gd(
            Qt, Kt, y, start, np.zeros_like(start), lr, p["alpha"], runs, steps, grid
        )
        bal_err.append(balancedness_error(Bs[:, 0], Bs[0, 0], lr, p["alpha"], grid))
        if scale == 1:
            bal_null = balancedness_error(Bs[:, 1], Bs[0, 1], lr, p["alpha"], grid)
    out["attention_balancedness"].append(bal_err[0])
    out[null_key("attention_balancedness")].append(bal_null)
    out["attention_balancedness_eta"].append(abs(2 * bal_err[1] / bal_err[0] - 1))
    log.append(("attention", list(offs), err, bal_err, err_d, bal_null))


# ---- 4. LoRA fine-tuning ----------------------------------------------------------------


def lora_forward(X, W1, b1, W2, b2, A, B):  # type: ignore[no-untyped-def]
    """A 1-hidden-layer tanh MLP ``W2 tanh(W1 x + b1) + b2`` with a LoRA update ``B A`` on its
    first layer; the adapters carry a leading run axis (R, ...). Returns (output (R, n, out),
    hidden (R, n, h), X A^T)."""
    XA = X @ A.transpose(0, 2, 1)
    H = np.tanh(X @ W1.T + b1 + XA @ B.transpose(0, 2, 1))
    return H @ W2.T + b2, H, XA


def shared_schedule(off, steps):  # type: ignore[no-untyped-def]
    """The segments of a batch of weight-decay schedules (run r decays for its first ``off[r]``
    of ``steps`` steps), for computing runs that are still identical once.

    Runs with the same start and the same schedule so far hold the same numbers (the same
    operations on the same numbers), so a batch needs one row per distinct history: within a
    segment ``[k0, k1)`` no run switches, and run r's history is ``min(off[r], k1)``. Returns
    the segments ``(k0, k1, rows, keep, decays)`` (``rows[r]``: run r's row in the segment;
    ``keep[j]``: the previous segment's row that row j continues, row 0 of a one-row start for
    the first segment; ``decays[j]``: whether row j has weight decay in the segment) and the
    rows of the runs after the last step."""
    off = np.asarray(off)
    bounds = sorted({0, steps} | {int(o) for o in off if 0 < o < steps})
    segments = []
    prev = np.zeros(len(off), dtype=int)
    for k0, k1 in itertools.pairwise(bounds):
        key = np.minimum(off, k1)
        uniq, first, rows = np.unique(key, return_index=True, return_inverse=True)
        segments.append((k0, k1, rows, prev[first], uniq > k0))
        prev = rows
    return segments, prev


def lora_gd(X, y, base, A0, lr, alpha, off, steps, grid=()):  # type: ignore[no-untyped-def]
    """Batched full-batch GD on the mean squared error of :func:`lora_forward` over the adapter
    only (``base = (W1, b1, W2, b2)`` frozen), B starting at 0 and every run at A = ``A0``; run r
    has weight decay ``alpha`` (GD on ``f + alpha/2 ||(A, B)||^2``, as torch's
    ``SGD(weight_decay=alpha)``) for its first ``off[r]`` steps. Returns (A, B) and the
    balancedness ``A A^T - B^T B`` of every run at the steps in ``grid`` ((len(grid), R, r, r)).

    Runs that are still identical (the same schedule so far, :func:`shared_schedule`) are
    computed once, and every product is a stack of per-run matrix products, so each run's
    numbers are those of the run alone. Temporaries live in buffers reused across steps (issue
    57: the same operations in the same order, so the same numbers)."""
    W1, b1, W2, b2 = base
    n, R, h, r = len(X), len(off), W1.shape[0], A0.shape[0]
    off = np.asarray(off)
    A, B = np.array(A0, dtype=np.float64)[None], np.zeros((1, h, r))
    C = X @ W1.T + b1  # the frozen layer's pre-activation
    rec = {int(k): i for i, k in enumerate(grid)}
    bal = np.zeros((len(rec), R, r, r))
    mm, add, sub, mul = np.matmul, np.add, np.subtract, np.multiply
    segments, rows = shared_schedule(off, steps)
    for k0, k1, seg_rows, keep, decays in segments:
        A, B = A[keep], B[keep]
        J = len(keep)
        a = np.where(decays, alpha, 0.0)[:, None, None]
        XA, Z, H = np.empty((J, n, r)), np.empty((J, n, h)), np.empty((J, n, h))
        S, Out, BZ = np.empty((J, n, h)), np.empty((J, n, W2.shape[0])), np.empty((J, r, n))
        gA, gB, tA, tB = np.empty_like(A), np.empty_like(B), np.empty_like(A), np.empty_like(B)
        At, Bt, Zt = A.transpose(0, 2, 1), B.transpose(0, 2, 1), Z.transpose(0, 2, 1)
        for k in range(k0, k1):
            if k in rec:
                bal[rec[k]] = (A @ At - Bt @ B)[seg_rows]
            mm(X, At, out=XA)
            mm(XA, Bt, out=Z)
            np.tanh(add(C, Z, out=Z), out=H)
            # d(mean squared error)/d(output), (J, n, out)
            mm(H, W2.T, out=Out)
            mul(2 / n, sub(add(Out, b2, out=Out), y, out=Out), out=Out)
            mm(Out, W2, out=Z)  # Z is dZ from here on
            mul(Z, sub(1, mul(H, H, out=S), out=S), out=Z)
            mm(Zt, XA, out=gB)
            mm(mm(Bt, Zt, out=BZ), X, out=gA)
            sub(A, mul(lr, add(gA, mul(a, A, out=tA), out=gA), out=gA), out=A)
            sub(B, mul(lr, add(gB, mul(a, B, out=tB), out=gB), out=gB), out=B)
    if steps in rec:
        bal[rec[steps]] = (A @ A.transpose(0, 2, 1) - B.transpose(0, 2, 1) @ B)[rows]
    return (A[rows], B[rows]), bal


def full_gd(X, y, base, lr, alpha, off, steps):  # type: ignore[no-untyped-def]
    """The null arm of the LoRA claims: the same GD on the same loss, but over a full update
    ``Delta`` of the first layer (``W1 + Delta``, Delta from 0) instead of the factorised
    ``B A``; run r has weight decay ``alpha`` on Delta for its first ``off[r]`` steps. Returns
    Delta ((R, h, d)). Identical runs computed once and buffers reused, as in :func:`lora_gd`."""
    W1, b1, W2, b2 = base
    n, (h, d) = len(X), W1.shape
    D = np.zeros((1, h, d))
    C = X @ W1.T + b1
    mm, add, sub, mul = np.matmul, np.add, np.subtract, np.multiply
    segments, rows = shared_schedule(np.asarray(off), steps)
    for k0, k1, _, keep, decays in segments:
        D = D[keep]
        J = len(keep)
        a = np.where(decays, alpha, 0.0)[:, None, None]
        Z, H, S = np.empty((J, n, h)), np.empty((J, n, h)), np.empty((J, n, h))
        Out = np.empty((J, n, W2.shape[0]))
        g, t = np.empty_like(D), np.empty_like(D)
        Dt, Zt = D.transpose(0, 2, 1), Z.transpose(0, 2, 1)
        for _ in range(k0, k1):
            mm(X, Dt, out=Z)
            np.tanh(add(C, Z, out=Z), out=H)
            mm(H, W2.T, out=Out)
            mul(2 / n, sub(add(Out, b2, out=Out), y, out=Out), out=Out)
            mm(Out, W2, out=Z)
            mul(Z, sub(1, mul(H, H, out=S), out=S), out=Z)
            mm(Zt, X, out=g)
            sub(D, mul(lr, add(g, mul(a, D, out=t), out=g), out=g), out=D)
    return D[rows]


def _nuclear_over_frobenius(M: np.ndarray) -> float:
    s = np.linalg.svd(M, compute_uv=False)
    return float(s.sum() / np.linalg.norm(s))


RUNS = ("never", "always", "switch")


def lora_task(seed: int) -> dict[str, Any]:
    """The seed's pretrained net and fine-tuning task. The net is a random 20-64-1 tanh MLP
    (torch's default nn.Linear initialisation); the task is the same net with a rank-1 change
    of its first layer, scaled (bisection) so that the pretrained net's train MSE on the task
    is ``LORA["start_mse"]`` whatever the seed's random direction: the change LoRA has to learn
    is exactly low rank relative to the pretrained weights, and equally hard on every seed."""
    p = LORA
    rng = np.random.default_rng((seed, 4))
    d, h = p["d_in"], p["hidden"]
    W1, b1 = rng.uniform(-1, 1, (h, d)) / d**0.5, rng.uniform(-1, 1, h) / d**0.5
    W2, b2 = rng.uniform(-1, 1, (1, h)) / h**0.5, rng.uniform(-1, 1, 1) / h**0.5
    direction = np.outer(rng.standard_normal(h), rng.standard_normal(d)) / d**0.5
    Xtr = rng.standard_normal((p["n_train"], d))
    Xte = rng.standard_normal((p["n_test"], d))
    A0 = rng.standard_normal((p["rank"], d)) / p["rank"] ** 0.5
    pre = np.tanh(Xtr @ W1.T + b1) @ W2.T + b2

    def start_mse(scale: float) -> float:
        shifted = np.tanh(Xtr @ (W1 + scale * direction).T + b1) @ W2.T + b2
        return float(np.mean((pre - shifted) ** 2))

    lo, hi = 0.0, 1.0
    while start_mse(hi) < p["start_mse"]:
        lo, hi = hi, 2 * hi
        if hi > 1e3:
            raise RuntimeError(f"seed {seed}: no rank-1 change reaches the target MSE")
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if start_mse(mid) < p["start_mse"] else (lo, mid)
    shift = hi * direction

    def task(X: np.ndarray) -> np.ndarray:
        return np.tanh(X @ (W1 + shift).T + b1) @ W2.T + b2

    return {
        "base": (W1, b1, W2, b2),
        "Xtr": Xtr,
        "Xte": Xte,
        "ytr": task(Xtr),
        "yte": task(Xte),
        "A0": A0,
        "scale": hi,
        "start_mse": start_mse(hi),
    }


def _lora(cfg: Config, seed: int, out: dict[str, list[float]], log: list[Any]) -> None:
    p = LORA
    t = lora_task(seed)
    base, Xtr, Xte, ytr, yte = t["base"], t["Xtr"], t["Xte"], t["ytr"], t["yte"]
    switch = balancedness_switch_step(p["lr"], p["alpha"], p["balancedness_target"])
    offs = [0, cfg.lora_steps + 1, switch]  # never, always, switch (RUNS)
    grid = np.arange(0, min(switch, cfg.lora_steps) + 1, p["grid"])
    (A, B), bal = lora_gd(Xtr, ytr, base, t["A0"], p["lr"], p["alpha"], offs, cfg.lora_steps, grid)
    sw, nv = RUNS.index("switch"), RUNS.index("never")
    bal_err = balancedness_error(bal[:, sw], bal[0, sw], p["lr"], p["alpha"], grid)
    bal_null = balancedness_error(bal[:, nv], bal[0, nv], p["lr"], p["alpha"], grid)
    W1, b1, W2, b2 = base
    te = np.mean((lora_forward(Xte, W1, b1, W2, b2, A, B)[0] - yte) ** 2, axis=(1, 2))
    tr = np.mean((lora_forward(Xtr, W1, b1, W2, b2, A, B)[0] - ytr) ** 2, axis=(1, 2))
    # null arm: the first layer fine-tuned directly (no factorisation), same schedule
    D = full_gd(Xtr, ytr, base, p["lr"], p["alpha"], offs, cfg.lora_steps)
    out_d = np.tanh(Xte @ W1.T + b1 + Xte @ D.transpose(0, 2, 1)) @ W2.T + b2
    te_d = np.mean((out_d - yte) ** 2, axis=(1, 2))
    res: dict[str, float] = {"start_train": t["start_mse"], "scale": t["scale"], "T": switch}
    for r, name in enumerate(RUNS):
        res[name] = float(te[r])
        res[name + "_train"] = float(tr[r])
        res[name + "_ratio"] = _nuclear_over_frobenius(B[r] @ A[r])
        res[name + "_full"] = float(te_d[r])
        res[name + "_full_ratio"] = _nuclear_over_frobenius(D[r])
    converged = max(res["never_train"], res["switch_train"]) / t["start_mse"]
    out["lora_switch"].append(res["switch"] / min(res["never"], res["always"]))
    best_full = min(res["never_full"], res["always_full"])
    out[null_key("lora_switch")].append(res["switch_full"] / best_full)
    out[gate_key("lora_switch")].append(converged)
    out["lora_balancedness"].append(bal_err)
    out[null_key("lora_balancedness")].append(bal_null)
    out["lora_low_rank"].append(res["switch_ratio"] / res["never_ratio"])
    out[null_key("lora_low_rank")].append(res["switch_full_ratio"] / res["never_full_ratio"])
    out[gate_key("lora_low_rank")].append(converged)
    out["lora_converged"].append(converged)
    log.append(("lora", res, bal_err))


# ---- 5. range shrinking: x = u^p - v^p with h = sum(u^p + v^p) --------------------------------


def _power(cfg: Config, seed: int, out: dict[str, list[float]], log: list[Any]) -> dict[float, Any]:
    """Power-parametrization runs on a sparse-regression instance of their own (its own random
    stream, so the other settings' numbers do not move)."""
    q = POWER
    A, xs = _sparse_instance(np.random.default_rng((seed, 23)))
    y = A @ xs
    record = range(0, cfg.power_steps + 1, q["record_every"])
    worst, worst_null, runs = 0.0, 0.0, {}
    for p, A_off in q["A_off"].items():
        S0 = 2 * q["u0"] ** (2 - p)  # u0 = v0
        offs = [round(a / (q["lr"] * q["alpha"])) for a in A_off]
        tr = power_gd(
            A,
            y,
            p=p,
            lr=q["lr"],
            alpha=q["alpha"],
            off=offs,
            steps=cfg.power_steps,
            u0=q["u0"],
            v0=q["u0"],
            record=record,
        )
        pred = predicted_invariant(S0, p, tr.A)
        dev = np.abs(tr.S / pred[:, :, None] - 1)
        dev_null = np.abs(tr.S / S0 - 1)  # the prediction without the regularizer's term
        for r, a in enumerate(A_off):
            if a <= q["claim_A_max"] and np.isfinite(dev[r]).any():
                worst = max(worst, float(np.nanmax(dev[r])))
                if a > 0:
                    worst_null = max(worst_null, float(np.nanmax(dev_null[r])))
        by_switch = [
            float(np.mean((tr.frozen_at[r] >= 0) & (tr.frozen_at[r] <= min(o, cfg.power_steps))))
            for r, o in enumerate(offs)
        ]
        resid = np.linalg.norm(tr.x @ A.T - y, axis=1)
        runs[p] = (A_off, offs, tr, pred, by_switch, resid)
        log.append(
            (
                "power",
                p,
                list(A_off),
                tr.frozen.mean(axis=1).tolist(),
                by_switch,
                resid.tolist(),
                [_rel(x, xs) for x in tr.x],
            )
        )
    out["power_invariant"].append(worst)
    out[null_key("power_invariant")].append(worst_null)
    return runs


def reproduce(ctx: RunContext) -> dict[str, list[float]]:
    cfg = CONFIGS[ctx.budget]
    out: dict[str, list[float]] = {c.id: [] for c in CLAIMS}
    for c in CLAIMS:
        if c.null is not None and c.null.arm is not None:
            out[null_key(c.id)] = []
        if c.gate is not None:
            out[gate_key(c.id)] = []
    logs: dict[int, list[Any]] = {}
    power_runs: dict[int, dict[float, Any]] = {}
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
        ctx.progress(f"seed {seed}: power parametrization ({cfg.power_steps} steps x 10 runs)")
        power_runs[seed] = _power(cfg, seed, out, log)
        logs[seed] = log
    _report(ctx, cfg, logs, power_runs)
    return out


def _report(
    ctx: RunContext,
    cfg: Config,
    logs: dict[int, list[Any]],
    power_runs: dict[int, dict[float, Any]],
) -> None:
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
        _, offs, err, resid, l1, l1min, _n, err_w, err_l1 = d["sparse"]
        ctx.note(f"| {seed} | sparse error | " + " | ".join(f"{e:.3g}" for e in err) + " |")
        ctx.note(
            f"| {seed} | null x = w: error (min-ℓ1 {err_l1:.3g}) | "
            + " | ".join(f"{e:.3g}" for e in err_w)
            + " |"
        )
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
        _, so, serr, serr_d = d["sensing"]
        _, ao, aerr, bal, aerr_d, bal_null = d["attention"]
        _, lt, lbal = d["lora"]
        ctx.note(
            f"- seed {seed}: positional bias: distance to the positional prediction {pos:.2e}, "
            f"to plain argmin R_cT {plain:.2e}. Matrix sensing error never/off@{so[1]}/"
            f"off@{so[2]}/always: "
            + "/".join(f"{e:.3g}" for e in serr)
            + " (null, X direct: "
            + "/".join(f"{e:.3g}" for e in serr_d)
            + f"). Attention error never/off@{ao[1]}/always: "
            + "/".join(f"{e:.3g}" for e in aerr)
            + " (null, W direct: "
            + "/".join(f"{e:.3g}" for e in aerr_d)
            + f"); balancedness error (max over the grid) {bal[0]:.3g} at eta = "
            f"{ATTENTION['balancedness_lr']}, {bal[1]:.3g} at eta / 2, {bal_null:.3g} without "
            f"weight decay. LoRA (rank-1 change scaled x{lt['scale']:.3f}, weight decay off at "
            f"T = {lt['T']}) test MSE never/always/switch: {lt['never']:.4g}/{lt['always']:.4g}/"
            f"{lt['switch']:.4g} (train {lt['never_train']:.2g}/{lt['always_train']:.2g}/"
            f"{lt['switch_train']:.2g}, pretrained net {lt['start_train']:.3g}); null, first "
            f"layer fine-tuned directly: {lt['never_full']:.4g}/{lt['always_full']:.4g}/"
            f"{lt['switch_full']:.4g}; nuclear/Frobenius of B1 A1 never/always/switch "
            f"{lt['never_ratio']:.3f}/{lt['always_ratio']:.3f}/{lt['switch_ratio']:.3f} "
            f"(direct: {lt['never_full_ratio']:.3f}/{lt['always_full_ratio']:.3f}/"
            f"{lt['switch_full_ratio']:.3f}); balancedness error {lbal:.2e}."
        )
    ctx.note("")
    ctx.note(
        "Range shrinking, x = u^p - v^p (u0 = v0 = 1, eta = 1e-3, alpha = 0.5): share of "
        "coordinates with a factor at 0 (frozen in sign) by the switch / at the end, against "
        "A_T (p = 1.5 collapses at A = 4/3); recovery error ||x - x*|| / ||x*||."
    )
    ctx.note("")
    ctx.note("| seed | p | A_T | frozen by switch | frozen at end | residual | error |")
    ctx.note("|---|---|---|---|---|---|---|")
    for seed, log in logs.items():
        for entry in log:
            if entry[0] != "power":
                continue
            _, p, A_off, frozen, by_switch, resid, perr = entry
            for i, a in enumerate(A_off):
                ctx.note(
                    f"| {seed} | {p:g} | {a:g} | {by_switch[i]:.2f} | {frozen[i]:.2f} | "
                    f"{resid[i]:.1e} | {perr[i]:.3f} |"
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
    c_grid = sparse_gd(
        A,
        A @ xs,
        np.ones(p["d"]),
        np.zeros(p["d"]),
        p["lr"],
        p["alpha"],
        [t_end],
        int(grid[-1]),
        record=grid,
    )[3]
    med = [float(np.median(c[0])) for c in c_grid]
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

    # range shrinking: dual-interval width over time, predicted vs measured (first seed)
    q = POWER
    runs = power_runs[seed]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (p, (A_off, _offs, tr, pred, _bs, _res)) in zip(axes, runs.items(), strict=True):
        t = tr.steps * q["lr"]
        for r, a in enumerate(A_off):
            if a == 0 or a > q["claim_A_max"] + 0.5:
                continue
            width = dual_interval_width(tr.S[r], p)
            (line,) = ax.plot(t, dual_interval_width(pred[r], p), "-", lw=1, label=f"A_T = {a:g}")
            with np.errstate(all="ignore"):
                alive = np.isfinite(width).any(axis=1)
                wmed = np.where(
                    alive, np.nanmedian(np.where(alive[:, None], width, 0), axis=1), np.nan
                )
            ax.plot(t[::5], wmed[::5], "o", ms=3, color=line.get_color())
        if p < 2:
            ax.axvline(collapse_time(2.0, p) / q["alpha"], ls=":", color="grey")
        ax.set_xlabel("time t = eta k")
        ax.set_ylabel("dual interval width S / (p |2 - p|)")
        ax.set_title(f"p = {p:g}: lines predicted, dots measured (median)", fontsize=9)
        ax.legend(fontsize=7)
    ctx.save_figure(fig, "range_width")

    fig, ax = plt.subplots(figsize=(5.5, 4))
    p = 1.5
    A_off = q["A_off"][p]
    by_sw = np.array([runs_[p][4] for runs_ in power_runs.values()])
    at_end = np.array([runs_[p][2].frozen.mean(axis=1) for runs_ in power_runs.values()])
    ax.plot(A_off, by_sw.mean(axis=0), "o-", label="by the switch")
    ax.plot(A_off, at_end.mean(axis=0), "s--", label=f"after {cfg.power_steps} steps")
    ax.axvline(collapse_time(2.0, p), ls=":", color="grey", label="collapse A = 4/3")
    ax.set_xlabel("A_T = eta alpha T (how long weight decay stays on)")
    ax.set_ylabel("share of coordinates frozen (a factor at 0)")
    ax.set_title("p = 1.5: coordinates frozen in sign (mean over seeds)")
    ax.legend(fontsize=8)
    ctx.save_figure(fig, "frozen_share")
