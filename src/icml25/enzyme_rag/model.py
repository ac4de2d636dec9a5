"""The generator and the classifier.

:class:`AxialMSADiffusion` is an order-agnostic autoregressive diffusion model (OADM,
Hoogeboom et al. 2022; EvoDiff-MSA, Alamdari et al. 2023) over one query row, conditioned on
retrieved aligned rows and a molecule encoding: the input is an MSA-like grid whose first row is
the (partly masked) query, the next rows the retrieved enzymes, and whose extra last column holds
the molecule token in every row. Axial blocks alternate attention along each row and along each
column (MSA Transformer). :func:`oadm_loss` is the training objective, :func:`sample_oadm`
unmasks each query position exactly once, in a random order.

:class:`EnzymeSubstrateClassifier` is the enzyme-substrate relation classifier ``D(x, m)`` used,
frozen, for Gumbel-softmax guidance during training. Both models accept soft one-hot sequences.

Devices: the models compute on their inputs' device, in their own dtype (one-hot rows and
molecule encodings are cast to it); :func:`oadm_loss` follows its target's device and
:func:`sample_oadm` the model's; random draws are made on the ``generator``'s device and moved,
so a CPU generator gives the same masks and orders for a model on any device.

References
----------
Retrieval Augmented Zero-Shot Enzyme Generation for Specified Substrate, ICML 2025.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from icml25.core import validate as V
from icml25.core.validate import module_device
from icml25.enzyme_rag.sequences import GAP_ID, MASK_ID, N_INPUT_TOKENS, N_TOKENS

__all__ = [
    "AxialMSADiffusion",
    "EnzymeSubstrateClassifier",
    "OADMLoss",
    "oadm_loss",
    "sample_oadm",
]


def _one_hot_input(x: torch.Tensor, name: str, n_channels: int, dtype: torch.dtype) -> torch.Tensor:
    """Long token ids -> one-hot in ``dtype``; soft one-hot (..., 21 or 22) -> ``dtype`` with
    n_channels. The ids' range is checked where they hold values (not on the ``meta`` device)."""
    if not x.is_floating_point():
        if (
            x.numel()
            and x.device.type != "meta"
            and (int(x.min()) < 0 or int(x.max()) >= n_channels)
        ):
            raise ValueError(
                f"{name} must hold token ids in [0, {n_channels}), got "
                f"[{int(x.min())}, {int(x.max())}]"
            )
        return F.one_hot(x, n_channels).to(dtype)
    if x.shape[-1] not in (N_TOKENS, N_INPUT_TOKENS):
        raise ValueError(
            f"{name} as a soft one-hot must have {N_TOKENS} or {N_INPUT_TOKENS} channels in its "
            f"last dimension, got shape {tuple(x.shape)}"
        )
    if x.shape[-1] < n_channels:
        x = F.pad(x, (0, n_channels - x.shape[-1]))
    return x[..., :n_channels].to(dtype)


