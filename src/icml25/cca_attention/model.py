"""A tiny causal transformer whose attention is chosen by name, for the long-range tests.

``attention`` is one of:
- ``"full"``: causal SDPA;
- ``"local"``: a sliding window of ``window`` tokens;
- ``"sink"``: StreamingLLM's 4 sink tokens plus the window;
- ``"cca"``: :func:`~icml25.cca_attention.attention.cca_attention`;
- ``"cca_mean"``: CCA with mean pooling (the paper's ablation).

It can be switched after training (:meth:`TinyLM.set_attention`): the plug-and-play
experiment. Learned absolute position embeddings; pre-norm blocks.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from icml25.cca_attention.attention import cca_attention
from icml25.core import validate as V

ATTENTIONS = ("full", "local", "sink", "cca", "cca_mean")
SINKS = 4


def window_mask(
    kind: str, length: int, window: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """Boolean ``(L, L)`` mask of the sliding window, with the sink tokens for ``"sink"``, on
    ``device`` (torch's default when None)."""
    t = torch.arange(length, device=device)
    causal = t[None, :] <= t[:, None]
    recent = t[None, :] > t[:, None] - window
    if kind == "local":
        return causal & recent
    return causal & (recent | (t[None, :] < SINKS))


class CausalSelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} must be a multiple of heads {heads}")
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.kind, self.group_size, self.window = "full", 8, 32

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, L, E = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.heads, E // self.heads).permute(2, 0, 3, 1, 4)
        if self.kind == "full":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif self.kind in ("local", "sink"):
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask=window_mask(self.kind, L, self.window, x.device)
            )
        else:
            pool = "mean" if self.kind == "cca_mean" else "attention"
            y = cca_attention(q, k, v, group_size=self.group_size, window=self.window, pool=pool)
        return self.out(y.transpose(1, 2).reshape(B, L, E))


_INT_TYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


class TinyLM(nn.Module):
    def __init__(
        self, vocab: int, dim: int = 64, heads: int = 4, layers: int = 2, max_len: int = 512
    ) -> None:
        super().__init__()
        for name, value in (("vocab", vocab), ("dim", dim), ("heads", heads), ("layers", layers)):
            V.integer(name, value, low=1)
        V.integer("max_len", max_len, low=1)
        self.vocab, self.max_len = vocab, max_len
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.attn = nn.ModuleList(CausalSelfAttention(dim, heads) for _ in range(layers))
        self.norm1 = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.norm2 = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.mlp = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
            for _ in range(layers)
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def set_attention(self, kind: str, group_size: int = 8, window: int = 32) -> TinyLM:
        if kind not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}, got {kind!r}")
        V.integer("group_size", group_size, low=1)
        V.integer("window", window, low=0)
        for a in self.attn:
            assert isinstance(a, CausalSelfAttention)
            a.kind, a.group_size, a.window = kind, group_size, window
        return self

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.dtype not in _INT_TYPES:
            got = f"{ids.dtype} {tuple(ids.shape)}" if isinstance(ids, torch.Tensor) else ids
            raise ValueError(f"ids must be a (batch, length) integer tensor, got {got}")
        if ids.shape[1] > self.max_len:
            raise ValueError(f"ids has {ids.shape[1]} positions, above max_len = {self.max_len}")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.vocab):
            raise ValueError(
                f"token ids must lie in [0, vocab = {self.vocab}), "
                f"got {int(ids.min())}..{int(ids.max())}"
            )
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for attn, n1, n2, mlp in zip(self.attn, self.norm1, self.norm2, self.mlp, strict=True):
            x = x + attn(n1(x))
            x = x + mlp(n2(x))
        return self.head(self.norm(x))
