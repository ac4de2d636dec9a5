"""A tiny Vision Transformer for 28x28 grey images, with named linear layers for LoRA.

The patch embedding is a linear layer on flattened ``patch x patch`` pixels (a convolution
written as a linear layer); each block is pre-norm multi-head self-attention with separate
``q``, ``k``, ``v`` and ``proj`` linear layers and an MLP (``fc1``, ``fc2``). The forward pass
returns every token after the final LayerNorm, ``(batch, 1 + patches, dim)``: token 0 is the
CLS feature, the others are the patch tokens (as in the official code, which reads both after
the final norm of a ViT-B/16).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from icml25.core import validate as V


class _Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        h = self.heads

        def split(t: torch.Tensor) -> torch.Tensor:  # (b, n, d) -> (b, h, n, d / h)
            return t.view(b, n, h, d // h).transpose(1, 2)

        out = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)))
        return self.proj(out.transpose(1, 2).reshape(b, n, d))


class _Block(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = _Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, mlp_ratio * dim)
        self.fc2 = nn.Linear(mlp_ratio * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class TinyViT(nn.Module):
    """A small ViT: ``(batch, 784)`` or ``(batch, 1, 28, 28)`` images to ``(batch, 1 + P, dim)``.

    Parameters
    ----------
    image_size, patch
        Square image side and patch side (``image_size % patch == 0``; ``P = (image_size /
        patch)^2`` tokens).
    dim, depth, heads, mlp_ratio
        Width, number of blocks, attention heads (``dim % heads == 0``), MLP expansion.
    channels
        Input channels.
    """

    def __init__(
        self,
        *,
        image_size: int = 28,
        patch: int = 7,
        dim: int = 64,
        depth: int = 3,
        heads: int = 4,
        mlp_ratio: int = 2,
        channels: int = 1,
    ) -> None:
        super().__init__()
        V.integer("image_size", image_size, low=2)
        V.integer("patch", patch, low=1)
        V.integer("dim", dim, low=1)
        V.integer("depth", depth, low=1)
        V.integer("heads", heads, low=1)
        V.integer("mlp_ratio", mlp_ratio, low=1)
        V.integer("channels", channels, low=1)
        if image_size % patch:
            raise ValueError(f"patch must divide image_size ({image_size}), got {patch}")
        if dim % heads:
            raise ValueError(f"heads must divide dim ({dim}), got {heads}")
        self.image_size, self.patch, self.channels, self.dim = image_size, patch, channels, dim
        self.num_patches = (image_size // patch) ** 2
        self.patch_embed = nn.Linear(channels * patch * patch, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, 1 + self.num_patches, dim) * 0.02)
        self.blocks = nn.ModuleList([_Block(dim, heads, mlp_ratio) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s, p, c = self.image_size, self.patch, self.channels
        x = x.reshape(x.shape[0], c, s, s)
        g = s // p
        # (b, c, g*p, g*p) -> (b, g*g, c*p*p): patches as rows
        x = x.reshape(-1, c, g, p, g, p).permute(0, 2, 4, 1, 3, 5).reshape(-1, g * g, c * p * p)
        tokens = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), self.patch_embed(x)], 1)
        tokens = tokens + self.pos_embed
        for block in self.blocks:
            tokens = block(tokens)
        return self.norm(tokens)
