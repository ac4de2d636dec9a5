"""FedCLUP: the closed-form PFL optimum, the algorithm's fixed point, the two limits, Flower
against the in-process runner, gradients, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml25.core.models import MLP
from icml25.pfl_tradeoff import (
    LeastSquares,
    SoftmaxRegression,
    TorchProblem,
    adaptive_lambda,
    fedclup,
    local_update,
    pfl_optimum,
    server_update,
)


def _clients(seed=0, m=5, n=40, d=4, R=0.5):
    rng = np.random.default_rng(seed)
    w_g = rng.normal(size=d)
    out = []
    for _ in range(m):
        X = rng.normal(size=(n, d))
        w = w_g + R * rng.normal(size=d) / math.sqrt(d)
        out.append(LeastSquares(X, X @ w + rng.normal(size=n)))
    return out


def _objective_grad(problems, lam, w_g, w_locals):
    m = len(problems)
    g_loc = [(pr.grad(w) + lam * (w - w_g)) / m for pr, w in zip(problems, w_locals, strict=True)]
    g_glob = sum(lam * (w_g - w) for w in w_locals) / m
    return g_loc, g_glob


@pytest.mark.parametrize("lam", [0.0, 0.05, 1.0, 30.0])
def test_closed_form_optimum_is_stationary_and_the_algorithms_fixed_point(lam):
    problems = _clients()
    w_g, w_loc = pfl_optimum(problems, lam)
    g_loc, g_glob = _objective_grad(problems, lam, w_g, w_loc)
    assert max(np.abs(g).max() for g in g_loc) < 1e-12
    if lam > 0:
        assert np.abs(g_glob).max() < 1e-12
    res = fedclup(problems, lam, rounds=400, local_steps=100)
    np.testing.assert_allclose(res.w_global, w_g, atol=1e-8)
    for a, b in zip(res.w_locals, w_loc, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-8)


def test_lambda_zero_is_local_least_squares():
    problems = _clients(1)
    _, w_loc = pfl_optimum(problems, 0.0)
    for pr, w in zip(problems, w_loc, strict=True):
        np.testing.assert_allclose(w, np.linalg.lstsq(pr.X, pr.y, rcond=None)[0], atol=1e-10)


def test_large_lambda_approaches_fedavgs_single_model():
    problems = _clients(2)
    pooled = np.linalg.solve(sum(p.A for p in problems), sum(p.b for p in problems))
    w_g, w_loc = pfl_optimum(problems, 1e6)
    np.testing.assert_allclose(w_g, pooled, atol=1e-5)
    assert max(np.abs(w - pooled).max() for w in w_loc) < 1e-5


def test_flower_equals_the_in_process_runner():
    pytest.importorskip("flwr")
    from icml25.pfl_tradeoff.flower import run_in_process

    problems = _clients(3)
    smooth = max(p.smoothness for p in problems)
    for lam in (0.0, 0.3, 5.0):
        ref = fedclup(problems, lam, rounds=6, local_steps=7)
        w_g, w_loc = run_in_process(
            lambda i, _n: problems[i],
            len(problems),
            lam,
            rounds=6,
            local_steps=7,
            w0=np.zeros(4),
            smoothness=smooth,
        )
        np.testing.assert_allclose(w_g, ref.w_global, atol=1e-12)
        for a, b in zip(w_loc, ref.w_locals, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-12)


def test_server_step_with_unit_step_is_the_average():
    w_g = np.array([1.0, 1.0])
    locs = [np.array([0.0, 2.0]), np.array([2.0, 4.0])]
    np.testing.assert_allclose(server_update(w_g, locs, [1, 1], 2.0, 0.5), [1.0, 3.0])


def test_local_update_is_gd_on_the_proximal_objective():
    pr = _clients(4)[0]
    w_g, w0 = np.ones(4), np.zeros(4)
    w = local_update(pr, w0, w_g, 0.7, 3, lr=0.1)
    ref = w0.copy()
    for _ in range(3):
        ref = ref - 0.1 * (pr.A @ ref - pr.b + 0.7 * (ref - w_g))
    np.testing.assert_allclose(w, ref, atol=1e-14)


def test_softmax_and_torch_gradients_match_finite_differences():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 5)), rng.integers(0, 3, size=30)
    sm = SoftmaxRegression(X, y, 3)
    w = rng.normal(size=15) * 0.3
    num = np.array([(sm.loss(w + 1e-6 * e) - sm.loss(w - 1e-6 * e)) / 2e-6 for e in np.eye(15)])
    np.testing.assert_allclose(sm.grad(w), num, atol=1e-7)
    torch.manual_seed(0)
    net = MLP(5, (4,), 3)
    tp = TorchProblem(net, torch.tensor(X, dtype=torch.float32), torch.tensor(y), smoothness=1.0)
    w0 = tp.initial()
    e = np.zeros_like(w0)
    e[3] = 1.0
    num3 = (tp.loss(w0 + 1e-3 * e) - tp.loss(w0 - 1e-3 * e)) / 2e-3
    assert tp.grad(w0)[3] == pytest.approx(num3, rel=1e-2, abs=1e-4)


def test_softmax_predict_gives_labels_and_scores_have_their_own_names():
    """Issue 69 item 3: ``predict`` returned ``(n, K)`` scores, so the accuracy line
    ``np.mean(problem.predict(w, X) == y)`` failed to broadcast. Labels are the argmax of the
    scores ``X W``, probabilities their softmax; a client's model from fedclup scores well."""
    rng = np.random.default_rng(1)
    K, d = 3, 4
    W_true = rng.normal(size=(d, K)) * 3
    X = rng.normal(size=(120, d))
    y = (X @ W_true).argmax(1)
    clients = [SoftmaxRegression(X[i::2], y[i::2], K) for i in range(2)]
    res = fedclup(clients, lam=0.1, rounds=30, local_steps=20)
    sm, w = clients[0], res.w_locals[0]
    scores = sm.decision_function(w, X)
    np.testing.assert_allclose(scores, X @ w.reshape(d, K), rtol=1e-12)  # W = w.reshape(d, K)
    labels = sm.predict(w, X)
    assert labels.shape == (120,) and labels.dtype == np.int64
    np.testing.assert_array_equal(labels, scores.argmax(1))
    proba = sm.predict_proba(w, X)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(proba, np.exp(scores) / np.exp(scores).sum(1, keepdims=True))
    np.testing.assert_array_equal(proba.argmax(1), labels)
    accuracy = np.mean(sm.predict(w, X) == y)  # the user's line
    assert accuracy > 0.9, accuracy  # linearly separable labels from X W_true
    # the training loss's probabilities are the same function
    np.testing.assert_allclose(sm.predict_proba(w, sm.X), sm._probs(w), rtol=1e-12)
    # least squares predicts values X w
    ls = LeastSquares(X, X[:, 0])
    np.testing.assert_allclose(ls.predict(np.eye(d)[0], X), X[:, 0], rtol=1e-12)
    with pytest.raises(ValueError, match=r"X must have 4 columns \(as the training X\), got 3"):
        sm.predict(w, X[:, :3])
    with pytest.raises(ValueError, match=r"w must have the model dimension 12, got 4"):
        sm.predict(w[:4], X)
    with pytest.raises(ValueError, match=r"X"):
        sm.decision_function(w, np.full((2, d), np.nan))


