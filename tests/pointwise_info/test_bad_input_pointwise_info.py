"""Bad input at pointwise_info's public API (issue 54's kinds): a clear error naming the argument.

Feature counts that differ from the fitted ones, numbers passed as strings, non-callables where a
callable is expected, a model that cannot take the input, priors with NaN, a bin count of 0 or a
floor that would silently flatten PSI, and lists where a tensor is expected.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from icml25 import pointwise_info as pw
from icml25.core.models import MLP

_RNG = np.random.default_rng(0)
_X = _RNG.normal(size=(60, 5)).astype(np.float32)
_Y = np.arange(60) % 3
_P = np.full((4, 3), 1 / 3)
_YC = np.array([0, 1, 2, 0])
_CONF = np.linspace(0, 1, 4)
_OK = np.array([True, False, True, False])


def _net(d: int = 5) -> MLP:
    torch.manual_seed(0)
    return MLP(d, (8,), 3)


@pytest.fixture(scope="module")
def fitted():
    return {
        "pvi": pw.PVI(g_prime=_net(), null="prior").fit(_X, _Y),
        "pmi": pw.PMI(epochs=1).fit(_X, _Y),
        "psi": pw.PSI(n_slices=3).fit(_X, _Y),
    }


WRONG_WIDTH = np.zeros((2, 7), np.float32)

CASES = [
    # feature counts that differ from the fitted ones
    ("PMI.score_samples width", lambda f: f["pmi"].score_samples(WRONG_WIDTH), ValueError,
     "features must be (n, 5) like the fitted ones, got (2, 7)"),
    ("PMI.confidence width", lambda f: f["pmi"].confidence(WRONG_WIDTH, [0, 1]), ValueError,
     "like the fitted ones"),
    ("PMI.predict_proba width", lambda f: f["pmi"].predict_proba(WRONG_WIDTH), ValueError,
     "like the fitted ones"),
    ("PSI.score_samples width", lambda f: f["psi"].score_samples(WRONG_WIDTH), ValueError,
     "features must be (n, 5)"),
    ("PVI.score_samples width", lambda f: f["pvi"].score_samples(WRONG_WIDTH), ValueError,
     "samples of shape (5,)"),
    ("PVI.fit X_val width", lambda f: pw.PVI(g_prime=_net(), null="prior", calibrate=True).fit(
        _X, _Y, WRONG_WIDTH, [0, 1]), ValueError, "X_val must have samples of shape (5,)"),
    ("PVI.fit g_prime cannot take X", lambda f: pw.PVI(g_prime=_net(7), null="prior").fit(_X, _Y),
     ValueError, "g_prime cannot be applied to X"),
    ("PVI.fit null model cannot take X", lambda f: pw.PVI(g_prime=_net(), null=_net(7)).fit(
        _X, _Y), ValueError, "null model cannot be applied"),
    ("PVI.fit model_fn cannot take X", lambda f: pw.PVI(lambda: _net(7), epochs=1).fit(_X, _Y),
     ValueError, "the model built by model_fn cannot be applied to X"),
    ("predict_logits width", lambda f: pw.predict_logits(_net(), WRONG_WIDTH), ValueError,
     "model cannot be applied to X of shape (2, 7)"),
    ("FeatureExtractor width", lambda f: pw.FeatureExtractor(_net(), "net.0")(WRONG_WIDTH),
     ValueError, "cannot be applied to X"),
    ("SeparableCritic width", lambda f: pw.SeparableCritic(3, 2, 4, 4)(
        torch.zeros(2, 5), torch.eye(2)), ValueError, "x must have shape (n, 3)"),
    ("ConcatCritic classes", lambda f: pw.ConcatCritic(3, 2, 4)(torch.zeros(2, 3), torch.eye(3)),
     ValueError, "y_onehot must have shape (n, 2)"),
    # numbers passed as strings, bad numbers
    ("PVI random_state str", lambda f: pw.PVI(random_state="0").fit(_X, _Y), ValueError,
     "random_state must be an integer"),
    ("PVI null_min_delta nan", lambda f: pw.PVI(null_min_delta=float("nan")).fit(_X, _Y),
     ValueError, "null_min_delta must be a finite number"),
    ("PVI null_min_delta str", lambda f: pw.PVI(null_min_delta="0.1").fit(_X, _Y), ValueError,
     "null_min_delta"),
    ("PVI hidden str", lambda f: pw.PVI(hidden="256").fit(_X, _Y), ValueError,
     "hidden must be a non-empty sequence of positive integers"),
    ("PVI hidden 0", lambda f: pw.PVI(hidden=(0,)).fit(_X, _Y), ValueError, "hidden"),
    ("PVI calibrate str", lambda f: pw.PVI(g_prime=_net(), null="prior", calibrate="no").fit(
        _X, _Y), ValueError, "calibrate must be True or False"),
    ("PVI null with a string", lambda f: pw.PVI(g_prime=_net(), null=[0.5, "a", 0.5]).fit(_X, _Y),
     ValueError, "null priors must be 3 probabilities"),
    ("PVI null with NaN", lambda f: pw.PVI(g_prime=_net(), null=[np.nan, 0.5, 0.5]).fit(_X, _Y),
     ValueError, "finite probabilities"),
    ("PVI X strings", lambda f: pw.PVI(g_prime=_net(), null="prior").fit(
        np.full((6, 5), "a"), [0, 1, 2] * 2), TypeError, "X must be an array of numbers"),
    ("PMI num_classes str", lambda f: pw.PMI(num_classes="3").fit(_X, _Y), ValueError,
     "num_classes must be an integer >= 2"),
    ("PMI random_state str", lambda f: pw.PMI(random_state="a").fit(_X, _Y), ValueError,
     "random_state"),
    ("PSI num_classes 0", lambda f: pw.PSI(num_classes=0).fit(_X, _Y), ValueError,
     "num_classes must be an integer >= 2"),
    ("PSI random_state str", lambda f: pw.PSI(random_state="a").fit(_X, _Y), ValueError,
     "random_state"),
    ("PSI n_bins 0", lambda f: pw.PSI(n_bins=0).fit(_X, _Y), ValueError, "n_bins"),
    ("PSI n_bins str", lambda f: pw.PSI(n_bins="30").fit(_X, _Y), ValueError, "n_bins"),
    ("PSI floor 1 or more", lambda f: pw.PSI(floor=2.0).fit(_X, _Y), ValueError,
     "floor must be a finite number > 0 and < 1"),
    ("softmax strings", lambda f: pw.softmax([["a", "b"]]), ValueError,
     "scores must be an array of numbers"),
    ("softmax base 1", lambda f: pw.softmax(_P, base=1.0), ValueError, "base must be"),
    ("softmax base str", lambda f: pw.softmax(_P, base="2"), ValueError, "base"),
    ("confidence base 0.5", lambda f: f["pvi"].confidence(_X[:2], [0, 1], base=0.5), ValueError,
     "base must be"),
    ("ece confidence strings", lambda f: pw.ece(["a"] * 4, _OK), ValueError,
     "confidence must be an array of numbers"),
    ("auroc confidence strings", lambda f: pw.auroc(["a"] * 4, _OK), ValueError,
     "confidence must be an array of numbers"),
    ("sce probs strings", lambda f: pw.sce([["a", "b", "c"]] * 4, _YC), ValueError,
     "probs must be an array of numbers"),
    ("fpr_at_95tpr tpr str", lambda f: pw.fpr_at_95tpr(_CONF, _OK, tpr="0.95"), ValueError,
     "tpr must be a number in (0, 1]"),
    ("ece n_bins 0", lambda f: pw.ece(_CONF, _OK, n_bins=0), ValueError, "n_bins"),
    # non-callables where a callable is expected, non-modules where a module is expected
    ("PVI progress not callable", lambda f: pw.PVI(progress=3).fit(_X, _Y), TypeError,
     "progress must be callable"),
    ("PVI model_fn returns a string", lambda f: pw.PVI(lambda: "m").fit(_X, _Y), TypeError,
     "model_fn must return a fresh nn.Module"),
    ("PMI feature_extractor str", lambda f: pw.PMI(feature_extractor="x").fit(_X, _Y), TypeError,
     "feature_extractor must be callable"),
    ("PSI feature_extractor int", lambda f: pw.PSI(feature_extractor=5).fit(_X, _Y), TypeError,
     "feature_extractor must be callable"),
    ("FeatureExtractor model str", lambda f: pw.FeatureExtractor("m", "act"), TypeError,
     "model must be a torch.nn.Module"),
    ("predict_logits model str", lambda f: pw.predict_logits("m", _X), TypeError,
     "model must be a torch.nn.Module"),
    ("predict_logits 1-D output", lambda f: pw.predict_logits(nn.Flatten(0), _X), ValueError,
     "must return (batch, n_classes) logits"),
    # lists and arrays where a tensor is expected
    ("critic_loss list", lambda f: pw.critic_loss([[0.0, 1.0], [1.0, 0.0]], "js"), TypeError,
     "scores must be a torch.Tensor"),
    ("critic_loss numpy", lambda f: pw.critic_loss(np.zeros((2, 2)), "js"), TypeError,
     "scores must be a torch.Tensor"),
    ("SeparableCritic numpy", lambda f: pw.SeparableCritic(3, 2, 4, 4)(
        np.zeros((2, 3)), np.eye(2)), TypeError, "x must be a torch.Tensor"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "words"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_bad_input_gets_a_clear_error(fitted, call, error, words):
    with pytest.raises(error) as info:
        call(fitted)
    assert words.lower() in str(info.value).lower(), str(info.value)


def test_valid_inputs_still_work(fitted):
    """Lists for arrays, the default and base-2 softmaxes, integral floats."""
    pvi = pw.PVI(g_prime=_net(), null="prior", random_state=np.int64(3)).fit(_X.tolist(), _Y)
    assert pvi.score_samples(_X[:2]).shape == (2, 3)
    assert pw.softmax(_P, base=2).shape == (4, 3)
    assert pw.eaurc(list(_CONF), list(_OK)) >= 0
    assert pw.PSI(n_slices=2, floor=1e-5).fit(_X, _Y).score_samples(_X[:3]).shape == (3, 3)
