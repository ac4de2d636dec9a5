"""Rate-constrained training: the generalized-Gaussian rate term and its proximal step.

BackSlash minimises ``D(theta) + lambda R(theta)``: ``D`` is the task loss and ``R`` the
"discretized generalized-Gaussian rate" of the weights. Under a generalized-Gaussian prior
``f(x) ∝ exp(-C |x|^nu)`` with quantisation step ``delta``, the code length of a weight is
``-log2(delta f(theta_i)) = const + C log2(e) |theta_i|^nu``. Hence
``R(theta) = (1/N) sum_i |theta_i|^nu`` (``reduction="mean"``, the paper's form) or the sum.

The shape ``nu`` is re-estimated from the weights by moment matching (:func:`gg_shape`):
``rho = N sum theta^2 / (sum |theta|)^2`` equals
``rho(nu) = Gamma(1/nu) Gamma(3/nu) / Gamma(2/nu)^2`` for a generalized Gaussian.

The rate term is applied as a *decoupled proximal step* after the optimizer's step.
``theta <- prox_{eta lambda / N |.|^nu}(theta)``, with ``eta`` the parameter group's learning
rate (:func:`prox_power`). Putting ``lambda R`` into the gradient instead lets Adam rescale the
tiny rate gradient to a full step and collapse all weights. A plain subgradient step
oscillates around 0 for ``nu < 1``. Both are the brief's pitfalls.

References
----------
Wu, Wen & Han, "BackSlash: Rate Constrained Optimized Training of Large Language Models",
ICML 2025 (arXiv:2504.16968).
"""

from __future__ import annotations

import math
import warnings
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np
import torch
from scipy.optimize import brentq
from scipy.special import gammaln
from torch import nn

from icml25.core import validate as V

NU_TABLE = (0.1, 3.0)
"""The range in which the shape is searched (the paper's table)."""


def gg_rho(nu: float | np.ndarray) -> float | np.ndarray:
    """``Gamma(1/nu) Gamma(3/nu) / Gamma(2/nu)^2`` (``pi/2`` at 2, 2 at 1, 3 at 0.5...)."""
    raw = np.asarray(nu)
    if raw.dtype.kind not in "iuf":  # NumPy would turn the string "1.0" into a number
        raise ValueError(f"nu must be a number (or an array of numbers) > 0, got {nu!r}")
    nu = raw.astype(np.float64)
    if not (np.all(np.isfinite(nu)) and np.all(nu > 0)):
        raise ValueError(f"nu must be finite and > 0, got {nu}")
    out = np.exp(gammaln(1 / nu) + gammaln(3 / nu) - 2 * gammaln(2 / nu))
    return float(out) if out.ndim == 0 else out


def _bounds(name: str, value: Any, *, strict: bool) -> tuple[float, float]:
    """``(low, high)``: two finite numbers with ``0 < low < high`` (``<=`` unless strict)."""
    if isinstance(value, str) or not hasattr(value, "__len__") or len(value) != 2:
        raise ValueError(f"{name} must be a pair (low, high) of numbers, got {value!r}")
    lo = V.number(f"{name}[0]", value[0])
    hi = V.number(f"{name}[1]", value[1])
    if not (0 < lo < hi if strict else 0 < lo <= hi):
        rel = "<" if strict else "<="
        raise ValueError(f"{name} must satisfy 0 < low {rel} high, got {value!r}")
    return lo, hi


def gg_shape(theta: torch.Tensor | np.ndarray, bounds: tuple[float, float] = NU_TABLE) -> float:
    """Moment-matching estimate of the generalized-Gaussian shape ``nu`` of ``theta``.

    Solves ``rho(nu) = N sum theta^2 / (sum |theta|)^2`` (``rho`` decreases in ``nu``). The
    result is clamped to ``bounds``: an all-zero tensor, or one with many exact zeros after
    rate-constrained training, has a ``rho`` beyond the table, and ``nu`` would run away.
    """
    _bounds("bounds", bounds, strict=True)
    if isinstance(theta, torch.Tensor):
        x = theta.detach().double().flatten()
    else:
        arr = np.asarray(theta)
        if arr.dtype.kind not in "iuf":
            raise ValueError(
                f"theta must be a tensor or an array of numbers, got dtype {arr.dtype}"
            )
        x = torch.from_numpy(arr.astype(np.float64)).flatten()
    if x.numel() == 0:
        raise ValueError("theta must not be empty")
    if not torch.isfinite(x).all():
        raise ValueError("theta must be finite (got NaN/inf)")
    return gg_shape_from_moments(x.numel(), float(x.abs().sum()), float((x * x).sum()), bounds)


