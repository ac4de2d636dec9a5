"""FedGVI on Flower (``pip install 'icml25[fed]'``, flwr 1.42): a strategy and a client app.

- :func:`make_strategy` returns a ``FedGVIStrategy``, a subclass of Flower's ``FedAvg``. The
  global model it sends is ``q`` as two arrays ``[h, J]`` (natural parameters). It keeps the
  product of the clients' factors. Each reply carries a client's factor change, and
  ``aggregate_train`` runs FedGVI's server step (:func:`~icml25.fedgvi.fedgvi.server_step`):
  the product with the prior for the KL, an optimisation for another ``D_s``. It halves a
  round's changes if the product would be improper.
- :func:`make_client_app` returns a ``ClientApp``. Its ``train`` runs
  :func:`~icml25.fedgvi.fedgvi.client_step` with the client's own factor ``t_m``, kept in
  ``context.state`` across rounds. ``client_fn(partition_id, num_partitions)`` builds the
  client's :class:`~icml25.fedgvi.fedgvi.Client` (data, loss, divergence, damping).
- :func:`make_server_app` returns a ``ServerApp`` for ``flwr run``
  (``examples/flower_fedgvi``); :func:`run_in_process` runs both on
  :func:`icml25.core.flower.in_process_grid`.

Everything imports ``flwr`` lazily.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch

from icml25.core import validate as V
from icml25.core.flower import (
    in_process_grid,
    partition_of,
    quiet_flwr,
    require_flwr,
    server_app,
    task_identity,
)
from icml25.fedgvi import checks as C
from icml25.fedgvi.fedgvi import (
    KL,
    Client,
    Divergence,
    LocalOptimizer,
    aggregate,
)
from icml25.fedgvi.gaussian import NatGaussian


def make_strategy(
    prior: NatGaussian, server_divergence: Divergence | None = None, **fedavg: Any
) -> Any:
    """A ``FedGVIStrategy`` for ``prior`` (built lazily so that ``flwr`` stays optional)."""
    C.gaussian("prior", prior)
    if server_divergence is not None:
        C.divergence("server_divergence", server_divergence)
    require_flwr("FedGVI on Flower")
    from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord
    from flwr.serverapp import Grid
    from flwr.serverapp.strategy import FedAvg

    if not prior.is_proper():
        raise ValueError("the prior must be a proper Gaussian")
    divergence = server_divergence if server_divergence is not None else KL()

    class FedGVIStrategy(FedAvg):
        """FedAvg's sampling and messaging with FedGVI's server step."""

        def __init__(self) -> None:
            fedavg.setdefault("fraction_evaluate", 0.0)  # no federated evaluation round
            super().__init__(**fedavg)
            self.prior, self.divergence = prior, divergence
            self.total = NatGaussian.flat(prior.dim, prior.full)  # product of all t_m
            self.q = prior
            self.events: Counter[str] = Counter()

        def configure_train(
            self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
        ) -> Iterable[Message]:
            self.q = NatGaussian.from_arrays(arrays.to_numpy_ndarrays())
            return super().configure_train(server_round, arrays, config, grid)

        def aggregate_train(
            self, server_round: int, replies: Iterable[Message]
        ) -> tuple[ArrayRecord | None, MetricRecord | None]:
            valid, _ = self._check_and_log_replies(replies, is_train=True)
            if not valid:
                return None, None
            contents: list[Any] = [m.content for m in valid]
            change = NatGaussian.flat(self.prior.dim, self.prior.full)
            for c in contents:
                change = change * NatGaussian.from_arrays(c["arrays"].to_numpy_ndarrays())
            # the product of all factors is one factor to the server step
            q, (total,) = aggregate(
                self.prior,
                self.q,
                [self.total],
                [self.total * change],
                self.divergence,
                self.events,
            )
            self.total, self.q = total, q
            size = float(np.mean([c["metrics"]["factor-change"] for c in contents]))
            metrics = MetricRecord({"factor-change": size, "clients": len(valid)})
            return ArrayRecord(q.to_arrays()), metrics

    return FedGVIStrategy()


def make_client_app(
    client_fn: Callable[[int, int], Client],
    optimizer: LocalOptimizer | None = None,
    seed: int = 0,
) -> Any:
    """A Flower ``ClientApp`` running FedGVI's client step for the client of its partition."""
    _callable("client_fn", client_fn)
    if optimizer is not None:
        C.optimizer("optimizer", optimizer)
    seed = V.integer("seed", seed, low=0)
    require_flwr("FedGVI on Flower")
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp

    app = ClientApp()
    opt = optimizer if optimizer is not None else LocalOptimizer()

    @app.train()
    def train(msg: Message, context: Any) -> Message:
        pid, num = partition_of(context)
        client = client_fn(pid, num)
        content: Any = msg.content
        q = NatGaussian.from_arrays(content["arrays"].to_numpy_ndarrays())
        state: Any = context.state
        if "factor" in state:
            factor = NatGaussian.from_arrays(state["factor"].to_numpy_ndarrays())
        else:
            factor = NatGaussian.flat(q.dim, q.full)
        rnd = int(content["config"].get("server-round", 0))
        generator = torch.Generator().manual_seed(seed * 1_000_003 + pid * 1009 + rnd)
        update = client.step(q, factor, optimizer=opt, generator=generator)
        context.state["factor"] = ArrayRecord(update.factor.to_arrays())
        change = update.factor / factor
        size = float(np.abs(change.h).sum() + np.abs(change.J).sum())
        metrics = MetricRecord({"num-examples": client.model.n, "factor-change": size})
        reply = RecordDict({"arrays": ArrayRecord(change.to_arrays()), "metrics": metrics})
        return Message(reply, reply_to=msg)

    return app


