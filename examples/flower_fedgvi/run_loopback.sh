#!/usr/bin/env bash
# Run FedGVI on a real Flower deployment on loopback: one SuperLink, two SuperNodes, `flwr run`,
# offline (no telemetry, no update check, no runtime dependency install). Then print the
# in-process runner's result on the same clients for comparison. Needs icml25[fed] installed.
set -euo pipefail
cd "$(dirname "$0")"
export FLWR_TELEMETRY_ENABLED=0 FLWR_DISABLE_UPDATE_CHECK=1 UV_OFFLINE=1
export FLWR_HOME="$PWD/.flwr_home"
mkdir -p "$FLWR_HOME"
cat > "$FLWR_HOME/config.toml" <<'TOML'
[superlink]
default = "loopback"

[superlink.loopback]
address = "127.0.0.1:9093"
insecure = true
TOML
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
flower-superlink --insecure --host 127.0.0.1 --port 9093 --disable-runtime-dependency-installation \
  > superlink.log 2>&1 &
PIDS+=($!)
sleep 4
for i in 0 1; do
  flower-supernode --insecure --superlink 127.0.0.1:9093 --port "$((9094 + i))" \
    --node-config "partition-id=$i num-partitions=2" > "supernode$i.log" 2>&1 &
  PIDS+=($!)
done
sleep 4
time flwr run . loopback --stream 2>&1 | tee run.log
python - <<'PY'
from fedgvi_app import client
from icml25.fedgvi import AlphaRenyi, NatGaussian, fedgvi
# the same run config: 2 clients, 5 rounds, prior N(3, 0.1), alpha-Renyi 2.5 at the server
res = fedgvi(NatGaussian.from_moments([3.0], [0.1]), [client(0, 2), client(1, 2)], 5,
             server_divergence=AlphaRenyi(2.5))
print("in-process q: mean", res.q.mean, "var", res.q.var)
PY
