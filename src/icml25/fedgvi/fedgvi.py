"""FedGVI (Mildner, Hamelijnck, Giampouras & Damoulas, ICML 2025): the client and server steps.

The global posterior is ``q = pi * prod_m t_m`` with Gaussian factors ``t_m`` (natural
parameters, float64; ``t_m = 1`` at start). In every round, each client ``m``:

1. forms the cavity ``q_\\m = q / t_m``;
2. solves ``q_m = argmin_q E_q[sum_i loss(theta; x_i, y_i)] + D(q || q_\\m)`` -- in closed
   form when the pair is conjugate (NLL or IMQ score matching with KL on the Gaussian
   location model), exactly by L-BFGS when the expected loss has a closed form, otherwise by
   Adam on reparameterised Monte Carlo samples (the loss is *averaged* over samples);
3. updates its factor ``t_m <- t_m * (q_m / q)^rho`` (damping ``rho``).

The server forms ``q = argmin_q E_q[-sum_m log t_m] + D_s(q || pi)``: with the KL that is
the product ``pi * prod_m t_m`` (PVI's server); with another ``D_s`` it is optimised (the
expectation is closed form). The NLL loss with KL everywhere is PVI (Ashman et al. 2022);
one client (``M = 1``) is GVI (Knoblauch et al. 2022): see :func:`gvi`.

**Numerical safety.** A cavity or global posterior whose precision is not positive is
never passed on: the server halves the round's factor updates until the product is proper
(``events["damped"]``), and a client clips an improper cavity's precision to a floor
(``events["clipped"]``). ``clip_factors=True`` additionally keeps every factor's precision
non-negative. Every such event is counted and reported in :class:`FedGVIResult`.

Long by design: the divergences, the local optimiser, the client and server steps and the loop
that alternates them are the paper's Algorithm 1, read top to bottom.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from icml25.core import validate as V
from icml25.fedgvi import checks as C
from icml25.fedgvi.gaussian import NatGaussian, alpha_renyi, kl, reverse_kl, weighted_kl
from icml25.fedgvi.losses import NLL, IMQScoreMatching
from icml25.fedgvi.models import GaussianLocation

Tensor = torch.Tensor
PRECISION_FLOOR = 1e-10


# --- divergences as objects -------------------------------------------------------------
@dataclass(frozen=True)
class KL:
    def __call__(self, mq: Tensor, vq: Tensor, mp: Tensor, vp: Tensor) -> Tensor:
        return kl(mq, vq, mp, vp)


@dataclass(frozen=True)
class ReverseKL:
    def __call__(self, mq: Tensor, vq: Tensor, mp: Tensor, vp: Tensor) -> Tensor:
        return reverse_kl(mq, vq, mp, vp)


@dataclass(frozen=True)
class WeightedKL:
    w: float = 2.0

    def __post_init__(self) -> None:
        V.positive("w", self.w)

    def __call__(self, mq: Tensor, vq: Tensor, mp: Tensor, vp: Tensor) -> Tensor:
        return weighted_kl(mq, vq, mp, vp, self.w)


@dataclass(frozen=True)
class AlphaRenyi:
    alpha: float = 2.5

    def __post_init__(self) -> None:
        if V.positive("alpha", self.alpha) == 1:
            raise ValueError("alpha must be > 0 and not 1 (alpha = 1 is KL: use KL()), got 1")

    def __call__(self, mq: Tensor, vq: Tensor, mp: Tensor, vp: Tensor) -> Tensor:
        return alpha_renyi(mq, vq, mp, vp, self.alpha)

    def var_bound(self, vp: np.ndarray) -> np.ndarray | None:
        """For ``alpha > 1`` the divergence is finite only for ``var_q < alpha/(alpha-1) vp``:
        mean-field optimisers parametrise within that bound."""
        if self.alpha <= 1 or vp.ndim != 1:
            return None
        return self.alpha / (self.alpha - 1) * vp


Divergence = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
_NLL, _KL = NLL(), KL()  # defaults (immutable)


@dataclass(frozen=True)
class LocalOptimizer:
    """How a client solves its non-conjugate problem.

    ``method="auto"``: L-BFGS when the expected loss has a closed form, else Adam on ``samples``
    reparameterised Monte Carlo samples for ``steps`` steps at learning rate ``lr`` (the
    paper's logistic regression: 150 samples, 500 steps, lr 0.01). ``batch_size``: Adam
    estimates the data term on random minibatches, scaled by ``N / batch_size``.

    ``patience``: train in epochs instead (shuffled passes over the data in minibatches of
    ``batch_size``), at most ``steps`` epochs, and stop once the epoch's mean objective has not
    improved for ``patience`` epochs; the best epoch's ``q`` is returned (the official code's
    early stopping on the ELBO, which stashes the best model). ``mc``: ``"mean"`` averages the
    data term over the Monte Carlo samples (an unbiased estimate of the expected loss);
    ``"sum"`` sums it, as the official BNN code does, which weights the data ``samples`` times
    against the divergence."""

    method: str = "auto"
    steps: int = 500
    lr: float = 0.01
    samples: int = 150
    lbfgs_iter: int = 500
    batch_size: int | None = None
    patience: int | None = None
    mc: str = "mean"

    def __post_init__(self) -> None:
        if self.method not in ("auto", "lbfgs", "adam"):
            raise ValueError(f"method must be 'auto', 'lbfgs' or 'adam', got {self.method!r}")
        for name in ("steps", "samples", "lbfgs_iter", "batch_size", "patience"):
            value = getattr(self, name)
            if value is not None or name in ("steps", "samples", "lbfgs_iter"):
                object.__setattr__(self, name, V.integer(name, value, low=1))
        object.__setattr__(self, "lr", V.positive("lr", self.lr))
        if self.mc not in ("mean", "sum"):
            raise ValueError(f"mc must be 'mean' or 'sum', got {self.mc!r}")


# --- variational parameters -------------------------------------------------------------
class _Variational:
    """``(mean, log-variance)`` (mean-field) or ``(mean, raw Cholesky factor)`` (full)."""

    def __init__(self, start: NatGaussian, bound: np.ndarray | None = None) -> None:
        mean, var = start.moments()
        self.full = start.full
        self.bound = None if bound is None or self.full else torch.as_tensor(bound)
        self.mu = torch.tensor(mean, dtype=torch.float64, requires_grad=True)
        if self.full:
            L = np.linalg.cholesky(var)
            raw = np.tril(L, -1) + np.diag(np.log(np.diag(L)))
            self.raw = torch.tensor(raw, dtype=torch.float64, requires_grad=True)
        elif bound is not None:  # var = bound * sigmoid(raw), inside the bound
            frac = np.clip(var / bound, 1e-12, 1 - 1e-9)
            raw = np.log(frac) - np.log1p(-frac)
            self.raw = torch.tensor(raw, dtype=torch.float64, requires_grad=True)
        else:
            self.raw = torch.tensor(np.log(var), dtype=torch.float64, requires_grad=True)

    def params(self) -> list[Tensor]:
        return [self.mu, self.raw]

    def scale(self) -> Tensor:
        if self.full:
            return torch.tril(self.raw, -1) + torch.diag(torch.exp(self.raw.diagonal()))
        return torch.sqrt(self.var())

    def var(self) -> Tensor:
        if self.full:
            L = self.scale()
            return L @ L.T
        if self.bound is not None:
            return self.bound * torch.sigmoid(self.raw)
        return torch.exp(self.raw)

    def sample(self, eps: Tensor) -> Tensor:
        return self.mu + (eps @ self.scale().T if self.full else eps * self.scale())

    def snapshot(self) -> list[Tensor]:
        return [p.detach().clone() for p in self.params()]

    def restore(self, saved: list[Tensor]) -> None:
        with torch.no_grad():
            for p, s in zip(self.params(), saved, strict=True):
                p.copy_(s)

    def result(self) -> NatGaussian:
        mean = self.mu.detach().numpy().copy()
        return NatGaussian.from_moments(mean, self.var().detach().numpy().copy())


def _moments_t(g: NatGaussian) -> tuple[Tensor, Tensor]:
    mean, var = g.moments()
    return torch.as_tensor(mean), torch.as_tensor(var)


def minimise(
    objective: Callable[[_Variational, Tensor | None], Tensor],
    start: NatGaussian,
    *,
    method: str,
    optimizer: LocalOptimizer,
    generator: torch.Generator | None = None,
    events: Counter[str] | None = None,
    fallback: NatGaussian | None = None,
    var_bound: np.ndarray | None = None,
) -> NatGaussian:
    """Minimise ``objective(q, eps)`` over Gaussians ``q`` from ``start`` (or ``fallback`` if
    the objective is not finite there). ``eps`` is ``None`` for L-BFGS (deterministic) and a
    fresh ``(samples, d)`` standard normal draw for each Adam step."""
    events = events if events is not None else Counter()
    q = _Variational(start, var_bound)
    with torch.no_grad():
        eps0 = None if method == "lbfgs" else _draw(optimizer.samples, start.dim, generator)
        if not torch.isfinite(objective(q, eps0)) and fallback is not None:
            q = _Variational(fallback, var_bound)
    if method == "lbfgs":
        saved = q.snapshot()
        with torch.no_grad():
            f0 = float(objective(q, None))
        if _lbfgs(objective, q, optimizer.lbfgs_iter) <= f0:
            return q.result()
        # The line search crossed the edge of the objective's domain (the alpha-Renyi
        # divergence is +inf beyond it): approach with Adam, which rejects such steps,
        # then polish with L-BFGS from inside.
        events["lbfgs-fallback"] += 1
        q.restore(saved)
        _adam(objective, q, max(2000, optimizer.steps), optimizer.lr, lambda: None, events)
        with torch.no_grad():
            f1 = float(objective(q, None))
        polished = q.snapshot()
        if not _lbfgs(objective, q, optimizer.lbfgs_iter) <= f1:
            q.restore(polished)
        with torch.no_grad():
            if not torch.isfinite(objective(q, None)):
                raise FloatingPointError("the objective is not finite at the solution")
        return q.result()
    _adam(
        objective,
        q,
        optimizer.steps,
        optimizer.lr,
        lambda: _draw(optimizer.samples, start.dim, generator),
        events,
    )
    return q.result()


def _lbfgs(
    objective: Callable[[_Variational, Tensor | None], Tensor], q: _Variational, iters: int
) -> float:
    """Run L-BFGS (strong Wolfe) in place; returns the final objective (``nan`` if broken)."""
    opt = torch.optim.LBFGS(
        q.params(),
        lr=1.0,
        max_iter=iters,
        tolerance_grad=1e-12,
        tolerance_change=1e-15,
        history_size=50,
        line_search_fn="strong_wolfe",
    )

    def closure() -> Tensor:
        opt.zero_grad()
        loss = objective(q, None)
        if torch.isfinite(loss):
            loss.backward()
        return loss

    try:
        opt.step(closure)
    except (IndexError, RuntimeError):  # torch's line search cannot bracket an inf
        return float("nan")
    with torch.no_grad():
        value = float(objective(q, None))
    finite = all(torch.all(torch.isfinite(p)) for p in q.params())
    return value if finite and np.isfinite(value) else float("nan")


def _adam(
    objective: Callable[[_Variational, Tensor | None], Tensor],
    q: _Variational,
    steps: int,
    lr: float,
    draw: Callable[[], Tensor | None],
    events: Counter[str],
) -> None:
    """Adam in place; a step to a non-finite objective is undone and the rate halved."""
    opt = torch.optim.Adam(q.params(), lr=lr)
    for _ in range(steps):
        saved = q.snapshot()
        opt.zero_grad()
        loss = objective(q, draw())
        if not torch.isfinite(loss):  # e.g. the alpha-Renyi divergence left its domain
            q.restore(saved)
            for group in opt.param_groups:
                group["lr"] *= 0.5
            events["step-rejected"] += 1
            continue
        loss.backward()
        opt.step()
        if not all(torch.all(torch.isfinite(p)) for p in q.params()):
            q.restore(saved)
            events["step-rejected"] += 1


def _adam_epochs(
    on_batch: Callable[[_Variational, Tensor, Tensor | None], Tensor],
    start: NatGaussian,
    fallback: NatGaussian,
    n: int,
    batch: int | None,
    optimizer: LocalOptimizer,
    generator: torch.Generator | None,
    events: Counter[str] | None,
    var_bound: np.ndarray | None,
) -> NatGaussian:
    """Adam over shuffled epochs with early stopping on the epoch's mean objective; returns
    the best epoch's ``q``. A non-finite step is undone and the rate halved, as in Adam."""
    events = events if events is not None else Counter()
    events["solves"] += 1
    q = _Variational(start, var_bound)
    with torch.no_grad():
        if not torch.isfinite(on_batch(q, _draw(optimizer.samples, start.dim, generator), None)):
            q = _Variational(fallback, var_bound)
    opt = torch.optim.Adam(q.params(), lr=optimizer.lr)
    best, best_q, since = float("inf"), q.snapshot(), 0
    assert optimizer.patience is not None
    for _ in range(optimizer.steps):
        events["epochs"] += 1
        order = torch.randperm(n, generator=generator)
        chunks = [None] if batch is None else list(torch.split(order, batch))
        total = 0.0
        for idx in chunks:
            saved = q.snapshot()
            opt.zero_grad()
            value = on_batch(q, _draw(optimizer.samples, start.dim, generator), idx)
            if not torch.isfinite(value):
                q.restore(saved)
                for group in opt.param_groups:
                    group["lr"] *= 0.5
                events["step-rejected"] += 1
                continue
            value.backward()
            opt.step()
            if not all(torch.all(torch.isfinite(p)) for p in q.params()):
                q.restore(saved)
                events["step-rejected"] += 1
            total += float(value.detach()) / len(chunks)
        if total < best:
            best, best_q, since = total, q.snapshot(), 0
        else:
            since += 1
            if since >= optimizer.patience:
                events["early-stopped"] += 1
                break
    q.restore(best_q)
    return q.result()


