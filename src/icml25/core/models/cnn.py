"""A small convolutional classifier for 28x28-style images."""

from __future__ import annotations

import torch
from torch import nn


class SmallCNN(nn.Module):
    """``conv(5x5) -> [BN] -> LeakyReLU -> maxpool``, twice, then ``Linear -> LeakyReLU ->
    Linear``.

    Input ``(batch, in_channels, H, W)``, or ``(batch, H * W)`` for one channel of a square
    image (reshaped). The feature maps are named ``block1`` and ``block2`` (their outputs are
    ``(batch, width, ., .)`` and ``(batch, 2 * width, ., .)``), the penultimate layer ``fc1``.
    """

    def __init__(
        self,
        num_classes: int,
        *,
        in_channels: int = 1,
        image_size: int = 28,
        width: int = 16,
        hidden: int = 64,
        batchnorm: bool = True,
    ) -> None:
        super().__init__()
        for name, v in (
            ("num_classes", num_classes),
            ("in_channels", in_channels),
            ("width", width),
            ("hidden", hidden),
        ):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not isinstance(image_size, int) or image_size < 12:
            raise ValueError(f"image_size must be an integer >= 12, got {image_size!r}")

        def block(c_in: int, c_out: int) -> nn.Sequential:
            norm: nn.Module = nn.BatchNorm2d(c_out) if batchnorm else nn.Identity()
            return nn.Sequential(
                nn.Conv2d(c_in, c_out, 5, padding=2), norm, nn.LeakyReLU(0.01), nn.MaxPool2d(2)
            )

        self.in_channels, self.image_size = in_channels, image_size
        self.block1 = block(in_channels, width)
        self.block2 = block(width, 2 * width)
        side = image_size // 4
        self.fc1 = nn.Linear(2 * width * side * side, hidden)
        self.act = nn.LeakyReLU(0.01)
        self.fc2 = nn.Linear(hidden, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 2:
            x = x.reshape(x.shape[0], self.in_channels, self.image_size, self.image_size)
        h = self.block2(self.block1(x))
        return self.fc2(self.act(self.fc1(h.flatten(1))))
