"""The claims of the constrained-clustering reproduction: rules, null arms and gates, fixed
before the first run. The measurements come from
:mod:`icml25.constrained_clustering.experiments`; the sizes the texts name (``{{small_n}}``,
...) from :func:`icml25.constrained_clustering.reproduce.claim_sizes`.
"""

from __future__ import annotations

from icml25.core.claims import Claim, Gate, Null, Rule

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
        metric="fraction of instances where the CC sweep ratio <= 8 lambda/phi(G), phi(G) the "
        "exact conductance: the {{small_count}} random {{small_n}}-vertex instances (phi by "
        "brute force) and {{ring_count}} rings of {{ring_n}} vertices with random cannot-links "
        "between opposite arcs (phi = 1/floor(n/2)), per seed",
        paper_value="always (theorem)",
        rule=Rule(">=", 1.0),
        null=Null(
            arm="the sweep over a random vector (orthogonal to 1) in place of the CC "
            "eigenvector, against the same bound 8 lambda/phi(G) on the same instances (on "
            "the rings its sweep is far from the optimum and can miss the bound)"
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
before the runs that judge them; generalized_cheeger's rings (issue 66), where its null arm can
fail, likewise (see NOTES.md)."""
