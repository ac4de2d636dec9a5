"""Reproduction of "Signed Laplacians for Constrained Graph Clustering" at laptop scale.

Four experiments, each seed drawing fresh instances:

1. Small random graphs (brute force): the spectral lower bound, the sweep's quality against the
   exact optimum, and the Cheeger-type inequality of the signed graph.
2. The 4-block SBM on which spectral clustering of G alone cuts the wrong way.
3. A real data set (scikit-learn digits, offline): kNN graph of digits {1, 7, 4, 9}, cannot-links
   drawn from the super-groups {1, 7} vs {4, 9}.
4. Time of the signed eigenproblem against the CC generalized eigenproblem on a sparse graph.

The claims and their rules below were fixed before the first run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import SpectralClustering
from sklearn.metrics import adjusted_rand_score

from icml25.constrained_clustering.algorithm import (
    _cc_eigenpair,
    _laplacian,
    _signed_eigenpair,
    _sweep,
    as_graph,
    constrained_cut,
    signed_eigenpair,
)
from icml25.constrained_clustering.bounds import (
    brute_force,
    conductance,
    generalized_cheeger_bound,
    signed_cheeger_constant,
    signed_threshold_sweep,
)
from icml25.constrained_clustering.datasets import (
    cannot_links,
    four_block_sbm,
    geometric_instance,
    knn_graph,
    random_instance,
)
from icml25.core.claims import Claim, Gate, Measurement, Null, Rule, gate_key, null_key
from icml25.core.data import load_sklearn
from icml25.core.runner import RunContext

PERMUTED_H = (
    "the signed method on H with its vertices permuted at random (content-free cannot-links: "
    "the same number of edges and the same degrees)"
)

CLAIMS = (
    Claim(
        id="lower_bound",
        statement="The spectral quantity lower-bounds the optimal cut ratio: lambda <= Phi_{G,H}.",
        where="Cheeger-type inequality, lower half (Sec. 3); Cucuringu et al. 2016",
        metric="fraction of random {{small_n}}-vertex instances ({{small_count}} per seed) with "
        "lambda_CC <= Phi* (brute force)",
        paper_value="always (theorem)",
        rule=Rule(">=", 1.0),
        null=Null(
            arm="the Rayleigh quotient x'L_G x / x'L_H x of a random vector x orthogonal to 1 in "
            "place of lambda_CC (the minimisation removed)"
        ),
    ),
    Claim(
        id="sweep_quality",
        statement="Sweeping the signed-Laplacian eigenvector finds a near-optimal cut.",
        where="Algorithm (sweep), experiments",
        metric="median Phi_sweep / Phi* of the signed method on the same instances (interval: "
        "bootstrap over instances)",
        paper_value="maintains accuracy",
        rule=Rule("<=", 1.2, partial=1.5),
        null=Null(arm="the same sweep over a random vector in place of the signed eigenvector"),
    ),
    Claim(
        id="cheeger_type",
        statement="A Cheeger-type inequality ties the optimum to the spectrum: "
        "lambda_1/2 <= h <= sqrt(2 lambda_1) for the signed graph G(+) H(-).",
        where="Main theorem (exact form not confirmed here; signed Cheeger, Atay & Liu 2020)",
        metric="fraction of instances ({{small_count}} per seed) where both halves hold (h exact "
        "on {{cheeger_n}} vertices; the upper half by the threshold sweep)",
        paper_value="always (theorem)",
        rule=Rule(">=", 1.0),
        null=Null(
            arm="a random vector in place of the signed eigenvector: its Rayleigh quotient "
            "x'(L_G + J_H)x / x'Dx for lambda_1 and its threshold sweep for beta"
        ),
    ),
    Claim(
        id="generalized_cheeger",
        statement="Cheeger-type upper bound: the sweep over the generalized eigenvector finds a "
        "cut with ratio <= 8 lambda(L_G, L_H) / phi(G).",
        where="Cheeger-type inequality, upper half (the form of Koutis, Miller & Peng 2014 that "
        "the paper extends; the paper's own constant not confirmed)",
        metric="fraction of the {{small_n}}-vertex instances where the CC sweep ratio "
        "<= 8 lambda/phi(G) (phi(G) exact conductance)",
        paper_value="always (theorem)",
        rule=Rule(">=", 1.0),
        null=Null(
            arm="the sweep over a random vector (orthogonal to 1) in place of the CC "
            "eigenvector, against the same bound 8 lambda/phi(G)"
        ),
    ),
    Claim(
        id="sbm_ari",
        statement="The signed-Laplacian algorithm recovers the constrained partition where "
        "spectral clustering struggles.",
        where="Synthetic experiments (SBM)",
        metric="ARI of the signed method vs the planted sides, 4-block SBM ({{sbm_n}} vertices)",
        paper_value="high ARI",
        rule=Rule(">=", 0.9, partial=0.7),
        null=Null(arm=PERMUTED_H),
    ),
    Claim(
        id="sbm_gain",
        statement="...a notable improvement over spectral clustering of G alone.",
        where="Synthetic experiments (SBM)",
        metric="ARI(signed) - ARI(spectral clustering of G), 4-block SBM ({{sbm_n}} vertices)",
        paper_value="notable improvement",
        rule=Rule(">=", 0.7, partial=0.3),
        null=Null(arm=PERMUTED_H),
    ),
    Claim(
        id="signed_keeps_accuracy",
        statement="Using the signed Laplacian of H keeps the accuracy of the generalized "
        "eigenproblem (CC).",
        where="Abstract; comparison with CC",
        metric="ARI(signed) - ARI(CC), 4-block SBM ({{sbm_n}} vertices)",
        paper_value="maintains accuracy",
        rule=Rule(">=", -0.05, partial=-0.2),
        null=Null(arm=PERMUTED_H),
    ),
    Claim(
        id="signed_speedup",
        statement="The signed Laplacian streamlines the computation relative to CC.",
        where="Abstract; running-time comparison",
        metric="time(CC eigensolve) / time(signed eigensolve), sparse solvers, geometric kNN graph "
        "of {{speed_n}} vertices (best of {{speed_repeats}})",
        paper_value="faster",
        rule=Rule(">=", 1.0, partial=0.5),
        null=Null(
            arm="CC given a better solver instead of the signed Laplacian: time(CC, Jacobi "
            "LOBPCG) / time(CC, LOBPCG preconditioned by the factorised L_G, the library's "
            "choice on this graph)"
        ),
    ),
    Claim(
        id="signed_speedup_vs_best_cc",
        statement="The signed eigensolve is faster than CC solved with the library's best solver.",
        where="Our check beside signed_speedup (the paper compares with CC as published)",
        metric="time(CC, LOBPCG preconditioned by the factorised L_G) / time(signed "
        "eigensolve), same graphs",
        paper_value="faster",
        rule=Rule(">=", 1.0, partial=0.5),
        kind="control",
    ),
    Claim(
        id="real_data_gain",
        statement="The algorithm improves on spectral clustering on real-world data.",
        where="Real-world experiments",
        metric="ARI(signed) - ARI(spectral clustering of G), digits {1,7} vs {4,9}, kNN graph, "
        "{{digits_links}} cannot-links",
        paper_value="improvement",
        rule=Rule(">=", 0.1, partial=0.0),
        null=Null(arm=PERMUTED_H),
        gate=Gate(
            "ceiling: the same gain with every {1,7}-{4,9} pair a cannot-link (all the "
            "constraint information), signed method"
        ),
    ),
)
"""Null arms, gates and the signed_speedup_vs_best_cc control: added for issue 48 and committed
before the runs that judge them (see the README)."""


@dataclass(frozen=True)
class Config:
    """Sizes per budget."""

    small_n: int
    """Vertices of the brute-force instances."""
    small_count: int
    """Brute-force instances per seed."""
    cheeger_n: int
    """Vertices for the exact signed Cheeger constant (3^n labelings)."""
    sbm_block: int
    """Vertices per SBM block (4 blocks)."""
    digits_links: int
    """Cannot-links drawn for the digits task."""
    speed_n: int
    """Vertices of the sparse graph timed."""
    speed_repeats: int
    """Timing repeats (best is kept)."""


CONFIGS = {
    "tiny": Config(8, 3, 6, 20, 100, 2_000, 1),
    # quick times each solver once (issue 57: best of 3 was 50 of its 75 CPU-s; the quick
    # speed-ups' 90% intervals, 45-95x and 3.4-4.9x over seeds, are far from their rules)
    "quick": Config(16, 20, 9, 60, 300, 20_000, 1),
    "full": Config(18, 40, 10, 150, 300, 100_000, 3),
}


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them."""
    cfg = CONFIGS[budget]
    return {
        "small_n": cfg.small_n,
        "small_count": cfg.small_count,
        "cheeger_n": cfg.cheeger_n,
        "sbm_n": 4 * cfg.sbm_block,
        "digits_links": cfg.digits_links,
        "speed_n": cfg.speed_n,
        "speed_repeats": cfg.speed_repeats,
    }