def _draw(samples: int, d: int, generator: torch.Generator | None) -> Tensor:
    return torch.randn(samples, d, dtype=torch.float64, generator=generator)


# --- client ------------------------------------------------------------------------------
def check_model(model: Any, dim: int | None = None) -> Any:
    """``model`` if it is a FedGVI data model (``log_lik``, ``dim``, ``n``, ``take``) whose
    parameter dimension is ``dim``."""
    return C.model(model, dim)


def conjugate_update(model: Any, loss: Any, cavity: NatGaussian) -> NatGaussian | None:
    """``q_m`` in closed form when (model, loss) is conjugate under the KL, else ``None``."""
    C.gaussian("cavity", cavity)
    C.loss("loss", loss)
    check_model(model, cavity.dim)
    if not isinstance(model, GaussianLocation):
        return None
    if isinstance(loss, NLL):
        x_sum = model.x.sum(0).numpy()
        prec = model.n / model.sigma2
        J = cavity.J + (prec * np.eye(model.dim) if cavity.full else prec)
        return NatGaussian(cavity.h + x_sum / model.sigma2, J)
    if isinstance(loss, IMQScoreMatching) and model.dim == 1:
        a, b = loss.coefficients(model)
        return NatGaussian(cavity.h + 2 * float(b), cavity.J + 2 * float(a))
    return None


