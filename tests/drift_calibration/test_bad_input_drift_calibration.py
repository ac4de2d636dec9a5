"""Bad input at every public entry point of drift_calibration: a clear error naming the argument."""
# not entry points: DivergenceWarning

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

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

NAN = float("nan")


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8))


def _fitted() -> DriftCalibratedLearner:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 4)).astype(np.float32)
    y = np.repeat([0, 1], 10)
    return DriftCalibratedLearner(
        _mlp(), target_modules=("0",), rank=2, epochs_first=1, epochs=1, batch_size=8
    ).fit_task(X, y)


CASES = [
    ("learner backbone", lambda: DriftCalibratedLearner("net"), TypeError, "backbone must be"),
    ("learner rank", lambda: DriftCalibratedLearner(_mlp(), rank=0), ValueError, "rank must be"),
    ("learner lr", lambda: DriftCalibratedLearner(_mlp(), lr=-1.0), ValueError, "lr must be"),
    (
        "learner optimizer",
        lambda: DriftCalibratedLearner(_mlp(), optimizer="rmsprop"),
        ValueError,
        "optimizer must be one of ['adam', 'sgd'], got 'rmsprop'",
    ),
    ("learner flag", lambda: DriftCalibratedLearner(_mlp(), lora=1), ValueError, "lora must be"),
    ("learner sigma", lambda: DriftCalibratedLearner(_mlp(), sigma=NAN), ValueError, "sigma"),
    (
        "learner pooling",
        lambda: DriftCalibratedLearner(_mlp(), pooling="max"),
        ValueError,
        "pooling",
    ),
    (
        "learner oracle+msc",
        lambda: DriftCalibratedLearner(_mlp(), oracle_means=True),
        ValueError,
        "oracle_means=True replaces mean_shift",
    ),
    (
        "fit_task empty",
        lambda: DriftCalibratedLearner(_mlp(), target_modules=("0",)).fit_task(
            np.zeros((0, 4), np.float32), np.zeros(0, int)
        ),
        ValueError,
        "X must have at least 1 row",
    ),
    (
        "fit_task y length",
        lambda: DriftCalibratedLearner(_mlp(), target_modules=("0",)).fit_task(
            np.zeros((4, 4), np.float32), [0, 1, 1]
        ),
        ValueError,
        "y must have 4 labels",
    ),
    (
        "fit_task seen labels",
        lambda: _fitted().fit_task(np.zeros((4, 4), np.float32), [1, 1, 2, 2]),
        ValueError,
        "not seen in an earlier task, got [1]",
    ),
    (
        "fit_task wrong shape",
        lambda: _fitted().fit_task(np.zeros((4, 5), np.float32), [2, 2, 3, 3]),
        ValueError,
        "X must have rows of shape (4,)",
    ),
    (
        "fit_task one sample",
        lambda: DriftCalibratedLearner(_mlp(), target_modules=("0",)).fit_task(
            np.zeros((3, 4), np.float32), [0, 0, 1]
        ),
        ValueError,
        "at least 2 samples of each class",
    ),
    (
        "fit_task nan",
        lambda: DriftCalibratedLearner(_mlp(), target_modules=("0",)).fit_task(
            np.full((4, 4), NAN, np.float32), [0, 0, 1, 1]
        ),
        ValueError,
        "X must be finite",
    ),
    (
        "fit_task target_modules",
        lambda: DriftCalibratedLearner(_mlp(), target_modules=("query",)).fit_task(
            np.zeros((4, 4), np.float32), [0, 0, 1, 1]
        ),
        ValueError,
        "matched no nn.Linear",
    ),
    (
        "predict before fit",
        lambda: DriftCalibratedLearner(_mlp()).predict(np.zeros((2, 4), np.float32)),
        RuntimeError,
        "call fit_task first",
    ),
    (
        "embed upto_task",
        lambda: _fitted().embed(np.zeros((2, 4), np.float32), upto_task=3),
        ValueError,
        "upto_task must be",
    ),
    ("LoRALinear base", lambda: LoRALinear(nn.Conv2d(1, 1, 1), rank=2), TypeError, "nn.Linear"),
    ("LoRALinear rank", lambda: LoRALinear(nn.Linear(2, 2), rank=0), ValueError, "rank must be"),
    ("TinyViT patch", lambda: TinyViT(patch=5), ValueError, "patch must divide"),
    ("TinyViT heads", lambda: TinyViT(dim=10, heads=4), ValueError, "heads must divide"),
    ("add_lora model", lambda: add_lora("m", target_modules=("k",), rank=2), TypeError, "model"),
    (
        "add_lora targets",
        lambda: add_lora(_mlp(), target_modules=[], rank=2),
        ValueError,
        "target_modules must be",
    ),
    (
        "add_task_adapters none",
        lambda: add_task_adapters(_mlp()),
        ValueError,
        "call add_lora",
    ),
    ("lora_layers model", lambda: lora_layers(3), TypeError, "model must be"),
    (
        "cosine_logits dims",
        lambda: cosine_logits(torch.zeros(2, 3), torch.zeros(4, 2)),
        ValueError,
        "same D",
    ),
    (
        "mean_shift rows",
        lambda: mean_shift(torch.zeros(2, 3), torch.zeros(4, 3), torch.zeros(5, 3)),
        ValueError,
        "e_old and e_new must have the same shape",
    ),
    (
        "mean_shift dims",
        lambda: mean_shift(torch.zeros(2, 2), torch.zeros(4, 3), torch.zeros(4, 3)),
        ValueError,
        "means must have 3 columns",
    ),
    (
        "mean_shift sigma",
        lambda: mean_shift(torch.zeros(2, 3), torch.zeros(4, 3), torch.zeros(4, 3), sigma=0),
        ValueError,
        "sigma must be",
    ),
    (
        "shrink_covariance square",
        lambda: shrink_covariance(torch.zeros(2, 3)),
        ValueError,
        "cov must be square",
    ),
    (
        "precision_from_features rows",
        lambda: precision_from_features(torch.zeros(1, 3)),
        ValueError,
        "at least 2 rows",
    ),
    (
        "mahalanobis_pair_loss labels",
        lambda: mahalanobis_pair_loss(
            torch.zeros(3, 2), torch.zeros(3, 2), torch.tensor([0, 1, 2]), torch.zeros(2, 2, 2)
        ),
        ValueError,
        "labels must index precisions",
    ),
    (
        "mahalanobis_pair_loss shapes",
        lambda: mahalanobis_pair_loss(
            torch.zeros(3, 2), torch.zeros(4, 2), torch.tensor([0, 0, 0]), torch.zeros(1, 2, 2)
        ),
        ValueError,
        "same shape",
    ),
    (
        "feature_distillation_loss shapes",
        lambda: feature_distillation_loss(
            torch.zeros(2, 3), torch.zeros(2, 4, 3), torch.zeros(2, 5, 3)
        ),
        ValueError,
        "same shape",
    ),
    (
        "feature_distillation_loss nan",
        lambda: feature_distillation_loss(
            torch.full((2, 3), NAN), torch.zeros(2, 4, 3), torch.zeros(2, 4, 3)
        ),
        ValueError,
        "cls_new must be finite",
    ),
    ("forgetting square", lambda: forgetting(np.zeros((2, 3))), ValueError, "must be square"),
    (
        "task_accuracies lengths",
        lambda: task_accuracies([0, 1], [0], [[0, 1]]),
        ValueError,
        "y_pred must have 2 labels",
    ),
    ("task_accuracies tasks", lambda: task_accuracies([0], [0], []), ValueError, "task_classes"),
]


@pytest.mark.parametrize(("name", "call", "exc", "words"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_a_clear_error(name, call, exc, words):
    with pytest.raises(exc) as info:
        call()
    assert words in str(info.value), str(info.value)


def test_active_adapters_bad_count():
    model = _mlp()
    add_lora(model, target_modules=("0",), rank=2)
    with pytest.raises(ValueError, match="n must be an integer >= 0"), active_adapters(model, -1):
        pass
