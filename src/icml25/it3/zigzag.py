"""ZigZag models: any torch model given an auxiliary input shaped like the label.

``ZigZag(model, aux_dim)`` calls ``model`` with an extra signal ``aux`` (the label's shape;
``None`` means the neutral "don't know" signal, 0 by default) entering at one of two places:

- ``layer=None`` (MLPs, GNNs): ``aux`` is concatenated to the input's last dimension. A
  ``(B, aux_dim)`` signal is broadcast over the middle dimensions, so a ``(B, F)`` input becomes
  ``(B, F + aux_dim)`` and ``(B, N, F)`` node features get the channel on every node; a signal
  shaped ``(B, N, aux_dim)`` (node-level labels) is concatenated node by node. The wrapped
  model must accept the wider input.
- ``layer="name"`` (CNNs, any deep model): a forward hook on that submodule adds
  ``LeakyReLU(Linear(aux))`` to its output, broadcast over every dimension but the batch and
  ``channel_dim`` (CNN feature maps ``(B, C, H, W)``: over H and W). ``channels`` is C.

Extra positional and keyword arguments (an adjacency matrix, a mask) go to ``model`` unchanged:
``zz(x, adj, aux=y0)``.

Training uses :func:`zigzag_loss`, ``l(f(x, 0), y) + l(f(x, y), y)``; it records in the
state dict that the model was trained this way, and :class:`~icml25.it3.engine.IT3` refuses a
model that was not (IT3 on a model that ignores its auxiliary input changes nothing).

References
----------
Durasov, Shocher, Oner, Chechik, Efros & Fua, "IT3: Idempotent Test-Time Training", ICML 2025;
Durasov, Dorndorf, Lê & Fua, "ZigZag: Universal Sampling-free Uncertainty Estimation Through
Two-Step Inference", TMLR 2024.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import torch
from torch import nn
from torch.nn import functional as F

from icml25.core import validate as V

TASKS = ("classification", "regression")
VARIANTS = ("paper", "recurrent", "single")


class ZigZag(nn.Module):
    """A model ``f(x, aux)`` built from a model ``f(x)``.

    Parameters
    ----------
    model
        The user's ``nn.Module``.
    aux_dim
        Size of the label's last dimension: the number of classes (classification) or of
        regression targets per sample / node.
    layer
        ``None`` to concatenate ``aux`` to the input, or the name of a submodule (as in
        ``model.named_modules()``) whose output receives the embedded ``aux``.
    channels
        With ``layer``: the size of that output's channel dimension.
    channel_dim
        With ``layer``: which dimension of that output holds the channels (1 for
        ``(B, C, ...)`` conv maps and ``(B, C)`` features, -1 for ``(B, N, C)`` node or token
        features).
    task
        ``"classification"`` (outputs are logits; the fed-back signal is their softmax) or
        ``"regression"`` (outputs are fed back as they are).
    neutral
        The "don't know" signal: a number (0 in the paper; for regression a value outside the
        target range is a variant) or ``"uniform"`` (``1 / aux_dim``).
    """

    zigzag_trained: torch.Tensor

    def __init__(
        self,
        model: nn.Module,
        aux_dim: int,
        *,
        layer: str | None = None,
        channels: int | None = None,
        channel_dim: int = 1,
        task: str = "classification",
        neutral: float | str = 0.0,
    ) -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not (isinstance(aux_dim, int) and aux_dim > 0):
            raise ValueError(
                f"aux_dim must be a positive integer (the label's size), got {aux_dim!r}"
            )
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        if not (
            neutral == "uniform" or (isinstance(neutral, (int, float)) and math.isfinite(neutral))
        ):
            raise ValueError(f"neutral must be a finite number or 'uniform', got {neutral!r}")
        self.model = model
        self.aux_dim = aux_dim
        self.task = task
        self.layer = layer
        self.channel_dim = channel_dim
        self.neutral_value = 1.0 / aux_dim if neutral == "uniform" else float(neutral)
        self._aux: torch.Tensor | None = None
        self.register_buffer("zigzag_trained", torch.tensor(False))
        if layer is not None:
            modules = dict(model.named_modules())
            if layer not in modules or not layer:
                raise ValueError(
                    f"layer {layer!r} is not a submodule of the model; named submodules: "
                    f"{[n for n in modules if n][:20]}"
                )
            if not (isinstance(channels, int) and channels > 0):
                raise ValueError(
                    f"channels (the size of {layer!r}'s output channel dimension) is required "
                    f"with layer=, got {channels!r}"
                )
            self.embed = nn.Linear(aux_dim, channels)
            # A bound method: deep copies of this ZigZag rebind the hook to the copy.
            modules[layer].register_forward_hook(self._inject)

    def _inject(self, _module: nn.Module, _inputs: Any, output: torch.Tensor) -> torch.Tensor:
        if self._aux is None:  # the submodule was called outside ZigZag.forward
            return output
        e = F.leaky_relu(self.embed(self._aux), 0.01)  # (B, C)
        cdim = self.channel_dim % output.dim()
        if cdim == 0 or output.shape[cdim] != e.shape[1]:
            raise ValueError(
                f"layer {self.layer!r} returned shape {tuple(output.shape)}: dimension "
                f"{self.channel_dim} should have channels={e.shape[1]}"
            )
        shape = [1] * output.dim()
        shape[0], shape[cdim] = e.shape[0], e.shape[1]
        return output + e.reshape(shape)

    def neutral(self, x: torch.Tensor) -> torch.Tensor:
        """The "don't know" signal for a batch ``x``: shape ``(B, aux_dim)``."""
        return torch.full(
            (x.shape[0], self.aux_dim), self.neutral_value, dtype=x.dtype, device=x.device
        )

    def forward(
        self, x: torch.Tensor, *args: Any, aux: torch.Tensor | None = None, **kwargs: Any
    ) -> torch.Tensor:
        """``f(x, aux)``; ``aux=None`` is the neutral signal."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
        if aux is None:
            aux = self.neutral(x)
        ok = aux.dim() >= 2 and aux.shape[0] == x.shape[0] and aux.shape[-1] == self.aux_dim
        if self.layer is None:
            ok = ok and (aux.dim() == 2 or aux.shape[:-1] == x.shape[:-1])
        else:
            ok = ok and aux.dim() == 2
        if not ok:
            want = "(batch, aux_dim)"
            if self.layer is None:
                want += " or x.shape[:-1] + (aux_dim,)"
            raise ValueError(
                f"aux must have shape {want} with batch={x.shape[0]}, aux_dim={self.aux_dim}; "
                f"got {tuple(aux.shape)} for x of shape {tuple(x.shape)}"
            )
        aux = aux.to(x.dtype)
        if self.layer is None:
            if aux.dim() == 2 and x.dim() > 2:
                view = aux.reshape(aux.shape[0], *([1] * (x.dim() - 2)), self.aux_dim)
                aux = view.expand(*x.shape[:-1], self.aux_dim)
            return self.model(torch.cat([x, aux], dim=-1), *args, **kwargs)
        self._aux = aux
        try:
            return self.model(x, *args, **kwargs)
        finally:
            self._aux = None

    def to_aux(self, output: torch.Tensor) -> torch.Tensor:
        """An output as the next auxiliary input: softmax for classification, itself else."""
        return output.softmax(dim=-1) if self.task == "classification" else output

    def label_to_aux(self, y: torch.Tensor) -> torch.Tensor:
        """The true label as an auxiliary input (one-hot for class indices)."""
        if self.task == "classification":
            return F.one_hot(y, self.aux_dim).float()
        return y

    def mark_trained(self) -> None:
        """Record that the model was trained with its auxiliary input (done by zigzag_loss)."""
        self.zigzag_trained.fill_(True)