@dataclass
class ClientUpdate:
    """One client's step: its new factor ``t_m``, its local posterior ``q_m`` (both
    ``NatGaussian`` of the model's ``dim``) and the solver's event counts."""

    factor: NatGaussian  # the client's new t_m
    local: NatGaussian  # q_m, the client's local posterior
    events: Counter[str] = field(default_factory=Counter)


def local_posterior(
    cavity: NatGaussian,
    model: Any,
    loss: Any = _NLL,
    divergence: Divergence = _KL,
    *,
    start: NatGaussian | None = None,
    optimizer: LocalOptimizer = LocalOptimizer(),
    conjugate: bool | str = "auto",
    generator: torch.Generator | None = None,
    events: Counter[str] | None = None,
) -> NatGaussian:
    """``argmin_q E_q[sum_i loss] + D(q || cavity)`` over Gaussians of the cavity's kind."""
    C.gaussian("cavity", cavity)
    check_model(model, cavity.dim)
    C.loss("loss", loss)
    C.divergence("divergence", divergence)
    C.optimizer("optimizer", optimizer)
    V.generator("generator", generator)
    if start is not None:
        C.same_space("start", start, cavity, "the cavity")
        if not start.is_proper():
            raise ValueError("start must be a proper Gaussian (positive precision)")
    if conjugate not in ("auto", True, False):
        raise ValueError(f"conjugate must be 'auto', True or False, got {conjugate!r}")
    loss = loss.bind(cavity.mean)
    if conjugate is not False and isinstance(divergence, KL):
        exact = conjugate_update(model, loss, cavity)
        if exact is not None:
            return exact
    if conjugate is True:
        raise ValueError(f"no conjugate update for {type(loss).__name__} with {divergence!r}")
    m_cav, v_cav = _moments_t(cavity)
    closed = loss.expected(model, m_cav, v_cav) is not None
    method = optimizer.method
    if method == "auto":
        method = "lbfgs" if closed else "adam"
    if method == "lbfgs" and not closed:
        raise ValueError(f"{type(loss).__name__} has no closed-form expectation for this model")

    batch = optimizer.batch_size
    if batch is not None and batch >= model.n:
        batch = None
    reduce = (lambda x: x.mean(0)) if optimizer.mc == "mean" else (lambda x: x.sum(0))

    def on_batch(q: _Variational, eps: Tensor, idx: Tensor | None) -> Tensor:
        var = q.var()
        if idx is None:
            data = reduce(loss.per_point(model, q.sample(eps)).sum(1))
        else:
            part = reduce(loss.per_point(model.take(idx), q.sample(eps)).sum(1))
            data = part * (model.n / idx.numel())
        return data + divergence(q.mu, var, m_cav, v_cav)

    def objective(q: _Variational, eps: Tensor | None) -> Tensor:
        if eps is None:
            return loss.expected(model, q.mu, q.var()) + divergence(q.mu, q.var(), m_cav, v_cav)
        if batch is None:
            return on_batch(q, eps, None)
        return on_batch(q, eps, torch.randperm(model.n, generator=generator)[:batch])

    if method == "adam" and optimizer.patience is not None:
        q0 = start if start is not None else cavity
        return _adam_epochs(
            on_batch,
            q0,
            cavity,
            model.n,
            batch,
            optimizer,
            generator,
            events,
            _bound(divergence, v_cav),
        )
    return minimise(
        objective,
        start if start is not None else cavity,
        method=method,
        optimizer=optimizer,
        generator=generator,
        events=events,
        fallback=cavity,
        var_bound=_bound(divergence, v_cav),
    )