def gg_shape_from_moments(
    n: int, s1: float, s2: float, bounds: tuple[float, float] = NU_TABLE
) -> float:
    """:func:`gg_shape` from ``n``, ``sum |theta|`` and ``sum theta^2``."""
    lo, hi = _bounds("bounds", bounds, strict=True)
    if not (math.isfinite(s1) and math.isfinite(s2)):
        raise ValueError("theta must be finite (got NaN/inf)")
    if s1 == 0.0:
        return lo
    rho = n * s2 / s1**2
    if rho >= gg_rho(lo):
        return lo
    if rho <= gg_rho(hi):
        return hi
    return float(brentq(lambda v: math.log(gg_rho(v)) - math.log(rho), lo, hi, xtol=1e-10))


def gg_shape_pooled(
    params: Iterable[torch.Tensor], bounds: tuple[float, float] = NU_TABLE
) -> float:
    """One shape ``nu`` for several tensors, each at its own scale: :func:`gg_shape` of the
    tensors pooled after dividing each by its root mean square.

    The weights of a network are a generalized Gaussian per tensor, with one shape and a scale
    of each tensor's own (``1/sqrt(fan_in)`` at initialisation, an embedding's N(0, 1)). Pooled
    as they are, tensors of different scales form a scale mixture, whose kurtosis is that of
    the mixture, not of any tensor: a small N(0, 1) embedding beside Linear layers at 0.05
    puts the raw estimate at its lower bound before any training. Standardised, the pooled
    moments are ``N`` and ``sum_k sum_i |theta_ki| / sigma_k``; tensors at one scale give
    :func:`gg_shape` of their concatenation exactly, and rescaling any tensor changes nothing.
    All-zero tensors carry no shape and are left out (all of them zero: the lower bound).
    Sums in float64, tensor by tensor (no copy of the weights).
    """
    _bounds("bounds", bounds, strict=True)
    tensors = _tensors("params", params)
    if not tensors or any(p.numel() == 0 for p in tensors):
        raise ValueError("params must be a non-empty list of non-empty tensors")
    n, s1 = 0, 0.0
    for p in tensors:
        x = p.detach()
        a1 = float(x.abs().sum(dtype=torch.float64))
        a2 = float(x.pow(2).sum(dtype=torch.float64))
        if not (math.isfinite(a1) and math.isfinite(a2)):
            raise ValueError("theta must be finite (got NaN/inf)")
        if a2 == 0.0:
            continue
        s1 += a1 / math.sqrt(a2 / x.numel())
        n += x.numel()
    return gg_shape_from_moments(n, s1, float(n), bounds) if n else bounds[0]


def _tensors(name: str, params: Any) -> list[torch.Tensor]:
    """``params`` as a list of tensors: an iterable of tensors (not one bare tensor, whose
    iteration would yield its rows)."""
    if isinstance(params, torch.Tensor):
        raise TypeError(f"{name} must be an iterable of tensors, got one tensor: pass [tensor]")
    try:
        out = list(params)
    except TypeError as exc:
        raise TypeError(
            f"{name} must be an iterable of tensors, got {type(params).__name__}"
        ) from exc
    bad = sorted({type(p).__name__ for p in out if not isinstance(p, torch.Tensor)})
    if bad:
        raise TypeError(f"{name} must hold torch tensors, got {', '.join(bad)}")
    return out


def gg_rate(
    params: Iterable[torch.Tensor], nu: float, reduction: str = "mean", eps: float = 0.0
) -> float:
    """``R = (1/N) sum (|theta_i| + eps)^nu`` over all the tensors (``reduction="sum"``: no
    1/N; ``eps = 0``: the unsmoothed rate)."""
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
    eps = V.number("eps", eps, low=0.0)
    nu = V.number("nu", nu, low=0.0, low_open=True)
    tensors = _tensors("params", params)
    total, count = 0.0, 0
    for p in tensors:
        total += float((p.detach().abs().double() + eps).pow(nu).sum())
        count += p.numel()
    return total / max(count, 1) if reduction == "mean" else total


