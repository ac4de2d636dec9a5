#!/usr/bin/env bash
# Run FedGVI on a real Flower deployment on loopback: one SuperLink, two SuperNodes, `flwr run`,
# offline (no telemetry, no update check, no runtime dependency install). Then print the
# in-process runner's result on the same clients for comparison. Needs icml25[fed] installed.
set -euo pipefail
cd "$(dirname "$0")"
bash ../flower_loopback.sh
python - <<'PY'
from fedgvi_app import client
from icml25.fedgvi import AlphaRenyi, NatGaussian, fedgvi
# the same run config: 2 clients, 5 rounds, prior N(3, 0.1), alpha-Renyi 2.5 at the server
res = fedgvi(NatGaussian.from_moments([3.0], [0.1]), [client(0, 2), client(1, 2)], 5,
             server_divergence=AlphaRenyi(2.5))
print("in-process q: mean", res.q.mean, "var", res.q.var)
PY
