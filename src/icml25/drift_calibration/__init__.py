"""Semantic drift calibration for task-agnostic class-incremental learning (Wu et al., ICML 2025).

Library: :class:`DriftCalibratedLearner` (per-task LoRA summed over tasks, cosine heads, Adam by
default, a :class:`DivergenceWarning` when training diverges,
``fit_task`` / ``predict`` with no task id), its parts as functions (:func:`mean_shift`,
:func:`shrink_covariance`, :func:`precision_from_features`, :func:`mahalanobis_pair_loss`,
:func:`feature_distillation_loss`, :func:`cosine_logits`), the adapters (:class:`LoRALinear`,
:func:`add_lora` with PEFT-style ``target_modules``, :func:`add_task_adapters`,
:func:`active_adapters`, :func:`lora_layers`), a small backbone (:class:`TinyViT`) and the
metrics (:func:`task_accuracies`, :func:`forgetting`).
Reproduction: ``icml25 reproduce drift_calibration``.
"""

from icml25.core.registry import register
from icml25.drift_calibration.backbone import TinyViT
from icml25.drift_calibration.calibration import (
    cosine_logits,
    feature_distillation_loss,
    forgetting,
    mahalanobis_pair_loss,
    mean_shift,
    precision_from_features,
    shrink_covariance,
    task_accuracies,
)
from icml25.drift_calibration.learner import DivergenceWarning, DriftCalibratedLearner
from icml25.drift_calibration.lora import (
    LoRALinear,
    active_adapters,
    add_lora,
    add_task_adapters,
    lora_layers,
)

__all__ = [
    "DivergenceWarning",
    "DriftCalibratedLearner",
    "LoRALinear",
    "TinyViT",
    "active_adapters",
    "add_lora",
    "add_task_adapters",
    "cosine_logits",
    "feature_distillation_loss",
    "forgetting",
    "lora_layers",
    "mahalanobis_pair_loss",
    "mean_shift",
    "precision_from_features",
    "shrink_covariance",
    "task_accuracies",
]

register(
    slug="drift_calibration",
    title="Navigating Semantic Drift in Task-Agnostic Class-Incremental Learning",
    authors="Fangwen Wu, Lechao Cheng, Shengeng Tang, Xiaofeng Zhu, Chaowei Fang, "
    "Dingwen Zhang, Meng Wang",
    venue="ICML 2025 (oral; arXiv:2502.07560)",
    url="https://arxiv.org/abs/2502.07560",
    summary="Class-incremental learning with per-task LoRA: old class means moved by mean-shift "
    "compensation, covariances kept by a Mahalanobis loss, classifier aligned on Gaussians.",
    quick_seconds=40,
    module="icml25.drift_calibration.reproduce",
    devices=("cpu", "cuda"),
)
