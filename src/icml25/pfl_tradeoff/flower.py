"""FedCLUP on Flower (``pip install 'icml25[fed]'``, flwr 1.42): a strategy and a client app.

- :class:`FedCLUPStrategy` subclasses Flower's ``FedAvg``. ``configure_train`` sends the
  global model with ``lam``, ``local-steps`` and ``lr-local``. ``aggregate_train`` applies
  FedCLUP's server step, not the plain average.
- :func:`make_client_app` returns a ``ClientApp``. Its ``train`` runs the local proximal GD
  (:func:`~icml25.pfl_tradeoff.fedclup.local_update`), warm-started from the client's own
  model kept in ``context.state`` across rounds. ``problem_fn(partition_id, num_partitions)``
  builds the client's problem from its node config, so the app also works when every message
  starts a new process (deployment).
- :func:`make_server_app` returns a ``ServerApp`` for ``flwr run``.
- :func:`run_in_process` drives the real strategy and client-app objects on
  :func:`icml25.core.flower.in_process_grid` (one process, no Ray, no network). Tests use it
  to check that Flower and the in-process runner give the same models.

Everything here imports ``flwr`` lazily; the rest of the package does not need it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from icml25.core import validate as V
from icml25.core.flower import (
    in_process_grid,
    partition_of,
    quiet_flwr,
    require_flwr,
    server_app,
    task_identity,
)
from icml25.pfl_tradeoff.fedclup import (
    Problem,
    check_lambda,
    check_problems,
    local_update,
    server_lr,
    server_update,
)


def make_strategy(
    lam: float,
    *,
    local_steps: int,
    smoothness: float,
    lr_local: float | None = None,
    eta_g: float | None = None,
    **fedavg: Any,
) -> Any:
    """A :class:`FedCLUPStrategy` (built lazily so that ``flwr`` stays optional)."""
    require_flwr("FedCLUP on Flower")
    from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord
    from flwr.serverapp import Grid
    from flwr.serverapp.strategy import FedAvg

    lam = check_lambda(lam)
    local_steps = V.integer("local_steps", local_steps, low=1)
    smoothness = V.positive("smoothness", smoothness)
    if lr_local is not None:
        lr_local = V.positive("lr_local", lr_local)
    if eta_g is not None:
        eta_g = V.positive("eta_g", eta_g)

    class FedCLUPStrategy(FedAvg):
        """FedAvg's sampling and messaging with FedCLUP's client config and server step."""

        def __init__(self) -> None:
            fedavg.setdefault("fraction_evaluate", 0.0)  # no federated evaluation round
            super().__init__(**fedavg)
            self.lam, self.local_steps = lam, local_steps
            self.lr_local = lr_local if lr_local is not None else 0.0  # 0: each client 1/(L_i+lam)
            self.eta_g = eta_g if eta_g is not None else server_lr(lam, smoothness)
            self._current: np.ndarray | None = None

        def configure_train(
            self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
        ) -> Iterable[Message]:
            self._current = arrays.to_numpy_ndarrays()[0]
            cfg = ConfigRecord(dict(config))  # start() passes the same record every round
            cfg["lam"], cfg["local-steps"], cfg["lr-local"] = (
                self.lam,
                self.local_steps,
                self.lr_local,
            )
            return super().configure_train(server_round, arrays, cfg, grid)

        def aggregate_train(
            self, server_round: int, replies: Iterable[Message]
        ) -> tuple[ArrayRecord | None, MetricRecord | None]:
            valid, _ = self._check_and_log_replies(replies, is_train=True)
            if not valid or self._current is None:
                return None, None
            contents: list[Any] = [m.content for m in valid]
            w_locals = [c["arrays"].to_numpy_ndarrays()[0] for c in contents]
            weights = [1.0] * len(w_locals)  # p_i = 1/m, as the paper's code
            if self.lam > 0:
                new = server_update(self._current, w_locals, weights, self.lam, self.eta_g)
            else:
                new = np.mean(w_locals, axis=0)
            loss = float(np.mean([c["metrics"]["loss"] for c in contents]))
            return ArrayRecord([new]), MetricRecord({"train-loss": loss, "clients": len(valid)})

    return FedCLUPStrategy()


def make_client_app(problem_fn: Callable[[int, int], Problem]) -> Any:
    """A Flower ``ClientApp`` running FedCLUP's local step for the problem of its partition."""
    require_flwr("FedCLUP on Flower")
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp

    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Any) -> Message:
        problem = problem_fn(*partition_of(context))
        content: Any = msg.content
        w_g = content["arrays"].to_numpy_ndarrays()[0].astype(np.float64)
        cfg = content["config"]
        state: Any = context.state
        own = state["w-local"].to_numpy_ndarrays()[0] if "w-local" in state else w_g
        lr = float(cfg["lr-local"]) or None
        w_i = local_update(problem, own, w_g, float(cfg["lam"]), int(cfg["local-steps"]), lr)
        context.state["w-local"] = ArrayRecord([w_i])
        metrics = MetricRecord({"num-examples": problem.n, "loss": problem.loss(w_i)})
        return Message(RecordDict({"arrays": ArrayRecord([w_i]), "metrics": metrics}), reply_to=msg)

    return app


