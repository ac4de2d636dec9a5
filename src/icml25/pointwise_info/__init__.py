"""Pointwise information measures as confidence estimators (Wongso, Ghosh & Motani, ICML 2025).

Library: the estimators :class:`PVI`, :class:`PMI` and :class:`PSI` (scikit-learn style
``fit`` / ``score_samples`` / ``predict_proba`` / ``confidence``, post hoc on any trained
classifier or on NumPy features), :class:`FeatureExtractor` (a layer's activations),
temperature scaling (:func:`fit_temperature`), the confidence scores PVI can be plugged into
(:func:`msp`, :func:`doctor`, :func:`neg_entropy`, :func:`margin`), and the metrics of
:mod:`icml25.core.metrics` (AUROC, AUPR-Error, FPR@95TPR, AURC, E-AURC, ECE, SCE).
Reproduction: ``icml25 reproduce pointwise_info``.
"""

from icml25.core.metrics import (
    adaptive_sce,
    aupr_error,
    aurc,
    auroc,
    cc_sce,
    eaurc,
    ece,
    failure_metrics,
    fpr_at_95tpr,
    reliability_diagram,
    risk_coverage,
    rms_sce,
    sce,
)
from icml25.core.registry import register
from icml25.pointwise_info.confidence import (
    CONFIDENCE_SCORES,
    doctor,
    fit_temperature,
    margin,
    msp,
    neg_entropy,
    nll,
    softmax,
)
from icml25.pointwise_info.estimators import (
    PMI,
    PSI,
    PVI,
    ConcatCritic,
    FeatureExtractor,
    SeparableCritic,
    critic_loss,
    predict_logits,
)

__all__ = [
    "CONFIDENCE_SCORES",
    "PMI",
    "PSI",
    "PVI",
    "ConcatCritic",
    "FeatureExtractor",
    "SeparableCritic",
    "adaptive_sce",
    "aupr_error",
    "aurc",
    "auroc",
    "cc_sce",
    "critic_loss",
    "doctor",
    "eaurc",
    "ece",
    "failure_metrics",
    "fit_temperature",
    "fpr_at_95tpr",
    "margin",
    "msp",
    "neg_entropy",
    "nll",
    "predict_logits",
    "reliability_diagram",
    "risk_coverage",
    "rms_sce",
    "sce",
    "softmax",
]

register(
    slug="pointwise_info",
    title="Pointwise Information Measures as Confidence Estimators in Deep Neural Networks: "
    "A Comparative Study",
    authors="Shelvia Wongso, Rohan Ghosh, Mehul Motani",
    venue="ICML 2025 (OpenReview MPlcU7Sxzs)",
    url="https://proceedings.mlr.press/v267/wongso25a.html",
    summary="Post-hoc confidence from pointwise information: PVI (a separately trained model "
    "against a null model), PMI (a neural critic on features) and PSI (random slices) for "
    "failure prediction and calibration.",
    quick_seconds=35,
    module="icml25.pointwise_info.reproduce",
    devices=("cpu", "cuda"),
)
