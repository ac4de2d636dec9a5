"""A plain multi-layer perceptron."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
from torch import nn


class MLP(nn.Module):
    """``in_features -> hidden... -> out_features`` with ReLU between linear layers.

    Inputs of any shape ``(batch, ...)`` are flattened to ``(batch, in_features)``.
    """

    def __init__(self, in_features: int, hidden: Sequence[int], out_features: int) -> None:
        super().__init__()
        sizes = [in_features, *hidden, out_features]
        if any(not isinstance(s, int) or s < 1 for s in sizes):
            raise ValueError(f"layer sizes must be positive integers, got {sizes}")
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(itertools.pairwise(sizes)):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)
        self.in_features = in_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.reshape(x.shape[0], -1))