def client_step(
    q: NatGaussian,
    factor: NatGaussian,
    model: Any,
    loss: Any = _NLL,
    divergence: Divergence = _KL,
    *,
    damping: float = 1.0,
    optimizer: LocalOptimizer = LocalOptimizer(),
    conjugate: bool | str = "auto",
    clip_factors: bool = False,
    generator: torch.Generator | None = None,
    start: NatGaussian | None = None,
) -> ClientUpdate:
    """One FedGVI client step from the global ``q`` and the client's factor ``t_m``.
    ``start`` is where a non-conjugate optimisation begins (default: ``q``)."""
    damping = C.damping(damping)
    C.gaussian("q", q)
    check_model(model, q.dim)
    C.same_space("factor", factor, q, "q")
    C.loss("loss", loss)
    C.divergence("divergence", divergence)
    clip_factors = V.flag("clip_factors", clip_factors)
    events: Counter[str] = Counter()
    cavity = q / factor
    cavity, low = cavity.clip_precision(PRECISION_FLOOR)
    if low:
        events["clipped"] += low
    local = local_posterior(
        cavity,
        model,
        loss,
        divergence,
        start=start if start is not None else (q if q.is_proper() else None),
        optimizer=optimizer,
        conjugate=conjugate,
        generator=generator,
        events=events,
    )
    new = NatGaussian(factor.h + damping * (local.h - q.h), factor.J + damping * (local.J - q.J))
    if clip_factors:
        new, low = new.clip_precision(0.0)
        events["factor-clipped"] += low
    return ClientUpdate(new, local, events)


