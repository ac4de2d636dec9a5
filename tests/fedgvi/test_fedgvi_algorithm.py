from collections import Counter

import numpy as np
import pytest
import torch

from icml25.fedgvi import (
    KL,
    NLL,
    AlphaRenyi,
    Client,
    GaussianLocation,
    IMQScoreMatching,
    LocalOptimizer,
    LogisticRegression,
    NatGaussian,
    WeightedKL,
    client_step,
    fedgvi,
    gvi,
    local_posterior,
    server_step,
)
from icml25.fedgvi.fedgvi import aggregate

RNG = np.random.default_rng(0)
XS = [RNG.normal(0.5, 1.0, 30) for _ in range(4)]
XS[0][:6] = 8.0


def _exact(xs, m0, v0, sigma2=1.0):
    x = np.concatenate(xs)
    prec = 1 / v0 + x.size / sigma2
    return (m0 / v0 + x.sum() / sigma2) / prec, 1 / prec


def test_pvi_is_exact_after_one_round():
    prior = NatGaussian.from_moments([3.0], [0.1])
    res = fedgvi(prior, [Client(GaussianLocation(x)) for x in XS], 1)
    m, v = _exact(XS, 3.0, 0.1)
    assert abs(res.q.mean[0] - m) < 1e-12 and abs(res.q.var[0] - v) < 1e-12
    # later rounds stay at the fixed point
    more = fedgvi(prior, [Client(GaussianLocation(x)) for x in XS], 5)
    assert abs(more.q.mean[0] - m) < 1e-12
    assert more.rounds_to_converge(1e-10) == 1


def test_pvi_full_covariance_in_two_dimensions():
    xs = [RNG.normal([1.0, -1.0], 1.0, size=(20, 2)) for _ in range(3)]
    cov0 = np.array([[2.0, 0.5], [0.5, 1.0]])
    prior = NatGaussian.from_moments([0.0, 0.0], cov0)
    res = fedgvi(prior, [Client(GaussianLocation(x, sigma2=0.5)) for x in xs], 1)
    x = np.concatenate(xs)
    prec = np.linalg.inv(cov0) + x.shape[0] / 0.5 * np.eye(2)
    mean = np.linalg.solve(prec, x.sum(0) / 0.5)
    np.testing.assert_allclose(res.q.mean, mean, atol=1e-12)
    np.testing.assert_allclose(res.q.var, np.linalg.inv(prec), atol=1e-12)


def test_weighted_kl_has_the_tempered_closed_form():
    """argmin E_q[-log t] + KL(q||pi)/w is pi * t^w: at the client and at the server."""
    model = GaussianLocation(XS[1])
    cavity = NatGaussian.from_moments([0.0], [4.0])
    q = local_posterior(cavity, model, NLL(), WeightedKL(3.0))
    lik = NatGaussian(np.array([XS[1].sum()]), np.array([float(XS[1].size)]))
    expect = cavity * lik**3.0
    np.testing.assert_allclose(q.mean, expect.mean, rtol=1e-7)
    np.testing.assert_allclose(q.var, expect.var, rtol=1e-6)
    prior = NatGaussian.from_moments([1.0, 0.0], [2.0, 0.5])
    factors = [NatGaussian(np.array([1.0, 2.0]), np.array([3.0, 1.0])), NatGaussian.flat(2)]
    s = server_step(prior, factors, WeightedKL(0.5))
    expect = prior * factors[0] ** 0.5
    np.testing.assert_allclose(s.mean, expect.mean, rtol=1e-7)
    np.testing.assert_allclose(s.var, expect.var, rtol=1e-6)
    kl_server = server_step(prior, factors)
    np.testing.assert_array_equal(kl_server.J, (prior * factors[0] * factors[1]).J)