def test_adaptive_lambda_is_the_codes_rule():
    assert adaptive_lambda(1.0, 200) == pytest.approx(5 / 200)
    assert adaptive_lambda(0.01, 200) == pytest.approx(5 / (math.sqrt(200) * 0.01))
    with pytest.raises(ValueError, match="r_est"):
        adaptive_lambda(0.0, 10)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: fedclup(_clients(), -1.0), "lam must be"),
        (lambda: fedclup(_clients(), float("nan")), "lam must be"),
        (lambda: fedclup([], 1.0), "at least one client"),
        (lambda: fedclup(_clients(), 1.0, rounds=0), "rounds must be an integer >= 1"),
        (lambda: fedclup([*_clients(d=3), *_clients(d=4)], 1.0), "one model dimension"),
        (lambda: LeastSquares(np.zeros((0, 3)), np.zeros(0)), "at least 1 rows"),
        (lambda: LeastSquares(np.zeros((4, 3)), np.zeros(5)), "one entry per row of X"),
        (lambda: SoftmaxRegression(np.zeros((2, 3)), [0, 5], 3), r"labels must be in \[0, 3\)"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ------------------------------------------------------------------ the image sweep's machinery


def _toy_images(seed: int = 0, per_class: int = 30) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(10), per_class)
    X = (rng.random((len(y), 784)) * 0.2 + (y[:, None] == np.arange(784) % 10) * 0.8).astype(
        np.float32
    )
    return X, y, X.copy(), y.copy()


def test_split_by_classes_gives_c_classes_and_disjoint_images() -> None:
    from icml25.pfl_tradeoff.images import split_by_classes

    X, y, Xt, yt = _toy_images()
    for c in (2, 5, 10):
        d = split_by_classes(X, y, Xt, yt, c, np.random.default_rng(1), train=20, test=10)
        assert d.X.shape == (10, 20, 784) and d.Xt.shape == (10, 10, 784)
        for i in range(10):
            assert set(d.y[i].tolist()) == set(d.classes[i]) == set(d.yt[i].tolist())
            assert len(d.classes[i]) == c
        # every class goes to c clients: training images are never shared
        rows = d.X.reshape(-1, 784).numpy()
        assert len(np.unique(rows, axis=0)) == len(rows)
    with pytest.raises(ValueError, match="too few"):
        split_by_classes(X, y, Xt, yt, 2, np.random.default_rng(1), train=200, test=10)


