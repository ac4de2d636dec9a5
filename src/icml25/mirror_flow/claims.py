"""The claims of Mirror Flow's reproduction: rules, null arms and gates, fixed before the first
run. The measurements come from :mod:`icml25.mirror_flow.experiments`; the sizes the texts
name (``{{sparse_switch}}``, ...) from :func:`icml25.mirror_flow.reproduce.claim_sizes`.
"""

from __future__ import annotations

from icml25.core.claims import Claim, Gate, Null, Rule

LORA_FITS = Gate(
    "each seed's never and switch-off LoRA runs fit the task (read per seed since issue 66): "
    "max final train MSE / the pretrained net's (lora_converged's measurement)",
    Rule("<=", 1e-2),
    per_seed=True,
)
"""The LoRA claims' gate: each seed's ratio compares test errors, and low-rank ratios, of
fitted models only when that seed's runs fit the task, so one unfitted seed closes it."""

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
        "residual <= 1e-3 ||y||, else the value is set to inf). Rule restated by issue 66 "
        "before its confirmatory run: <= 1, no band (the partial band <= 1.5 passed a switch "
        "worse than always on); the x = w null meets <= 1 too, so the paired contrast "
        "decides",
        paper_value="better",
        rule=Rule("<=", 1.0),
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
        "GD steps). Rule restated by issue 66 before its confirmatory run: <= 1, no band (the "
        "partial band <= 1.5 passed a switch worse than always on); the direct-X null meets "
        "<= 1 too, so the paired contrast decides",
        paper_value="better",
        rule=Rule("<=", 1.0),
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
        gate=LORA_FITS,
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
        gate=LORA_FITS,
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
