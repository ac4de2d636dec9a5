"""Personalized federated learning with a personalization degree: FedCLUP (Yu, He, Sun, Xue
& Li, ICML 2025).

Library: the algorithm on vector problems (:func:`fedclup`, :func:`local_update`,
:func:`server_update`, :func:`adaptive_lambda`), the exact PFL optimum for least squares
(:func:`pfl_optimum`), the minibatch-SGD image sweep (:mod:`icml25.pfl_tradeoff.images`:
local, FedCLUP and FedAvg arms trained at once), the problems :class:`LeastSquares`,
:class:`SoftmaxRegression` and :class:`TorchProblem` (any ``nn.Module``), and the Flower
strategy and client app in
:mod:`icml25.pfl_tradeoff.flower` (``pip install 'icml25[fed]'``).
Reproduction: ``icml25 reproduce pfl_tradeoff``.
"""

from icml25.core.registry import register
from icml25.pfl_tradeoff.fedclup import (
    FedCLUPResult,
    LeastSquares,
    SoftmaxRegression,
    TorchProblem,
    adaptive_lambda,
    fedclup,
    local_update,
    pfl_optimum,
    server_lr,
    server_update,
)

__all__ = [
    "FedCLUPResult",
    "LeastSquares",
    "SoftmaxRegression",
    "TorchProblem",
    "adaptive_lambda",
    "fedclup",
    "local_update",
    "pfl_optimum",
    "server_lr",
    "server_update",
]

register(
    slug="pfl_tradeoff",
    title="Understanding the Statistical Accuracy-Communication Trade-off in Personalized "
    "Federated Learning with Minimax Guarantees",
    authors="Xin Yu, Zelin He, Ying Sun, Lingzhou Xue, Runze Li",
    venue="ICML 2025 (arXiv:2410.08934)",
    url="https://arxiv.org/abs/2410.08934",
    summary="FedCLUP: local proximal steps and a server step on the PFL objective; the "
    "personalization degree lambda trades statistical accuracy against communication.",
    quick_seconds=35,
    module="icml25.pfl_tradeoff.reproduce",
)
