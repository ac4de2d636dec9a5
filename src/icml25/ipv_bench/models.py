"""Small video classifiers trained on the spot: single-frame, frame-average and temporal.

All three share one frame encoder (a CNN with coordinate channels) and predict a
distribution over :data:`~icml25.ipv_bench.generator.CLASS_NAMES` (plausible + the ten
violations). They differ only in what they can see of time:

- :class:`SingleFrameModel` sees the middle frame only;
- :class:`FrameAverageModel` encodes every frame and averages the features (it sees which
  frames occur, not their order);
- :class:`TemporalModel` encodes each frame together with its difference to the previous
  frame and runs dilated temporal convolutions over the sequence (it sees order and motion).

Clips are tensors ``(B, T, 3, H, W)`` with values in [0, 1] (``uint8`` in [0, 255] accepted).
The models compute on their clips' device in their own dtype (clips are cast to it);
:func:`train_video_model` and :func:`predict_proba` move each batch to the model's device and
return host (NumPy) results.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from icml25.core import validate as V
from icml25.core.validate import module_device


def _coords(x: torch.Tensor) -> torch.Tensor:
    n, _, h, w = x.shape
    ys = torch.linspace(-1, 1, h, dtype=x.dtype, device=x.device)
    xs = torch.linspace(-1, 1, w, dtype=x.dtype, device=x.device)
    ys = ys.view(1, 1, h, 1).expand(n, 1, h, w)
    xs = xs.view(1, 1, 1, w).expand(n, 1, h, w)
    return torch.cat([x, ys, xs], dim=1)


class FrameEncoder(nn.Module):
    """``(N, C, H, W) -> (N, dim)``: three convolutions with batch norm (coordinate channels
    added, input centred at 0.5), then two summaries of the last feature map, joined by a
    linear layer: its 4 x 4 average pool (what is where, coarsely) and a spatial soft-argmax
    per channel (where each feature peaks, at sub-cell precision; Levine et al. 2016)."""

    def __init__(self, *, in_channels: int = 3, dim: int = 64, width: int = 16) -> None:
        super().__init__()
        self.in_channels = V.integer("in_channels", in_channels, low=1)
        dim = V.integer("dim", dim, low=1)
        width = V.integer("width", width, low=1)
        c = 2 * width
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels + 2, width, 3, stride=2, padding=1),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, c, 3, stride=2, padding=1),
            nn.BatchNorm2d(c),
            nn.ReLU(),
            nn.Conv2d(c, c, 3, padding=1),
        )
        self.pool = nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(), nn.AdaptiveAvgPool2d(4))
        self.proj = nn.Sequential(nn.Linear(c * 16 + 2 * c, dim), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv(_coords((x - 0.5) * 4.0))
        n, c, hh, ww = h.shape
        attn = torch.softmax(h.flatten(2), dim=-1).view(n, c, hh, ww)
        ys = torch.linspace(-1, 1, hh, dtype=h.dtype, device=h.device)
        xs = torch.linspace(-1, 1, ww, dtype=h.dtype, device=h.device)
        key_y = (attn.sum(3) * ys).sum(-1)
        key_x = (attn.sum(2) * xs).sum(-1)
        feats = torch.cat([self.pool(h).flatten(1), key_x, key_y], dim=1)
        return self.proj(feats)


def _as_clips(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Clips in the model's ``dtype`` (``uint8`` scaled from [0, 255] to [0, 1])."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"clips must be a torch.Tensor (B, T, 3, H, W), got {type(x).__name__}")
    if x.ndim != 5 or x.shape[2] != 3:
        raise ValueError(f"clips must have shape (B, T, 3, H, W), got {tuple(x.shape)}")
    if x.dtype == torch.uint8:
        return x.to(dtype) / 255.0
    return x.to(dtype)


class SingleFrameModel(nn.Module):
    """Classifies a clip from its middle frame alone."""

    def __init__(self, *, n_classes: int, dim: int = 64, width: int = 16) -> None:
        super().__init__()
        self.n_classes = V.integer("n_classes", n_classes, low=2)
        self.encoder = FrameEncoder(dim=dim, width=width)
        self.head = nn.Linear(dim, self.n_classes)

    def forward(self, clips: torch.Tensor) -> torch.Tensor:
        x = _as_clips(clips, self.head.weight.dtype)
        return self.head(self.encoder(x[:, x.shape[1] // 2]))


class FrameAverageModel(nn.Module):
    """Encodes every frame and classifies the average feature (order-blind)."""

    def __init__(self, *, n_classes: int, dim: int = 64, width: int = 16) -> None:
        super().__init__()
        self.n_classes = V.integer("n_classes", n_classes, low=2)
        self.encoder = FrameEncoder(dim=dim, width=width)
        self.head = nn.Linear(dim, self.n_classes)

    def forward(self, clips: torch.Tensor) -> torch.Tensor:
        x = _as_clips(clips, self.head.weight.dtype)
        b, t = x.shape[:2]
        feats = self.encoder(x.flatten(0, 1)).view(b, t, -1)
        return self.head(feats.mean(1))


class TemporalModel(nn.Module):
    """Encodes each frame with its difference to the previous one, then two dilated temporal
    convolutions, max- and mean-pooled over time."""

    def __init__(self, *, n_classes: int, dim: int = 64, width: int = 16) -> None:
        super().__init__()
        self.n_classes = V.integer("n_classes", n_classes, low=2)
        self.encoder = FrameEncoder(in_channels=6, dim=dim, width=width)
        self.temporal = nn.Sequential(
            nn.Conv1d(dim, dim, 3, padding=1),
            nn.ReLU(),
            nn.Conv1d(dim, dim, 3, padding=2, dilation=2),
            nn.ReLU(),
        )
        self.head = nn.Linear(2 * dim, self.n_classes)

    def forward(self, clips: torch.Tensor) -> torch.Tensor:
        x = _as_clips(clips, self.head.weight.dtype)
        b, t = x.shape[:2]
        diff = torch.cat([torch.zeros_like(x[:, :1]), x[:, 1:] - x[:, :-1]], dim=1)
        feats = self.encoder(torch.cat([x, diff], dim=2).flatten(0, 1)).view(b, t, -1)
        h = self.temporal(feats.transpose(1, 2))
        return self.head(torch.cat([h.amax(-1), h.mean(-1)], dim=1))


MODELS: dict[str, type[nn.Module]] = {
    "single_frame": SingleFrameModel,
    "frame_average": FrameAverageModel,
    "temporal": TemporalModel,
}


def train_video_model(
    model: nn.Module,
    clips: np.ndarray | torch.Tensor,
    labels: np.ndarray | torch.Tensor,
    *,
    epochs: int = 5,
    batch_size: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> nn.Module:
    """Train ``model`` with Adam on cross-entropy (one-cycle learning rate); returns it in
    eval mode.

    ``clips`` ``(N, T, 3, H, W)`` (float in [0, 1] or uint8), ``labels`` class indices; they
    stay where they are and each batch is moved to the model's device.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    x = _host_tensor(clips)
    if x.ndim != 5:
        raise ValueError(f"clips must have shape (N, T, 3, H, W), got {tuple(x.shape)}")
    y = torch.from_numpy(V.class_labels("labels", labels, n=len(x)))
    epochs = V.integer("epochs", epochs, low=1)
    batch_size = V.integer("batch_size", batch_size, low=1)
    lr = V.positive("lr", lr)
    seed = V.integer("seed", seed, low=0)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    dev = module_device(model)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    steps = epochs * ((len(x) + batch_size - 1) // batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    model.train()
    for ep in range(epochs):
        perm = torch.randperm(len(x), generator=gen, device=gen.device)
        total = 0.0
        for i in range(0, len(x), batch_size):
            idx = perm[i : i + batch_size]
            xb, yb = x[idx.to(x.device)].to(dev), y[idx].to(dev)
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(idx)
        if progress is not None:
            progress(f"epoch {ep + 1}/{epochs}: loss {total / len(x):.3f}")
    return model.eval()


@torch.no_grad()
def predict_proba(
    model: nn.Module, clips: np.ndarray | torch.Tensor, *, batch_size: int = 128
) -> np.ndarray:
    """Class probabilities ``(N, K)`` of a trained model (float64 NumPy; each batch runs on the
    model's device)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    x = _host_tensor(clips)
    if x.ndim != 5:
        raise ValueError(f"clips must have shape (N, T, 3, H, W), got {tuple(x.shape)}")
    batch_size = V.integer("batch_size", batch_size, low=1)
    model.eval()
    dev = module_device(model)
    out = [
        torch.softmax(model(x[i : i + batch_size].to(dev)), -1).cpu()
        for i in range(0, len(x), batch_size)
    ]
    return torch.cat(out).numpy().astype(np.float64)


def _host_tensor(clips: np.ndarray | torch.Tensor) -> torch.Tensor:
    """A tensor as it is, an array as a CPU tensor (never on the default device)."""
    if isinstance(clips, torch.Tensor):
        return clips
    return torch.from_numpy(np.ascontiguousarray(np.asarray(clips)))
