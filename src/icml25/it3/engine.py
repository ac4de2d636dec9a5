r"""IT3: idempotent test-time training of a ZigZag-trained model.

For each test batch (or instance) the weights start from the trained ones, :math:`\theta
\leftarrow \theta_0`, and a frozen copy :math:`F = f_{\theta_0}` is the anchor. Each of
``steps`` optimizer steps (Adam, as in the paper) minimises

.. math:: L(\theta) = D\big(y_0,\; F(x, y_0)\big), \qquad y_0 = f_\theta(x, 0),

with the gradient reaching :math:`\theta` through :math:`y_0`, both directly and through the
anchor's auxiliary input (the anchor's weights never change). The prediction is
:math:`F(x, f_\theta(x, 0))` (``output="anchor"``) or :math:`f_\theta(x, 0)`
(``output="first"``, what the official MNIST notebook reports). ``D`` is the mean L1 distance
(regression) or the Jensen-Shannon divergence of the softmaxes (classification). By default
both copies run in eval mode (BatchNorm uses its running statistics, so a gain is not
test-batch statistics); ``batchnorm="batch"`` normalises with the test batch's statistics, as
the official CIFAR notebook does. ``feedback="latent"`` applies the anchor's frozen head to the
adapted model's latent (the official MNIST notebook, :class:`~icml25.it3.LatentZigZag`).

The idempotence error :math:`D(F(x, 0), F(x, F(x, 0)))` is an out-of-distribution score
(:func:`idempotence_error`).

References
----------
Durasov, Shocher, Oner, Chechik, Efros & Fua, "IT3: Idempotent Test-Time Training", ICML 2025,
https://arxiv.org/abs/2410.04201.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any, cast

import torch
from torch import nn
from torch.nn import functional as F

from icml25.it3.zigzag import LatentZigZag, ZigZag, check_input

Distance = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _same_shape(a: Any, b: Any) -> None:
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor) or t.dim() < 1:
            raise ValueError(f"{name} must be a batched tensor, got {type(t).__name__}")
    if a.shape != b.shape:
        raise ValueError(
            f"the two inputs must have one shape, got {tuple(a.shape)} and {tuple(b.shape)}"
        )


def l1_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-sample mean absolute difference, shape ``(B,)``."""
    _same_shape(a, b)
    return _l1(a, b)


def _l1(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a - b).abs().reshape(a.shape[0], -1).mean(dim=1)


