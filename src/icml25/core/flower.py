"""Flower in one process: the runtime shared by the federated methods (flwr 1.42, the [fed] extra).

:func:`in_process_grid` is a Flower ``Grid`` whose nodes are a real ``ClientApp``, each with
its own ``Context`` (state kept across rounds), called in this process: a real strategy's
``start`` runs on it with no Ray and no network. :func:`task_identity` sets Flower's task
identity around such a run; it is internal API, which is why the extra pins flwr 1.42.
Everything imports ``flwr`` lazily.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any


def require_flwr(what: str) -> None:
    """Every Flower entry point calls this first: a missing extra says how to install it."""
    try:
        import flwr  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(f"{what} needs the [fed] extra: pip install 'icml25[fed]'") from exc


def partition_of(context: Any) -> tuple[int, int]:
    """``(partition-id, num-partitions)`` of a client app's node (0 partitions when unset)."""
    config = context.node_config
    return int(config["partition-id"]), int(config.get("num-partitions", 0))


def server_app(
    what: str,
    strategy_fn: Callable[[Any], Any],
    initial_fn: Callable[[Any], list[Any]],
    describe: Callable[[list[Any]], str],
) -> Any:
    """A ``ServerApp`` for ``flwr run``: ``strategy_fn(context)`` and ``initial_fn(context)``
    (the initial arrays) read the run config; the number of rounds is ``num-server-rounds``;
    the final arrays are logged as ``"<what> after N rounds: <describe(arrays)>"`` and, when the
    run config has ``result-path``, saved there with ``numpy.savez``."""
    require_flwr("a Flower ServerApp")
    from flwr.app import ArrayRecord
    from flwr.serverapp import ServerApp

    app = ServerApp()

    @app.main()
    def main(grid: Any, context: Any) -> None:
        rounds = int(context.run_config.get("num-server-rounds", 10))
        result = strategy_fn(context).start(
            grid=grid, initial_arrays=ArrayRecord(initial_fn(context)), num_rounds=rounds
        )
        arrays = result.arrays.to_numpy_ndarrays()
        log = logging.getLogger("flwr")
        log.info("%s after %d rounds: %s", what, rounds, describe(arrays))
        path = context.run_config.get("result-path")
        if path:  # the final model back to the user: numpy arrays in one .npz
            import numpy as np

            np.savez(str(path), *arrays)
            log.info("%s saved to %s (numpy.load gives arr_0, arr_1, ...)", what, path)

    return app


@contextmanager
def quiet_flwr(level: int = logging.ERROR) -> Iterator[None]:
    """Flower logs every round at INFO; a library run keeps it to errors."""
    log = logging.getLogger("flwr")
    saved = log.level
    log.setLevel(level)
    try:
        yield
    finally:
        log.setLevel(saved)


@contextmanager
def task_identity() -> Iterator[Any]:
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
    require_flwr("the in-process Flower grid")
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
