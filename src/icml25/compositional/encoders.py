"""Embeddings from any encoder: a NumPy array, a torch module, or a Hugging Face model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from icml25.core import validate as V
from icml25.core.llm import mean_pool


def embed(encoder: Any, inputs: Any = None, *, batch_size: int = 256) -> np.ndarray:
    """``(N, d)`` float64 embeddings of ``inputs`` under ``encoder``.

    Parameters
    ----------
    encoder
        One of

        - an array or tensor of embeddings (then ``inputs`` must be ``None``);
        - a ``torch.nn.Module`` whose output is a tensor (flattened to ``(N, d)``) or a model
          output with ``last_hidden_state`` (a Hugging Face model), mean-pooled over the tokens
          that ``attention_mask`` keeps (over all tokens without a mask).
    inputs
        For a module: a tensor / array (batched on its first axis) or a mapping of tensors
        such as a tokenizer's output (all batched on their first axis).
    batch_size
        Rows per forward pass (the module runs in ``eval`` mode under ``torch.no_grad``; its
        training mode is restored afterwards).

    Returns
    -------
    numpy.ndarray
        Finite ``(N, d)`` embeddings.

    Notes
    -----
    The module runs where it is: each batch is moved to the device of its first parameter or
    buffer (a module without any runs on the inputs' device), and floating inputs (arrays or
    the mapping's values) are cast to the dtype of its first floating parameter (``float32`` for
    a module without one); integer inputs (token ids, masks) keep theirs. The
    embeddings come back to the host (``.cpu()``) as float64.
    """
    if isinstance(encoder, (np.ndarray, torch.Tensor)):
        if inputs is not None:
            raise ValueError("inputs must be None when encoder is already an array of embeddings")
        return V.finite_array("encoder", encoder, ndim=2)
    if not isinstance(encoder, nn.Module):
        raise TypeError(
            "encoder must be a NumPy array, a torch.Tensor or a torch.nn.Module, got "
            f"{type(encoder).__name__}"
        )
    bs = V.integer("batch_size", batch_size, low=1)
    if inputs is None:
        raise ValueError("inputs must be given when encoder is a torch.nn.Module, got None")
    dev, dtype = _placement(encoder)
    if isinstance(inputs, Mapping):
        batch = {k: _host_tensor(v) for k, v in inputs.items()}
        lens = {len(v) for v in batch.values()}
        if len(lens) != 1:
            raise ValueError(f"inputs must share one batch size, got sizes {sorted(lens)}")
        (n,) = lens
    else:
        x = _host_tensor(inputs)
        if x.is_floating_point():
            V.finite_tensor("inputs", x)
        n = len(x)
    if n < 1:
        raise ValueError("inputs must hold at least one row, got 0")
    out = []
    was_training = encoder.training
    encoder.eval()
    try:
        with torch.no_grad():
            for s in range(0, n, bs):
                if isinstance(inputs, Mapping):
                    b = {k: _place(v[s : s + bs], dev, dtype) for k, v in batch.items()}
                    res = encoder(**b)
                    mask = b.get("attention_mask")
                else:
                    res = encoder(_place(x[s : s + bs], dev, dtype))
                    mask = None
                out.append(_pool(res, mask))
    finally:
        encoder.train(was_training)
    Z = torch.cat([z.cpu() for z in out]).double().numpy()
    return V.finite_array("embeddings", Z, ndim=2)


def _placement(encoder: nn.Module) -> tuple[torch.device | None, torch.dtype]:
    """The device of ``encoder``'s first parameter or buffer (``None``: it has none, the inputs
    stay where they are) and the dtype of its first floating one (``float32`` if none)."""
    tensors = [*encoder.parameters(), *encoder.buffers()]
    dev = tensors[0].device if tensors else None
    floats = [t.dtype for t in tensors if t.is_floating_point()]
    return dev, floats[0] if floats else torch.float32


def _host_tensor(value: Any) -> torch.Tensor:
    """A tensor as it is (wherever it lives), anything else as a CPU tensor (never on the
    default device: batches are moved to the encoder one at a time)."""
    if isinstance(value, torch.Tensor):
        return value
    return torch.from_numpy(np.ascontiguousarray(np.asarray(value)))


def _place(x: torch.Tensor, dev: torch.device | None, dtype: torch.dtype) -> torch.Tensor:
    """``x`` on the encoder's device, floating values in its dtype (ids and masks as they are)."""
    if x.is_floating_point():
        x = x.to(dtype)
    return x if dev is None else x.to(dev)


def _pool(res: Any, mask: torch.Tensor | None) -> torch.Tensor:
    if isinstance(res, torch.Tensor):
        return res.reshape(len(res), -1)
    hidden = getattr(res, "last_hidden_state", None)
    if hidden is None and isinstance(res, (tuple, list)) and res:
        hidden = res[0]
    if not isinstance(hidden, torch.Tensor):
        raise TypeError(
            "encoder must return a tensor or an output with last_hidden_state, got "
            f"{type(res).__name__}"
        )
    if hidden.ndim == 2:
        return hidden
    if mask is None:
        return hidden.mean(dim=1)
    return mean_pool(hidden, mask)