def js_divergence(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    r"""Per-sample Jensen-Shannon divergence of probability vectors on the last dimension
    (natural log, in :math:`[0, \log 2]`), averaged over any middle dimensions: ``(B,)``."""
    _same_shape(p, q)
    for name, t in (("p", p), ("q", q)):
        if not bool(((t >= 0) & (t <= 1)).all()) or not torch.allclose(
            t.sum(-1), torch.ones((), dtype=t.dtype), atol=1e-4
        ):
            raise ValueError(f"{name} must hold probability vectors on its last dimension")
    return _js(p, q)


def _js(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    # Logs of clamped values: a probability that underflows to 0 contributes 0 with a finite
    # gradient (xlogy's gradient there is 0 * -inf = NaN).
    tiny = torch.finfo(p.dtype).tiny
    m = 0.5 * (p + q)
    log_m = m.clamp_min(tiny).log()
    kl_pm = (p * (p.clamp_min(tiny).log() - log_m)).sum(-1)
    kl_qm = (q * (q.clamp_min(tiny).log() - log_m)).sum(-1)
    return (0.5 * (kl_pm + kl_qm)).reshape(p.shape[0], -1).mean(dim=1)


def check_zigzag(model: nn.Module) -> ZigZag:
    """``model`` if it is a ZigZag trained with its auxiliary input, else a clear error."""
    if not isinstance(model, ZigZag):
        raise TypeError(
            "IT3 needs a ZigZag model (one with an auxiliary label input): wrap yours with "
            f"icml25.it3.ZigZag and train it with zigzag_loss; got {type(model).__name__}"
        )
    if not bool(model.zigzag_trained):
        raise ValueError(
            "the model was not trained with its auxiliary input: train it with zigzag_loss "
            "(or call mark_trained() if you trained it ZigZag-style yourself); IT3 on a model "
            "that ignores its auxiliary input changes nothing"
        )
    return model


def resolve_distance(model: ZigZag, distance: str | Distance | None) -> Distance:
    """``None`` gives the paper's choice: JS for classification, L1 for regression."""
    if distance is None:
        distance = "js" if model.task == "classification" else "l1"
    if callable(distance):
        return distance
    # the model's own outputs are well formed: the named distances skip the public checks
    if distance == "l1":
        return _l1
    if distance == "js":
        return _js
    raise ValueError(f"distance must be 'l1', 'js' or a callable, got {distance!r}")


FEEDBACKS = ("auto", "input", "latent")


def resolve_feedback(model: ZigZag, feedback: str) -> str:
    """``"auto"``: ``"latent"`` for a :class:`LatentZigZag` (as it is trained), else
    ``"input"``."""
    if feedback not in FEEDBACKS:
        raise ValueError(f"feedback must be one of {FEEDBACKS}, got {feedback!r}")
    if feedback == "auto":
        return "latent" if isinstance(model, LatentZigZag) else "input"
    if feedback == "latent" and not isinstance(model, LatentZigZag):
        raise ValueError(
            "feedback='latent' needs a LatentZigZag (a model whose head returns a latent); "
            f"got {type(model).__name__}"
        )
    return feedback


def _passes(
    f: ZigZag,
    anchor: ZigZag,
    x: torch.Tensor,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    feedback: str,
    start: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(y0, y1)`` outputs: ``y0 = f(x, start)`` and the anchor's second pass fed ``y0``,
    either ``F(x, y0)`` (``"input"``) or the frozen head on f's latent, ``F_2(z0, y0)``
    (``"latent"``)."""
    if feedback == "latent":
        y0, z0 = cast(LatentZigZag, f).forward_latent(x, *args, aux=start, **kwargs)
        y1 = cast(LatentZigZag, anchor).head_pass(z0, f.to_aux(y0))[0]
    else:
        y0 = f(x, *args, aux=start, **kwargs)
        y1 = anchor(x, *args, aux=f.to_aux(y0), **kwargs)
    return y0, y1


def it3_objective(
    f: ZigZag,
    anchor: ZigZag,
    x: torch.Tensor,
    *args: Any,
    distance: Distance,
    feedback: str = "auto",
    **kwargs: Any,
) -> torch.Tensor:
    r"""Per-sample :math:`D(y_0, F(x, y_0))` with :math:`y_0 = f(x, 0)`, differentiable in
    ``f``'s parameters through both occurrences of :math:`y_0` (with ``feedback="latent"``:
    :math:`D(y_0, F_2(z_0, y_0))`, the gradient also reaching f's latent :math:`z_0`)."""
    check_zigzag(f)
    check_zigzag(anchor)
    check_input(x)
    fb = resolve_feedback(f, feedback)
    return _objective(f, anchor, x, *args, distance=distance, feedback=fb, **kwargs)


def _objective(
    f: ZigZag,
    anchor: ZigZag,
    x: torch.Tensor,
    *args: Any,
    distance: Distance,
    feedback: str = "input",
    start: torch.Tensor | None = None,
    **kwargs: Any,
) -> torch.Tensor:
    """:func:`it3_objective` on checked models and input (the adaptation loop's hot path)."""
    y0, y1 = _passes(f, anchor, x, args, kwargs, feedback, start)
    return distance(f.to_aux(y0), anchor.to_aux(y1))


@torch.no_grad()
def zigzag_recursion(
    model: ZigZag, x: torch.Tensor, *args: Any, feedback: str = "auto", **kwargs: Any
) -> torch.Tensor:
    """``F(x, F(x, 0))`` (or ``F_2(z, y)`` with latent feedback): the recursion without any
    weight update (a baseline)."""
    model = check_zigzag(model)
    check_input(x)
    fb = resolve_feedback(model, feedback)
    was = model.training
    model.eval()
    try:
        return _passes(model, model, x, args, kwargs, fb)[1]
    finally:
        model.train(was)


@torch.no_grad()
def idempotence_error(
    model: ZigZag,
    x: torch.Tensor,
    *args: Any,
    distance: str | Distance | None = None,
    feedback: str = "auto",
    **kwargs: Any,
) -> torch.Tensor:
    """Per-sample ``D(F(x, 0), F(x, F(x, 0)))`` (L1 or JS, as IT3 uses): an OOD score."""
    model = check_zigzag(model)
    check_input(x)
    dist = resolve_distance(model, distance)
    fb = resolve_feedback(model, feedback)
    was = model.training
    model.eval()
    try:
        return _objective(model, model, x, *args, distance=dist, feedback=fb, **kwargs)
    finally:
        model.train(was)


def batch_statistics(model: nn.Module) -> nn.Module:
    """Make every BatchNorm layer of ``model`` normalise with the current batch's statistics,
    in train and eval mode alike (its running statistics are dropped); returns ``model``."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.track_running_stats = False
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
    return model


def _split(batch: int, i: int, value: Any) -> Any:
    """The i-th sample of a per-sample tensor argument; anything else unchanged."""
    if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape[0] == batch:
        return value[i : i + 1]
    return value


class IT3:
    """Idempotent test-time training for a ZigZag-trained model.

    Parameters
    ----------
    model
        A :class:`~icml25.it3.ZigZag` trained with :func:`~icml25.it3.zigzag_loss`. It is never
        modified: adaptation runs on an internal copy.
    steps
        Optimizer steps per adaptation (the paper's code: 10 for MNIST, 1 for CIFAR, 2 for
        tabular data, 1 for airfoils; 0 gives the ZigZag recursion).
    lr
        Learning rate (the paper's code: 1e-3 for MNIST and CIFAR, 1e-4 tabular, 2e-4 airfoil).
    distance
        ``"js"``, ``"l1"``, a callable ``(a, b) -> per-sample distances``, or ``None`` for the
        paper's choice by task.
    reset
        ``"batch"``: weights reset to the trained ones before every call (the paper);
        ``"instance"``: every sample of the batch adapted on its own; ``"never"``: online
        adaptation, weights carried from call to call.
    reset_optimizer
        Whether a weight reset also starts a fresh optimizer. ``False`` (default) follows the
        official MNIST code, which reloads the weights per batch but keeps one Adam, so its
        moment estimates carry over between batches; with ``True`` every adaptation's first
        Adam step moves each weight by about ``lr`` (a sign step).
    output
        ``"anchor"``: ``F(x, f_theta(x, 0))``; ``"first"``: ``f_theta(x, 0)``.
    optimizer
        ``"adam"`` (the paper) or ``"sgd"``.
    feedback
        ``"input"``: the anchor recomputes the features from ``x``, ``F(x, y_0)`` (the paper's
        formula); ``"latent"``: the anchor's frozen head is applied to the adapted model's
        latent, ``F_2(z_0, y_0)`` (the official MNIST notebook; needs a
        :class:`~icml25.it3.LatentZigZag`); ``"auto"``: latent for a LatentZigZag, else input.
    start
        The first pass's auxiliary input: ``"neutral"`` (the model's "don't know" signal) or
        ``"random"`` (a random one-hot per sample, drawn afresh at every forward pass: the
        official MNIST notebook; classification only).
    batchnorm
        ``"eval"``: BatchNorm layers use their running statistics; ``"batch"``: both copies
        normalise with the test batch's statistics (the official CIFAR notebook runs the
        adapted model in ``train()`` mode).
    frozen_anchor
        ``True`` (the paper and the MNIST notebook): the second pass is the frozen copy
        :math:`F = f_{\theta_0}`. ``False`` (the official CIFAR notebook, which has no frozen
        copy): the second pass is the adapted model itself, :math:`f_\theta(x, f_\theta(x,
        0))`, so the gradient also reaches :math:`\theta` through the second pass's weights.
    seed
        Seed of the random starts.

    Attributes
    ----------
    last_losses
        After a call: for every adaptation (one per batch, or one per instance) the objective
        before each step and after the last one (``steps + 1`` values).

    Examples
    --------
    >>> it3 = IT3(zigzag_model, steps=10, lr=1e-3)   # doctest: +SKIP
    >>> logits = it3(x_test_batch)                     # doctest: +SKIP
    """

    def __init__(
        self,
        model: ZigZag,
        *,
        steps: int = 3,
        lr: float = 1e-3,
        distance: str | Distance | None = None,
        reset: str = "batch",
        output: str = "anchor",
        optimizer: str = "adam",
        reset_optimizer: bool = False,
        feedback: str = "auto",
        start: str = "neutral",
        batchnorm: str = "eval",
        frozen_anchor: bool = True,
        seed: int = 0,
    ) -> None:
        model = check_zigzag(model)
        if not isinstance(frozen_anchor, bool):
            raise ValueError(f"frozen_anchor must be True or False, got {frozen_anchor!r}")
        if not (isinstance(steps, int) and not isinstance(steps, bool) and steps >= 0):
            raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
        if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
            raise ValueError(f"lr must be a positive finite number, got {lr!r}")
        if reset not in ("batch", "instance", "never"):
            raise ValueError(f"reset must be 'batch', 'instance' or 'never', got {reset!r}")
        if output not in ("anchor", "first"):
            raise ValueError(f"output must be 'anchor' or 'first', got {output!r}")
        if optimizer not in ("adam", "sgd"):
            raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
        if start not in ("neutral", "random"):
            raise ValueError(f"start must be 'neutral' or 'random', got {start!r}")
        if start == "random" and model.task != "classification":
            raise ValueError("start='random' (a random one-hot) needs a classification model")
        if batchnorm not in ("eval", "batch"):
            raise ValueError(f"batchnorm must be 'eval' or 'batch', got {batchnorm!r}")
        self.steps, self.lr, self.reset, self.output = steps, float(lr), reset, output
        self.optimizer_name, self.reset_optimizer = optimizer, bool(reset_optimizer)
        self.distance = resolve_distance(model, distance)
        self.feedback = resolve_feedback(model, feedback)
        self.start, self.batchnorm, self.frozen_anchor = start, batchnorm, frozen_anchor
        self._gen = torch.Generator().manual_seed(int(seed))
        if optimizer == "adam" and any(p.dtype == torch.float16 for p in model.parameters()):
            raise ValueError(
                "optimizer='adam' on float16 weights: Adam's eps (1e-8) underflows to 0 in "
                "float16, so a weight whose gradient is 0 gets the update 0/0 = NaN; use "
                "optimizer='sgd', or bfloat16 or float32 weights"
            )
        # the copies must be normal tensors even when IT3 is built under inference mode
        with torch.inference_mode(False):
            self.anchor = copy.deepcopy(model).eval().requires_grad_(False)
            self.work = copy.deepcopy(model).eval().requires_grad_(True)
            if batchnorm == "batch":
                batch_statistics(self.anchor)
                batch_statistics(self.work)
            self._theta0 = {k: v.detach().clone() for k, v in self.work.state_dict().items()}
            self._slots = list(self.work.state_dict().values())  # share storage with the weights
            self._theta0_values = list(self._theta0.values())
        self._opt: torch.optim.Optimizer | None = None
        self.last_losses: list[list[float]] = []

    def _start(self, x: torch.Tensor) -> torch.Tensor | None:
        if self.start == "neutral":
            return None
        k = self.work.aux_dim
        idx = torch.randint(k, (x.shape[0],), generator=self._gen)
        return F.one_hot(idx, k).to(device=x.device, dtype=x.dtype)

    def _optimizer(self) -> torch.optim.Optimizer:
        params = self.work.parameters()
        # foreach: one fused loop over the parameters (the same arithmetic as the default
        # per-tensor loop); a small model's adaptation is dominated by per-tensor overhead
        if self.optimizer_name == "adam":
            return torch.optim.Adam(params, lr=self.lr, foreach=True)
        return torch.optim.SGD(params, lr=self.lr, foreach=True)

    def reset_weights(self) -> None:
        """``theta <- theta0`` (and a fresh optimizer if ``reset_optimizer`` or none yet)."""
        with torch.no_grad():  # in place, as load_state_dict, without its key checks
            torch._foreach_copy_(self._slots, self._theta0_values)
        if self.reset_optimizer or self._opt is None:
            self._opt = self._optimizer()

    def _adapt(
        self, x: torch.Tensor, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> torch.Tensor:
        if self.reset != "never" or self._opt is None:
            self.reset_weights()
        assert self._opt is not None
        f, losses = self.work, []
        anchor = self.anchor if self.frozen_anchor else self.work
        fb = self.feedback
        with torch.enable_grad():
            for _ in range(self.steps):
                loss = _objective(
                    f, anchor, x, *args, distance=self.distance, feedback=fb,
                    start=self._start(x), **kwargs,
                ).mean()  # fmt: skip
                if not torch.isfinite(loss):
                    raise FloatingPointError(
                        f"the IT3 objective became {loss.item()}: lower lr (got {self.lr}) or "
                        "check the input for NaN/inf"
                    )
                self._opt.zero_grad(set_to_none=True)
                loss.backward()
                self._opt.step()
                losses.append(float(loss.detach()))
        with torch.no_grad():
            y0, y1 = _passes(f, anchor, x, args, kwargs, fb, self._start(x))
            losses.append(float(self.distance(f.to_aux(y0), anchor.to_aux(y1)).mean()))
        self.last_losses.append(losses)
        return y1 if self.output == "anchor" else y0

    def __call__(self, x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        """Adapted predictions (logits, or regression outputs) for the batch ``x``; extra
        arguments go to the model (per-sample tensors are split in ``"instance"`` mode)."""
        check_input(x)
        if torch.is_inference_mode_enabled():
            # IT3 takes gradient steps on its own copy of the weights, which inference mode
            # forbids: leave it for them (inference tensors are copied, as autograd needs)
            with torch.inference_mode(False):
                x, args, kwargs = (
                    _normal(x),
                    tuple(map(_normal, args)),
                    {k: _normal(v) for k, v in kwargs.items()},
                )
                return self._call(x, args, kwargs)
        return self._call(x, args, kwargs)

    def _call(self, x: torch.Tensor, args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor:
        self.last_losses = []
        if self.reset != "instance":
            return self._adapt(x, args, kwargs)
        b = x.shape[0]
        outs = []
        for i in range(b):
            a_i = tuple(_split(b, i, a) for a in args)
            k_i = {k: _split(b, i, v) for k, v in kwargs.items()}
            outs.append(self._adapt(x[i : i + 1], a_i, k_i))
        return torch.cat(outs)


def _normal(value: Any) -> Any:
    """``value``, or a normal copy of it if it is an inference tensor (autograd refuses those)."""
    if isinstance(value, torch.Tensor) and value.is_inference():
        return value.clone()
    return value