# --- server ------------------------------------------------------------------------------
def server_step(
    prior: NatGaussian,
    factors: Sequence[NatGaussian],
    divergence: Divergence = _KL,
    *,
    start: NatGaussian | None = None,
    optimizer: LocalOptimizer = LocalOptimizer(method="lbfgs"),
) -> NatGaussian:
    """``argmin_q E_q[-sum_m log t_m] + D_s(q || prior)``; the product for the KL.
    The expectation is closed form, so it is always solved by L-BFGS (``optimizer`` gives the
    iteration limit, and Adam's steps and rate if L-BFGS must back off an AR bound)."""
    C.gaussian("prior", prior)
    if isinstance(factors, Sequence) and not isinstance(factors, (str, bytes)) and not factors:
        raise ValueError("factors must hold at least one client factor")
    factors = C.items("factors", factors, NatGaussian, "NatGaussian factors")
    if any(f.dim != prior.dim for f in factors):
        raise ValueError(
            f"every factor must have the prior's dimension {prior.dim}, got "
            f"{[f.dim for f in factors]}"
        )
    for i, f in enumerate(factors):
        C.same_space(f"factors[{i}]", f, prior, "the prior")
    C.divergence("divergence", divergence)
    C.optimizer("optimizer", optimizer)
    if start is not None:
        C.same_space("start", start, prior, "the prior")
    total = factors[0]
    for f in factors[1:]:
        total = total * f
    if isinstance(divergence, KL):
        return prior * total
    m_p, v_p = _moments_t(prior)
    Jt, ht = torch.as_tensor(total.J), torch.as_tensor(total.h)

    def objective(q: _Variational, eps: Tensor | None) -> Tensor:
        var = q.var()
        if Jt.ndim == 2:
            quad = q.mu @ (Jt @ q.mu) + (Jt * var).sum()
        else:
            quad = (Jt * (q.mu**2 + var)).sum()
        return 0.5 * quad - ht @ q.mu + divergence(q.mu, var, m_p, v_p)

    begin = start if start is not None and start.is_proper() else prior
    return minimise(
        objective,
        begin,
        method="lbfgs",
        optimizer=optimizer,
        fallback=prior,
        var_bound=_bound(divergence, v_p),
    )


