"""Soup-of-Experts (Ablin, Katharopoulos, Seto & Grangier, ICML 2025).

Library: :class:`SoupOfExperts` (shared parameters, a bank of dense or low-rank experts and an
MLP router from domain weights to coefficients, wrapping any ``torch.nn.Module``;
``instantiate(h)`` returns a plain model), the meta-distribution :class:`SparseDirichlet`, the
batch sampler :class:`MixtureSampler` for ``mix(h)``, the training loops :func:`train_soup` and
:func:`train_on_mixture` (both run unchanged under ``torchrun`` with DDP), domain-weight
estimation (:func:`domain_centroids`, :func:`estimate_domain_weights`) and a small byte-level
LM (:class:`ByteGPT`). Reproduction: ``icml25 reproduce soup_of_experts``.
"""

from icml25.core.registry import register
from icml25.soup_of_experts.estimate import domain_centroids, estimate_domain_weights
from icml25.soup_of_experts.lm import ByteGPT, encode_bytes
from icml25.soup_of_experts.soup import (
    BatchSampler,
    MetaDistribution,
    MixtureSampler,
    SoupOfExperts,
    SparseDirichlet,
    TrainLog,
    check_domain_weights,
    next_token_loss,
    train_on_mixture,
    train_soup,
)

__all__ = [
    "BatchSampler",
    "ByteGPT",
    "MetaDistribution",
    "MixtureSampler",
    "SoupOfExperts",
    "SparseDirichlet",
    "TrainLog",
    "check_domain_weights",
    "domain_centroids",
    "encode_bytes",
    "estimate_domain_weights",
    "next_token_loss",
    "train_on_mixture",
    "train_soup",
]

register(
    slug="soup_of_experts",
    title="Soup-of-Experts: Pretraining Specialist Models via Parameters Averaging",
    authors="Pierre Ablin, Angelos Katharopoulos, Skyler Seto, David Grangier",
    venue="ICML 2025 (PMLR 267:185-203, arXiv:2502.01804)",
    url="https://arxiv.org/abs/2502.01804",
    summary="A bank of experts and a router from domain weights to mixing coefficients: "
    "instantiate a small specialist model for any domain mixture without training.",
    quick_seconds=60,
    module="icml25.soup_of_experts.reproduce",
)
