"""IT3: the ZigZag wrapper, the engine's gradient and resets, the OOD score, the baselines."""

import copy

import numpy as np
import pytest
import torch
from scipy.spatial.distance import jensenshannon
from torch import nn
from torch.nn import functional as F

from icml25.core.models import MLP, SmallCNN
from icml25.it3 import (
    IT3,
    ZigZag,
    bn_adapt,
    idempotence_error,
    js_divergence,
    l1_distance,
    tent,
    zigzag_loss,
    zigzag_recursion,
)


def _trained_mlp(task="classification", seed=0, steps=150):
    """A small ZigZag MLP trained on a 2-D toy problem (3 classes, or a regression)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(300, 2, generator=g)
    torch.manual_seed(seed)
    if task == "classification":
        y = (X[:, 0] > 0).long() + (X[:, 1] > 0.5).long()
        zz = ZigZag(MLP(2 + 3, [32], 3), 3)
    else:
        y = (X[:, :1] * X[:, 1:]).tanh()
        zz = ZigZag(MLP(2 + 1, [32], 1), 1, task="regression", neutral=-1.0)
    opt = torch.optim.Adam(zz.parameters(), lr=1e-2)
    for _ in range(steps):
        opt.zero_grad()
        zigzag_loss(zz, X, y).backward()
        opt.step()
    return zz.eval(), X, y


# --- distances -------------------------------------------------------------------------------


def test_js_divergence_matches_scipy():
    g = torch.Generator().manual_seed(0)
    p = torch.rand(6, 5, generator=g, dtype=torch.float64).softmax(-1)
    q = torch.rand(6, 5, generator=g, dtype=torch.float64).softmax(-1)
    p[0] = torch.tensor([1.0, 0, 0, 0, 0], dtype=torch.float64)  # zeros are fine (0 log 0 = 0)
    ours = js_divergence(p, q).numpy()
    ref = np.array([jensenshannon(a, b) ** 2 for a, b in zip(p.numpy(), q.numpy(), strict=True)])
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-14)
    assert js_divergence(p, p).abs().max() < 1e-12


def test_js_divergence_gradient_is_finite_when_probabilities_underflow():
    logits = torch.tensor([[200.0, 0.0, -200.0], [0.0, 0.0, 0.0]], requires_grad=True)
    p = logits.softmax(-1)
    assert (p == 0).any()
    q = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    js_divergence(p, q).sum().backward()
    assert torch.isfinite(logits.grad).all()


def test_l1_distance_per_sample():
    a, b = torch.randn(4, 3, 2), torch.randn(4, 3, 2)
    np.testing.assert_allclose(
        l1_distance(a, b).numpy(), np.abs((a - b).numpy()).reshape(4, -1).mean(1), rtol=1e-6
    )


# --- ZigZag wrapper --------------------------------------------------------------------------


def test_concat_injection_equals_model_on_widened_input():
    lin = nn.Linear(5, 2)
    zz = ZigZag(lin, 3)
    x, a = torch.randn(4, 2), torch.rand(4, 3)
    torch.testing.assert_close(zz(x, aux=a), lin(torch.cat([x, a], -1)))
    torch.testing.assert_close(zz(x), lin(torch.cat([x, torch.zeros(4, 3)], -1)))
    uni = ZigZag(lin, 3, neutral="uniform")
    torch.testing.assert_close(uni(x), lin(torch.cat([x, torch.full((4, 3), 1 / 3)], -1)))


def test_node_channel_broadcast_and_node_level_aux():
    lin = nn.Linear(4, 1)
    zz = ZigZag(lin, 1, task="regression")
    x = torch.randn(2, 6, 3)  # (graphs, nodes, features)
    a_graph = torch.randn(2, 1)
    expect = lin(torch.cat([x, a_graph[:, None, :].expand(2, 6, 1)], -1))
    torch.testing.assert_close(zz(x, aux=a_graph), expect)
    a_node = torch.randn(2, 6, 1)
    torch.testing.assert_close(zz(x, aux=a_node), lin(torch.cat([x, a_node], -1)))


def test_feature_map_injection_adds_embedding_over_space():
    torch.manual_seed(0)
    cnn = SmallCNN(10, width=4, hidden=8).eval()
    zz = ZigZag(cnn, 10, layer="block2", channels=8).eval()
    x, a = torch.randn(3, 1, 28, 28), torch.rand(3, 10)
    e = F.leaky_relu(zz.embed(a), 0.01)
    h = cnn.block2(cnn.block1(x)) + e[:, :, None, None]
    expect = cnn.fc2(cnn.act(cnn.fc1(h.flatten(1))))
    torch.testing.assert_close(zz(x, aux=a), expect)
    torch.testing.assert_close(cnn(x), cnn(x))  # the hook is inert outside ZigZag.forward
    with torch.no_grad():
        zz.embed.weight.zero_()
        zz.embed.bias.zero_()
    torch.testing.assert_close(zz(x, aux=a), cnn(x))


def test_deepcopy_rebinds_the_hook_to_the_copy():
    torch.manual_seed(0)
    zz = ZigZag(SmallCNN(10, width=4, hidden=8), 10, layer="block2", channels=8).eval()
    x, a = torch.randn(2, 1, 28, 28), torch.rand(2, 10)
    before = zz(x, aux=a)
    twin = copy.deepcopy(zz)
    with torch.no_grad():
        twin.embed.bias.add_(5.0)
    torch.testing.assert_close(zz(x, aux=a), before)  # the original is untouched
    assert not torch.allclose(twin(x, aux=a), before)


def test_channel_dim_last_for_token_features():
    class Tok(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(3, 5)
            self.head = nn.Linear(5, 2)

        def forward(self, x):
            return self.head(self.enc(x)).mean(1)

    m = Tok()
    zz = ZigZag(m, 2, layer="enc", channels=5, channel_dim=-1)
    x, a = torch.randn(4, 7, 3), torch.rand(4, 2)
    e = F.leaky_relu(zz.embed(a), 0.01)
    torch.testing.assert_close(zz(x, aux=a), m.head(m.enc(x) + e[:, None, :]).mean(1))
    wrong = ZigZag(Tok(), 2, layer="enc", channels=5)  # channel_dim=1 is the node axis here
    with pytest.raises(ValueError, match="channels=5"):
        wrong(x, aux=a)


def test_zigzag_loss_is_the_two_pass_loss_and_marks_the_model():
    torch.manual_seed(0)
    zz = ZigZag(MLP(2 + 3, [8], 3), 3)
    x, y = torch.randn(5, 2), torch.tensor([0, 1, 2, 1, 0])
    assert not bool(zz.zigzag_trained)
    loss = zigzag_loss(zz, x, y)
    expect = F.cross_entropy(zz(x), y) + F.cross_entropy(zz(x, aux=F.one_hot(y, 3).float()), y)
    torch.testing.assert_close(loss, expect)
    assert bool(zz.zigzag_trained)
    assert bool(copy.deepcopy(zz).zigzag_trained)  # saved in the state dict


def test_zigzag_bad_input():
    with pytest.raises(TypeError, match=r"nn\.Module"):
        ZigZag(lambda x: x, 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="aux_dim"):
        ZigZag(nn.Linear(3, 2), 0)
    with pytest.raises(ValueError, match="task"):
        ZigZag(nn.Linear(3, 2), 1, task="ranking")
    with pytest.raises(ValueError, match="neutral"):
        ZigZag(nn.Linear(3, 2), 1, neutral=float("nan"))
    with pytest.raises(ValueError, match="not a submodule"):
        ZigZag(SmallCNN(10), 10, layer="block9", channels=32)
    with pytest.raises(ValueError, match="channels"):
        ZigZag(SmallCNN(10), 10, layer="block2")
    zz = ZigZag(MLP(2 + 3, [8], 3), 3)
    with pytest.raises(ValueError, match="aux must have shape"):
        zz(torch.randn(4, 2), aux=torch.rand(4, 2))
    with pytest.raises(ValueError, match="class indices"):
        zigzag_loss(zz, torch.randn(2, 2), torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="1-D integer"):
        zigzag_loss(zz, torch.randn(2, 2), torch.tensor([0.0, 1.0]))
    reg = ZigZag(MLP(2 + 1, [8], 1), 1, task="regression")
    with pytest.raises(ValueError, match="shape"):
        zigzag_loss(reg, torch.randn(3, 2), torch.randn(3, 2))
    with pytest.raises(ValueError, match="NaN"):
        zigzag_loss(reg, torch.randn(2, 2), torch.tensor([[0.0], [float("nan")]]))


# --- IT3 engine ------------------------------------------------------------------------------


def test_it3_refuses_models_without_zigzag_training():
    with pytest.raises(TypeError, match="ZigZag"):
        IT3(MLP(2, [4], 3))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not trained with its auxiliary input"):
        IT3(ZigZag(MLP(5, [4], 3), 3))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"steps": -1}, "steps"),
        ({"steps": 1.5}, "steps"),
        ({"lr": 0.0}, "lr"),
        ({"lr": float("inf")}, "lr"),
        ({"reset": "epoch"}, "reset"),
        ({"output": "mean"}, "output"),
        ({"optimizer": "lbfgs"}, "optimizer"),
        ({"distance": "cosine"}, "distance"),
    ],
)
def test_it3_bad_hyperparameters(kwargs, match):
    zz, _, _ = _trained_mlp(steps=1)
    with pytest.raises(ValueError, match=match):
        IT3(zz, **kwargs)


def test_it3_bad_batches():
    zz, X, _ = _trained_mlp(steps=1)
    it3 = IT3(zz, steps=1)
    with pytest.raises(ValueError, match="NaN"):
        it3(torch.tensor([[0.0, float("nan")]]))
    with pytest.raises(ValueError, match="batched"):
        it3(X[0])


def _reference_grads(zz, x, detach_anchor_input):
    f = copy.deepcopy(zz)
    anchor = copy.deepcopy(zz).requires_grad_(False)
    y0 = f(x).softmax(-1)
    fed = y0.detach() if detach_anchor_input else y0
    y1 = anchor(x, aux=fed).softmax(-1)
    js_divergence(y0, y1).mean().backward()
    return torch.cat([p.grad.flatten() for p in f.parameters()])


def test_gradient_flows_through_y0_into_the_anchor():
    """One SGD step of the engine moves theta by -lr * grad of D(y0, F(x, y0)), with y0 live in
    both places; a y0 detached before the anchor gives a different gradient (test can fail)."""
    zz, X, _ = _trained_mlp()
    zz = zz.double()  # float64, so that theta1 - theta0 resolves a step of size lr * grad
    x = X[:64].double() + 0.8 * torch.randn(64, 2, generator=torch.Generator().manual_seed(3))
    lr = 1e-3
    it3 = IT3(zz, steps=1, lr=lr, optimizer="sgd")
    it3(x)
    step = torch.cat(
        [(p1 - p0).flatten() for p1, p0 in zip(it3.work.parameters(), zz.parameters(), strict=True)]
    )
    g_full = _reference_grads(zz, x, detach_anchor_input=False)
    g_detached = _reference_grads(zz, x, detach_anchor_input=True)
    torch.testing.assert_close(step, -lr * g_full, rtol=1e-4, atol=1e-9)
    assert (g_full - g_detached).norm() > 0.05 * g_full.norm()
    for p in it3.anchor.parameters():  # the anchor is frozen
        assert not p.requires_grad


def test_reset_restores_weights_exactly_and_model_is_untouched():
    zz, X, _ = _trained_mlp()
    original = {k: v.clone() for k, v in zz.state_dict().items()}
    x = X[:32] + 1.0
    it3 = IT3(zz, steps=5, lr=1e-2, reset_optimizer=True)
    first = it3(x)
    assert any(
        not torch.equal(v, it3.work.state_dict()[k]) for k, v in original.items()
    )  # adaptation changed the working copy
    second = it3(x)  # reset per batch: same batch, same answer
    torch.testing.assert_close(first, second, rtol=0, atol=0)
    it3.reset_weights()
    for k, v in original.items():
        torch.testing.assert_close(it3.work.state_dict()[k], v, rtol=0, atol=0)
        torch.testing.assert_close(zz.state_dict()[k], v, rtol=0, atol=0)


def test_online_mode_carries_weights_between_calls():
    zz, X, _ = _trained_mlp()
    x = X[:32] + 1.0
    batch = IT3(zz, steps=3, lr=1e-2, reset="batch", reset_optimizer=True)
    online = IT3(zz, steps=3, lr=1e-2, reset="never")
    torch.testing.assert_close(online(x), batch(x))
    assert not torch.allclose(online(x), batch(x))


def test_instance_mode_equals_batches_of_one():
    zz, X, _ = _trained_mlp()
    x = X[:5] + 0.7
    per_instance = IT3(zz, steps=3, lr=1e-2, reset="instance", reset_optimizer=True)(x)
    single = IT3(zz, steps=3, lr=1e-2, reset_optimizer=True)
    torch.testing.assert_close(per_instance, torch.cat([single(x[i : i + 1]) for i in range(5)]))


def test_zero_steps_is_the_recursion_or_the_plain_model():
    zz, X, _ = _trained_mlp()
    x = X[:16]
    torch.testing.assert_close(IT3(zz, steps=0)(x), zigzag_recursion(zz, x))
    with torch.no_grad():
        torch.testing.assert_close(IT3(zz, steps=0, output="first")(x), zz(x))


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_adaptation_lowers_the_idempotence_error_on_the_batch(task):
    zz, X, _ = _trained_mlp(task)
    x = X[:64] * 2.5  # shifted
    it3 = IT3(zz, steps=20, lr=1e-3, optimizer="sgd" if task == "regression" else "adam")
    it3(x)
    (losses,) = it3.last_losses
    assert len(losses) == 21
    assert losses[-1] < 0.9 * losses[0]
    # The recorded start equals the model's own idempotence error on the batch.
    assert losses[0] == pytest.approx(float(idempotence_error(zz, x).mean()), rel=1e-5)


def test_idempotence_error_by_hand():
    zz, X, _ = _trained_mlp()
    x = X[:10]
    with torch.no_grad():
        p0 = zz(x).softmax(-1)
        p1 = zz(x, aux=p0).softmax(-1)
    torch.testing.assert_close(idempotence_error(zz, x), js_divergence(p0, p1))
    reg, Xr, _ = _trained_mlp("regression")
    with torch.no_grad():
        r0 = reg(Xr[:10])
        r1 = reg(Xr[:10], aux=r0)
    torch.testing.assert_close(idempotence_error(reg, Xr[:10]), (r0 - r1).abs().squeeze(1))


def test_extra_model_arguments_are_passed_and_split_per_instance():
    class Agg(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 1)

        def forward(self, x, adj):
            return adj @ self.lin(x)

    torch.manual_seed(0)
    zz = ZigZag(Agg(), 1, task="regression")
    x, adj = torch.randn(4, 5, 2), torch.rand(4, 5, 5)
    y = torch.randn(4, 5, 1)
    zigzag_loss(zz, x, y, adj).backward()
    torch.testing.assert_close(
        zz(x, adj, aux=y), adj @ zz.model.lin(torch.cat([x, y], -1))
    )  # node-level aux with an extra argument
    batch_of_one = IT3(zz, steps=2, lr=1e-2, reset_optimizer=True)
    expect = torch.cat([batch_of_one(x[i : i + 1], adj[i : i + 1]) for i in range(4)])
    got = IT3(zz, steps=2, lr=1e-2, reset="instance", reset_optimizer=True)(x, adj)
    torch.testing.assert_close(got, expect)


# --- baselines -------------------------------------------------------------------------------


def test_bn_adapt_equals_pytorch_train_mode_batchnorm():
    torch.manual_seed(0)
    cnn = SmallCNN(10, width=4, hidden=8)
    cnn.train()
    cnn(torch.randn(32, 1, 28, 28))  # running statistics away from their defaults
    cnn.eval()
    x = torch.randn(16, 1, 28, 28) * 2 + 1
    with torch.no_grad():
        ref = copy.deepcopy(cnn).train()(x)
    torch.testing.assert_close(bn_adapt(cnn, x), ref)
    assert not torch.allclose(bn_adapt(cnn, x), cnn(x))
    torch.testing.assert_close(tent(cnn, x, steps=0), ref)
    with pytest.raises(ValueError, match="BatchNorm"):
        bn_adapt(MLP(4, [3], 2), torch.randn(2, 4))


def test_tent_updates_only_batchnorm_affine_and_lowers_entropy():
    torch.manual_seed(0)
    cnn = SmallCNN(10, width=4, hidden=8).eval()
    x = torch.randn(32, 1, 28, 28)
    before = {k: v.clone() for k, v in cnn.state_dict().items()}

    def entropy(logits):
        logp = logits.log_softmax(-1)
        return float(-(logp.exp() * logp).sum(-1).mean())

    out = tent(cnn, x, steps=5, lr=1e-2)
    assert entropy(out) < entropy(tent(cnn, x, steps=0))
    for k, v in cnn.state_dict().items():  # the model passed in is untouched
        torch.testing.assert_close(v, before[k], rtol=0, atol=0)
    # Reference: Adam on the BatchNorm weights and biases alone, batch statistics on.
    ref = copy.deepcopy(cnn).train().requires_grad_(False)
    bn = [m for m in ref.modules() if isinstance(m, nn.BatchNorm2d)]
    params = [p for m in bn for p in (m.weight, m.bias)]
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.Adam(params, lr=1e-2)
    for _ in range(5):
        logp = ref(x).log_softmax(-1)
        loss = -(logp.exp() * logp).sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        torch.testing.assert_close(out, ref(x))
    # Without BatchNorm every parameter is adapted.
    no_bn = SmallCNN(10, width=4, hidden=8, batchnorm=False).eval()
    with torch.no_grad():
        plain = no_bn(x)
    assert not torch.allclose(tent(no_bn, x, steps=3, lr=1e-2), plain)
    with pytest.raises(ValueError, match="steps"):
        tent(cnn, x, steps=-1)
    reg, _, _ = _trained_mlp("regression", steps=1)
    with pytest.raises(ValueError, match="classification"):
        tent(reg, torch.randn(2, 2))


def test_recurrent_variant_feeds_back_the_first_prediction():
    torch.manual_seed(0)
    zz = ZigZag(MLP(2 + 3, [8], 3), 3)
    x, y = torch.randn(6, 2), torch.tensor([0, 1, 2, 1, 0, 2])
    onehot = F.one_hot(y, 3).float()

    def expect(a):
        first = zz(x, aux=a)
        return F.cross_entropy(first, y) + F.cross_entropy(zz(x, aux=first.softmax(-1)), y)

    got = zigzag_loss(zz, x, y, variant="recurrent", p_label=1.0)
    torch.testing.assert_close(got, expect(onehot))
    got = zigzag_loss(zz, x, y, variant="recurrent", p_label=0.0, other="neutral")
    torch.testing.assert_close(got, expect(torch.zeros(6, 3)))
    # Random labels: the same generator draws (the coin, then the classes) give the same loss.
    got = zigzag_loss(
        zz, x, y, variant="recurrent", p_label=0.0, generator=torch.Generator().manual_seed(5)
    )
    g = torch.Generator().manual_seed(5)
    torch.rand((), generator=g)
    torch.testing.assert_close(
        got, expect(F.one_hot(torch.randint(3, (6,), generator=g), 3).float())
    )
    reg = ZigZag(MLP(2 + 1, [8], 1), 1, task="regression")
    yr = torch.randn(6, 1)
    g = torch.Generator().manual_seed(1)
    got = zigzag_loss(reg, x, yr, variant="recurrent", p_label=0.0, generator=g)
    g = torch.Generator().manual_seed(1)
    torch.rand((), generator=g)
    first = reg(x, aux=yr[torch.randperm(6, generator=g)])
    torch.testing.assert_close(got, F.l1_loss(first, yr) + F.l1_loss(reg(x, aux=first), yr))
    with pytest.raises(ValueError, match="variant"):
        zigzag_loss(zz, x, y, variant="zigzag")
    with pytest.raises(ValueError, match="p_label"):
        zigzag_loss(zz, x, y, variant="recurrent", p_label=1.5)
    with pytest.raises(ValueError, match="other"):
        zigzag_loss(zz, x, y, variant="recurrent", other="uniform")


# --- latent feedback (the official MNIST notebook), starts, BatchNorm modes (issue 22) --------


def _latent_model(seed=0):
    from icml25.it3 import LatentZigZag

    torch.manual_seed(seed)
    body = nn.Sequential(nn.Linear(4, 6), nn.LeakyReLU(0.01))
    head = nn.Sequential(nn.Linear(6, 6), nn.LeakyReLU(0.01), nn.Linear(6, 3 + 6))
    zz = LatentZigZag(body, head, 3, 6, neutral="uniform")
    zz.mark_trained()
    return zz.eval()


def test_latent_zigzag_forward_by_hand():
    zz = _latent_model()
    x, a = torch.randn(5, 4), torch.rand(5, 3).softmax(-1)
    h = zz.model(x) + F.leaky_relu(zz.embed(a), 0.01)
    out = zz.head(h)
    torch.testing.assert_close(zz(x, aux=a), out[:, :3])
    _y, z = zz.forward_latent(x, aux=a)
    torch.testing.assert_close(z, out[:, 3:])
    torch.testing.assert_close(zz(x), zz(x, aux=torch.full((5, 3), 1 / 3)))
    with pytest.raises(ValueError, match="aux must have shape"):
        zz(x, aux=torch.rand(5, 4))
    with pytest.raises(ValueError, match="h must have shape"):
        zz.head_pass(torch.randn(5, 4))


def test_latent_recurrent_loss_applies_the_head_to_the_first_latent():
    zz = _latent_model()
    x, y = torch.randn(7, 4), torch.randint(3, (7,))
    got = zigzag_loss(zz, x, y, variant="recurrent", p_label=1.0)
    y1, z1 = zz.forward_latent(x, aux=F.one_hot(y, 3).float())
    y2 = zz.head_pass(z1, y1.softmax(-1))[0]
    torch.testing.assert_close(got, F.cross_entropy(y1, y) + F.cross_entropy(y2, y))


def test_latent_feedback_gradient_reaches_the_adapted_latent_and_the_head_is_frozen():
    zz = _latent_model()
    x, lr = torch.randn(8, 4), 0.1
    it3 = IT3(zz, steps=1, lr=lr, optimizer="sgd", feedback="latent")
    calls = []
    it3.anchor.model.register_forward_hook(lambda *a: calls.append(1))
    head0 = {k: v.clone() for k, v in it3.anchor.state_dict().items()}
    it3(x)
    assert not calls  # the anchor's body is never run: its head takes the adapted latent

    for k, v in it3.anchor.state_dict().items():  # the anchor never changes
        torch.testing.assert_close(v, head0[k])

    def step(detach_latent):
        f = copy.deepcopy(zz).requires_grad_(True)
        y0, z0 = f.forward_latent(x)
        z_in = z0.detach() if detach_latent else z0
        y1 = it3.anchor.head_pass(z_in, y0.softmax(-1))[0]
        loss = js_divergence(y0.softmax(-1), y1.softmax(-1)).mean()
        grads = torch.autograd.grad(loss, list(f.parameters()), allow_unused=True)
        return [
            p.detach() - lr * (g if g is not None else 0)
            for p, g in zip(f.parameters(), grads, strict=True)
        ]

    live, detached = step(False), step(True)
    for got, want in zip(it3.work.parameters(), live, strict=True):
        torch.testing.assert_close(got, want)
    assert any(not torch.allclose(a, b) for a, b in zip(live, detached, strict=True))


def test_latent_recursion_and_input_feedback_differ():
    zz = _latent_model()
    x = torch.randn(6, 4)
    y0, z0 = zz.forward_latent(x)
    torch.testing.assert_close(zigzag_recursion(zz, x), zz.head_pass(z0, y0.softmax(-1))[0])
    torch.testing.assert_close(zigzag_recursion(zz, x, feedback="input"), zz(x, aux=y0.softmax(-1)))
    torch.testing.assert_close(IT3(zz, steps=0)(x), zigzag_recursion(zz, x))
    plain, _, _ = _trained_mlp(steps=5)
    with pytest.raises(ValueError, match="LatentZigZag"):
        IT3(plain, feedback="latent")
    with pytest.raises(ValueError, match="feedback"):
        IT3(zz, feedback="sideways")


def test_random_start_is_a_seeded_one_hot():
    zz = _latent_model()
    x = torch.randn(9, 4)
    got = IT3(zz, steps=0, output="first", start="random", seed=3)(x)
    idx = torch.randint(3, (9,), generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(got, zz(x, aux=F.one_hot(idx, 3).float()))
    reg, _, _ = _trained_mlp("regression", steps=5)
    with pytest.raises(ValueError, match="classification"):
        IT3(reg, start="random")
    with pytest.raises(ValueError, match="start"):
        IT3(zz, start="zeros")


def _bn_zigzag():
    torch.manual_seed(0)
    zz = ZigZag(SmallCNN(10, width=4, hidden=8), 10, layer="block2", channels=8)
    zz.train()
    with torch.no_grad():
        for _ in range(3):
            zz(torch.randn(16, 1, 28, 28) * 2 + 1)  # running statistics away from the batch's
    zz.mark_trained()
    return zz.eval()


def test_batchnorm_modes():
    zz = _bn_zigzag()
    x = torch.randn(12, 1, 28, 28)
    before = {k: v.clone() for k, v in zz.state_dict().items()}
    batch = IT3(zz, steps=0, output="first", batchnorm="batch")(x)
    torch.testing.assert_close(batch, bn_adapt(zz, x))
    with torch.no_grad():
        torch.testing.assert_close(IT3(zz, steps=0, output="first")(x), zz(x))
    assert not torch.allclose(batch, zz(x).detach())
    it3 = IT3(zz, steps=2, lr=1e-2, batchnorm="batch")
    it3(x)
    it3(x[:6])  # weights (no running statistics) reset per batch
    assert all(m.running_mean is None for m in it3.work.modules() if isinstance(m, nn.BatchNorm2d))
    for k, v in zz.state_dict().items():  # the model passed in is untouched
        torch.testing.assert_close(v, before[k])
    with pytest.raises(ValueError, match="batchnorm"):
        IT3(zz, batchnorm="train")


# --- issue 53: the airfoil notebook's one-pass loss, the CIFAR notebook's self-anchor ---------


def test_single_variant_is_one_pass_with_the_label_per_sample():
    torch.manual_seed(0)
    reg = ZigZag(MLP(2 + 1, [8], 1), 1, task="regression", neutral=-1.0)
    x, y = torch.randn(7, 2), torch.randn(7, 1)
    mse = F.mse_loss
    got = zigzag_loss(reg, x, y, variant="single", p_label=1.0, loss_fn=mse)
    torch.testing.assert_close(got, mse(reg(x, aux=y), y))
    got = zigzag_loss(reg, x, y, variant="single", p_label=0.0, loss_fn=mse)
    torch.testing.assert_close(got, mse(reg(x), y))
    assert bool(reg.zigzag_trained)
    # p = 0.25 (the notebook): the same per-sample draws give the same mixed signal
    got = zigzag_loss(
        reg, x, y, variant="single", p_label=0.25, loss_fn=mse,
        generator=torch.Generator().manual_seed(4),
    )  # fmt: skip
    keep = torch.rand(7, generator=torch.Generator().manual_seed(4)) < 0.25
    assert 0 < int(keep.sum()) < 7  # a real mixture: the test can tell it from either end
    a = torch.where(keep[:, None], y, torch.full_like(y, -1.0))
    torch.testing.assert_close(got, mse(reg(x, aux=a), y))
    assert not torch.allclose(got, mse(reg(x, aux=y), y))
    # node-level targets (a GNN): one draw per graph, the label on all its nodes
    lin = nn.Sequential(nn.Linear(3 + 1, 8), nn.ReLU(), nn.Linear(8, 1))
    node = ZigZag(lin, 1, task="regression", neutral=-1.0)
    xn, yn = torch.randn(5, 4, 3), torch.randn(5, 4, 1)
    got = zigzag_loss(
        node, xn, yn, variant="single", p_label=0.5, loss_fn=mse,
        generator=torch.Generator().manual_seed(1),
    )  # fmt: skip
    keep = torch.rand(5, generator=torch.Generator().manual_seed(1)) < 0.5
    a = torch.where(keep[:, None, None], yn, torch.full_like(yn, -1.0))
    torch.testing.assert_close(got, mse(node(xn, aux=a), yn))
    # classification: the one-hot label or the neutral signal
    clf = ZigZag(MLP(2 + 3, [8], 3), 3, neutral="uniform")
    yc = torch.tensor([0, 1, 2, 1, 0, 2, 1])
    got = zigzag_loss(clf, x, yc, variant="single", p_label=1.0)
    torch.testing.assert_close(got, F.cross_entropy(clf(x, aux=F.one_hot(yc, 3).float()), yc))


def test_adapted_anchor_gradient_reaches_both_passes():
    """frozen_anchor=False (the CIFAR notebook): one SGD step is -lr * grad of
    D(f(x, 0), f(x, f(x, 0))) with theta live in both passes; it differs from the frozen
    anchor's step, and the input model is untouched."""
    zz, X, _ = _trained_mlp()
    zz = zz.double()
    x = X[:64].double() + 0.8 * torch.randn(64, 2, generator=torch.Generator().manual_seed(3))
    lr = 1e-3
    original = {k: v.clone() for k, v in zz.state_dict().items()}
    it3 = IT3(zz, steps=1, lr=lr, optimizer="sgd", frozen_anchor=False)
    it3(x)
    step = torch.cat(
        [(p1 - p0).flatten() for p1, p0 in zip(it3.work.parameters(), zz.parameters(), strict=True)]
    )
    f = copy.deepcopy(zz)
    y0 = f(x).softmax(-1)
    js_divergence(y0, f(x, aux=y0).softmax(-1)).mean().backward()
    g_self = torch.cat([p.grad.flatten() for p in f.parameters()])
    torch.testing.assert_close(step, -lr * g_self, rtol=1e-4, atol=1e-9)
    g_frozen = _reference_grads(zz, x, detach_anchor_input=False)
    assert (g_self - g_frozen).norm() > 0.05 * g_self.norm()
    for k, v in original.items():
        torch.testing.assert_close(zz.state_dict()[k], v, rtol=0, atol=0)
    # the prediction is the adapted model's own second pass
    with torch.no_grad():
        w = it3.work
        torch.testing.assert_close(it3(x), w(x, aux=w(x).softmax(-1)))
    with pytest.raises(ValueError, match="frozen_anchor"):
        IT3(zz, frozen_anchor="no")