def _bound(divergence: Any, v_ref: Tensor) -> np.ndarray | None:
    bound = getattr(divergence, "var_bound", None)
    return bound(v_ref.numpy()) if bound is not None else None


# --- the federated loop --------------------------------------------------------------------
@dataclass(frozen=True)
class Client:
    """One client's data model and its choices of loss, divergence and damping."""

    model: Any
    loss: Any = _NLL
    divergence: Divergence = _KL
    damping: float = 1.0

    def __post_init__(self) -> None:
        check_model(self.model)
        C.loss("loss", self.loss)
        C.divergence("divergence", self.divergence)
        object.__setattr__(self, "damping", C.damping(self.damping))

    def step(self, q: NatGaussian, factor: NatGaussian, **kw: Any) -> ClientUpdate:
        """:func:`client_step` with this client's model, loss, divergence and damping."""
        return client_step(
            q, factor, self.model, self.loss, self.divergence, damping=self.damping, **kw
        )


@dataclass
class FedGVIResult:
    """What :func:`fedgvi` returns: the global posterior ``q`` (a ``NatGaussian`` of the
    models' ``dim``), each client's factor ``t_m`` in client order, ``q`` after every round
    (``history[0]`` is the prior) and counts of the solver's events (``"damped"``,
    ``"clipped"``, ``"solves"``, ...)."""

    q: NatGaussian
    factors: list[NatGaussian]
    history: list[NatGaussian]  # q after each round (history[0] is the prior)
    events: Counter[str]

    def rounds_to_converge(self, tol: float = 1e-6) -> int | None:
        """First round after which the global mean moves by at most ``tol`` (max-norm)."""
        return rounds_to_converge(self.history, tol)


def rounds_to_converge(history: Sequence[NatGaussian], tol: float = 1e-6) -> int | None:
    means = [g.mean for g in history]
    for r in range(1, len(means)):
        if np.max(np.abs(means[r] - means[r - 1])) <= tol:
            return r - 1 if r > 1 else 1
    return None


def aggregate(
    prior: NatGaussian,
    q_old: NatGaussian,
    old: Sequence[NatGaussian],
    new: Sequence[NatGaussian],
    divergence: Divergence,
    events: Counter[str],
) -> tuple[NatGaussian, list[NatGaussian]]:
    """The server step on the new factors; if the result is not a proper Gaussian, the round's
    factor changes are halved (at most 50 times) and the event counted."""
    factors = list(new)
    for _ in range(50):
        q = server_step(prior, factors, divergence, start=q_old)
        if q.is_proper():
            return q, factors
        events["damped"] += 1
        factors = [o * ((n / o) ** 0.5) for o, n in zip(old, factors, strict=True)]
    raise FloatingPointError("the global posterior stayed improper after 50 halvings")