def make_server_app(
    strategy_fn: Callable[[Any], Any], prior_fn: Callable[[Any], NatGaussian]
) -> Any:
    """A ``ServerApp`` for deployment: ``strategy_fn(context)`` and ``prior_fn(context)`` read
    the run config; the number of rounds is ``num-server-rounds``."""
    _callable("strategy_fn", strategy_fn)
    _callable("prior_fn", prior_fn)

    def describe(arrays: list[np.ndarray]) -> str:
        q = NatGaussian.from_arrays(arrays)
        mean = np.array2string(q.mean, precision=10)
        return f"mean {mean}, var {np.array2string(q.var, precision=10)}"

    return server_app(
        "FedGVI q", strategy_fn, lambda context: prior_fn(context).to_arrays(), describe
    )


def run_in_process(
    prior: NatGaussian,
    client_fn: Callable[[int, int], Client],
    num_clients: int,
    rounds: int,
    *,
    server_divergence: Divergence | None = None,
    optimizer: LocalOptimizer | None = None,
    seed: int = 0,
) -> tuple[NatGaussian, list[NatGaussian]]:
    """FedGVI through Flower's real strategy and client app on an in-process grid.
    Returns the global posterior and every client's factor (from its ``context.state``)."""
    C.gaussian("prior", prior)
    _callable("client_fn", client_fn)
    num_clients = V.integer("num_clients", num_clients, low=1)
    rounds = V.integer("rounds", rounds, low=1)
    require_flwr("FedGVI on Flower")
    from flwr.app import ArrayRecord

    app = make_client_app(client_fn, optimizer, seed)
    with task_identity(), quiet_flwr():
        grid = in_process_grid(app, num_clients)
        strategy = make_strategy(
            prior,
            server_divergence,
            min_train_nodes=num_clients,
            min_available_nodes=num_clients,
        )
        result = strategy.start(
            grid=grid, initial_arrays=ArrayRecord(prior.to_arrays()), num_rounds=rounds
        )
    factors = [
        NatGaussian.from_arrays(c.state["factor"].to_numpy_ndarrays())
        for c in grid.contexts.values()
    ]
    return NatGaussian.from_arrays(result.arrays.to_numpy_ndarrays()), factors


def _callable(name: str, fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