def _conv_reference(name: str, p: dict, a: int, k: int, X: torch.Tensor) -> torch.Tensor:
    """Model ``(a, k)``'s logits by torch's own ``conv2d`` on one image batch."""
    F = torch.nn.functional
    img = X.reshape(-1, 1, 28, 28)
    if name == "cnn":
        h = F.conv2d(img, p["Wc"][a, k], p["bc"][a, k], stride=2, padding=2)
        return F.max_pool2d(torch.relu(h), 2).flatten(1) @ p["Wf"][a, k] + p["bf"][a, k]
    h = F.max_pool2d(torch.relu(F.conv2d(img, p["W1"][a, k], p["b1"][a, k], padding=1)), 2)
    h = F.max_pool2d(torch.relu(F.conv2d(h, p["W2"][a, k], p["b2"][a, k], padding=1)), 2)
    h = torch.relu(h.flatten(1) @ p["W3"][a, k] + p["b3"][a, k])
    return h @ p["W4"][a, k] + p["b4"][a, k]


@pytest.mark.parametrize("name", ["cnn", "twoconv"])
def test_batched_cnns_equal_one_model_at_a_time(name: str) -> None:
    """The grouped convolutions keep every (arm, client) model apart and are the CNN they say."""
    from icml25.pfl_tradeoff.images import ConvNet, TwoConvNet

    m = ConvNet(4) if name == "cnn" else TwoConvNet(3, 5, hidden=7)
    g = torch.Generator().manual_seed(1)
    p = {  # every model different: the shared init plus noise
        key: v.expand(2, 3, *v.shape) + 0.1 * torch.randn(2, 3, *v.shape, generator=g)
        for key, v in m.init(g).items()
    }
    shared = torch.rand(3, 4, 784, generator=g)  # one image batch per client, for every arm
    own = torch.rand(2, 3, 4, 784, generator=g)  # one batch per model
    out_shared = m.forward(p, m.prepare(shared).unsqueeze(0))
    out_own = m.forward(p, m.prepare(own))
    assert out_shared.shape == out_own.shape == (2, 3, 4, 10)
    for a in range(2):
        for k in range(3):
            ref = _conv_reference(name, p, a, k, shared[k])
            torch.testing.assert_close(out_shared[a, k], ref, rtol=1e-5, atol=1e-5)
            ref = _conv_reference(name, p, a, k, own[a, k])
            torch.testing.assert_close(out_own[a, k], ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("model", ["logreg", "cnn", "twoconv"])
def test_arms_are_independent_and_fedavg_with_one_client_is_local(model: str) -> None:
    import math

    from icml25.pfl_tradeoff.images import ConvNet, LogReg, TwoConvNet, run_arms, split_by_classes

    X, y, Xt, yt = _toy_images()
    d = split_by_classes(X, y, Xt, yt, 3, np.random.default_rng(2), train=24, test=12)
    m = {"logreg": LogReg(), "cnn": ConvNet(2), "twoconv": TwoConvNet(2, 3)}[model]
    kw = dict(rounds=3, epochs=2, batch=8, lr=0.05, seed=4)
    both, _ = run_arms(m, d, [0.0, 0.3, math.inf], **kw)
    alone, _ = run_arms(m, d, [0.3], **kw)  # the batched run equals the arm run alone
    assert alone[0].accuracy == pytest.approx(both[1].accuracy)
    assert alone[0].train_loss == pytest.approx(both[1].train_loss, rel=1e-5)
    assert both[0].train_loss < both[2].train_loss  # local fits its own data best
    one = type(d)(d.X[:1], d.y[:1], d.Xt[:1], d.yt[:1], d.classes[:1])
    res, official = run_arms(m, one, [0.0, math.inf], **kw)
    assert res[0].train_loss == pytest.approx(res[1].train_loss, rel=1e-5)
    assert official == pytest.approx(res[1].accuracy)


def test_adaptive_arm_reports_its_lambda() -> None:
    import math

    from icml25.pfl_tradeoff.images import LogReg, run_arms, split_by_classes

    X, y, Xt, yt = _toy_images()
    d = split_by_classes(X, y, Xt, yt, 2, np.random.default_rng(3), train=20, test=10)
    res, official = run_arms(LogReg(), d, [math.nan], rounds=4, epochs=1, batch=10, seed=0)
    assert 0 < res[0].lam < math.inf and math.isnan(official)


def test_the_flower_runner_defaults_are_fedclups():
    """Issue 56: run_in_process needs neither w0 nor smoothness, as fedclup does not; with
    the defaults it runs fedclup's rounds (w0 zeros, L the largest client's)."""
    pytest.importorskip("flwr")
    from icml25.pfl_tradeoff.flower import run_in_process

    problems = _clients(3)
    ref = fedclup(problems, 0.3, rounds=4, local_steps=5)
    w_g, w_loc = run_in_process(
        lambda i, _n: problems[i], len(problems), 0.3, rounds=4, local_steps=5
    )
    np.testing.assert_allclose(w_g, ref.w_global, atol=1e-12)
    for a, b in zip(w_loc, ref.w_locals, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-12)
