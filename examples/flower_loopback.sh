#!/usr/bin/env bash
# Run the Flower app in the current folder on a real deployment on loopback: one SuperLink,
# two SuperNodes (partition-id 0 and 1), `flwr run . loopback --stream`, offline (no
# telemetry, no update check, no runtime dependency install). Every process it starts is
# killed on exit. Logs go to the app folder. Called by each example's run_loopback.sh.
set -euo pipefail
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
