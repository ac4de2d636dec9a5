"""The claims of signSGD's reproduction: statements, rules, null arms and gates.

Fixed in code before the first run (the null arms and gates before the runs that judged them;
the noise-reshaping metric was changed once after a run, and the ODE claims moved from the
seed-mean curve with a bootstrap over seeds to one value per seed with a t interval in issue 66,
before its confirmatory run; see ``NOTES.md``). The sizes a text
names as ``{{name}}`` come from :func:`icml25.signsgd_risk.reproduce.claim_sizes`; the
measurements from :mod:`icml25.signsgd_risk.experiments`. The ``adam_*`` rows are controls:
they test OUR RECONSTRUCTION of a homogenized Adam ODE, not the paper's conjecture.
"""

from __future__ import annotations

from icml25.core.claims import Claim, Gate, Null, Rule

FROZEN_PHI = (
    "the ODE with phi frozen at its starting value phi(P(0)) (no effective-learning-rate "
    "feedback; closed form)"
)
SEED_NOISE = (
    "seed noise: sup over t of the standard error of the seed-mean simulated risk / the ODE "
    "(the setting can show a gap this small)"
)

CLAIMS = (
    Claim(
        id="ode_diag_gaussian",
        statement="The deterministic risk ODE describes signSGD's risk curve in high dimensions.",
        where="Main theorem (signHSGD / risk ODE), figures of risk curves",
        metric="sup over t in [0, {{t_main}}] of |simulated risk / ODE - 1| of each seed's run, "
        "mean over seeds (t interval; issue 66: before, the seed-mean curve's gap with a "
        "bootstrap over seeds), diagonal K, d = {{d_diag}}, Gaussian noise std 0.5",
        paper_value="curves coincide (brief's check: 3.0%)",
        rule=Rule("<=", 0.05, partial=0.10),
        null=Null(arm=FROZEN_PHI),
        gate=Gate(SEED_NOISE),
    ),
    Claim(
        id="ode_diag_cauchy",
        statement="...also under heavy-tailed (Cauchy) label noise, through E exp(-eps^2/4P).",
        where="Main theorem; noise compression",
        metric="as ode_diag_gaussian, Cauchy noise scale 0.5",
        paper_value="curves coincide (brief's check: 2.3%)",
        rule=Rule("<=", 0.05, partial=0.10),
        null=Null(arm=FROZEN_PHI),
        gate=Gate(SEED_NOISE),
    ),
    Claim(
        id="ode_correlated",
        statement="For non-diagonal K the full matrix ODE with the arcsine-law noise covariance "
        "K_sigma describes the risk.",
        where="Main theorem (general K)",
        metric="as ode_diag_gaussian, Toeplitz 0.6^|i-j| correlations, d = {{d_dense}}",
        paper_value="curves coincide (brief's check: 8.2%)",
        rule=Rule("<=", 0.10, partial=0.20),
        null=Null(
            arm="the diagonal ODE on diag(K): the correlations removed (no off-diagonal drift, "
            "no arcsine-law noise covariance)"
        ),
        gate=Gate(SEED_NOISE),
    ),
    Claim(
        id="ode_error_shrinks",
        statement="The ODE is the high-dimensional limit: the gap to the simulation shrinks as d "
        "grows.",
        where="Main theorem (error bound vanishing with d)",
        metric="err(d = {{d_scaling_last}}) / err(d = {{d_scaling_first}}) per seed, err = "
        "that seed's sup relative error (as ode_diag_gaussian), mean over seeds (t interval; "
        "issue 66: before, the ratio of the seed means with a bootstrap over seeds); about "
        "{{shrink_expected}} if err ~ d^-1/2",
        paper_value="-> 0 as d -> inf",
        rule=Rule("<=", 0.75, partial=1.0),
        null=Null(arm=f"the same ratio against a wrong limit: {FROZEN_PHI}"),
    ),
    Claim(
        id="heavy_tail_sign_matches_ode",
        statement="Under Cauchy noise signSGD is stable and follows the ODE.",
        where="Noise compression discussion",
        metric="|final signSGD risk / ODE - 1| of each seed's run, mean over seeds (t interval; "
        "issue 66: before, |seed-mean final risk / ODE - 1| with a bootstrap over seeds) at "
        "t = {{t_heavy}}, d = {{d_heavy}}, Cauchy scale 0.5",
        paper_value="matches (brief's check: 0.14)",
        rule=Rule("<=", 0.05, partial=0.10),
        null=Null(arm=FROZEN_PHI),
        gate=Gate("seed noise: standard error of the seed-mean final risk / the ODE's final risk"),
    ),
    Claim(
        id="heavy_tail_sgd_worse",
        statement="...while SGD at the same learning rate is not (its risk is far larger).",
        where="Noise compression discussion",
        metric="median SGD final risk / mean signSGD final risk, same setting",
        paper_value="SGD >> signSGD (brief's check: 47 vs 0.14)",
        rule=Rule(">=", 10.0, partial=3.0),
        null=Null(
            arm="the same ratio under Gaussian label noise of std 0.5 (light tails: nothing for "
            "the sign to compress)"
        ),
    ),
    Claim(
        id="precond_exponent_signsgd",
        statement="Diagonal preconditioning: signSGD's drift is D^{-1/2} K, so coordinate i "
        "decays at a rate proportional to lambda_i^{1/2}.",
        where="Diagonal preconditioning effect",
        metric="|fitted exponent - 0.5| per seed: slope of log rate vs log lambda over 8 "
        "eigenvalue bins, rate from the projection of r(t) on r(0) at t = {{t_decay}} (setting A, "
        "d = {{d_diag}})",
        paper_value=0.5,
        rule=Rule("<=", 0.1, partial=0.2),
        null=Null(arm="the same fit on SGD's run (no sign: drift K): |SGD exponent - 0.5|"),
    ),
    Claim(
        id="precond_exponent_sgd",
        statement="...whereas SGD's rate is proportional to lambda_i.",
        where="Diagonal preconditioning effect (comparison)",
        metric="|fitted exponent - 1| per seed, same measurement for SGD",
        paper_value=1.0,
        rule=Rule("<=", 0.1, partial=0.2),
        null=Null(arm="the same fit on signSGD's run: |signSGD exponent - 1|"),
    ),
    Claim(
        id="effective_lr_rises",
        statement="Effective learning rate: signSGD's effective step lr phi(P) grows as the "
        "risk falls.",
        where="Effective learning rate effect",
        metric="Spearman correlation of the measured effective lr (Monte Carlo sign-gradient, "
        "{{phi_samples}} samples, at 6 iterates along the run) with the risk, worst of Gaussian "
        "and Cauchy noise, per seed",
        paper_value="increasing as risk decreases",
        rule=Rule("<=", -0.9, partial=-0.5),
        null=Null(
            arm="SGD's gradient (no sign) at the same iterates: Monte Carlo mean of "
            "(<x,r> - eps) x projected on its drift K r ({{sgd_samples}} samples per "
            "iterate), same Spearman correlation"
        ),
        gate=Gate(
            "the risk falls along the run: min over seeds and noises of P(t=0) / P(end)",
            Rule(">=", 2.0),
        ),
    ),
    Claim(
        id="effective_lr_formula",
        statement="The expected sign-gradient is phi(P) D^{-1/2} K r with "
        "phi = (2/pi) E[exp(-eps^2/4P)] / sqrt(2P).",
        where="Derivation of the drift",
        metric="max over the 6 iterates of |measured phi / formula - 1|, Gaussian noise, per seed",
        paper_value="exact in the limit",
        rule=Rule("<=", 0.05, partial=0.10),
        null=Null(arm="the formula with phi frozen at the iterate at t = 0, phi(P(0))"),
    ),
    Claim(
        id="noise_compression",
        statement="Noise compression: label noise enters only through E[exp(-eps^2/4P)], finite "
        "even for infinite-variance noise.",
        where="Noise compression effect",
        metric="as effective_lr_formula, max over Cauchy (scale 0.5) and Student-t (df 1.5) runs",
        paper_value="exact in the limit",
        rule=Rule("<=", 0.05, partial=0.10),
        null=Null(
            arm="the formula without the noise factor E[exp(-eps^2/4P)] (the noiseless phi, "
            "(2/pi)/sqrt(2P))"
        ),
    ),
    Claim(
        id="noise_reshaping",
        statement="Gradient-noise reshaping: signSGD's gradient-noise covariance is "
        "K_sigma = (2/pi) arcsin(D^{-1/2} K D^{-1/2}), independent of the risk and the noise.",
        where="Gradient noise reshaping effect",
        metric="max relative Frobenius error of the Monte Carlo UNCENTRED second moment "
        "E[g g^T] of the sign-gradient vs K_sigma over {start, end of a run} x {Gaussian, "
        "Cauchy}, correlated K, d = {{cov_d}}, {{cov_samples}} samples, per seed; the Monte Carlo "
        "floor is reported beside it "
        "(metric changed after a run: it was the centred covariance, see the README)",
        paper_value="exact",
        rule=Rule("<=", 0.05, partial=0.10),
        null=Null(
            arm="the unreshaped correlation matrix D^{-1/2} K D^{-1/2} (no arcsine law) in place "
            "of K_sigma, same measured E[g g^T]"
        ),
        gate=Gate(
            "Monte Carlo floor sqrt(sum(1 - K_sigma^2) / n) / ||K_sigma||_F of the measured "
            "second moment"
        ),
    ),
    Claim(
        id="noise_reshaping_centred",
        statement="The centred covariance of the sign-gradient is K_sigma minus the outer "
        "product of the phi-predicted mean mu = phi(P) D^{-1/2} K r (a finite-d check).",
        where="Gradient noise reshaping effect (our check at finite d)",
        metric="as noise_reshaping, for the centred covariance vs K_sigma - mu mu^T",
        paper_value="exact up to the drift's error",
        rule=Rule("<=", 0.05, partial=0.10),
        kind="control",
    ),
    Claim(
        id="adam_conjecture",
        statement="The paper closes with a conjecture on extending the ODE to Adam.",
        where="Conclusion",
        metric="none",
        paper_value="conjecture",
        rule=None,
        out_of_scale="not tested as the paper words it: the conjecture's exact statement was "
        "not reachable offline. The adam_* controls test OUR RECONSTRUCTION (a homogenized "
        "Adam ODE), not the paper's statement",
    ),
    Claim(
        id="adam_ode_matches",
        statement="Reconstruction (not the paper's statement): simulated Adam follows the "
        "homogenized Adam ODE (drift phi_A D^{-1/2} K r, phi_A and noise by Monte Carlo over "
        "resampled histories) for beta2 in {0, 0.5, 0.9, 0.99} x beta1 in {0, 0.9}",
        where="Conclusion (Adam conjecture), as reconstructed here",
        metric="sup over t in [0, {{t_main}}] of |mean simulated risk / ODE - 1|, one value per "
        "(beta1, beta2) except (0.9, 0) (no ODE: E[1/|g|] = inf), diagonal K, Gaussian noise "
        "std 0.5, lr 0.3, d = {{adam_d_large}}",
        paper_value="reconstruction",
        rule=Rule("<=", 0.05, partial=0.10),
        kind="control",
    ),
    Claim(
        id="adam_error_shrinks",
        statement="Reconstruction: the gap between simulated Adam and the Adam ODE shrinks as d "
        "doubles.",
        where="Conclusion (Adam conjecture), as reconstructed here",
        metric="err(2d) / err(d) per (beta1, beta2) as in adam_ode_matches, err = per-seed sup "
        "relative error averaged over seeds; d = {{adam_d_small}} -> {{adam_d_large}}; about 0.71 "
        "if err ~ d^-1/2",
        paper_value="reconstruction",
        rule=Rule("<=", 0.85, partial=1.0),
        kind="control",
    ),
    Claim(
        id="adam_precond_exponent",
        statement="Reconstruction: Adam keeps signSGD's diagonal preconditioning, coordinate i "
        "decaying at a rate proportional to lambda_i^{1/2}, for every (beta1, beta2).",
        where="Conclusion (Adam conjecture), as reconstructed here",
        metric="|fitted exponent - 0.5| averaged over seeds, one value per (beta1, beta2) of the "
        "sweep except (0.9, 0) (no ODE), measured as precond_exponent_signsgd at t = {{t_decay}} "
        "at the larger d = {{adam_d_large}}",
        paper_value="reconstruction: 0.5",
        rule=Rule("<=", 0.1, partial=0.2),
        kind="control",
    ),
    Claim(
        id="adam_cauchy_ode",
        statement="Reconstruction: under Cauchy noise simulated Adam (beta1 = 0) follows the "
        "Adam ODE, whose phi_A is tabulated by Monte Carlo over a grid of risks.",
        where="Conclusion (Adam conjecture), as reconstructed here",
        metric="as adam_ode_matches, Cauchy noise scale 0.5, beta1 = 0, beta2 in {0, 0.5, 0.9, "
        "0.99}, one value per beta2, d = {{adam_d_large}}",
        paper_value="reconstruction",
        rule=Rule("<=", 0.05, partial=0.10),
        kind="control",
    ),
    Claim(
        id="adam_cauchy_robustness_fades",
        statement="Reconstruction: signSGD's robustness to heavy tails fades as beta2 -> 1 "
        "(phi_A -> 1/sqrt(2P + E eps^2) = 0 for Cauchy noise).",
        where="Conclusion (Adam conjecture), as reconstructed here",
        metric="Spearman correlation between beta2 in {0, 0.5, 0.9, 0.99} and the simulated "
        "final-risk ratio Cauchy / Gaussian (beta1 = 0, t = {{t_main}}, seed means, larger d = "
        "{{adam_d_large}})",
        paper_value="reconstruction: increasing",
        rule=Rule(">=", 0.99, partial=0.5),
        kind="control",
    ),
)