def _root_safe(a: torch.Tensor, lo: torch.Tensor, t: float, nu: float) -> torch.Tensor:
    """Root of ``g(z) = z + t nu z^(nu-1) - a`` in ``[lo, a]``, where ``g`` increases from
    ``g(lo) <= 0`` to ``g(a) > 0``.

    Newton from ``z = a`` inside a bracket that every evaluation narrows. A Newton step that
    leaves the bracket is replaced by bisection. This matters for ``1 < nu < 2``, where ``g``
    is concave and ``g'`` is unbounded at 0. Stops when no iterate moves by more than 4
    machine epsilons of ``max|a|``.
    """
    z, hi, lo = a.clone(), a.clone(), lo.clone()
    c = t * nu
    tol = 4 * torch.finfo(a.dtype).eps * float(a.abs().max().clamp_min(1e-30))
    for _ in range(60):
        zp = z.clamp_min(torch.finfo(z.dtype).tiny)
        g = z + c * zp.pow(nu - 1) - a
        pos = g > 0
        hi = torch.where(pos, z, hi)
        lo = torch.where(pos, lo, z)
        step = z - g / (1 + c * (nu - 1) * zp.pow(nu - 2))
        inside = (step > lo) & (step < hi)
        new = torch.where(inside, step, 0.5 * (lo + hi))
        moved = float((new - z).abs().max())
        z = new
        if moved <= tol:
            break
    return z


def _root(a: torch.Tensor, lo: torch.Tensor, t: float, nu: float) -> torch.Tensor:
    """The same root, fast: four plain Newton steps from ``z = a`` (clamped into
    ``[lo, a]``). In training, ``t`` is far below the weights and Newton converges in two or
    three steps. Elements whose residual is still above 8 machine epsilons go to
    :func:`_root_safe`."""
    c = t * nu
    tiny = torch.finfo(a.dtype).tiny
    z = a.clone()
    # Newton z -= (z + c p1 - a) / (1 + c (nu - 1) p1 / zp), p1 = zp^(nu - 1), zp = max(z,
    # tiny): the same operations in the same order as the plain expression (bit for bit),
    # in three reused buffers (issue 34: no fresh tensors per operation; twice as fast on
    # SmolLM2's 134.5M weights)
    zp, p1, den = torch.empty_like(a), torch.empty_like(a), torch.empty_like(a)
    for _ in range(4):
        torch.clamp_min(z, tiny, out=zp)
        torch.pow(zp, nu - 1, out=p1)
        torch.mul(p1, c * (nu - 1), out=den)
        den.div_(zp).add_(1)
        p1.mul_(c).add_(z).sub_(a).div_(den)
        z.sub_(p1).clamp_(min=lo, max=a)
    torch.clamp_min(z, tiny, out=zp)
    g = torch.pow(zp, nu - 1, out=p1).mul_(c).add_(z).sub_(a).abs_()
    bad = g > torch.clamp_min(a, tiny, out=zp).mul_(8 * torch.finfo(a.dtype).eps)
    if bool(bad.any()):
        z[bad] = _root_safe(a[bad], lo[bad], t, nu)
    return z