def fedgvi(
    prior: NatGaussian,
    clients: Sequence[Client],
    rounds: int,
    *,
    server_divergence: Divergence = _KL,
    optimizer: LocalOptimizer = LocalOptimizer(),
    conjugate: bool | str = "auto",
    clip_factors: bool = False,
    seed: int = 0,
    tol: float | None = None,
    progress: Callable[[int, NatGaussian], None] | None = None,
    init: NatGaussian | None = None,
) -> FedGVIResult:
    """Synchronous FedGVI: every client updates from the same ``q``, then the server step.
    Stops early once the global mean moves by at most ``tol``. ``init`` is where the first
    round's local optimisations start (e.g. random means and small variances for a BNN,
    whose prior is too broad a starting point); later rounds start from ``q``."""
    C.gaussian("prior", prior)
    if not prior.is_proper():
        raise ValueError("the prior must be a proper Gaussian")
    if isinstance(clients, Sequence) and not isinstance(clients, (str, bytes)) and not clients:
        raise ValueError("clients must not be empty")
    clients = C.items("clients", clients, Client, "Client objects (Client(model, loss, ...))")
    for c in clients:
        check_model(c.model, prior.dim)
    rounds = V.integer("rounds", rounds, low=1)
    C.divergence("server_divergence", server_divergence)
    C.optimizer("optimizer", optimizer)
    if conjugate not in ("auto", True, False):
        raise ValueError(f"conjugate must be 'auto', True or False, got {conjugate!r}")
    clip_factors = V.flag("clip_factors", clip_factors)
    seed = V.integer("seed", seed, low=0)
    if tol is not None:
        tol = V.number("tol", tol, low=0.0)
    V.optional_callable("progress", progress)
    if init is not None:
        C.same_space("init", init, prior, "the prior")
        if not init.is_proper():
            raise ValueError("init must be a proper Gaussian (positive precision)")
    generator = torch.Generator().manual_seed(seed)
    factors = [NatGaussian.flat(prior.dim, prior.full) for _ in clients]
    q, history, events = prior, [prior], Counter[str]()
    for r in range(rounds):
        updates = [
            c.step(
                q,
                t,
                optimizer=optimizer,
                conjugate=conjugate,
                clip_factors=clip_factors,
                generator=generator,
                start=init if r == 0 else None,
            )
            for c, t in zip(clients, factors, strict=True)
        ]
        for u in updates:
            events.update(u.events)
        q, factors = aggregate(
            prior, q, factors, [u.factor for u in updates], server_divergence, events
        )
        history.append(q)
        if progress is not None:
            progress(r + 1, q)
        if tol is not None and np.max(np.abs(history[-1].mean - history[-2].mean)) <= tol:
            break
    return FedGVIResult(q, factors, history, events)


def gvi(
    prior: NatGaussian,
    model: Any,
    loss: Any = _NLL,
    divergence: Divergence = _KL,
    *,
    optimizer: LocalOptimizer = LocalOptimizer(),
    seed: int = 0,
) -> NatGaussian:
    """Generalised variational inference, ``argmin_q E_q[sum loss] + D(q || prior)``: FedGVI
    with one client and one round."""
    C.gaussian("prior", prior)
    generator = torch.Generator().manual_seed(V.integer("seed", seed, low=0))
    return local_posterior(prior, model, loss, divergence, optimizer=optimizer, generator=generator)


def sample(q: NatGaussian, n: int, seed: int = 0) -> Tensor:
    """``n`` draws ``(n, d)`` from ``q``, for predictive averages."""
    C.gaussian("q", q)
    n = V.integer("n", n, low=1)
    seed = V.integer("seed", seed, low=0)
    mean, var = q.moments()
    g = torch.Generator().manual_seed(seed)
    eps = _draw(n, q.dim, g)
    if q.full:
        return torch.as_tensor(mean) + eps @ torch.linalg.cholesky(torch.as_tensor(var)).T
    return torch.as_tensor(mean) + eps * torch.sqrt(torch.as_tensor(var))
