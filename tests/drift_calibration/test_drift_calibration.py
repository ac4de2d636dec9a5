"""Correctness of the drift-calibration parts against hand computations, loops and properties."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.nn import functional as F

from icml25.drift_calibration import (
    DriftCalibratedLearner,
    LoRALinear,
    TinyViT,
    active_adapters,
    add_lora,
    add_task_adapters,
    cosine_logits,
    feature_distillation_loss,
    forgetting,
    lora_layers,
    mahalanobis_pair_loss,
    mean_shift,
    precision_from_features,
    shrink_covariance,
    task_accuracies,
)

torch.set_default_dtype(torch.float32)


# --------------------------------------------------------------------------- mean shift
def test_mean_shift_matches_a_hand_computation():
    means = torch.tensor([[0.0, 0.0], [3.0, 0.0]], dtype=torch.float64)
    e_old = torch.tensor([[0.0, 1.0], [3.0, 0.0], [10.0, 10.0]], dtype=torch.float64)
    e_new = e_old + torch.tensor([[1.0, 0.0], [0.0, 2.0], [5.0, 5.0]], dtype=torch.float64)
    new, w = mean_shift(means, e_old, e_new, sigma=1.0)
    for c in range(2):
        raw = [math.exp(-float(((e_old[i] - means[c]) ** 2).sum()) / 2) + 1e-5 for i in range(3)]
        ww = np.array(raw) / sum(raw)
        np.testing.assert_allclose(w[c].numpy(), ww, rtol=1e-12)
        shift = sum(ww[i] * (e_new[i] - e_old[i]).numpy() for i in range(3))
        np.testing.assert_allclose(new[c].numpy(), means[c].numpy() + shift, rtol=1e-12)
    # class 0 is moved mostly by sample 0 (distance 1), class 1 by sample 1 (distance 0)
    assert w[0, 0] > 0.95 and w[1, 1] > 0.99


def test_mean_shift_weights_become_uniform_far_away():
    """The brief's pitfall: with sigma = 1 and distances >> 1 the 1e-5 floor dominates and the
    shift is the plain mean of the embedding changes."""
    g = torch.Generator().manual_seed(0)
    means = torch.randn(3, 8, generator=g, dtype=torch.float64) * 100
    e_old = torch.randn(20, 8, generator=g, dtype=torch.float64)
    e_new = e_old + torch.randn(20, 8, generator=g, dtype=torch.float64)
    new, w = mean_shift(means, e_old, e_new)
    np.testing.assert_allclose(w.numpy(), 1 / 20, rtol=1e-9)
    np.testing.assert_allclose((new - means).numpy(), np.tile((e_new - e_old).mean(0), (3, 1)))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.integers(1, 12), st.floats(0.1, 5.0), st.integers(0, 10**6))
def test_mean_shift_properties(C, N, sigma, seed):
    g = torch.Generator().manual_seed(seed)
    means = torch.randn(C, 4, generator=g, dtype=torch.float64)
    e_old = torch.randn(N, 4, generator=g, dtype=torch.float64)
    delta = torch.randn(1, 4, generator=g, dtype=torch.float64)
    new, w = mean_shift(means, e_old, e_old + delta, sigma=sigma)
    np.testing.assert_allclose(w.sum(1).numpy(), 1.0, rtol=1e-12)  # rows are distributions
    assert bool((w > 0).all())
    # a rigid translation of every embedding moves every mean by exactly that translation
    np.testing.assert_allclose((new - means).numpy(), np.tile(delta.numpy(), (C, 1)), atol=1e-12)


# --------------------------------------------------------------------------- covariance
def test_shrink_covariance_matches_the_formula():
    cov = torch.tensor([[2.0, 0.5, 0.0], [0.5, 4.0, -0.3], [0.0, -0.3, 6.0]], dtype=torch.float64)
    d_mean = 4.0
    o_mean = (0.5 + 0.5 - 0.3 - 0.3) / 4  # non-zero off-diagonal entries only
    expect = cov.numpy() + 10 * d_mean * np.eye(3) + 10 * o_mean * (np.ones((3, 3)) - np.eye(3))
    np.testing.assert_allclose(shrink_covariance(cov).numpy(), expect, rtol=1e-12)
    np.testing.assert_allclose(
        shrink_covariance(torch.eye(2, dtype=torch.float64), alpha1=1.0).numpy(), 2 * np.eye(2)
    )


def test_precision_is_the_pseudo_inverse_of_the_shrunk_covariance():
    g = torch.Generator().manual_seed(1)
    f = torch.randn(30, 5, generator=g, dtype=torch.float64)
    cov = np.cov(f.numpy().T)
    s = shrink_covariance(torch.tensor(cov)).numpy() + 1e-3 * np.eye(5)
    np.testing.assert_allclose(precision_from_features(f).numpy(), np.linalg.pinv(s), rtol=1e-8)


def _maha_loop(f_old, f_new, labels, precisions):
    a, b = F.normalize(f_old, dim=1), F.normalize(f_new, dim=1)
    total = 0.0
    n = len(labels)
    for i, j in itertools.combinations(range(n), 2):
        if labels[i] != labels[j]:
            continue
        P = precisions[labels[i]] + 1e-6 * torch.eye(f_old.shape[1], dtype=f_old.dtype)
        do, dn = a[i] - a[j], b[i] - b[j]
        total += abs(float(torch.sqrt(do @ P @ do + 1e-8)) - float(torch.sqrt(dn @ P @ dn + 1e-8)))
    return total / n


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 14), st.integers(1, 3), st.integers(0, 10**6))
def test_mahalanobis_loss_vectorised_equals_pairwise_loop(B, K, seed):
    g = torch.Generator().manual_seed(seed)
    D = 5
    f_old = torch.randn(B, D, generator=g, dtype=torch.float64)
    f_new = f_old + 0.3 * torch.randn(B, D, generator=g, dtype=torch.float64)
    labels = torch.randint(0, K, (B,), generator=g)
    precisions = torch.stack(
        [
            precision_from_features(torch.randn(10, D, generator=g, dtype=torch.float64))
            for _ in range(K)
        ]
    )
    got = float(mahalanobis_pair_loss(f_old, f_new, labels, precisions))
    assert got == pytest.approx(_maha_loop(f_old, f_new, labels, precisions), rel=1e-7, abs=1e-12)


def test_mahalanobis_loss_is_zero_for_unchanged_features_and_has_gradient():
    g = torch.Generator().manual_seed(2)
    f = torch.randn(8, 4, generator=g)
    labels = torch.tensor([0, 0, 0, 1, 1, 1, 0, 1])
    P = torch.stack([torch.eye(4, dtype=torch.float64)] * 2)
    assert float(mahalanobis_pair_loss(f, f.clone(), labels, P)) == pytest.approx(0, abs=1e-5)
    f_new = (f + 0.5 * torch.randn(8, 4, generator=g)).requires_grad_()
    loss = mahalanobis_pair_loss(f, f_new, labels, P)
    loss.backward()
    assert float(loss.detach()) > 0 and f_new.grad is not None and bool(f_new.grad.abs().sum() > 0)


# --------------------------------------------------------------------------- distillation
def test_feature_distillation_matches_a_loop():
    g = torch.Generator().manual_seed(3)
    cls = torch.randn(3, 4, generator=g)
    p_new = torch.randn(3, 5, 4, generator=g)
    p_old = torch.randn(3, 5, 4, generator=g)
    total = 0.0
    for b in range(3):
        for i in range(5):
            c = float(F.cosine_similarity(cls[b], p_new[b, i], dim=0))
            w = math.acos(max(-1, min(1, c))) / math.pi
            total += w * float(
                (F.normalize(p_new[b, i], dim=0) - F.normalize(p_old[b, i], dim=0)).norm()
            )
    got = float(feature_distillation_loss(cls, p_new, p_old))
    assert got == pytest.approx(total / 15, rel=1e-4)
    assert float(feature_distillation_loss(cls, p_new, p_new.clone())) == pytest.approx(0, abs=1e-6)


def test_cosine_logits_are_cosines():
    f = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    w = torch.tensor([[2.0, 0.0], [0.0, -3.0]])
    np.testing.assert_allclose(
        cosine_logits(f, w).numpy(), [[1.0, 0.0], [2**-0.5, -(2**-0.5)]], rtol=1e-6
    )


# --------------------------------------------------------------------------- metrics
def test_forgetting_follows_the_official_definition():
    acc = np.array([[0.9, 0.8, 0.6], [0.0, 0.7, 0.75], [0.0, 0.0, 0.5]])
    # task 0: max 0.9 - 0.6 = 0.3; task 1: max 0.75 (the last column counts) - 0.75 = 0
    assert forgetting(acc) == pytest.approx(0.15)
    assert forgetting(np.array([[0.8]])) == 0.0


def test_task_accuracies():
    y = np.array([0, 0, 1, 2, 2, 3])
    p = np.array([0, 1, 1, 2, 0, 0])
    np.testing.assert_allclose(task_accuracies(y, p, [[0, 1], [2, 3], [7]]), [2 / 3, 1 / 3, np.nan])


# --------------------------------------------------------------------------- LoRA
def test_lora_linear_is_base_plus_sum_of_adapters():
    torch.manual_seed(0)
    base = nn.Linear(6, 4)
    layer = LoRALinear(base, rank=2)
    x = torch.randn(5, 6)
    assert torch.equal(layer(x), base(x))  # no adapter yet
    layer.add_adapter(torch.Generator().manual_seed(0))
    assert torch.allclose(layer(x), base(x))  # B = 0 at creation
    for s in range(2):
        if s:
            layer.add_adapter()
        with torch.no_grad():
            layer.lora_B[s].normal_()
    expect = base(x) + sum(x @ (layer.lora_B[s] @ layer.lora_A[s]).T for s in range(2))
    assert torch.allclose(layer(x), expect, atol=1e-5)
    assert not layer.lora_A[0].requires_grad and layer.lora_A[1].requires_grad
    assert not base.weight.requires_grad
    layer.active = 1
    assert torch.allclose(layer(x), base(x) + x @ (layer.lora_B[0] @ layer.lora_A[0]).T, atol=1e-5)


def test_add_lora_picks_modules_by_name_peft_style():
    vit = TinyViT(dim=16, depth=2, heads=2)
    names = add_lora(vit, target_modules=("k", "v"), rank=2)
    assert names == ["blocks.0.attn.k", "blocks.0.attn.v", "blocks.1.attn.k", "blocks.1.attn.v"]
    vit2 = TinyViT(dim=16, depth=2, heads=2)
    assert add_lora(vit2, target_modules=r"blocks\.1\..*fc\d", rank=2) == [
        "blocks.1.fc1",
        "blocks.1.fc2",
    ]
    params = add_task_adapters(vit, torch.Generator().manual_seed(0))
    assert len(params) == 8 and len(lora_layers(vit)) == 4


def test_add_lora_on_a_tiny_llama():
    pytest.importorskip("transformers")
    from icml25.core.llm import tiny_llama

    model, _ = tiny_llama(layers=2, hidden=32, heads=4)
    names = add_lora(model, target_modules=("q_proj", "v_proj"), rank=2)
    assert len(names) == 4 and all(n.endswith(("q_proj", "v_proj")) for n in names)
    ids = torch.randint(0, 50, (2, 7))
    before = model(ids).logits
    add_task_adapters(model)
    assert torch.allclose(model(ids).logits, before)  # B = 0: same function
    with torch.no_grad():
        for layer in lora_layers(model):
            layer.lora_B[0].normal_()
    assert not torch.allclose(model(ids).logits, before)
    with active_adapters(model, 0):
        assert torch.allclose(model(ids).logits, before, atol=1e-5)


# --------------------------------------------------------------------------- learner
def _blobs(classes, n=40, d=6, seed=0, spread=0.3):
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(123).normal(size=(10, d)) * 2
    X = np.concatenate([centres[c] + spread * rng.normal(size=(n, d)) for c in classes])
    y = np.repeat(classes, n)
    return X.astype(np.float32), y


def _mlp(d=6):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(d, 16), nn.Tanh(), nn.Linear(16, 16))


def _learner(**kw):
    args = dict(target_modules=("0", "2"), rank=2, epochs_first=3, epochs=3, batch_size=16)
    args.update(kw)
    return DriftCalibratedLearner(_mlp(), **args)


def test_learner_classifies_without_task_id_and_same_seed_same_result():
    tasks = [[0, 1], [2, 3], [4, 5]]
    preds = []
    for _ in range(2):
        lr = _learner(random_state=3)
        for t in tasks:
            lr.fit_task(*_blobs(t, seed=t[0]))
        Xt, yt = _blobs([c for t in tasks for c in t], seed=99)
        preds.append(lr.predict(Xt))
        assert list(lr.classes_) == [0, 1, 2, 3, 4, 5]
        assert lr.decision_function(Xt).shape == (len(Xt), 6)
        assert lr.score(Xt, yt) > 0.8  # well-separated blobs, task-agnostic
    np.testing.assert_array_equal(preds[0], preds[1])


def test_earlier_adapters_stay_frozen_and_old_network_is_recoverable():
    lr = _learner(epochs=2)
    X0, y0 = _blobs([0, 1])
    X1, y1 = _blobs([2, 3], seed=1)
    lr.fit_task(X0, y0)
    snap = {k: v.clone() for k, v in lr.backbone_.state_dict().items()}
    head0 = lr.heads_[0].detach().clone()
    e_before = lr.embed(X1)
    lr.alignment = False  # heads of earlier tasks are then untouched too
    lr.fit_task(X1, y1)
    after = lr.backbone_.state_dict()
    for k, v in snap.items():  # base weights and task-0 adapters unchanged
        assert torch.equal(after[k], v), k
    assert any(not torch.equal(a, b) for a, b in zip(lr.heads_[0], head0, strict=True)) is False
    new_b = [layer.lora_B[1] for layer in lora_layers(lr.backbone_)]
    assert any(float(b.detach().abs().sum()) > 0 for b in new_b)  # the task-1 adapter trained
    torch.testing.assert_close(lr.embed(X1, upto_task=0), e_before)


def test_learner_mean_shift_applies_the_formula_to_stale_means():
    lr = _learner(covariance_calibration=False, distillation=False, alignment=False)
    X0, y0 = _blobs([0, 1])
    X1, y1 = _blobs([2, 3], seed=1)
    lr.fit_task(X0, y0).fit_task(X1, y1)
    e_old = lr.embed(X1, upto_task=0)
    e_new = lr.embed(X1)
    expect, w = mean_shift(lr.stale_means_[:2], e_old, e_new, sigma=1.0)
    torch.testing.assert_close(lr.class_means_[:2], expect, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(lr.shift_weights_, w, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(lr.class_means_[2:], lr.stale_means_[2:])
    assert lr.history_[-1]["maha"] == 0.0


def test_calibration_losses_run_on_token_backbones():
    X0, y0 = _blobs([0, 1], d=784, n=12)
    X1, y1 = _blobs([2, 3], d=784, n=12, seed=1)
    torch.manual_seed(0)
    lr = DriftCalibratedLearner(
        TinyViT(dim=16, depth=1, heads=2), rank=2, epochs_first=1, epochs=1, batch_size=8
    )
    lr.fit_task(X0, y0).fit_task(X1, y1)
    h = lr.history_[-1]
    assert h["maha"] > 0 and h["distill"] > 0
    assert lr.class_covs_.shape == (4, 16, 16) and lr.memory_bytes() == 4 * 16 * 4 + 4 * 256 * 8


def test_frozen_backbone_and_oracle_means():
    X0, y0 = _blobs([0, 1])
    X1, y1 = _blobs([2, 3], seed=1)
    frozen = _learner(lora=False).fit_task(X0, y0).fit_task(X1, y1)
    assert frozen.lora_modules_ == []
    # a frozen backbone does not drift: the mean shift is zero
    torch.testing.assert_close(frozen.class_means_, frozen.stale_means_)
    oracle = _learner(mean_shift=False, oracle_means=True).fit_task(X0, y0)
    oracle.fit_task(X1, y1, reference=(X0, y0))
    e = oracle.embed(X0)
    torch.testing.assert_close(
        oracle.class_means_[:2], torch.stack([e[y0 == 0].mean(0), e[y0 == 1].mean(0)])
    )


def test_hugging_face_vit_backbone_from_config():
    pytest.importorskip("transformers")
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    cfg = ViTConfig(
        image_size=28, patch_size=7, num_channels=1, hidden_size=16, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=32,
    )  # fmt: skip
    vit = ViTModel(cfg, add_pooling_layer=False)
    X0, y0 = _blobs([0, 1], d=784, n=10)
    X1, y1 = _blobs([2, 3], d=784, n=10, seed=1)
    lr = DriftCalibratedLearner(
        vit, target_modules=("q_proj", "v_proj"), rank=2, epochs_first=1, epochs=1, batch_size=8
    )
    lr.fit_task(X0.reshape(-1, 1, 28, 28), y0).fit_task(X1.reshape(-1, 1, 28, 28), y1)
    assert [n.rsplit(".", 1)[1] for n in lr.lora_modules_] == ["q_proj", "v_proj"]
    assert lr.history_[-1]["distill"] > 0  # patch tokens from last_hidden_state
    assert set(lr.predict(X1.reshape(-1, 1, 28, 28))) <= {0, 1, 2, 3}


# --------------------------------------------------------------------------- device, loaders
def _fit_all(lr, tasks, loader=False):
    from torch.utils.data import DataLoader, TensorDataset

    for t in tasks:
        X, y = _blobs(t, seed=t[0])
        if loader:
            ds = TensorDataset(torch.as_tensor(X), torch.as_tensor(y))
            lr.fit_task(DataLoader(ds, batch_size=7, shuffle=False))
        else:
            lr.fit_task(X, y)
    return lr


def test_an_explicit_cpu_device_gives_the_same_learner():
    tasks = [[0, 1], [2, 3]]
    Xt, _ = _blobs([0, 1, 2, 3], seed=99)
    a = _fit_all(_learner(random_state=1), tasks)
    b = _fit_all(_learner(random_state=1, device=torch.device("cpu")), tasks)
    assert b.device_ == torch.device("cpu") and a.device_ == torch.device("cpu")
    torch.testing.assert_close(a.decision_function(Xt), b.decision_function(Xt))
    assert all(h.device.type == "cpu" for h in b.heads_)
    assert next(b.backbone_.parameters()).device.type == "cpu"


@pytest.mark.cuda
def test_a_cuda_device_runs_the_backbone_and_heads_there():  # pragma: no cover - GPU only
    tasks = [[0, 1], [2, 3]]
    Xt, yt = _blobs([0, 1, 2, 3], seed=99)
    cpu = _fit_all(_learner(random_state=1), tasks)
    gpu = _fit_all(_learner(random_state=1, device="cuda"), tasks)
    assert all(h.device.type == "cuda" for h in gpu.heads_)
    assert next(gpu.backbone_.parameters()).device.type == "cuda"
    assert gpu.embed(Xt).device.type == "cpu" and gpu.class_means_.device.type == "cpu"
    torch.testing.assert_close(
        gpu.decision_function(Xt), cpu.decision_function(Xt), atol=1e-3, rtol=1e-3
    )
    assert gpu.score(Xt, yt) > 0.8


def test_bad_devices_are_refused():
    with pytest.raises(ValueError, match="device must name a torch device"):
        _learner(device="gpu0")
    with pytest.raises(TypeError, match=r"device must be a str, a torch\.device or None"):
        _learner(device=0.5)


def test_a_dataloader_gives_the_same_learner_as_arrays():
    from torch.utils.data import DataLoader, TensorDataset

    tasks = [[0, 1], [2, 3], [4, 5]]
    Xt, yt = _blobs([c for t in tasks for c in t], seed=99)
    a = _fit_all(_learner(random_state=2), tasks)
    b = _fit_all(_learner(random_state=2), tasks, loader=True)
    torch.testing.assert_close(a.decision_function(Xt), b.decision_function(Xt))
    # (index, x, y) batches, as the official code's loaders yield, and the test side
    idx = torch.arange(len(Xt))
    test = DataLoader(TensorDataset(idx, torch.as_tensor(Xt), torch.as_tensor(yt)), batch_size=9)
    np.testing.assert_array_equal(b.predict(test), a.predict(Xt))
    assert b.score(test) == pytest.approx(a.score(Xt, yt))
    X, y = _blobs([6, 7], seed=6)
    with pytest.raises(ValueError, match="carries the labels: pass y=None"):
        b.fit_task(DataLoader(TensorDataset(torch.as_tensor(X), torch.as_tensor(y))), y)
    with pytest.raises(ValueError, match="y is required"):
        b.fit_task(X)
    with pytest.raises(ValueError, match=r"each batch must be \(x, y\)"):
        b.fit_task(DataLoader(TensorDataset(torch.as_tensor(X))))
    with pytest.raises(ValueError, match="yielded no batch"):
        b.fit_task(DataLoader(TensorDataset(torch.zeros(0, 6), torch.zeros(0))))


def test_the_content_free_shift_moves_each_mean_as_far_as_msc_in_another_direction():
    import copy

    from icml25.drift_calibration.experiments import ContentFreeShift

    lr = _learner(random_state=4, epochs=2)
    lr.fit_task(*_blobs([0, 1]))
    null = copy.copy(lr)
    null.__class__ = ContentFreeShift
    before = lr.class_means_.clone()
    e_old = torch.randn(10, before.shape[1], generator=torch.Generator().manual_seed(0))
    e_new = e_old + 0.5
    lr._shift_means(e_old, e_new)
    null._shift_means(e_old, e_new)
    msc_step, null_step = lr.class_means_ - before, null.class_means_ - before
    torch.testing.assert_close(msc_step.norm(dim=1), null_step.norm(dim=1))
    assert bool((F.cosine_similarity(msc_step, null_step, dim=1) < 0.9).all())
    torch.testing.assert_close(lr.shift_weights_, null.shift_weights_)
