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
- :class:`InProcessGrid` drives the real strategy and client-app objects in one process, with
  no Ray and no network. Tests use it to check that Flower and the in-process runner give
  the same models. It sets Flower's task identity, which is internal API: this is why the
  extra pins flwr 1.42.

Everything here imports ``flwr`` lazily; the rest of the package does not need it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from icml25.pfl_tradeoff.fedclup import (
    Problem,
    check_lambda,
    local_update,
    server_lr,
    server_update,
)


def _require_flwr() -> None:
    """Every entry point calls this first: a missing extra says how to install it."""
    try:
        import flwr  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(
            "FedCLUP on Flower needs the [fed] extra: pip install 'icml25[fed]'"
        ) from exc


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
    _require_flwr()
    from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord
    from flwr.serverapp import Grid
    from flwr.serverapp.strategy import FedAvg

    lam = check_lambda(lam)

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
    _require_flwr()
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp

    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Any) -> Message:
        pid = int(context.node_config["partition-id"])
        num = int(context.node_config.get("num-partitions", 0))
        problem = problem_fn(pid, num)
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
    _require_flwr()
    from flwr.app import ArrayRecord
    from flwr.serverapp import ServerApp

    app = ServerApp()

    @app.main()
    def main(grid: Any, context: Any) -> None:
        rounds = int(context.run_config.get("num-server-rounds", 10))
        strategy = strategy_fn(context)
        result = strategy.start(
            grid=grid, initial_arrays=ArrayRecord([initial(context)]), num_rounds=rounds
        )
        w = result.arrays.to_numpy_ndarrays()[0]
        logging.getLogger("flwr").info(
            "FedCLUP w_g after %d rounds: %s", rounds, np.array2string(w, precision=10)
        )

    return app


@contextmanager
def _task_identity() -> Iterator[Any]:
    from flwr.supercore.task_identity import TaskIdentity

    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 1
    try:
        yield TaskIdentity
    finally:
        TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


def in_process_grid(
    client_app: Any, num_nodes: int, run_config: dict[str, Any] | None = None
) -> Any:
    """A Flower ``Grid`` whose nodes are ``client_app`` with their own ``Context`` (state kept
    across rounds), called in this process. Node ``i + 1`` has ``partition-id = i``."""
    _require_flwr()
    from flwr.app import Context, Message, RecordDict
    from flwr.serverapp import Grid

    class InProcessGrid(Grid):
        def __init__(self) -> None:
            self.contexts = {
                i + 1: Context(
                    run_id=1,
                    node_id=i + 1,
                    node_config={"partition-id": i, "num-partitions": num_nodes},
                    state=RecordDict(),
                    run_config=dict(run_config or {}),
                )
                for i in range(num_nodes)
            }
            self._run: Any = None

        def set_run(self, run: Any) -> None:
            self._run = run

        @property
        def run(self) -> Any:
            return self._run

        def create_message(
            self,
            content: Any,
            message_type: str,
            dst_node_id: int,
            group_id: str,
            ttl: float | None = None,
        ) -> Any:
            return Message(
                content=content,
                message_type=message_type,
                dst_node_id=dst_node_id,
                group_id=group_id,
            )

        def get_node_ids(self) -> list[int]:
            return list(self.contexts)

        def push_messages(self, messages: Iterable[Any]) -> Iterable[str]:
            raise NotImplementedError("InProcessGrid only supports send_and_receive")

        def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Any]:
            raise NotImplementedError("InProcessGrid only supports send_and_receive")

        def send_and_receive(
            self, messages: Iterable[Any], *, timeout: float | None = None
        ) -> list[Any]:
            from flwr.supercore.task_identity import TaskIdentity

            replies = []
            for m in messages:
                node = m.metadata.dst_node_id
                TaskIdentity.node_id = node
                try:
                    replies.append(client_app(m, self.contexts[node]))
                finally:
                    TaskIdentity.node_id = 0
            return replies

    return InProcessGrid()


def run_in_process(
    problem_fn: Callable[[int, int], Problem],
    num_clients: int,
    lam: float,
    *,
    rounds: int,
    local_steps: int,
    w0: np.ndarray,
    smoothness: float,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """FedCLUP through Flower's real strategy and client app on an :func:`in_process_grid`.
    Returns the global model and every client's model (from its ``context.state``)."""
    _require_flwr()
    import logging

    from flwr.app import ArrayRecord

    app = make_client_app(problem_fn)
    flwr_log = logging.getLogger("flwr")
    level = flwr_log.level
    flwr_log.setLevel(logging.ERROR)  # Flower logs every round at INFO
    with _task_identity():
        grid = in_process_grid(app, num_clients)
        strategy = make_strategy(
            lam,
            local_steps=local_steps,
            smoothness=smoothness,
            min_train_nodes=num_clients,
            min_available_nodes=num_clients,
        )
        try:
            result = strategy.start(
                grid=grid,
                initial_arrays=ArrayRecord([np.asarray(w0, dtype=np.float64)]),
                num_rounds=rounds,
            )
        finally:
            flwr_log.setLevel(level)
    w_locals = [c.state["w-local"].to_numpy_ndarrays()[0] for c in grid.contexts.values()]
    return result.arrays.to_numpy_ndarrays()[0], w_locals