def prox_power(theta: torch.Tensor, t: float, nu: float, eps: float = 0.0) -> torch.Tensor:
    """``argmin_z 1/2 (z - theta)^2 + t (|z| + eps)^nu``, elementwise (a new tensor).

    ``nu = 1`` is soft thresholding and ``nu = 2`` is shrinkage by ``1 / (1 + 2t)``. For
    ``nu > 1`` the minimiser is the root of ``z + t nu z^(nu-1) = |theta|`` in
    ``[0, |theta|]``. For ``nu < 1`` (non-convex) the prox is 0 unless that equation has a root
    beyond ``z0 = (t nu (1 - nu))^(1/(2-nu))`` whose objective beats ``theta^2 / 2``: a hard
    threshold followed by shrinkage. Computed in ``theta``'s dtype (a few Newton steps).

    ``eps > 0`` is the paper's smoothing of the rate, ``(|theta| + eps)^nu``: its slope at 0 is
    finite for ``nu < 1``. With ``w = |z| + eps`` it is the same problem for ``|theta| + eps``
    on ``w >= eps``, whose candidates are ``w = eps`` (``z = 0``) and the root beyond
    ``max(z0, eps)``.
    """
    if not isinstance(theta, torch.Tensor):
        raise TypeError(f"theta must be a torch.Tensor, got {type(theta).__name__}")
    t = V.number("t", t, low=0.0)
    nu = V.number("nu", nu, low=0.0, low_open=True)
    eps = V.number("eps", eps, low=0.0)
    if t == 0:
        return theta.clone()
    a = theta.detach().abs()
    if eps > 0:
        z = _prox_smoothed(a, t, nu, eps)
    elif nu == 1.0:
        z = torch.clamp(a - t, min=0.0)
    elif nu == 2.0:
        z = a / (1 + 2 * t)
    elif nu > 1.0:
        z = _root(a, torch.zeros_like(a), t, nu)
    else:
        z0 = (t * nu * (1 - nu)) ** (1 / (2 - nu))
        h0 = z0 + t * nu * z0 ** (nu - 1)
        z = torch.zeros_like(a)
        cand = a > h0
        if bool(cand.any()):
            ac = a[cand]
            r = _root(ac, torch.full_like(ac, z0), t, nu)
            keep = 0.5 * (r - ac) ** 2 + t * r.pow(nu) < 0.5 * ac**2
            z[cand] = torch.where(keep, r, torch.zeros_like(r))
    return torch.sign(theta.detach()) * z


def _prox_smoothed(a: torch.Tensor, t: float, nu: float, eps: float) -> torch.Tensor:
    """``argmin_{z >= 0} 1/2 (z - a)^2 + t (z + eps)^nu`` for ``a >= 0``, via ``w = z + eps``:
    ``g(w) = w + t nu w^(nu-1)`` falls until ``w0`` (only for ``nu < 1``) and then rises, so
    the only interior minimum is the root of ``g(w) = a + eps`` beyond ``max(w0, eps)``; it
    is kept where it beats ``w = eps``."""
    b = a + eps
    lo = eps
    if nu < 1.0:
        lo = max(lo, (t * nu * (1 - nu)) ** (1 / (2 - nu)))
    z = torch.zeros_like(a)
    cand = b > lo + t * nu * lo ** (nu - 1)
    if bool(cand.any()):
        bc = b[cand]
        w = _root(bc, torch.full_like(bc, lo), t, nu)
        h_w = 0.5 * (w - bc) ** 2 + t * w.pow(nu)
        h_eps = 0.5 * (eps - bc) ** 2 + t * eps**nu
        z[cand] = torch.where(h_w < h_eps, w - eps, torch.zeros_like(w))
    return z


