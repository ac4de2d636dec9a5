"""FedGVI as a Flower app: each SuperNode is one client of the contaminated 1-D Gaussian
location model (its data are generated from its partition id, so nothing is shipped).
Clients use IMQ-weighted score matching (conjugate); the server the alpha-Renyi divergence
to a confident wrong prior N(3, 0.1)."""

from __future__ import annotations

import numpy as np

from icml25.fedgvi import AlphaRenyi, Client, GaussianLocation, IMQScoreMatching, NatGaussian
from icml25.fedgvi.flower import make_client_app, make_server_app, make_strategy


def client(partition_id: int, num_partitions: int) -> Client:
    """50 points from N(0, 1); on partition 0, 20% outliers from N(8, 1)."""
    rng = np.random.default_rng(1000 + partition_id)
    x = rng.normal(0.0, 1.0, 50)
    if partition_id == 0:
        x[:10] = rng.normal(8.0, 1.0, 10)
    return Client(GaussianLocation(x), IMQScoreMatching(1.0))


def prior(context) -> NatGaussian:  # type: ignore[no-untyped-def]
    cfg = context.run_config
    return NatGaussian.from_moments([float(cfg["prior-mean"])], [float(cfg["prior-var"])])


def _strategy(context):  # type: ignore[no-untyped-def]
    n = int(context.run_config["num-clients"])
    alpha = float(context.run_config["alpha"])
    return make_strategy(
        prior(context), AlphaRenyi(alpha), min_train_nodes=n, min_available_nodes=n
    )


client_app = make_client_app(client)
server_app = make_server_app(_strategy, prior)