def make_server_app(strategy_fn: Callable[[Any], Any], initial: Callable[[Any], np.ndarray]) -> Any:
    """A ``ServerApp`` for deployment: ``strategy_fn(context)`` and ``initial(context)`` read
    the run config; the number of rounds is ``num-server-rounds``."""
    return server_app(
        "FedCLUP w_g",
        strategy_fn,
        lambda context: [initial(context)],
        lambda arrays: np.array2string(arrays[0], precision=10),
    )


def run_in_process(
    problem_fn: Callable[[int, int], Problem],
    num_clients: int,
    lam: float,
    *,
    rounds: int = 50,
    local_steps: int = 10,
    w0: np.ndarray | None = None,
    smoothness: float | None = None,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """FedCLUP through Flower's real strategy and client app on an :func:`in_process_grid`.
    Returns the global model and every client's model (from its ``context.state``).

    The defaults are :func:`~icml25.pfl_tradeoff.fedclup.fedclup`'s: ``w0`` zeros and
    ``smoothness`` (the ``L`` of the server step ``1/lam + 1/L``) the largest client's, so
    ``run_in_process(fn, m, lam)`` runs the rounds of ``fedclup([fn(i, m) for i in
    range(m)], lam)``."""
    if not callable(problem_fn):
        raise TypeError(
            "problem_fn must be callable (partition_id, num_partitions) -> problem, got "
            f"{type(problem_fn).__name__}"
        )
    num_clients = V.integer("num_clients", num_clients, low=1)
    lam = check_lambda(lam)
    rounds = V.integer("rounds", rounds, low=1)
    local_steps = V.integer("local_steps", local_steps, low=1)
    problems = [problem_fn(i, num_clients) for i in range(num_clients)]
    d = check_problems(problems, f"problem_fn({{i}}, {num_clients})")
    w0 = np.zeros(d) if w0 is None else V.finite_array("w0", w0, ndim=1)
    if len(w0) != d:
        raise ValueError(f"w0 must have the model dimension {d}, got {len(w0)}")
    smoothness = (
        max(pr.smoothness for pr in problems)
        if smoothness is None
        else V.positive("smoothness", smoothness)
    )
    require_flwr("FedCLUP on Flower")
    from flwr.app import ArrayRecord

    app = make_client_app(problem_fn)
    with task_identity(), quiet_flwr():
        grid = in_process_grid(app, num_clients)
        strategy = make_strategy(
            lam,
            local_steps=local_steps,
            smoothness=smoothness,
            min_train_nodes=num_clients,
            min_available_nodes=num_clients,
        )
        result = strategy.start(
            grid=grid,
            initial_arrays=ArrayRecord([np.asarray(w0, dtype=np.float64)]),
            num_rounds=rounds,
        )
    w_locals = [c.state["w-local"].to_numpy_ndarrays()[0] for c in grid.contexts.values()]
    return result.arrays.to_numpy_ndarrays()[0], w_locals
