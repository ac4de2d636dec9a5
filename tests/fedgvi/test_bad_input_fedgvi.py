"""Bad input at FedGVI's public entry points (issue 54): numbers as strings, lists or classes
where an instance is expected, a feature count other than the fitted one, a non-callable where
a callable is expected, vectors of the wrong length. Each row names the words the message must
hold (the argument, what it must be)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from icml25 import fedgvi as F

# not entry points: ClientUpdate, FedGVIResult

NAN = float("nan")
M, V = np.zeros(2), np.ones(2)
PRIOR = F.NatGaussian.from_moments(M, V)
P1 = F.NatGaussian.from_moments([0.0], [1.0])
FLAT = F.NatGaussian.flat(2)
GL = F.GaussianLocation(np.zeros((3, 2)))
X = np.random.default_rng(0).normal(size=(6, 2))
Y = np.array([0, 1, 0, 1, 0, 1])
LR = F.LogisticRegression(X, Y)
MLP = F.MLPClassifier(X, Y, 2, (3,))
DPL = F.DensityPowerLoss()


def _fg(*args: Any, **kw: Any) -> Any:
    return F.fedgvi(PRIOR, [F.Client(GL)], 1, *args, **kw)


ROWS: list[tuple[str, Callable[[], Any], type[BaseException], str]] = [
    # numbers or arrays passed as strings
    (
        "GaussianLocation x str",
        lambda: F.GaussianLocation("abc"),
        ValueError,
        "x must be a number or an array of numbers",
    ),
    (
        "GaussianLocation x list of str",
        lambda: F.GaussianLocation(["1", "2"]),
        ValueError,
        "x must be a number or an array of numbers",
    ),
    (
        "GaussianLocation sigma2 str",
        lambda: F.GaussianLocation(np.zeros(3), "1"),
        ValueError,
        "sigma2 must be a positive number",
    ),
    (
        "GaussianLocation sigma2 bool",
        lambda: F.GaussianLocation(np.zeros(3), True),
        ValueError,
        "sigma2",
    ),
    (
        "LogisticRegression X str",
        lambda: F.LogisticRegression("X", Y),
        ValueError,
        "X must be a number or an array of numbers",
    ),
    (
        "LogisticRegression y str",
        lambda: F.LogisticRegression(X, [str(v) for v in Y]),
        ValueError,
        "y must hold integer class labels",
    ),
    (
        "MLPClassifier num_classes str",
        lambda: F.MLPClassifier(X, Y, "2"),
        ValueError,
        "num_classes must be an integer",
    ),
    (
        "NatGaussian h str",
        lambda: F.NatGaussian("a", [1.0]),
        ValueError,
        "h must be a number or an array of numbers",
    ),
    (
        "NatGaussian.from_moments str",
        lambda: F.NatGaussian.from_moments("0", "1"),
        ValueError,
        "mean must be a number or an array of numbers",
    ),
    (
        "NatGaussian.from_moments list of str",
        lambda: F.NatGaussian.from_moments(["0"], [1.0]),
        ValueError,
        "mean must be a number or an array of numbers",
    ),
    (
        "NatGaussian.flat d str",
        lambda: F.NatGaussian.flat("2"),
        ValueError,
        "d must be an integer >= 1",
    ),
    ("NatGaussian power str", lambda: PRIOR ** "2", ValueError, "power must be a finite number"),
    (
        "NatGaussian.clip_precision floor str",
        lambda: PRIOR.clip_precision("a"),
        ValueError,
        "floor must be a finite number",
    ),
    (
        "kl mean str",
        lambda: F.kl("a", [1.0], [0.0], [1.0]),
        ValueError,
        "the mean of q must be a number or an array of numbers",
    ),
    (
        "reverse_kl var str",
        lambda: F.reverse_kl([0.0], "1", [0.0], [1.0]),
        ValueError,
        "variance of q must be a number or an array",
    ),
    (
        "alpha_renyi alpha str",
        lambda: F.alpha_renyi(M, V, M, V, "2"),
        ValueError,
        "alpha must be a finite number > 0",
    ),
    (
        "weighted_kl w str",
        lambda: F.weighted_kl(M, V, M, V, "2"),
        ValueError,
        "w must be a finite number > 0",
    ),
    (
        "AlphaRenyi alpha str",
        lambda: F.AlphaRenyi("2"),
        ValueError,
        "alpha must be a finite number > 0",
    ),
    ("WeightedKL w str", lambda: F.WeightedKL("2"), ValueError, "w must be a finite number > 0"),
    (
        "GeneralisedCrossEntropy b str",
        lambda: F.GeneralisedCrossEntropy("0.5"),
        ValueError,
        "b must lie in (0, 1]",
    ),
    (
        "DensityPowerLoss beta str",
        lambda: F.DensityPowerLoss("1.5"),
        ValueError,
        "beta must be > 1",
    ),
    (
        "DensityPowerLoss beta inf",
        lambda: F.DensityPowerLoss(float("inf")),
        ValueError,
        "beta must be > 1",
    ),
    (
        "GammaLoss gamma str",
        lambda: F.GammaLoss("2"),
        ValueError,
        "gamma must be > 1",
    ),
    (
        "GammaLoss gamma inf",
        lambda: F.GammaLoss(float("inf")),
        ValueError,
        "gamma must be > 1",
    ),
    (
        "IMQScoreMatching c str",
        lambda: F.IMQScoreMatching("1"),
        ValueError,
        "c must be a positive number",
    ),
    (
        "IMQScoreMatching center str",
        lambda: F.IMQScoreMatching(1.0, "a"),
        ValueError,
        "center must be a finite number",
    ),
    (
        "LocalOptimizer lr str",
        lambda: F.LocalOptimizer(lr="0.1"),
        ValueError,
        "lr must be a finite number > 0",
    ),
    (
        "LocalOptimizer steps str",
        lambda: F.LocalOptimizer(steps="10"),
        ValueError,
        "steps must be an integer >= 1",
    ),
    (
        "LocalOptimizer steps bool",
        lambda: F.LocalOptimizer(steps=True),
        ValueError,
        "steps must be an integer >= 1",
    ),
    (
        "LocalOptimizer samples bool",
        lambda: F.LocalOptimizer(samples=True),
        ValueError,
        "samples must be an integer >= 1",
    ),
    (
        "LocalOptimizer batch_size str",
        lambda: F.LocalOptimizer(batch_size="8"),
        ValueError,
        "batch_size must be an integer >= 1",
    ),
    (
        "LocalOptimizer patience 0",
        lambda: F.LocalOptimizer(patience=0),
        ValueError,
        "patience must be an integer >= 1",
    ),
    (
        "Client damping str",
        lambda: F.Client(GL, damping="0.5"),
        ValueError,
        "damping must lie in (0, 1]",
    ),
    (
        "fedgvi rounds str",
        lambda: F.fedgvi(PRIOR, [F.Client(GL)], "2"),
        ValueError,
        "rounds must be an integer >= 1",
    ),
    (
        "fedgvi rounds bool",
        lambda: F.fedgvi(PRIOR, [F.Client(GL)], True),
        ValueError,
        "rounds must be an integer >= 1",
    ),
    ("fedgvi tol str", lambda: _fg(tol="1e-3"), ValueError, "tol must be a finite number >= 0"),
    ("fedgvi tol negative", lambda: _fg(tol=-1.0), ValueError, "tol must be a finite number >= 0"),
    ("fedgvi seed str", lambda: _fg(seed="0"), ValueError, "seed must be an integer >= 0"),
    (
        "gvi seed str",
        lambda: F.gvi(PRIOR, GL, DPL, seed="0"),
        ValueError,
        "seed must be an integer >= 0",
    ),
    ("sample n str", lambda: F.sample(PRIOR, "3"), ValueError, "n must be an integer >= 1"),
    (
        "sample seed str",
        lambda: F.sample(PRIOR, 3, "0"),
        ValueError,
        "seed must be an integer >= 0",
    ),
    (
        "client_step damping str",
        lambda: F.client_step(PRIOR, FLAT, GL, damping="1"),
        ValueError,
        "damping must lie in (0, 1]",
    ),
    (
        "GaussianLocation.log_power_integral c str",
        lambda: GL.log_power_integral(torch.zeros(1, 2), "2"),
        ValueError,
        "c must be a finite number > 0",
    ),
    (
        "LogisticRegression.log_lik theta str",
        lambda: LR.log_lik("abc"),
        ValueError,
        "theta must be a number or an array of numbers",
    ),
    # a list, tuple or class where an object is expected
    (
        "fedgvi prior tuple",
        lambda: F.fedgvi((M, V), [F.Client(GL)], 1),
        TypeError,
        "prior must be a NatGaussian",
    ),
    (
        "fedgvi prior str",
        lambda: F.fedgvi("p", [F.Client(GL)], 1),
        TypeError,
        "prior must be a NatGaussian",
    ),
    (
        "fedgvi one Client",
        lambda: F.fedgvi(PRIOR, F.Client(GL), 1),
        TypeError,
        "clients must be a sequence of Client objects",
    ),
    (
        "fedgvi models not Clients",
        lambda: F.fedgvi(PRIOR, [GL], 1),
        TypeError,
        "clients must hold Client objects",
    ),
    (
        "fedgvi optimizer str",
        lambda: _fg(optimizer="adam"),
        TypeError,
        "optimizer must be a LocalOptimizer",
    ),
    ("fedgvi init str", lambda: _fg(init="x"), TypeError, "init must be a NatGaussian"),
    (
        "fedgvi clip_factors str",
        lambda: _fg(clip_factors="no"),
        TypeError,
        "clip_factors must be True or False",
    ),
    ("Client loss str", lambda: F.Client(GL, "nll"), TypeError, "loss must be a FedGVI loss"),
    (
        "Client loss class",
        lambda: F.Client(GL, F.NLL),
        TypeError,
        "loss must be a loss instance, got the class NLL",
    ),
    (
        "Client model class",
        lambda: F.Client(F.GaussianLocation),
        TypeError,
        "model must be a data model instance",
    ),
    ("gvi loss str", lambda: F.gvi(PRIOR, GL, "nll"), TypeError, "loss must be a FedGVI loss"),
    ("sample q str", lambda: F.sample("q", 3), TypeError, "q must be a NatGaussian"),
    (
        "server_step one factor",
        lambda: F.server_step(PRIOR, FLAT),
        TypeError,
        "factors must be a sequence of NatGaussian",
    ),
    (
        "server_step arrays as factors",
        lambda: F.server_step(PRIOR, [np.ones(2)]),
        TypeError,
        "factors must hold NatGaussian",
    ),
    (
        "server_step prior str",
        lambda: F.server_step("p", [FLAT]),
        TypeError,
        "prior must be a NatGaussian",
    ),
    (
        "client_step q str",
        lambda: F.client_step("q", FLAT, GL),
        TypeError,
        "q must be a NatGaussian",
    ),
    (
        "client_step factor str",
        lambda: F.client_step(PRIOR, "f", GL),
        TypeError,
        "factor must be a NatGaussian",
    ),
    (
        "client_step loss str",
        lambda: F.client_step(PRIOR, FLAT, GL, "nll"),
        TypeError,
        "loss must be a FedGVI loss",
    ),
    (
        "client_step optimizer str",
        lambda: F.client_step(PRIOR, FLAT, GL, DPL, optimizer="x"),
        TypeError,
        "optimizer must be a LocalOptimizer",
    ),
    (
        "client_step generator int",
        lambda: F.client_step(PRIOR, FLAT, GL, DPL, generator=3),
        TypeError,
        "generator must be a torch.Generator",
    ),
    (
        "conjugate_update loss str",
        lambda: F.conjugate_update(GL, "nll", PRIOR),
        TypeError,
        "loss must be a FedGVI loss",
    ),
    (
        "conjugate_update cavity str",
        lambda: F.conjugate_update(GL, F.NLL(), "c"),
        TypeError,
        "cavity must be a NatGaussian",
    ),
    (
        "local_posterior cavity str",
        lambda: F.local_posterior("c", GL),
        TypeError,
        "cavity must be a NatGaussian",
    ),
    (
        "GeneralisedCrossEntropy.per_point model str",
        lambda: F.GeneralisedCrossEntropy().per_point("m", torch.zeros(1, 2)),
        TypeError,
        "model must be a FedGVI data model",
    ),
    (
        "NLL.per_point model str",
        lambda: F.NLL().per_point("m", torch.zeros(1, 2)),
        TypeError,
        "model must be a FedGVI data model",
    ),
    (
        "MLPClassifier hidden int",
        lambda: F.MLPClassifier(X, Y, 2, 3),
        ValueError,
        "hidden must be a tuple of positive layer widths",
    ),
    (
        "MLPClassifier hidden str",
        lambda: F.MLPClassifier(X, Y, 2, "3"),
        ValueError,
        "hidden must be a tuple",
    ),
    (
        "NatGaussian.from_arrays one array",
        lambda: F.NatGaussian.from_arrays(np.ones((2, 2))),
        ValueError,
        "expected [h, J]",
    ),
    # a feature count other than the fitted one
    (
        "LogisticRegression.predict_proba features",
        lambda: LR.predict_proba(torch.zeros(1, 2), np.zeros((3, 5))),
        ValueError,
        "X must have 2 features",
    ),
    (
        "MLPClassifier.predict_proba features",
        lambda: MLP.predict_proba(torch.zeros(1, MLP.dim), np.zeros((3, 5))),
        ValueError,
        "X must have 2 features",
    ),
    (
        "MLPClassifier.logits features",
        lambda: MLP.logits(torch.zeros(1, MLP.dim), torch.zeros(3, 5)),
        ValueError,
        "X must have 2 features",
    ),
    # a non-callable (or a class) where a callable is expected
    (
        "Client divergence str",
        lambda: F.Client(GL, F.NLL(), "kl"),
        TypeError,
        "divergence must be a divergence, callable",
    ),
    (
        "Client divergence class",
        lambda: F.Client(GL, F.NLL(), F.KL),
        TypeError,
        "divergence must be a divergence instance, got the class KL",
    ),
    (
        "fedgvi server_divergence str",
        lambda: _fg(server_divergence="kl"),
        TypeError,
        "server_divergence must be a divergence",
    ),
    (
        "fedgvi server_divergence class",
        lambda: _fg(server_divergence=F.AlphaRenyi),
        TypeError,
        "got the class AlphaRenyi",
    ),
    ("fedgvi progress int", lambda: _fg(progress=3), TypeError, "progress must be a callable"),
    (
        "gvi divergence str",
        lambda: F.gvi(PRIOR, GL, F.NLL(), "kl"),
        TypeError,
        "divergence must be a divergence",
    ),
    (
        "server_step divergence str",
        lambda: F.server_step(PRIOR, [FLAT], "kl"),
        TypeError,
        "divergence must be a divergence",
    ),
    (
        "client_step divergence str",
        lambda: F.client_step(PRIOR, FLAT, GL, DPL, "kl"),
        TypeError,
        "divergence must be a divergence",
    ),
    # vectors (or Gaussians) of the wrong length or kind
    ("NatGaussian empty", lambda: F.NatGaussian([], []), ValueError, "h must hold at least one"),
    (
        "NatGaussian.flat d 0",
        lambda: F.NatGaussian.flat(0),
        ValueError,
        "d must be an integer >= 1",
    ),
    (
        "NatGaussian.from_moments var length",
        lambda: F.NatGaussian.from_moments([0.0, 0.0], [1.0, 1.0, 1.0]),
        ValueError,
        "var must be positive and finite with shape (2,)",
    ),
    (
        "NatGaussian.from_moments cov nan",
        lambda: F.NatGaussian.from_moments(M, np.full((2, 2), NAN)),
        ValueError,
        "cov must be finite",
    ),
    (
        "LogisticRegression y length",
        lambda: F.LogisticRegression(X, [0, 1]),
        ValueError,
        "y must have shape (6,)",
    ),
    (
        "LogisticRegression.predict_proba theta length",
        lambda: LR.predict_proba(torch.zeros(1, 3), X),
        ValueError,
        "theta must have shape (S, 2)",
    ),
    (
        "kl variance length",
        lambda: F.kl(M, [1.0], M, [1.0]),
        ValueError,
        "moment shapes must agree",
    ),
    (
        "fedgvi init dimension",
        lambda: F.fedgvi(PRIOR, [F.Client(GL, DPL)], 1, init=P1),
        ValueError,
        "init must have the prior's dimension 2",
    ),
    (
        "fedgvi model dimension",
        lambda: F.fedgvi(P1, [F.Client(GL)], 1),
        ValueError,
        "parameter dimension is 2",
    ),
    (
        "client_step factor kind",
        lambda: F.client_step(PRIOR, F.NatGaussian.flat(2, True), GL),
        ValueError,
        "factor must have q's dimension 2 and covariance kind (mean-field)",
    ),
    (
        "local_posterior start dimension",
        lambda: F.local_posterior(PRIOR, GL, DPL, start=P1),
        ValueError,
        "start must have the cavity's dimension 2",
    ),
    (
        "server_step start dimension",
        lambda: F.server_step(PRIOR, [FLAT], F.AlphaRenyi(2.0), start=P1),
        ValueError,
        "start must have the prior's dimension 2",
    ),
    (
        "server_step factor dimension",
        lambda: F.server_step(PRIOR, [F.NatGaussian.flat(3)]),
        ValueError,
        "every factor must have the prior's dimension 2",
    ),
]


@pytest.mark.parametrize(("rid", "call", "exc", "words"), ROWS, ids=[r[0] for r in ROWS])
def test_bad_input_gives_a_clear_error(
    rid: str, call: Callable[[], Any], exc: type[BaseException], words: str
) -> None:
    with pytest.raises(exc) as info:
        call()
    assert words in str(info.value), (rid, str(info.value))


def test_flower_entry_points_check_their_arguments() -> None:
    from icml25.fedgvi import flower

    with pytest.raises(TypeError, match="prior must be a NatGaussian"):
        flower.make_strategy("p")
    with pytest.raises(TypeError, match="server_divergence must be a divergence"):
        flower.make_strategy(PRIOR, "kl")
    with pytest.raises(TypeError, match="client_fn must be callable"):
        flower.make_client_app(3)
    with pytest.raises(TypeError, match="optimizer must be a LocalOptimizer"):
        flower.make_client_app(lambda pid, num: F.Client(GL), optimizer="adam")
    with pytest.raises(ValueError, match="num_clients must be an integer >= 1"):
        flower.run_in_process(PRIOR, lambda pid, num: F.Client(GL), 0, 1)
    with pytest.raises(TypeError, match="strategy_fn must be callable"):
        flower.make_server_app(1, lambda ctx: PRIOR)


def test_valid_variants_still_work() -> None:
    """NumPy integers and scalars, lists for hidden, a tensor damping, float labels that are
    integers: accepted, not refused."""
    assert F.LocalOptimizer(steps=np.int64(5)).steps == 5
    assert F.fedgvi(PRIOR, [F.Client(GL)], np.int64(2)).q.dim == 2
    assert F.GaussianLocation(np.zeros(3), np.float64(2.0)).sigma2 == 2.0
    assert F.MLPClassifier(X, Y, 2, [3]).dim == MLP.dim
    assert F.Client(GL, damping=torch.tensor(0.5)).damping == 0.5
    assert F.LogisticRegression(X, Y.astype(float)).y.dtype == torch.int64
    assert F.kl([0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 1.0]).item() == 0.0