def default_rate_params(model: nn.Module) -> list[tuple[str, torch.Tensor]]:
    """``(name, parameter)`` of the weights of every ``nn.Linear``, ``nn.Embedding`` and
    convolution (``nn.Conv1d/2d/3d`` and their transposes: the paper's rate term applies to any
    weights); a weight shared by several modules (a language model's tied input and output
    embeddings) is listed once, under its first name, so the rate step and the coder see it
    once. Biases and normalisation parameters are left out; pass ``params=`` to choose."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    out, seen = [], set()
    for mod_name, mod in model.named_modules():
        weighted = isinstance(mod, (nn.Linear, nn.Embedding, nn.modules.conv._ConvNd))
        if weighted and isinstance(mod.weight, torch.Tensor) and id(mod.weight) not in seen:
            seen.add(id(mod.weight))  # a tied weight (lm_head = embeddings) counts once
            name = f"{mod_name}.weight" if mod_name else "weight"
            out.append((name, mod.weight))
    return out


class RateCollapseWarning(UserWarning):
    """The rate step drove a constrained tensor to all zeros (the layer is dead: its output no
    longer depends on its input). Raised through :func:`warnings.warn`, naming the tensor."""


class BackSlash:
    """Rate-constrained training for any ``nn.Module`` and any ``torch.optim`` optimizer.

    After every optimizer step, each constrained parameter takes the proximal step of
    ``lambda R``. Its step size is ``lr * lambda / N`` (``/ N`` only for
    ``reduction="mean"``), with ``lr`` the learning rate of the parameter's group. ``nu`` is
    re-estimated every ``nu_every`` steps from all constrained weights together, each tensor
    at its own scale (:func:`gg_shape_pooled`), or fixed (``nu=2``: Gaussian prior, an L2-type
    penalty; ``nu=1``: Laplace prior, L1).

    Two rules keep ``lambda`` meaning the same whatever else the model holds:

    - The shape is estimated with each tensor divided by its own scale. Pooled raw, an
      embedding at N(0, 1) beside Linear layers at ``1/sqrt(fan_in)``, or a layer the rate
      has shrunk, reads as heavy tails and puts ``nu`` at its lower bound, where the prox is
      a hard threshold that zeroes whole layers.
    - A Linear or convolution weight whose output goes straight into a BatchNorm (with running
      statistics) has no scale of its own: the batch statistics divide it out, so the rate
      would shrink it, unopposed by the loss, into the hard threshold. Its rate is taken on
      the weight as the network uses it, folded into the BatchNorm,
      ``W_c * |gamma_c| / sqrt(running_var_c + eps)`` per output channel ``c``, the folding
      of deployment. These weights are found in the first training forward pass (forward
      hooks, removed after it; a model without BatchNorm gets none); ``folded_`` names them.

    A step that leaves a constrained tensor all zero raises a :class:`RateCollapseWarning`
    naming it (once per tensor).

    Parameters
    ----------
    model
        The network; by default the weights of its ``nn.Linear``, ``nn.Embedding`` and
        convolution layers are constrained (:func:`default_rate_params`).
    lam
        The Lagrange multiplier ``lambda >= 0``.
    nu
        ``"auto"`` (moment matching) or a fixed shape ``> 0``.
    params
        The parameters to constrain instead of the default.
    nu_bounds
        Clamp for the estimated shape. Without a clamp, the zeros that the prox creates raise
        the kurtosis and ``nu`` runs to the table's end (the brief's pitfall).
    eps
        The paper's smoothing of the rate, ``R = mean (|theta| + eps)^nu`` (default 0: the
        unsmoothed rate). With ``eps > 0`` the penalty's slope at 0 is finite for ``nu < 1``,
        so small weights shrink instead of being hard-thresholded.

    Examples
    --------
    >>> bs = BackSlash(model, lam=1e4).attach(optimizer)  # doctest: +SKIP
    >>> ...  # train as usual; every optimizer.step() is followed by the rate step
    """

    def __init__(
        self,
        model: nn.Module,
        lam: float,
        *,
        nu: float | str = "auto",
        params: Iterable[torch.Tensor] | None = None,
        reduction: str = "mean",
        nu_bounds: tuple[float, float] = (0.5, 2.0),
        nu_every: int = 1,
        eps: float = 0.0,
    ) -> None:
        if (
            isinstance(lam, bool)
            or not isinstance(lam, (int, float))
            or not (lam >= 0 and math.isfinite(lam))
        ):
            raise ValueError(f"lam must be a finite number >= 0, got {lam!r}")
        if not (
            nu == "auto"
            or (
                isinstance(nu, (int, float))
                and not isinstance(nu, bool)
                and nu > 0
                and math.isfinite(nu)
            )
        ):
            raise ValueError(f"nu must be 'auto' or a finite number > 0, got {nu!r}")
        if reduction not in ("mean", "sum"):
            raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
        if not isinstance(nu_every, int) or nu_every < 1:
            raise ValueError(f"nu_every must be a positive integer, got {nu_every!r}")
        self.eps = V.number("eps", eps, low=0.0)
        lo, hi = _bounds("nu_bounds", nu_bounds, strict=False)
        chosen = (
            _tensors("params", params)
            if params is not None
            else [p for _, p in default_rate_params(model)]
        )
        chosen = list({id(p): p for p in chosen}.values())  # a tied tensor takes one step
        if not chosen:
            raise ValueError(
                "no parameters to constrain: the model has no Linear, Embedding or convolution "
                "layer; pass the tensors to constrain as params=[...]"
            )
        self.params = chosen
        self.lam, self.nu, self.reduction = float(lam), nu, reduction
        self.nu_bounds, self.nu_every = (float(lo), float(hi)), nu_every
        self.n_params = sum(p.numel() for p in chosen)
        self.steps = 0
        known = (
            {id(p): n for n, p in model.named_parameters()} if isinstance(model, nn.Module) else {}
        )
        self.names = [known.get(id(p), f"params[{k}]") for k, p in enumerate(chosen)]
        self._dead: set[int] = set()  # tensors already reported all zero
        self._folds: dict[int, nn.Module] = {}  # id(weight) -> the BatchNorm it feeds
        self._hooks: list[Any] = []
        if isinstance(model, nn.Module):
            self._find_batchnorms(model)
        self.nu_: float = float(nu) if nu != "auto" else self._estimate()

    @property
    def folded_(self) -> list[str]:
        """Names of the constrained weights found feeding a BatchNorm, whose rate is taken on
        the weight folded into it."""
        return [n for n, p in zip(self.names, self.params, strict=True) if id(p) in self._folds]

    def _find_batchnorms(self, model: nn.Module) -> None:
        """Forward hooks that find the constrained Linear/convolution weights whose output is
        the input of a BatchNorm with running statistics over the weight's output channels;
        removed after the first training forward pass of ``model`` (a model without BatchNorm
        gets none)."""
        if not any(isinstance(m, _BN) for m in model.modules()):
            return
        constrained = {id(p) for p in self.params}
        outputs: dict[int, tuple[Any, torch.Tensor]] = {}  # id(output) -> (ref, weight)

        def produced(mod: nn.Module, _inp: Any, out: Any) -> None:
            if not isinstance(out, torch.Tensor) or out.dim() < 2:
                return
            if isinstance(mod, nn.Linear) and out.dim() != 2:
                return  # (N, L, features): a BatchNorm1d there normalises over L
            if len(outputs) > 4096:  # submodules called outside the model's forward
                outputs.clear()
            if isinstance(mod.weight, torch.Tensor):
                outputs[id(out)] = (weakref.ref(out), mod.weight)

        def consumed(mod: nn.Module, inp: Any) -> None:
            x = inp[0] if inp else None
            hit = outputs.get(id(x)) if isinstance(x, torch.Tensor) else None
            if hit is None or hit[0]() is not x or getattr(mod, "running_var", None) is None:
                return
            if getattr(mod, "num_features", None) == hit[1].shape[0]:
                self._folds[id(hit[1])] = mod

        def done(mod: nn.Module, _inp: Any, _out: Any) -> None:
            outputs.clear()
            if mod.training:  # the architecture is known after one training pass
                for h in self._hooks:
                    h.remove()
                self._hooks = []

        for mod in model.modules():
            w = getattr(mod, "weight", None)
            if isinstance(mod, _BN):
                self._hooks.append(mod.register_forward_pre_hook(consumed))
            elif (
                isinstance(mod, (nn.Linear, nn.modules.conv._ConvNd))
                and not isinstance(mod, nn.modules.conv._ConvTransposeNd)  # channels on dim 1
                and isinstance(w, torch.Tensor)
                and id(w) in constrained
            ):
                self._hooks.append(mod.register_forward_hook(produced))
        self._hooks.append(model.register_forward_hook(done))

    def _fold(self, p: torch.Tensor) -> torch.Tensor | None:
        """The per-output-channel factor ``|gamma| / sqrt(running_var + eps)`` of the BatchNorm
        that ``p`` feeds, shaped to broadcast over ``p`` (``None``: ``p`` feeds none). A channel
        whose factor is 0 or not finite keeps the factor 1."""
        bn = self._folds.get(id(p))
        if bn is None:
            return None
        var, weight = bn.running_var, bn.weight
        if not isinstance(var, torch.Tensor):  # running statistics switched off since
            return None
        var = var.detach().to(p.dtype)
        gamma = weight.detach().abs().to(p.dtype) if isinstance(weight, torch.Tensor) else 1.0
        c = gamma / (var + getattr(bn, "eps", 0.0)).sqrt()
        c = torch.where(torch.isfinite(c) & (c > 0), c, torch.ones_like(c))
        return c.view([-1] + [1] * (p.dim() - 1))

    def _rated(self) -> list[torch.Tensor]:
        """The constrained tensors as the rate sees them (folded where they feed a BatchNorm)."""
        out = []
        for p in self.params:
            c = self._fold(p)
            out.append(p.detach() if c is None else p.detach() * c)
        return out

    def _estimate(self) -> float:
        if self.nu_bounds[0] == self.nu_bounds[1]:
            return self.nu_bounds[0]
        return gg_shape_pooled(self._rated(), self.nu_bounds)

    def rate(self) -> float:
        """The current ``R(theta)`` at the current ``nu`` (of the folded weights where a weight
        feeds a BatchNorm)."""
        return gg_rate(self._rated(), self.nu_, self.reduction, self.eps)

    def step(self, optimizer: torch.optim.Optimizer | None = None, lr: float | None = None) -> None:
        """The proximal rate step. The step size is ``lr``, or each parameter group's ``lr``."""
        with torch.no_grad():
            self._step(optimizer, lr)

    def _step(self, optimizer: torch.optim.Optimizer | None, lr: float | None) -> None:
        if lr is not None:
            lr = V.number("lr", lr, low=0.0)
        if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
            )
        if self.nu == "auto" and self.steps % self.nu_every == 0:
            self.nu_ = self._estimate()
        self.steps += 1
        if self.lam == 0:
            return
        group_lr: dict[int, float] = {}
        if optimizer is not None:
            for g in optimizer.param_groups:
                for p in g["params"]:
                    group_lr[id(p)] = float(g["lr"])
        scale = self.lam / self.n_params if self.reduction == "mean" else self.lam
        for name, p in zip(self.names, self.params, strict=True):
            eta = lr if lr is not None else group_lr.get(id(p))
            if eta is None:
                raise ValueError("pass lr= or the optimizer that holds the parameters")
            if not (math.isfinite(eta) and eta >= 0):
                raise ValueError(f"the optimizer's lr must be a finite number >= 0, got {eta!r}")
            c = self._fold(p)
            if c is None:
                p.copy_(prox_power(p, eta * scale, self.nu_, self.eps))
            else:  # the prox of the folded weight, unfolded
                p.copy_(prox_power(p * c, eta * scale, self.nu_, self.eps) / c)
            self._report_zero(name, p)

    def _report_zero(self, name: str, p: torch.Tensor) -> None:
        """A :class:`RateCollapseWarning` the first time a step leaves ``p`` all zero (once per
        tensor: a layer held at zero by the rate regrows a little between steps)."""
        if id(p) in self._dead or bool(p.any()):
            return
        self._dead.add(id(p))
        warnings.warn(
            f"BackSlash: the rate step drove {name} ({p.numel()} weights) to all zeros at step "
            f"{self.steps} (lam={self.lam:g}, nu={self.nu_:.3g}): the layer's output no longer "
            "depends on its input; use a smaller lam (or leave the tensor out with params=)",
            RateCollapseWarning,
            stacklevel=4,  # the caller of step(), or the optimizer's step hook
        )

    def attach(self, optimizer: torch.optim.Optimizer) -> BackSlash:
        """Run :meth:`step` after every ``optimizer.step()`` (a step post-hook)."""
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
            )
        self._handle: Any = optimizer.register_step_post_hook(lambda opt, *_: self.step(opt))
        return self

    def detach(self) -> None:
        """Stop the rate step (e.g. for the fine-tuning epochs after BackSlash)."""
        handle = getattr(self, "_handle", None)
        if handle is not None:
            handle.remove()
            self._handle = None
        for h in self._hooks:
            h.remove()
        self._hooks = []


_BN = nn.modules.batchnorm._BatchNorm
"""BatchNorm1d/2d/3d, SyncBatchNorm and the lazy ones: a channel's output does not depend on
the scale of its input (batch statistics in training; running ones fold into the weight)."""