def test_one_client_is_gvi_and_the_ar_server_weakens_the_prior():
    model = GaussianLocation(XS[2])
    prior = NatGaussian.from_moments([3.0], [0.1])
    one = fedgvi(prior, [Client(model, IMQScoreMatching(1.0))], 1)
    direct = gvi(prior, model, IMQScoreMatching(1.0))
    np.testing.assert_allclose(one.q.mean, direct.mean, rtol=1e-12)
    pvi = fedgvi(prior, [Client(GaussianLocation(x)) for x in XS[1:]], 3)
    ar = fedgvi(
        prior, [Client(GaussianLocation(x)) for x in XS[1:]], 5, server_divergence=AlphaRenyi(2.5)
    )
    truth = np.mean(np.concatenate(XS[1:]))
    assert abs(ar.q.mean[0] - truth) < abs(pvi.q.mean[0] - truth)
    assert ar.rounds_to_converge(1e-8) is not None


def test_improper_products_are_damped_and_reported():
    prior = NatGaussian.from_moments([0.0], [1.0])
    old = [NatGaussian.flat(1), NatGaussian.flat(1)]
    new = [
        NatGaussian(np.array([0.0]), np.array([-0.8])),
        NatGaussian(np.array([0.0]), np.array([-0.8])),
    ]
    events: Counter[str] = Counter()
    q, factors = aggregate(prior, prior, old, new, KL(), events)
    assert q.is_proper() and events["damped"] >= 1
    assert factors[0].J[0] > -0.5


def test_an_improper_cavity_is_clipped_and_reported():
    q = NatGaussian.from_moments([0.0], [1.0])
    factor = NatGaussian(np.array([0.0]), np.array([2.0]))  # more precise than q itself
    up = client_step(q, factor, GaussianLocation(XS[1]))
    assert up.events["clipped"] == 1
    assert np.all(np.isfinite(up.factor.h)) and up.local.is_proper()


def test_monte_carlo_client_recovers_the_conjugate_answer():
    prior = NatGaussian.from_moments([0.0], [10.0])
    model = GaussianLocation(XS[1])
    exact = local_posterior(prior, model)
    opt = LocalOptimizer(method="adam", steps=3000, lr=0.02, samples=200)
    mc = local_posterior(
        prior, model, conjugate=False, optimizer=opt, generator=torch.Generator().manual_seed(0)
    )
    assert abs(mc.mean[0] - exact.mean[0]) < 0.02
    assert mc.var[0] == pytest.approx(exact.var[0], rel=0.3)


def test_logistic_regression_runs_and_separates():
    X = np.hstack([RNG.normal(size=(200, 2)), np.ones((200, 1))])
    y = (X[:, 0] - X[:, 1] > 0).astype(int)
    prior = NatGaussian.from_moments(np.zeros(3), np.ones(3))
    clients = [Client(LogisticRegression(X[i::2], y[i::2]), damping=0.5) for i in range(2)]
    opt = LocalOptimizer(steps=200, lr=0.05, samples=20)
    res = fedgvi(prior, clients, 4, optimizer=opt)
    w = res.q.mean
    assert w[0] > 0.5 and w[1] < -0.5
    assert np.mean(((X @ w) > 0) == y) > 0.9


def test_bad_arguments_say_what_is_wrong():
    prior = NatGaussian.from_moments([0.0], [1.0])
    client = Client(GaussianLocation(XS[0]))
    with pytest.raises(ValueError, match="rounds must be an integer >= 1"):
        fedgvi(prior, [client], 0)
    with pytest.raises(ValueError, match="clients must not be empty"):
        fedgvi(prior, [], 1)
    with pytest.raises(ValueError, match="prior must be a proper"):
        fedgvi(NatGaussian.flat(1), [client], 1)
    with pytest.raises(ValueError, match="damping must lie in"):
        client_step(prior, NatGaussian.flat(1), client.model, damping=0.0)
    with pytest.raises(ValueError, match="method must be"):
        LocalOptimizer(method="sgd")
    with pytest.raises(ValueError, match="parameter dimension is 1, the Gaussian's dimension 2"):
        local_posterior(NatGaussian.from_moments([0.0, 0.0], [1.0, 1.0]), client.model)
    with pytest.raises(ValueError, match="no conjugate update"):
        local_posterior(prior, client.model, NLL(), AlphaRenyi(2.0), conjugate=True)
    with pytest.raises(ValueError, match="sigma2 must be a positive number"):
        GaussianLocation(XS[0], sigma2=0.0)
    with pytest.raises(ValueError, match="alpha must be > 0 and not 1"):
        AlphaRenyi(1.0)


