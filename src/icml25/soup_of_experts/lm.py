"""A small byte-level transformer language model (a capacity-limited LM to train on the spot).

Bytes are tokens (vocabulary 256), so no tokenizer is needed and every text domain shares one
vocabulary. Pre-LayerNorm GPT blocks with causal ``scaled_dot_product_attention``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from icml25.core import validate as V

VOCAB = 256


def encode_bytes(text: str) -> torch.Tensor:
    """``text`` as a 1-D ``int64`` tensor of its UTF-8 bytes."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return torch.frombuffer(bytearray(text.encode("utf-8")), dtype=torch.uint8).long()


class _Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        # (b, t, d) -> (b, heads, t, d / heads)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class ByteGPT(nn.Module):
    """A GPT over bytes: ``(batch, time)`` int64 tokens -> ``(batch, time, 256)`` logits.

    Parameters
    ----------
    dim, layers, heads
        Width, depth and attention heads (``dim`` a multiple of ``heads``).
    context
        Longest sequence the learned position embedding covers.
    seed
        Seed of the initial weights.
    """

    def __init__(
        self, *, dim: int = 64, layers: int = 2, heads: int = 4, context: int = 64, seed: int = 0
    ) -> None:
        super().__init__()
        dim = V.integer("dim", dim, low=1)
        layers = V.integer("layers", layers, low=1)
        heads = V.integer("heads", heads, low=1)
        self.context = V.integer("context", context, low=1)
        if dim % heads:
            raise ValueError(f"dim must be a multiple of heads ({heads}), got {dim}")
        gen = torch.random.fork_rng()
        with gen:
            torch.manual_seed(V.integer("seed", seed, low=0))
            self.tok = nn.Embedding(VOCAB, dim)
            self.pos = nn.Parameter(torch.randn(self.context, dim) * 0.02)
            self.blocks = nn.ModuleList(_Block(dim, heads) for _ in range(layers))
            self.ln = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, VOCAB, bias=False)
            for m in self.modules():
                if isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, std=0.02)
                    if m.bias is not None:
                        nn.init.zeros_(m.bias)
                elif isinstance(m, nn.Embedding):
                    nn.init.normal_(m.weight, std=0.02)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        t = tokens.shape[1]
        if t > self.context:
            raise ValueError(f"tokens must have at most {self.context} positions, got {t}")
        x = self.tok(tokens) + self.pos[:t]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))
