"""IT3: Idempotent Test-Time Training (Durasov, Shocher, Oner, Chechik, Efros & Fua, ICML 2025).

Library: :class:`ZigZag` (any torch model given an auxiliary input shaped like the label:
input concatenation, or a feature-map injection through a forward hook), :func:`zigzag_loss`
(its training loss), :class:`IT3` (the test-time adaptation engine), :func:`idempotence_error`
(an OOD score), :func:`zigzag_recursion`, and the baselines :func:`tent` and :func:`bn_adapt`.
Reproduction: ``icml25 reproduce it3``.
"""

from icml25.core.registry import register
from icml25.it3.baselines import bn_adapt, tent
from icml25.it3.engine import (
    IT3,
    batch_statistics,
    idempotence_error,
    it3_objective,
    js_divergence,
    l1_distance,
    zigzag_recursion,
)
from icml25.it3.zigzag import LatentZigZag, ZigZag, zigzag_loss

__all__ = [
    "IT3",
    "LatentZigZag",
    "ZigZag",
    "batch_statistics",
    "bn_adapt",
    "idempotence_error",
    "it3_objective",
    "js_divergence",
    "l1_distance",
    "tent",
    "zigzag_loss",
    "zigzag_recursion",
]

register(
    slug="it3",
    title="IT3: Idempotent Test-Time Training",
    authors="Nikita Durasov, Assaf Shocher, Doruk Oner, Gal Chechik, Alexei A. Efros, Pascal Fua",
    venue="ICML 2025 (arXiv:2410.04201)",
    url="https://arxiv.org/abs/2410.04201",
    summary="Train f(x, y) to accept its own prediction; at test time adapt the weights to make "
    "f(x, f(x, 0)) = f(x, 0) on the test batch, across MLPs, CNNs and GNNs.",
    quick_seconds=40,
    module="icml25.it3.reproduce",
)