def test_flower_strategy_and_client_app_match_the_loop():
    pytest.importorskip("flwr")
    from icml25.fedgvi.flower import run_in_process

    prior = NatGaussian.from_moments([3.0], [0.1])

    def client_fn(pid, num):
        return Client(GaussianLocation(XS[pid]), IMQScoreMatching(1.0))

    q, factors = run_in_process(prior, client_fn, 4, 4, server_divergence=AlphaRenyi(2.5))
    loop = fedgvi(prior, [client_fn(i, 4) for i in range(4)], 4, server_divergence=AlphaRenyi(2.5))
    np.testing.assert_allclose(q.mean, loop.q.mean, rtol=1e-10)
    np.testing.assert_allclose(q.var, loop.q.var, rtol=1e-10)
    for a, b in zip(factors, loop.factors, strict=True):
        np.testing.assert_allclose(a.J, b.J, rtol=1e-10)


def test_minibatches_are_unbiased_and_init_only_moves_the_start():
    prior = NatGaussian.from_moments([0.0], [10.0])
    model = GaussianLocation(np.concatenate(XS[1:]))
    assert model.take(torch.arange(5)).n == 5
    exact = local_posterior(prior, model)
    opt = LocalOptimizer(method="adam", steps=3000, lr=0.02, samples=64, batch_size=16)
    mc = local_posterior(
        prior, model, conjugate=False, optimizer=opt, generator=torch.Generator().manual_seed(0)
    )
    assert abs(mc.mean[0] - exact.mean[0]) < 0.03
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1"):
        LocalOptimizer(batch_size=0)
    # a conjugate run ignores where an optimiser would start
    clients = [Client(GaussianLocation(x)) for x in XS]
    a = fedgvi(prior, clients, 2)
    b = fedgvi(prior, clients, 2, init=NatGaussian.from_moments([5.0], [1e-3]))
    np.testing.assert_array_equal(a.q.h, b.q.h)


def test_epochs_stop_early_and_summed_samples_weight_the_data():
    prior = NatGaussian.from_moments([0.0], [10.0])
    x = np.random.default_rng(3).normal(1.0, 1.0, 200)
    model = GaussianLocation(x)
    exact = local_posterior(prior, model)
    events: Counter[str] = Counter()
    opt = LocalOptimizer(method="adam", steps=400, lr=0.05, samples=8, batch_size=50, patience=5)
    g = torch.Generator().manual_seed(0)
    q = local_posterior(prior, model, conjugate=False, optimizer=opt, generator=g, events=events)
    assert abs(q.mean[0] - exact.mean[0]) < 0.07  # one posterior sd
    assert events["solves"] == 1 and events["early-stopped"] == 1 and events["epochs"] < 400
    # summing the data term over S samples weights it S times: the posterior of S copies
    s = 4
    summed = LocalOptimizer(
        method="adam", steps=400, lr=0.05, samples=s, batch_size=50, patience=20, mc="sum"
    )
    start = NatGaussian.from_moments([1.0], [1e-3])
    q_sum = local_posterior(
        prior, model, conjugate=False, optimizer=summed, generator=g, start=start
    )
    heavy = local_posterior(prior, GaussianLocation(np.tile(x, s)))
    assert abs(q_sum.var[0] / heavy.var[0] - 1) < 0.3
    assert abs(q_sum.mean[0] - heavy.mean[0]) < 0.07
    with pytest.raises(ValueError, match="patience must be an integer >= 1"):
        LocalOptimizer(patience=0)
    with pytest.raises(ValueError, match="mc must be 'mean' or 'sum'"):
        LocalOptimizer(mc="median")
