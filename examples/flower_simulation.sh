#!/usr/bin/env bash
# Run a Flower app of this folder (flower_fedgvi or flower_fedclup) in Flower's Simulation
# Engine, the current way (flwr 1.42: `flwr run` against a local in-memory SuperLink; Ray runs
# the ClientApps), offline. The final model is written to result.npz (run config result-path).
#   bash examples/flower_simulation.sh examples/flower_fedgvi [num-supernodes] [rounds]
# Needs icml25[fed] and Ray (pip install 'flwr[simulation]' or icml25[ray]).
set -euo pipefail
app="$(cd "${1:?usage: flower_simulation.sh APP_DIR [NODES] [ROUNDS]}" && pwd)"
nodes="${2:-2}"
rounds="${3:-5}"
export FLWR_TELEMETRY_ENABLED=0 FLWR_DISABLE_UPDATE_CHECK=1 UV_OFFLINE=1
export FLWR_HOME="$app/.flwr_home" RAY_TMPDIR="${RAY_TMPDIR:-/tmp/icml25-ray}"
mkdir -p "$FLWR_HOME" "$RAY_TMPDIR"
cat > "$FLWR_HOME/config.toml" <<TOML
[superlink]
default = "simulation"
[superlink.simulation]
address = ":local-in-memory:"

TOML
cd "$app"
# `flwr run` against :local-in-memory: starts a SuperLink that outlives it: stop the ones this
# script started (those not running before), at exit
before="$(pgrep -f flower-superlink || true)"
cleanup() {
  for p in $(pgrep -f flower-superlink || true); do
    grep -qx "$p" <<<"$before" || kill "$p" 2>/dev/null || true
  done
}
trap cleanup EXIT
flwr run . simulation --stream --federation-config "num-supernodes=$nodes" \
  --run-config "num-server-rounds=$rounds num-clients=$nodes result-path='$app/result.npz'"
python -c "import numpy as np; r = np.load('$app/result.npz'); print('result.npz:', {k: r[k].shape for k in r})"