def _best_time(solve, G, H, *, repeats: int) -> float:  # type: ignore[no-untyped-def]
    """Best wall time of ``solve(G, H, solver="sparse")`` over ``repeats`` runs."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        solve(G, H, solver="sparse")
        best = min(best, time.perf_counter() - t0)
    return float(best)


def _spectral_clustering_ari(G, truth, seed: int) -> float:  # type: ignore[no-untyped-def]
    sc = SpectralClustering(2, affinity="precomputed", random_state=seed, assign_labels="kmeans")
    return float(adjusted_rand_score(truth, sc.fit_predict(G.toarray())))


def _digits_instance(links: int, rng: np.random.Generator):  # type: ignore[no-untyped-def]
    X, y = load_sklearn("digits")
    keep = np.isin(y, (1, 7, 4, 9))
    X, y = X[keep] / 16.0, y[keep]
    group = np.isin(y, (4, 9)).astype(np.int64)
    return knn_graph(X, k=10), cannot_links(group, links, rng), group


def _random_direction(n: int, rng: np.random.Generator) -> np.ndarray:
    """A standard normal vector orthogonal to 1 (the null arms' stand-in for an eigenvector)."""
    x = rng.standard_normal(n)
    return x - x.mean()


def _permuted(H, rng: np.random.Generator):  # type: ignore[no-untyped-def]
    """H with its vertices relabelled at random: the same edges and degrees, no content."""
    p = rng.permutation(H.shape[0])
    return sp.csr_matrix(H[p][:, p])


def _cross_group_h(group: np.ndarray) -> sp.csr_matrix:
    """Every pair of vertices in different groups a cannot-link (the gate's ceiling)."""
    return sp.csr_matrix((group[:, None] != group[None, :]).astype(np.float64))


def _ari(G, H, truth: np.ndarray, method: str = "signed") -> float:  # type: ignore[no-untyped-def]
    labels = constrained_cut(G, H, method=method, lower_bound=False).labels  # type: ignore[arg-type]
    return float(adjusted_rand_score(truth, labels))


def reproduce(ctx: RunContext) -> dict[str, object]:
    cfg = CONFIGS[ctx.budget]
    ids = [c.id for c in CLAIMS]
    ids += [null_key(c.id) for c in CLAIMS if c.null is not None and c.null.arm is not None]
    ids += [gate_key(c.id) for c in CLAIMS if c.gate is not None]
    out: dict[str, list[float]] = {k: [] for k in ids}
    rel_by_seed: list[list[float]] = []
    rel_null_by_seed: list[list[float]] = []
    small_rows: list[tuple[float, float, float, float]] = []
    upper_tightness: list[float] = []
    ari_rows: list[dict[str, float]] = []
    for seed in ctx.seeds:
        rng = np.random.default_rng(seed)
        # The null arms draw from their own stream, so the method's arms see the instances they
        # saw before the null arms existed.
        null_rng = np.random.default_rng([seed, 48])
        ctx.progress(f"seed {seed}: {cfg.small_count} brute-force instances (n={cfg.small_n})")
        holds, rel, upper = [], [], []
        holds0, rel0, upper0 = [], [], []
        for _ in range(cfg.small_count):
            G, H = random_instance(cfg.small_n, rng)
            _, phi = brute_force(G, H)
            signed = constrained_cut(G, H, method="signed")
            cc = constrained_cut(G, H, method="cc", lower_bound=False)
            assert signed.lower_bound is not None
            holds.append(signed.lower_bound <= phi * (1 + 1e-9))
            rel.append(signed.ratio / phi)
            conductance_g = conductance(G)
            upper_bound = generalized_cheeger_bound(signed.lower_bound, conductance_g)
            upper.append(cc.ratio <= upper_bound * (1 + 1e-9))
            upper_tightness.append(cc.ratio / upper_bound)
            small_rows.append((phi, signed.lower_bound, signed.ratio, cc.ratio))
            # null arms: a random vector in place of the eigenvector
            Gm, Hm = as_graph(G, "G"), as_graph(H, "H")
            x = _random_direction(cfg.small_n, null_rng)
            quotient = float(x @ (_laplacian(Gm) @ x)) / float(x @ (_laplacian(Hm) @ x))
            holds0.append(quotient <= phi * (1 + 1e-9))
            rel0.append(_sweep(Gm, Hm, x)[1] / phi)
            x = _random_direction(cfg.small_n, null_rng)
            upper0.append(_sweep(Gm, Hm, x)[1] <= upper_bound * (1 + 1e-9))
        out["lower_bound"].append(float(np.mean(holds)))
        out[null_key("lower_bound")].append(float(np.mean(holds0)))
        rel_by_seed.append(rel)
        rel_null_by_seed.append(rel0)
        out["generalized_cheeger"].append(float(np.mean(upper)))
        out[null_key("generalized_cheeger")].append(float(np.mean(upper0)))

        ctx.progress(f"seed {seed}: signed Cheeger inequality (n={cfg.cheeger_n})")
        ok, ok0 = [], []
        for _ in range(cfg.small_count):
            G, H = random_instance(cfg.cheeger_n, rng)
            Gm, Hm = as_graph(G, "G"), as_graph(H, "H")
            lam, x = signed_eigenpair(Gm, Hm, solver="dense")
            h = signed_cheeger_constant(Gm, Hm)
            ok.append(_cheeger_holds(Gm, Hm, lam, x, h))
            x0 = null_rng.standard_normal(cfg.cheeger_n)
            deg = np.asarray(Gm.sum(axis=1)).ravel() + np.asarray(Hm.sum(axis=1)).ravel()
            quotient = float(deg @ x0**2 - x0 @ ((Gm - Hm) @ x0)) / float(deg @ x0**2)
            ok0.append(_cheeger_holds(Gm, Hm, quotient, x0, h))
        out["cheeger_type"].append(float(np.mean(ok)))
        out[null_key("cheeger_type")].append(float(np.mean(ok0)))

        ctx.progress(f"seed {seed}: 4-block SBM ({4 * cfg.sbm_block} vertices)")
        G, H, truth = four_block_sbm(rng, block=cfg.sbm_block)
        a_signed = _ari(G, H, truth)
        a_cc = _ari(G, H, truth, "cc")
        a_sc = _spectral_clustering_ari(G, truth, seed)
        a_null = _ari(G, _permuted(H, null_rng), truth)
        out["sbm_ari"].append(a_signed)
        out[null_key("sbm_ari")].append(a_null)
        out["sbm_gain"].append(a_signed - a_sc)
        out[null_key("sbm_gain")].append(a_null - a_sc)
        out["signed_keeps_accuracy"].append(a_signed - a_cc)
        out[null_key("signed_keeps_accuracy")].append(a_null - a_cc)

        ctx.progress(f"seed {seed}: digits kNN graph with {cfg.digits_links} cannot-links")
        G, H, truth = _digits_instance(cfg.digits_links, rng)
        d_signed = _ari(G, H, truth)
        d_cc = _ari(G, H, truth, "cc")
        d_sc = _spectral_clustering_ari(G, truth, seed)
        d_null = _ari(G, _permuted(H, null_rng), truth)
        d_ceiling = _ari(G, _cross_group_h(truth), truth)
        out["real_data_gain"].append(d_signed - d_sc)
        out[null_key("real_data_gain")].append(d_null - d_sc)
        out[gate_key("real_data_gain")].append(d_ceiling - d_sc)
        ari_rows.append(
            {
                "seed": seed,
                "sbm_sc": a_sc,
                "sbm_cc": a_cc,
                "sbm_signed": a_signed,
                "sbm_null": a_null,
                "dig_sc": d_sc,
                "dig_cc": d_cc,
                "dig_signed": d_signed,
                "dig_null": d_null,
                "dig_ceiling": d_ceiling,
            }
        )

        ctx.progress(f"seed {seed}: timing eigensolvers on {cfg.speed_n} vertices")
        G, H, _ = geometric_instance(cfg.speed_n, rng)
        Gm, Hm = as_graph(G, "G"), as_graph(H, "H")
        # the eigensolves alone on checked graphs (the public functions would check them again)
        signed_solve = partial(_signed_eigenpair, tol=0.0, random_state=0)
        t_signed = _best_time(signed_solve, Gm, Hm, repeats=cfg.speed_repeats)
        # CC as Cucuringu et al. solve it (Jacobi-preconditioned LOBPCG), which is what this
        # claim has always timed; the null arm and the control give CC the factorised
        # preconditioner that the library picks on kNN graphs like this one.
        cc_solve = partial(_cc_eigenpair, ridge=1e-8, tol=0.0, random_state=0)
        t_cc = _best_time(
            partial(cc_solve, preconditioner="jacobi"), Gm, Hm, repeats=cfg.speed_repeats
        )
        t_cc_factor = _best_time(
            partial(cc_solve, preconditioner="factor"), Gm, Hm, repeats=cfg.speed_repeats
        )
        out["signed_speedup"].append(t_cc / t_signed)
        out[null_key("signed_speedup")].append(t_cc / t_cc_factor)
        out["signed_speedup_vs_best_cc"].append(t_cc_factor / t_signed)
        ctx.note(
            f"- seed {seed}: sparse eigensolve on {cfg.speed_n} vertices: signed {t_signed:.2f} s, "
            f"CC {t_cc:.2f} s (Jacobi), {t_cc_factor:.2f} s (factorised L_G)."
        )

    _notes(ctx, small_rows, upper_tightness, ari_rows, rel_null_by_seed)
    _figures(ctx, small_rows, ari_rows)
    return _measurements(out, rel_by_seed, rel_null_by_seed)


def _cheeger_holds(G, H, lam: float, x: np.ndarray, h: float) -> bool:  # type: ignore[no-untyped-def]
    """Both halves of the signed Cheeger inequality, lambda/2 <= h <= beta(x) <= sqrt(2 lambda)."""
    _, beta = signed_threshold_sweep(G, H, x)
    return bool(
        lam / 2 <= h * (1 + 1e-9)
        and h <= beta * (1 + 1e-9) <= np.sqrt(2 * lam) * (1 + 1e-9) + 1e-12
    )


def _measurements(
    out: dict[str, list[float]], rel: list[list[float]], rel_null: list[list[float]]
) -> dict[str, object]:
    """Intervals: theorems checked on instances are exact fractions; the median sweep ratio is
    bootstrapped over instances (stratified by seed); the rest take a t interval over seeds."""
    result: dict[str, object] = dict(out)
    for cid in ("lower_bound", "cheeger_type", "generalized_cheeger"):
        for key in (cid, null_key(cid)):
            result[key] = Measurement.exact(out[key])
    for key, groups in (("sweep_quality", rel), (null_key("sweep_quality"), rel_null)):
        if all(len(g) >= 2 for g in groups):
            result[key] = Measurement.bootstrap(groups, statistic=np.median)
        else:
            result[key] = [float(np.median(g)) for g in groups]
    return result


def _notes(ctx: RunContext, small_rows, upper_tightness, ari_rows, rel_null) -> None:  # type: ignore[no-untyped-def]
    phi, bound, signed, cc = np.array(small_rows).T
    ctx.note(
        f"- Brute-force instances: median Phi_sweep/Phi* signed {np.median(signed / phi):.3f}, "
        f"CC {np.median(cc / phi):.3f}; optimum hit exactly by signed "
        f"{np.mean(np.isclose(signed, phi)):.0%}, CC {np.mean(np.isclose(cc, phi)):.0%}; "
        f"median lambda/Phi* {np.median(bound / phi):.3f}."
    )
    ctx.note(
        f"- Generalized Cheeger bound: the CC sweep ratio is at most "
        f"{max(upper_tightness):.1%} of 8 lambda/phi(G) (median {np.median(upper_tightness):.1%})."
    )
    ctx.note(
        "- Null arm of sweep_quality: the sweep over a random vector gives median Phi_sweep/Phi* "
        f"{np.median(np.concatenate(rel_null)):.3f} (all seeds pooled)."
    )
    ctx.note("")
    ctx.note(
        "| seed | SBM: SC | SBM: CC | SBM: signed | SBM: signed, permuted H | digits: SC | "
        "digits: CC | digits: signed | digits: signed, permuted H | digits: signed, all "
        "cross-group links |"
    )
    ctx.note("|---|---|---|---|---|---|---|---|---|---|")
    for r in ari_rows:
        ctx.note(
            f"| {r['seed']} | {r['sbm_sc']:.3f} | {r['sbm_cc']:.3f} | {r['sbm_signed']:.3f} | "
            f"{r['sbm_null']:.3f} | {r['dig_sc']:.3f} | {r['dig_cc']:.3f} | "
            f"{r['dig_signed']:.3f} | {r['dig_null']:.3f} | {r['dig_ceiling']:.3f} |"
        )


def _figures(ctx: RunContext, small_rows, ari_rows) -> None:  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = np.array(small_rows)
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.scatter(rows[:, 0], rows[:, 1], s=12, label="lower bound lambda_CC")
    ax.scatter(rows[:, 0], rows[:, 2], s=12, marker="x", label="signed sweep")
    ax.scatter(rows[:, 0], rows[:, 3], s=12, marker="+", label="CC sweep")
    lim = [0, float(rows[:, :4].max()) * 1.05]
    ax.plot(lim, lim, "k--", lw=0.8, label="optimum")
    ax.set_xlabel("optimal ratio Phi* (brute force)")
    ax.set_ylabel("value")
    ax.set_title("Bound and sweep vs the exact optimum")
    ax.legend(fontsize=8)
    ctx.save_figure(fig, "bound_vs_optimum")

    fig, ax = plt.subplots(figsize=(6, 3.5))
    keys = [
        ("sbm_sc", "SBM SC"),
        ("sbm_cc", "SBM CC"),
        ("sbm_signed", "SBM signed"),
        ("dig_sc", "digits SC"),
        ("dig_cc", "digits CC"),
        ("dig_signed", "digits signed"),
    ]
    vals = [[r[k] for r in ari_rows] for k, _ in keys]
    ax.bar(
        range(len(keys)),
        [np.mean(v) for v in vals],
        yerr=[np.std(v) for v in vals],
        color=["grey", "tab:blue", "tab:orange"] * 2,
    )
    ax.set_xticks(range(len(keys)), [k[1] for k in keys], rotation=30, fontsize=8)
    ax.set_ylabel("ARI vs constrained truth")
    ax.set_title("Spectral clustering of G alone vs constrained methods")
    ctx.save_figure(fig, "ari")
