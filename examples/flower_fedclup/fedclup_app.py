"""FedCLUP as a Flower app: each SuperNode is one client of the synthetic linear-regression
task (its data are generated from its partition id, so nothing is shipped)."""

from __future__ import annotations

import numpy as np

from icml25.pfl_tradeoff.fedclup import LeastSquares
from icml25.pfl_tradeoff.flower import make_client_app, make_server_app, make_strategy

D = 10


def problem(partition_id: int, num_partitions: int) -> LeastSquares:
    """Client ``partition_id``: 50 samples, ``w_i* = w_g* + 0.5 N(0, I/d)``, noise 1."""
    w_g = np.random.default_rng(0).normal(size=D)
    rng = np.random.default_rng(1000 + partition_id)
    w_i = w_g + 0.5 * rng.normal(size=D) / np.sqrt(D)
    X = rng.normal(size=(50, D))
    return LeastSquares(X, X @ w_i + rng.normal(size=50))


def _strategy(context):  # type: ignore[no-untyped-def]
    cfg = context.run_config
    n = int(cfg["num-clients"])
    return make_strategy(
        float(cfg["lam"]),
        local_steps=int(cfg["local-steps"]),
        smoothness=float(cfg["smoothness"]),
        min_train_nodes=n,
        min_available_nodes=n,
    )


client_app = make_client_app(problem)
server_app = make_server_app(_strategy, lambda context: np.zeros(D))
