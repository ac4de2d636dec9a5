"""Soup-of-Experts: a bank of experts that instantiates a model for any domain weights.

Given a model architecture with parameters ``theta`` (``P`` numbers), the soup holds shared
parameters ``S`` (``P``), ``n`` experts ``E_1..E_n`` of the same shapes (dense, or low-rank for
matrices) and a router ``phi``: an MLP from domain weights ``h`` (a point of the simplex over
``k`` domains) to coefficients ``alpha = phi(h)`` in ``R^n``. The instantiated model is

.. math::  \\Theta(h) = S + \\sum_{j=1}^n \\alpha_j(h) E_j ,

an ordinary model with ``P`` parameters. Training minimises
``E_{h ~ pi} E_{x ~ mix(h)} loss(Theta(h); x)``: draw ``h`` from the meta-distribution ``pi``,
draw one batch from ``mix(h) = sum_i h_i D_i`` (a domain ``i ~ Cat(h)`` per sequence, then a
sequence of ``D_i``), and back-propagate into ``S``, the experts and the router.

References
----------
P. Ablin, A. Katharopoulos, S. Seto, D. Grangier. "Soup-of-Experts: Pretraining Specialist
Models via Parameters Averaging". ICML 2025 (PMLR 267:185-203), arXiv:2502.01804.

Long by design: the soup (the expert bank and its instantiation), the domain-weight samplers and
the training loop that draws from them form one method; the loop needs the bank's internals.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from icml25.core import validate as V

SIMPLEX_TOL = 1e-4
"""How far from 1 the sum of domain weights may be (and how negative an entry)."""


def check_domain_weights(h: Any, n_domains: int, name: str = "h") -> torch.Tensor:
    """``h`` as a float32 tensor of shape ``(n_domains,)`` on the simplex, or a clear error."""
    if isinstance(h, torch.Tensor):
        t = h.detach().to(torch.float64).cpu()
    else:
        try:
            t = torch.as_tensor(np.asarray(h, dtype=np.float64))
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{name} must be a 1-D array of {n_domains} domain weights, got {type(h).__name__}"
            ) from exc
    if t.ndim != 1 or t.shape[0] != n_domains:
        raise ValueError(
            f"{name} must be a 1-D array of {n_domains} domain weights, got shape {tuple(t.shape)}"
        )
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite, got {int((~torch.isfinite(t)).sum())} NaN/inf")
    if float(t.min()) < -SIMPLEX_TOL or abs(float(t.sum()) - 1.0) > SIMPLEX_TOL:
        raise ValueError(
            f"{name} must lie on the simplex (entries >= 0 summing to 1), got min "
            f"{float(t.min()):.4g} and sum {float(t.sum()):.6g}"
        )
    return t.clamp_min(0.0).to(torch.float32)


@dataclass(frozen=True)
class _Slot:
    """Where one parameter of the wrapped model lives in the flat vector."""

    name: str
    offset: int
    shape: tuple[int, ...]
    lowrank: bool

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


class SoupOfExperts(nn.Module):
    """A bank ``S, E_1..E_n`` and a router that instantiate ``model``'s architecture for any
    domain weights ``h``.

    Parameters
    ----------
    model
        Any ``torch.nn.Module`` (a small LM, a Hugging Face causal LM...). Its current
        parameters initialise ``S``; its buffers are kept as constants.
    n_domains
        ``k``, the length of ``h``.
    n_experts
        ``n``, the number of experts. With ``router=False`` it must equal ``n_domains``.
    router
        ``True``: ``alpha = phi(h)``, an MLP ``k -> router_hidden -> n`` (ReLU). ``False``: the
        router-less soup ``alpha = h`` (one expert per domain, linear in ``h``).
    router_hidden
        Width of the router's hidden layer.
    router_output
        ``"softmax"`` (``alpha`` on the simplex: ``Theta(h)`` stays in the convex hull of
        ``S + E_j``) or ``"linear"`` (``alpha`` in ``R^n``, unbounded). The paper calls the
        router "an MLP" without an output normalisation we could recover; the default is the
        form a pilot chose (see the method's README).
    rank
        ``None``: dense experts (each of ``P`` numbers). An integer ``r``: each 2-D weight of
        an expert is ``U_j V_j`` with ``U_j`` of shape ``(out, r)`` and ``V_j`` ``(r, in)``;
        other parameters stay dense.
    expert_init_std
        Experts start near zero (``N(0, std^2)`` entries; for low-rank experts ``U`` is drawn
        and ``V`` is zero), so that ``Theta(h)`` starts at ``S`` for every ``h``.
    seed
        Seed of the experts' and the router's initial values.

    Notes
    -----
    ``soup(h, *args, **kwargs)`` runs the wrapped architecture with ``Theta(h)`` (differentiable
    in ``S``, the experts and the router); :meth:`instantiate` returns a plain standalone copy
    of the architecture with parameters ``Theta(h)``. ``soup.train()`` / ``soup.eval()`` reach
    the wrapped architecture (dropout, batch norm), and an instance starts in the soup's mode.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        n_domains: int,
        n_experts: int,
        router: bool = True,
        router_hidden: int = 64,
        router_output: str = "softmax",
        rank: int | None = None,
        expert_init_std: float = 1e-3,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        self.n_domains = V.integer("n_domains", n_domains, low=1)
        self.n_experts = V.integer("n_experts", n_experts, low=1)
        if not isinstance(router, bool):
            raise TypeError(f"router must be True or False, got {router!r}")
        if not router and self.n_experts != self.n_domains:
            raise ValueError(
                f"n_experts must equal n_domains ({self.n_domains}) for the router-less soup "
                f"(alpha = h), got {self.n_experts}"
            )
        self.router_output = V.choice("router_output", router_output, ("linear", "softmax"))
        self.rank = None if rank is None else V.integer("rank", rank, low=1)
        expert_init_std = V.number("expert_init_std", expert_init_std, low=0.0)
        V.integer("seed", seed, low=0)
        params = dict(model.named_parameters())  # tied parameters appear once
        if not params:
            raise ValueError("model must have at least one parameter")
        dtype = next(iter(params.values())).dtype

        # Flat layout: dense-expert parameters first, then the low-rank ones.
        def is_lowrank(p: torch.Tensor) -> bool:
            return self.rank is not None and p.ndim == 2

        order = [n for n, p in params.items() if not is_lowrank(p)]
        order += [n for n, p in params.items() if is_lowrank(p)]
        slots, offset = [], 0
        for name in order:
            p = params[name]
            slots.append(_Slot(name, offset, tuple(p.shape), is_lowrank(p)))
            offset += p.numel()
        self._slots: tuple[_Slot, ...] = tuple(slots)
        self.num_model_parameters = offset
        """``P``: the parameter count of one instantiated model."""
        self._dense_numel = sum(s.numel for s in slots if not s.lowrank)

        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            flat = torch.cat([params[s.name].detach().reshape(-1) for s in slots]).to(dtype)
            device = flat.device
        self.shared = nn.Parameter(flat.clone())
        self.experts = nn.Parameter(
            (torch.randn(self.n_experts, self._dense_numel, generator=gen) * expert_init_std)
            .to(dtype)
            .to(device)
        )
        self.lowrank_u = nn.ParameterList()
        self.lowrank_v = nn.ParameterList()
        for s in slots:
            if s.lowrank:
                r = int(self.rank or 1)
                u = torch.randn(self.n_experts, s.shape[0], r, generator=gen) * expert_init_std
                self.lowrank_u.append(nn.Parameter(u.to(dtype).to(device)))
                v = torch.zeros(self.n_experts, r, s.shape[1], dtype=dtype, device=device)
                self.lowrank_v.append(nn.Parameter(v))
        self.router: nn.Module | None = None
        if router:
            hidden = V.integer("router_hidden", router_hidden, low=1)
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                self.router = nn.Sequential(
                    nn.Linear(self.n_domains, hidden), nn.ReLU(), nn.Linear(hidden, self.n_experts)
                ).to(device)

        # The architecture without its parameters (meta tensors; buffers kept), held outside
        # the module tree so that it adds nothing to ``parameters()`` or ``state_dict()``.
        template = copy.deepcopy(model)
        for mod in template.modules():
            for pname, q in list(mod._parameters.items()):
                if q is not None:
                    mod._parameters[pname] = nn.Parameter(
                        torch.empty_like(q, device="meta"), requires_grad=q.requires_grad
                    )
        _retie(model, template)
        object.__setattr__(self, "_template", template)

    # ------------------------------------------------------------------ the map h -> Theta(h)
    def _alpha(self, h: torch.Tensor) -> torch.Tensor:
        if self.router is None:
            return h.to(self.shared.device, self.shared.dtype)
        w = next(self.router.parameters())
        a = self.router(h.to(w.device, w.dtype))
        if self.router_output == "softmax":
            a = torch.softmax(a, dim=-1)
        return a.to(self.shared.dtype)

    def coefficients(self, h: Any) -> torch.Tensor:
        """``alpha = phi(h)``, shape ``(n_experts,)`` (differentiable in the router)."""
        return self._alpha(check_domain_weights(h, self.n_domains))

    def _flat(self, alpha: torch.Tensor) -> torch.Tensor:
        dense = torch.addmv(self.shared[: self._dense_numel], self.experts.t(), alpha)
        if not len(self.lowrank_u):
            return dense
        parts = [dense]
        lowrank = [s for s in self._slots if s.lowrank]
        for s, u, v in zip(lowrank, self.lowrank_u, self.lowrank_v, strict=True):
            # sum_j alpha_j U_j V_j  (n, out, r) x (n, r, in) -> (out, in)
            delta = torch.einsum("n,nor,nri->oi", alpha, u, v)
            base = self.shared[s.offset : s.offset + s.numel]
            parts.append(base + delta.reshape(-1))
        return torch.cat(parts)

    def flat_parameters(self, h: Any) -> torch.Tensor:
        """``Theta(h)`` as one flat vector of length ``P`` (differentiable)."""
        return self._flat(self.coefficients(h))

    def parameters_for(self, h: Any) -> dict[str, torch.Tensor]:
        """``Theta(h)`` by parameter name of the wrapped model (differentiable views)."""
        return self._views(self.flat_parameters(h))

    def _views(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        return {s.name: flat[s.offset : s.offset + s.numel].view(s.shape) for s in self._slots}

    def forward(self, h: Any, *args: Any, **kwargs: Any) -> Any:
        """Run the architecture with parameters ``Theta(h)`` on ``*args, **kwargs``."""
        params = self.parameters_for(h)
        return functional_call(self._tmpl, params, args, kwargs, tie_weights=True)

    @torch.no_grad()
    def instantiate(self, h: Any) -> nn.Module:
        """A plain standalone model (the wrapped architecture, ``P`` parameters) with
        parameters ``Theta(h) = S + sum_j alpha_j(h) E_j``: one router forward and one pass
        over the bank, no training."""
        flat = self._flat(self.coefficients(h)).detach()  # a fresh tensor: no copy needed
        model = copy.deepcopy(self._tmpl)  # meta parameters: nothing is copied
        views = self._views(flat)
        by_id: dict[int, nn.Parameter] = {}
        names = dict(self._tmpl.named_parameters())  # name -> meta parameter
        meta_to_name = {id(p): n for n, p in names.items()}
        template_params = [
            (tm, pname, tp)
            for tm in self._tmpl.modules()
            for pname, tp in tm._parameters.items()
            if tp is not None
        ]
        new_modules = dict(model.named_modules())
        old_names = {id(m): n for n, m in self._tmpl.named_modules()}
        for tm, pname, tp in template_params:
            target = new_modules[old_names[id(tm)]]
            if id(tp) not in by_id:
                by_id[id(tp)] = nn.Parameter(
                    views[meta_to_name[id(tp)]], requires_grad=tp.requires_grad
                )
            target._parameters[pname] = by_id[id(tp)]
        return model

    def train(self, mode: bool = True) -> SoupOfExperts:
        """Set training mode on the bank, the router **and** the wrapped architecture (which
        lives outside the module tree), so that dropout and batch norm follow
        ``soup.train()`` / ``soup.eval()``."""
        super().train(mode)
        self._tmpl.train(mode)
        return self

    def param_groups(
        self,
        *,
        shared_lr: float | None = None,
        expert_lr: float | None = None,
        router_lr: float | None = None,
    ) -> list[dict[str, Any]]:
        """Optimizer parameter groups: ``S``, the experts (dense and low-rank) and the router,
        each with its own learning rate where one is given (else the optimizer's default).

        ``train_soup(soup, ..., param_groups=soup.param_groups(expert_lr=1e-3))`` trains the
        experts at 1e-3 and the rest at ``train_soup``'s ``lr``.
        """
        groups: list[dict[str, Any]] = []
        experts = [self.experts, *self.lowrank_u, *self.lowrank_v]
        parts: list[tuple[str, list[nn.Parameter], float | None]] = [
            ("shared", [self.shared], shared_lr),
            ("experts", experts, expert_lr),
        ]
        if self.router is not None:
            parts.append(("router", list(self.router.parameters()), router_lr))
        for name, params, lr in parts:
            group: dict[str, Any] = {"params": params, "name": name}
            if lr is not None:
                group["lr"] = V.positive(f"{name.rstrip('s')}_lr", lr)
            groups.append(group)
        return groups

    @property
    def _tmpl(self) -> nn.Module:
        """The wrapped architecture with meta parameters (kept out of the module tree)."""
        template: nn.Module = self.__dict__["_template"]
        return template

    def _apply(self, fn: Any, recurse: bool = True) -> SoupOfExperts:
        super()._apply(fn, recurse)
        for mod in self._tmpl.modules():
            for key, buf in mod._buffers.items():
                if buf is not None:
                    mod._buffers[key] = fn(buf)
        return self

    def extra_repr(self) -> str:
        return (
            f"P={self.num_model_parameters}, n_domains={self.n_domains}, "
            f"n_experts={self.n_experts}, rank={self.rank}, router={self.router is not None}"
        )


def _retie(model: nn.Module, template: nn.Module) -> None:
    """Make parameters shared in ``model`` shared in ``template`` too (deepcopy keeps ties, but
    the meta replacement above creates one tensor per slot)."""
    first: dict[int, nn.Parameter] = {}
    for (_, m), (_, t) in zip(model.named_modules(), template.named_modules(), strict=True):
        for pname, p in m._parameters.items():
            if p is None:
                continue
            if id(p) in first:
                t._parameters[pname] = first[id(p)]
            else:
                new = t._parameters[pname]
                if new is not None:
                    first[id(p)] = new


# ------------------------------------------------------------------ meta-distribution, data
@runtime_checkable
class MetaDistribution(Protocol):
    """What :func:`train_soup` needs of a meta-distribution ``pi`` over domain weights: the
    number of domains and ``sample(rng)``, one ``h`` on the simplex (shape ``(n_domains,)``)
    drawn with a ``numpy.random.Generator``. :class:`SparseDirichlet` is one."""

    n_domains: int

    def sample(self, rng: np.random.Generator) -> np.ndarray: ...


@runtime_checkable
class BatchSampler(Protocol):
    """What the training loops need of the data: the number of domains and
    ``sample(h, batch_size, rng)``, a ``(batch_size, seq_len + 1)`` integer tensor of token ids
    from ``mix(h)``. :class:`MixtureSampler` is one (over token streams); wrap your own data
    loader per domain in the same two members."""

    n_domains: int

    def sample(self, h: Any, batch_size: int, rng: np.random.Generator) -> torch.Tensor: ...


def _check_protocol(name: str, obj: Any, proto: type, what: str) -> int:
    """``obj.n_domains`` after checking that ``obj`` follows ``proto``."""
    if not isinstance(obj, proto):
        raise TypeError(
            f"{name} must follow the {proto.__name__} protocol (an integer n_domains and a "
            f"{what} method), got {type(obj).__name__}"
        )
    n: Any = getattr(obj, "n_domains", None)
    return V.integer(f"{name}.n_domains", n, low=1)


class SparseDirichlet:
    """The meta-distribution ``pi`` over domain weights: a support of ``s`` domains (``s``
    uniform in ``1..max_support``, the domains uniform without replacement), Dirichlet weights
    of concentration ``concentration`` on it, zero elsewhere.

    Parameters
    ----------
    n_domains
        ``k``, the length of ``h``.
    max_support
        Largest support size (``1`` gives one-hot ``h``; ``n_domains`` allows full mixtures).
    concentration
        Dirichlet concentration on the support (``1``: uniform on its simplex).
    """

    def __init__(self, n_domains: int, *, max_support: int = 3, concentration: float = 1.0):
        self.n_domains = V.integer("n_domains", n_domains, low=1)
        self.max_support = V.integer("max_support", max_support, low=1, high=self.n_domains)
        self.concentration = V.positive("concentration", concentration)

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """One ``h`` (float64, shape ``(n_domains,)``) drawn with ``rng``."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        s = int(rng.integers(1, self.max_support + 1))
        support = rng.choice(self.n_domains, size=s, replace=False)
        h = np.zeros(self.n_domains)
        h[support] = rng.dirichlet(np.full(s, self.concentration))
        return h

    def __repr__(self) -> str:
        return (
            f"SparseDirichlet(n_domains={self.n_domains}, max_support={self.max_support}, "
            f"concentration={self.concentration})"
        )


class MixtureSampler:
    """Batches from ``mix(h) = sum_i h_i D_i`` over token streams, one per domain.

    For each of the ``batch_size`` sequences a domain ``i ~ Cat(h)`` is drawn, then a window of
    ``seq_len + 1`` tokens at a uniform offset of domain ``i``'s stream.

    Parameters
    ----------
    domains
        One 1-D integer tensor (a token stream) per domain, each longer than ``seq_len + 1``.
    seq_len
        Tokens the model sees per sequence (the window holds one more, the last target).
    """

    def __init__(self, domains: Sequence[torch.Tensor], *, seq_len: int) -> None:
        self.seq_len = V.integer("seq_len", seq_len, low=1)
        if isinstance(domains, torch.Tensor) or len(domains) == 0:
            raise ValueError("domains must be a non-empty sequence of 1-D token tensors")
        streams = []
        for i, d in enumerate(domains):
            if not isinstance(d, torch.Tensor) or d.ndim != 1 or d.is_floating_point():
                raise ValueError(f"domains[{i}] must be a 1-D integer tensor, got {d!r:.60}")
            if d.numel() < self.seq_len + 2:
                raise ValueError(
                    f"domains[{i}] must hold more than seq_len + 1 = {self.seq_len + 1} tokens, "
                    f"got {d.numel()}"
                )
            streams.append(d.long())
        self.domains = streams
        self.n_domains = len(streams)
        sizes = np.array([d.numel() for d in streams], dtype=np.float64)
        self.natural_weights = sizes / sizes.sum()
        """Domain weights proportional to each domain's size: the natural mixture."""

    def sample(
        self, h: Any, batch_size: int, rng: np.random.Generator, *, return_domains: bool = False
    ) -> Any:
        """``(batch_size, seq_len + 1)`` int64 tokens from ``mix(h)`` (and, with
        ``return_domains``, the domain index of each row)."""
        h_t = check_domain_weights(h, self.n_domains).double().numpy()
        batch_size = V.integer("batch_size", batch_size, low=1)
        doms = rng.choice(self.n_domains, size=batch_size, p=h_t / h_t.sum())
        rows = []
        for i in doms:
            d = self.domains[int(i)]
            start = int(rng.integers(0, d.numel() - self.seq_len - 1 + 1))
            rows.append(d[start : start + self.seq_len + 1])
        batch = torch.stack(rows)
        return (batch, doms) if return_domains else batch


# ------------------------------------------------------------------------- training loops
def next_token_loss(output: Any, batch: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats per token) of ``output`` (logits, or an object with
    ``.logits``) at predicting ``batch[:, 1:]`` from ``batch[:, :-1]``."""
    logits = getattr(output, "logits", output)
    if not isinstance(batch, torch.Tensor) or batch.ndim != 2 or batch.is_floating_point():
        raise ValueError(
            f"batch must be a 2-D integer tensor of token ids, got {type(batch).__name__} "
            f"{tuple(getattr(batch, 'shape', ()))}"
        )
    if batch.shape[0] == 0 or batch.shape[1] < 2:
        raise ValueError(
            "batch must hold at least one sequence of >= 2 tokens (a loss over no prediction "
            f"is NaN), got shape {tuple(batch.shape)}"
        )
    if not isinstance(logits, torch.Tensor) or logits.shape[:2] != (
        batch.shape[0],
        batch.shape[1] - 1,
    ):
        raise ValueError(
            f"output must be logits of shape (batch, time, vocab) = ({batch.shape[0]}, "
            f"{batch.shape[1] - 1}, ...) for batch of shape {tuple(batch.shape)}, got "
            f"{tuple(getattr(logits, 'shape', ()))}"
        )
    targets = batch[:, 1:]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))


@dataclass(frozen=True)
class TrainLog:
    """What a training loop returns: the loss of every step and the ``h`` of every step."""

    losses: tuple[float, ...]
    domain_weights: tuple[tuple[float, ...], ...]


def _schedule(step: int, steps: int, warmup: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))


def _dist() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def h_generator(seed: int) -> np.random.Generator:
    """The generator of the ``h`` sequence: the same on every rank."""
    return np.random.default_rng([int(seed), 0])


def data_generator(seed: int, rank: int) -> np.random.Generator:
    """The generator of rank ``rank``'s batches."""
    return np.random.default_rng([int(seed), 1, int(rank)])


def _check_loop_args(
    sampler: Any, steps: int, batch_size: int, lr: float, weight_decay: float, seed: int
) -> tuple[int, int, float, float, int]:
    _check_protocol("sampler", sampler, BatchSampler, "sample(h, batch_size, rng)")
    return (
        V.integer("steps", steps, low=1),
        V.integer("batch_size", batch_size, low=1),
        V.positive("lr", lr),
        V.number("weight_decay", weight_decay, low=0.0),
        V.integer("seed", seed, low=0),
    )


def train_soup(
    soup: SoupOfExperts,
    sampler: BatchSampler,
    meta: MetaDistribution,
    *,
    steps: int,
    batch_size: int = 32,
    lr: float = 3e-3,
    weight_decay: float = 0.0,
    grad_clip: float | None = 1.0,
    seed: int = 0,
    loss_fn: Callable[[Any, torch.Tensor], torch.Tensor] = next_token_loss,
    param_groups: Iterable[dict[str, Any]] | None = None,
) -> TrainLog:
    """Pretrain a soup: per step, ``h ~ meta``, one batch from ``mix(h)``, an AdamW step on
    ``loss(Theta(h); batch)`` into ``S``, the experts and the router.

    ``sampler`` and ``meta`` may be any objects that follow :class:`BatchSampler` and
    :class:`MetaDistribution` (``n_domains`` and ``sample``). ``param_groups`` (as
    ``torch.optim`` takes them, e.g. :meth:`SoupOfExperts.param_groups`) gives parts of the
    soup their own learning rate or weight decay; groups without ``lr`` use ``lr``, and
    parameters in no group are not trained. By default every parameter is trained at ``lr``.

    Under ``torch.distributed`` (``torchrun``) the soup is wrapped in
    ``DistributedDataParallel``: every rank draws the **same** ``h`` at a step (from
    :func:`h_generator`), and its own ``batch_size`` sequences from ``mix(h)`` (from
    :func:`data_generator` of its rank); the averaged gradient is that of one batch of
    ``world_size * batch_size`` sequences from ``mix(h)``: one ``h`` per (global) batch.

    The learning rate of every group warms up linearly over the first 5% of steps, then
    follows a cosine down to 10% of its value. The soup is in training mode during the loop
    and in eval mode after it. Returns a :class:`TrainLog`.
    """
    if not isinstance(soup, SoupOfExperts):
        raise TypeError(f"soup must be a SoupOfExperts, got {type(soup).__name__}")
    k_meta = _check_protocol("meta", meta, MetaDistribution, "sample(rng)")
    steps, batch_size, lr, weight_decay, seed = _check_loop_args(
        sampler, steps, batch_size, lr, weight_decay, seed
    )
    if grad_clip is not None:
        grad_clip = V.positive("grad_clip", grad_clip)
    if k_meta != soup.n_domains or sampler.n_domains != soup.n_domains:
        raise ValueError(
            f"meta and sampler must cover the soup's {soup.n_domains} domains, got "
            f"{k_meta} and {sampler.n_domains}"
        )
    groups = _param_groups(soup, param_groups)
    rank, world = _dist()
    net: nn.Module = soup
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(soup)
    h_rng, data_rng = h_generator(seed), data_generator(seed, rank)
    device = soup.shared.device

    def step_fn() -> tuple[float, np.ndarray]:
        h = _draw(meta, h_rng, soup.n_domains)
        batch = sampler.sample(h, batch_size, data_rng).to(device)
        h_t = torch.as_tensor(h, dtype=torch.float32, device=device)
        loss = loss_fn(net(h_t, batch[:, :-1]), batch)
        return _backward(loss), h

    return _loop(soup, groups, step_fn, steps, lr, weight_decay, grad_clip)


def train_on_mixture(
    model: nn.Module,
    sampler: BatchSampler,
    h: Any,
    *,
    steps: int,
    batch_size: int = 32,
    lr: float = 3e-3,
    weight_decay: float = 0.0,
    grad_clip: float | None = 1.0,
    seed: int = 0,
    loss_fn: Callable[[Any, torch.Tensor], torch.Tensor] = next_token_loss,
    param_groups: Iterable[dict[str, Any]] | None = None,
) -> TrainLog:
    """Train one plain model on batches from ``mix(h)`` (the baselines: the generic model on
    the natural mixture ``sampler.natural_weights``, a specialist on a target's weights).

    ``h`` is a fixed point of the simplex, or a :class:`MetaDistribution`: then a fresh ``h``
    is drawn at every step exactly as :func:`train_soup` draws it with the same ``seed``, so
    the model sees the soup's own data stream (a soup without experts and router). Same
    schedule, data generators and ``param_groups`` as :func:`train_soup`.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    steps, batch_size, lr, weight_decay, seed = _check_loop_args(
        sampler, steps, batch_size, lr, weight_decay, seed
    )
    k = sampler.n_domains
    if isinstance(h, MetaDistribution):
        meta: MetaDistribution | None = h
        if _check_protocol("h", h, MetaDistribution, "sample(rng)") != k:
            raise ValueError(f"h must cover the sampler's {k} domains, got {h.n_domains}")
        fixed = np.zeros(k)
    else:
        meta = None
        fixed = check_domain_weights(h, k).double().numpy()
    if grad_clip is not None:
        grad_clip = V.positive("grad_clip", grad_clip)
    groups = _param_groups(model, param_groups)
    rank, world = _dist()
    net = model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(model)
    h_rng, data_rng = h_generator(seed), data_generator(seed, rank)
    device = next(model.parameters()).device

    def step_fn() -> tuple[float, np.ndarray]:
        h_t = fixed if meta is None else _draw(meta, h_rng, k)
        batch = sampler.sample(h_t, batch_size, data_rng).to(device)
        return _backward(loss_fn(net(batch[:, :-1]), batch)), h_t

    return _loop(model, groups, step_fn, steps, lr, weight_decay, grad_clip)


def _draw(meta: MetaDistribution, rng: np.random.Generator, k: int) -> np.ndarray:
    """One ``h`` from ``meta``, checked (a user's meta-distribution may return anything), at
    its own precision."""
    h = meta.sample(rng)
    check_domain_weights(h, k, "meta.sample(rng)")
    return np.clip(np.asarray(h, dtype=np.float64), 0.0, None)


def _param_groups(
    module: nn.Module, groups: Iterable[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """The optimizer's groups: every trainable parameter by default, else the user's groups,
    checked to hold only ``module``'s parameters, each at most once."""
    if groups is None:
        return [{"params": [p for p in module.parameters() if p.requires_grad]}]
    if isinstance(groups, dict) or not isinstance(groups, Iterable):
        raise TypeError(
            "param_groups must be a list of dicts with a 'params' entry, got "
            f"{type(groups).__name__}"
        )
    own = {id(p) for p in module.parameters()}
    seen: set[int] = set()
    out = []
    for i, g in enumerate(groups):
        if not isinstance(g, dict) or "params" not in g:
            raise TypeError(
                f"param_groups[{i}] must be a dict with a 'params' entry, got {g!r:.60}"
            )
        params = list(g["params"]) if not isinstance(g["params"], torch.Tensor) else [g["params"]]
        for p in params:
            if id(p) not in own:
                raise ValueError(
                    f"param_groups[{i}] must hold only the trained module's parameters, got a "
                    f"tensor of shape {tuple(p.shape)} that is not one of them"
                )
            if id(p) in seen:
                raise ValueError(f"param_groups[{i}] repeats a parameter of an earlier group")
            seen.add(id(p))
        if "lr" in g:
            V.positive(f"param_groups[{i}]['lr']", g["lr"])
        out.append({**g, "params": [p for p in params if p.requires_grad]})
    if not any(g["params"] for g in out):
        raise ValueError("param_groups must hold at least one trainable parameter, got none")
    return out


def _backward(loss: torch.Tensor) -> float:
    loss.backward()
    return float(loss.detach())


def _loop(
    module: nn.Module,
    groups: list[dict[str, Any]],
    step_fn: Callable[[], tuple[float, np.ndarray]],
    steps: int,
    lr: float,
    weight_decay: float,
    grad_clip: float | None,
) -> TrainLog:
    params = [p for g in groups for p in g["params"]]
    opt = torch.optim.AdamW(groups, lr=lr, weight_decay=weight_decay)
    warmup = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _schedule(s, steps, warmup))
    module.train()
    losses, hs = [], []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss, h = step_fn()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(params, grad_clip)
        opt.step()
        sched.step()
        losses.append(loss)
        hs.append(tuple(float(x) for x in h))
    module.eval()
    return TrainLog(tuple(losses), tuple(hs))