class AxialBlock(nn.Module):
    """Pre-norm row attention, column attention and a feed-forward layer on ``(B, R, C, D)``."""

    def __init__(self, dim: int, heads: int, ff_mult: int = 2) -> None:
        super().__init__()
        self.row_norm = nn.LayerNorm(dim)
        self.row_attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.col_norm = nn.LayerNorm(dim)
        self.col_attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ff_norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(
            nn.Linear(dim, ff_mult * dim), nn.GELU(), nn.Linear(ff_mult * dim, dim)
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        b, r, c, d = h.shape
        x = self.row_norm(h).reshape(b * r, c, d)  # attend along each row
        h = h + self.row_attn(x, x, x, need_weights=False)[0].reshape(b, r, c, d)
        x = self.col_norm(h).transpose(1, 2).reshape(b * c, r, d)  # along each column
        h = h + self.col_attn(x, x, x, need_weights=False)[0].reshape(b, c, r, d).transpose(1, 2)
        return h + self.ff(self.ff_norm(h))


class AxialMSADiffusion(nn.Module):
    """OADM generator over a query row conditioned on retrieved rows and a molecule.

    Parameters
    ----------
    mol_dim
        Size of the molecule encoding (e.g. :func:`~icml25.enzyme_rag.chem.molecule_features`).
    dim, heads, layers
        Width, attention heads and number of axial blocks.
    max_length
        Longest alignment the position embedding covers.

    Forward
    -------
    ``model(query, context=None, mol=None) -> logits (B, L, 21)`` where ``query`` is ``(B, L)``
    token ids (``MASK_ID`` for masked positions) or a soft one-hot ``(B, L, 21|22)``,
    ``context`` is ``(B, R, L)`` token ids of the retrieved aligned rows (``R`` may be 0 or
    ``None``), and ``mol`` is ``(B, mol_dim)`` or ``None`` (a learned null token: the
    unconditional model).
    """

    def __init__(
        self,
        *,
        mol_dim: int,
        dim: int = 64,
        heads: int = 4,
        layers: int = 2,
        max_length: int = 1024,
    ) -> None:
        super().__init__()
        self.mol_dim = V.integer("mol_dim", mol_dim, low=1)
        dim = V.integer("dim", dim, low=1)
        heads = V.integer("heads", heads, low=1)
        if dim % heads:
            raise ValueError(f"dim must be a multiple of heads ({heads}), got {dim}")
        layers = V.integer("layers", layers, low=1)
        self.max_length = V.integer("max_length", max_length, low=1)
        self.token = nn.Linear(N_INPUT_TOKENS, dim, bias=False)  # accepts soft one-hot rows
        self.position = nn.Embedding(self.max_length, dim)
        self.row_type = nn.Embedding(2, dim)  # 0: query row, 1: retrieved row
        self.mol = nn.Sequential(nn.Linear(self.mol_dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.null_mol = nn.Parameter(torch.zeros(dim))
        self.mol_position = nn.Parameter(torch.zeros(dim))
        self.blocks = nn.ModuleList(AxialBlock(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, N_TOKENS)

    def forward(
        self,
        query: torch.Tensor,
        context: torch.Tensor | None = None,
        mol: torch.Tensor | None = None,
    ) -> torch.Tensor:
        dtype = self.token.weight.dtype
        q = _one_hot_input(query, "query", N_INPUT_TOKENS, dtype)
        if q.ndim != 3:
            raise ValueError(
                f"query must be (B, L) ids or (B, L, C) soft one-hot, got {tuple(query.shape)}"
            )
        b, length, _ = q.shape
        if length > self.max_length:
            raise ValueError(f"query length must be <= max_length={self.max_length}, got {length}")
        rows = q[:, None]
        if context is not None and context.shape[1] > 0:
            if context.ndim != 3 or context.shape[0] != b or context.shape[2] != length:
                raise ValueError(
                    f"context must be (B={b}, R, L={length}) token ids, got {tuple(context.shape)}"
                )
            ctx = _one_hot_input(context.to(q.device), "context", N_INPUT_TOKENS, dtype)
            rows = torch.cat([rows, ctx], 1)
        r = rows.shape[1]
        h = self.token(rows) + self.position.weight[:length]
        types = torch.ones(r, dtype=torch.long, device=h.device)
        types[0] = 0
        h = h + self.row_type(types)[None, :, None]
        if mol is None:
            m = self.null_mol.expand(b, -1)
        else:
            if mol.shape != (b, self.mol_dim):
                raise ValueError(
                    f"mol must have shape (B={b}, mol_dim={self.mol_dim}), got {tuple(mol.shape)}"
                )
            m = self.mol(mol.to(dtype))
        mol_col = (m + self.mol_position)[:, None, None, :] + self.row_type(types)[None, :, None]
        h = torch.cat([h, mol_col.expand(b, r, 1, -1)], dim=2)  # molecule token in every row
        for block in self.blocks:
            h = block(h)
        return self.out(self.norm(h[:, 0, :length]))


class EnzymeSubstrateClassifier(nn.Module):
    """``D(x, m)``: logit that sequence ``x`` acts on molecule ``m``.

    With a ``length``, the sequence tower is an MLP on the flattened one-hot alignment row, so
    it sees position-specific residues such as a binding pocket (rows of one global alignment).
    With ``length=None`` it takes rows of any width (per-query MSAs, unaligned sequences padded
    with gaps): a residue embedding, a width-5 convolution and a mean over the non-gap
    positions, each position weighted by ``1 - p(gap)`` so that soft one-hot rows stay
    differentiable. Then a molecule tower and a head on ``[s, m, s * m]``. Accepts token ids
    ``(B, L)`` or soft one-hot ``(B, L, 21)`` (Gumbel-softmax samples).
    """

    def __init__(
        self, *, length: int | None, mol_dim: int, dim: int = 64, hidden: int = 128
    ) -> None:
        super().__init__()
        self.length = None if length is None else V.integer("length", length, low=1)
        self.mol_dim = V.integer("mol_dim", mol_dim, low=1)
        dim = V.integer("dim", dim, low=1)
        hidden = V.integer("hidden", hidden, low=1)
        if self.length is None:
            self.embed = nn.Linear(N_TOKENS, hidden)
            self.conv = nn.Conv1d(hidden, hidden, 5, padding=2)
            self.seq: nn.Module = nn.Linear(hidden, dim)
        else:
            self.seq = nn.Sequential(
                nn.Linear(self.length * N_TOKENS, hidden), nn.GELU(), nn.Linear(hidden, dim)
            )
        self.mol = nn.Sequential(nn.Linear(self.mol_dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
        self.head = nn.Sequential(nn.Linear(3 * dim, hidden), nn.GELU(), nn.Linear(hidden, 1))

    def _sequence(self, oh: torch.Tensor) -> torch.Tensor:
        if self.length is not None:
            return self.seq(oh.flatten(1))
        w = 1.0 - oh[..., GAP_ID : GAP_ID + 1]
        h = F.gelu(self.embed(oh)) * w  # a gap is an empty position, like the conv's padding
        h = F.gelu(self.conv(h.transpose(1, 2))).transpose(1, 2)
        return self.seq((h * w).sum(1) / w.sum(1).clamp(min=1.0))

    def forward(self, x: torch.Tensor, mol: torch.Tensor) -> torch.Tensor:
        dtype = next(self.parameters()).dtype
        oh = _one_hot_input(x, "x", N_TOKENS, dtype)
        if oh.ndim != 3 or (self.length is not None and oh.shape[1] != self.length):
            want = "L" if self.length is None else f"L={self.length}"
            raise ValueError(f"x must be (B, {want}) ids or soft one-hot, got {tuple(x.shape)}")
        if mol.shape != (oh.shape[0], self.mol_dim):
            raise ValueError(
                f"mol must have shape (B={oh.shape[0]}, mol_dim={self.mol_dim}), "
                f"got {tuple(mol.shape)}"
            )
        s = self._sequence(oh)
        m = self.mol(mol.to(dtype))
        return self.head(torch.cat([s, m, s * m], dim=1)).squeeze(1)


@dataclass(frozen=True)
class OADMLoss:
    """One OADM loss evaluation: the loss, the query logits, the mask and the steps ``t``."""

    loss: torch.Tensor
    logits: torch.Tensor
    mask: torch.Tensor
    t: torch.Tensor


def oadm_loss(
    model: nn.Module,
    target: torch.Tensor,
    *,
    context: torch.Tensor | None = None,
    mol: torch.Tensor | None = None,
    weighting: str = "oadm",
    generator: torch.Generator | None = None,
) -> OADMLoss:
    r"""Order-agnostic autoregressive diffusion loss on the query row.

    For each sequence draw :math:`t \sim U\{1..L\}`, mask :math:`t` positions chosen at random,
    and score the masked positions:

    .. math:: \mathcal L = \mathbb E_{t, \sigma}\Big[\frac{1}{t}\sum_{i \in \text{masked}}
              -\log p_\theta(x_i \mid x_{\text{unmasked}}, \text{context}, m)\Big]

    (``weighting="oadm"``): this is the OADM bound :math:`\frac{L}{t}\sum` of EvoDiff divided
    by :math:`L`, i.e. the negative log-likelihood bound per position. ``weighting="none"``
    drops the :math:`1/t` (sum over masked positions divided by :math:`L`), as the paper's
    Eq. 9-10 are written.

    Parameters
    ----------
    model
        :class:`AxialMSADiffusion` (or any module with its call signature).
    target
        ``(B, L)`` token ids of the true query rows.
    context, mol
        Conditioning passed to the model.
    weighting
        ``"oadm"`` or ``"none"``.
    generator
        Torch generator for the masks.
    """
    V.choice("weighting", weighting, ("oadm", "none"))
    if target.ndim != 2 or target.is_floating_point():
        raise ValueError(f"target must be (B, L) token ids, got {tuple(target.shape)}")
    b, length = target.shape
    dev = target.device
    gdev = dev if generator is None else generator.device  # draws where the generator is
    t = torch.randint(1, length + 1, (b,), generator=generator, device=gdev).to(dev)
    ranks = torch.argsort(torch.rand(b, length, generator=generator, device=gdev).to(dev), dim=1)
    ranks = torch.argsort(ranks, dim=1)  # rank of each position in a random order
    mask = ranks < t[:, None]
    query = torch.where(mask, torch.full_like(target, MASK_ID), target)
    logits = model(query, context, mol)
    ce = F.cross_entropy(logits.transpose(1, 2), target, reduction="none")
    masked_sum = (ce * mask).sum(dim=1)
    per_seq = masked_sum / t if weighting == "oadm" else masked_sum / length
    return OADMLoss(per_seq.mean(), logits, mask, t)


@torch.no_grad()
def sample_oadm(
    model: nn.Module,
    *,
    length: int,
    n: int,
    context: torch.Tensor | None = None,
    mol: torch.Tensor | None = None,
    positions_per_step: int = 1,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    return_steps: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Sample ``n`` query rows: start fully masked and, at each step, unmask
    ``positions_per_step`` positions chosen in a random order (each position exactly once),
    sampling their tokens from the model's softmax at ``temperature``.

    Returns token ids ``(n, length)`` (gaps included; :func:`~icml25.enzyme_rag.sequences.decode`
    drops them), and with ``return_steps`` also the step at which each position was unmasked,
    on the model's device (``context`` and ``mol`` are moved there). The order and the tokens
    are drawn on ``generator``'s device.
    """
    length = V.integer("length", length, low=1)
    n = V.integer("n", n, low=1)
    k = V.integer("positions_per_step", positions_per_step, low=1)
    temperature = V.positive("temperature", temperature)
    dev = module_device(model)
    gdev = dev if generator is None else generator.device
    context = None if context is None else context.to(dev)
    mol = None if mol is None else mol.to(dev)
    x = torch.full((n, length), MASK_ID, dtype=torch.long, device=dev)
    steps = torch.full((n, length), -1, dtype=torch.long, device=dev)
    order = torch.argsort(torch.rand(n, length, generator=generator, device=gdev), dim=1).to(dev)
    rows = torch.arange(n, device=dev)[:, None]
    for step, start in enumerate(range(0, length, k)):
        pos = order[:, start : start + k]
        logits = model(x, context, mol)[rows, pos] / temperature  # (n, k, 21)
        # at least float32 for the draw (a float64 model keeps its precision)
        dtype = torch.promote_types(logits.dtype, torch.float32)
        probs = torch.softmax(logits.to(dtype), dim=-1).reshape(-1, N_TOKENS)
        tok = torch.multinomial(probs.to(gdev), 1, generator=generator).reshape(pos.shape)
        tok = tok.to(dev)
        x[rows, pos] = tok
        steps[rows, pos] = step
    return (x, steps) if return_steps else x
