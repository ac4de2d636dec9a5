"""The batched gradient-descent loops of Mirror Flow's sparse, sensing and attention settings,
split from :mod:`icml25.mirror_flow.experiments` (which sets up the tasks and reads the
measurements) so that neither file passes ~600 lines; LoRA's loops are in
:mod:`icml25.mirror_flow.experiments_lora`.

- :func:`sparse_gd`: ``x = u * v`` sparse regression (setting 1).
- :func:`linear_gd`: GD on a quadratic, computed exactly per eigendirection: the null arms
  without a reparameterisation (``x = w``, ``X`` or ``W`` trained directly).
- :func:`attention_gd`: the logits ``q^T W_Q W_K^T k`` (setting 3).

Each run of a batch has weight decay for its first ``off[r]`` steps, then none. The loops keep
their temporaries in buffers reused across steps (the same operations in the same order, so
the same numbers as the plain loops).
"""

from __future__ import annotations

import numpy as np


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