class LatentZigZag(ZigZag):
    r"""A ZigZag whose label enters late and whose head also returns a latent: the official
    MNIST notebook's ``Net = (F1, F2)``.

    ``body(x)`` gives features :math:`h` of size ``latent_dim``; the head computes
    ``head(h + LeakyReLU(W a))`` of size ``aux_dim + latent_dim``, split into the output (logits
    or regression values, the first ``aux_dim``) and a latent :math:`z` (the rest).
    ``forward(x, aux)`` returns the output only, so the model works wherever a
    :class:`ZigZag` does. Its second pass can skip the body: :meth:`head_pass` applied to the
    first pass's latent, :math:`(y_2, z_2) = F_2(z_1, y_1)`. That is the notebook's *latent
    feedback*, which :func:`~icml25.it3.zigzag_loss` (``variant="recurrent"``) and
    :class:`~icml25.it3.IT3` (``feedback="latent"``) use for this model; ``feedback="input"``
    recomputes the features from ``x`` instead.
    """

    def __init__(
        self,
        body: nn.Module,
        head: nn.Module,
        aux_dim: int,
        latent_dim: int,
        *,
        task: str = "classification",
        neutral: float | str = 0.0,
    ) -> None:
        super().__init__(body, aux_dim, task=task, neutral=neutral)
        if not isinstance(head, nn.Module):
            raise TypeError(f"head must be a torch.nn.Module, got {type(head).__name__}")
        if not (isinstance(latent_dim, int) and latent_dim > 0):
            raise ValueError(f"latent_dim must be a positive integer, got {latent_dim!r}")
        self.head = head
        self.latent_dim = latent_dim
        self.embed = nn.Linear(aux_dim, latent_dim)

    def _check_aux(self, x: torch.Tensor, aux: torch.Tensor | None) -> torch.Tensor:
        if aux is None:
            aux = self.neutral(x)
        if not (aux.dim() == 2 and aux.shape == (x.shape[0], self.aux_dim)):
            raise ValueError(
                f"aux must have shape (batch, aux_dim) = ({x.shape[0]}, {self.aux_dim}), got "
                f"{tuple(aux.shape)}"
            )
        return aux.to(x.dtype)

    def head_pass(
        self, h: torch.Tensor, aux: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``F_2(h, aux)``: (output, latent) from features or a latent ``h`` ``(B, latent_dim)``."""
        if not (isinstance(h, torch.Tensor) and h.dim() == 2 and h.shape[1] == self.latent_dim):
            raise ValueError(
                f"h must have shape (batch, {self.latent_dim}), got "
                f"{tuple(h.shape) if isinstance(h, torch.Tensor) else type(h).__name__}"
            )
        aux = self._check_aux(h, aux)
        out = self.head(h + F.leaky_relu(self.embed(aux), 0.01))
        if out.dim() != 2 or out.shape[1] != self.aux_dim + self.latent_dim:
            raise ValueError(
                f"head must return (batch, aux_dim + latent_dim) = (B, "
                f"{self.aux_dim + self.latent_dim}), got {tuple(out.shape)}"
            )
        return out[:, : self.aux_dim], out[:, self.aux_dim :]

    def forward_latent(
        self, x: torch.Tensor, *args: Any, aux: torch.Tensor | None = None, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(y_1, z_1) = F_2(F_1(x), aux)``."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
        return self.head_pass(self.model(x, *args, **kwargs), self._check_aux(x, aux))

    def forward(
        self, x: torch.Tensor, *args: Any, aux: torch.Tensor | None = None, **kwargs: Any
    ) -> torch.Tensor:
        return self.forward_latent(x, *args, aux=aux, **kwargs)[0]


def check_input(x: Any) -> torch.Tensor:
    """A batched (batch first, at least 2-D) tensor without NaN or inf."""
    if not isinstance(x, torch.Tensor) or x.dim() < 2:
        raise ValueError(
            "x must be a batched tensor (batch first, at least 2-D), got "
            f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}"
        )
    if x.shape[0] == 0:
        raise ValueError(f"x must hold at least one sample, got shape {tuple(x.shape)}")
    return V.finite_tensor("x", x)


def _check_targets(model: ZigZag, y: torch.Tensor) -> None:
    if not isinstance(y, torch.Tensor):
        raise TypeError(f"y must be a torch.Tensor, got {type(y).__name__}")
    if model.task == "classification":
        if y.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8) or y.dim() != 1:
            raise ValueError(
                "classification targets y must be a 1-D integer tensor of class indices, got "
                f"dtype {y.dtype} and shape {tuple(y.shape)}"
            )
        if y.numel() and (int(y.min()) < 0 or int(y.max()) >= model.aux_dim):
            raise ValueError(
                f"class indices must lie in [0, {model.aux_dim}), "
                f"got {int(y.min())}..{int(y.max())}"
            )
    else:
        if not y.is_floating_point() or y.dim() < 2 or y.shape[-1] != model.aux_dim:
            raise ValueError(
                f"regression targets y must be a float tensor of shape (batch, ..., "
                f"{model.aux_dim}), got dtype {y.dtype} and shape {tuple(y.shape)}"
            )
        if not torch.isfinite(y).all():
            raise ValueError("regression targets y contain NaN or inf")


def zigzag_loss(
    model: ZigZag,
    x: torch.Tensor,
    y: torch.Tensor,
    *args: Any,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    variant: str = "paper",
    p_label: float = 0.75,
    other: str = "random",
    generator: torch.Generator | None = None,
    **kwargs: Any,
) -> torch.Tensor:
    r"""The ZigZag training loss.

    ``variant="paper"``: :math:`\ell(f(x, 0), y) + \ell(f(x, y), y)`.

    ``variant="single"`` (the official airfoil notebook, ZigZag's one-pass training): one pass,
    each sample fed its own true label with probability ``p_label`` (one draw per sample) and
    the neutral signal otherwise: :math:`\ell(f(x, a), y)`. The notebook uses ``p_label=0.25``
    and the MSE loss.

    ``variant="recurrent"`` (the official MNIST code): the first pass is fed the true label with
    probability ``p_label`` (one draw per batch, as there) and otherwise ``other``, a
    ``"random"`` label (random classes; for regression the batch's targets shuffled) or the
    ``"neutral"`` signal; the second pass is fed the first pass's prediction, with gradient:
    :math:`\ell(y_1, y) + \ell(f(x, y_1), y)`, :math:`y_1 = f(x, a)`. For a
    :class:`LatentZigZag` the second pass is the notebook's latent feedback,
    :math:`F_2(z_1, y_1)` with :math:`(y_1, z_1) = f(x, a)`. A model trained only with
    the true label can learn to copy it (it is more informative than ``x``); the random labels
    teach it to check the signal against the input.

    ``y``: class indices ``(B,)`` for classification (fed in one-hot), or targets shaped like
    the model's output for regression. ``loss_fn`` defaults to cross-entropy / L1. Extra
    arguments go to the model. Marks the model as ZigZag-trained.
    """
    if not isinstance(model, ZigZag):
        raise TypeError(f"model must be a ZigZag, got {type(model).__name__}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if not (isinstance(p_label, (int, float)) and 0.0 <= p_label <= 1.0):
        raise ValueError(f"p_label must be a probability in [0, 1], got {p_label!r}")
    if other not in ("random", "neutral"):
        raise ValueError(f"other must be 'random' or 'neutral', got {other!r}")
    check_input(x)
    _check_targets(model, y)
    if len(y) != len(x):
        raise ValueError(f"y must have one target per sample of x ({len(x)}), got {len(y)}")
    if loss_fn is None:
        loss_fn = F.cross_entropy if model.task == "classification" else F.l1_loss
    truth = model.label_to_aux(y).to(x.dtype)
    latent: torch.Tensor | None = None
    if variant == "single":
        dev = generator.device if generator is not None else x.device
        keep = torch.rand(len(y), generator=generator, device=dev).to(y.device) < p_label
        keep = keep.reshape(-1, *([1] * (truth.dim() - 1)))
        a = torch.where(keep, truth, torch.full_like(truth, model.neutral_value))
        out = model(x, *args, aux=a, **kwargs)
        if model.task == "regression" and out.shape != y.shape:
            raise ValueError(
                f"the model's output has shape {tuple(out.shape)} but y has {tuple(y.shape)}: "
                "regression targets must be shaped like the output"
            )
        model.mark_trained()
        return loss_fn(out, y)
    if variant == "paper":
        first = model(x, *args, **kwargs)
    else:
        dev = generator.device if generator is not None else x.device
        if float(torch.rand((), generator=generator, device=dev)) < p_label:
            a = truth
        elif other == "neutral":
            a = model.neutral(x)
        elif model.task == "classification":
            idx = torch.randint(model.aux_dim, y.shape, generator=generator, device=dev)
            a = model.label_to_aux(idx.to(y.device)).to(x.dtype)
        else:
            a = truth[torch.randperm(len(y), generator=generator, device=dev).to(y.device)]
        if isinstance(model, LatentZigZag):
            first, latent = model.forward_latent(x, *args, aux=a, **kwargs)
        else:
            first = model(x, *args, aux=a, **kwargs)
    if model.task == "regression" and first.shape != y.shape:
        raise ValueError(
            f"the model's output has shape {tuple(first.shape)} but y has {tuple(y.shape)}: "
            "regression targets must be shaped like the output"
        )
    second_aux = truth if variant == "paper" else model.to_aux(first)
    if variant == "recurrent" and latent is not None:
        second = cast(LatentZigZag, model).head_pass(latent, second_aux)[0]
    else:
        second = model(x, *args, aux=second_aux, **kwargs)
    model.mark_trained()
    return loss_fn(first, y) + loss_fn(second, y)
