#!/usr/bin/env bash
# Run FedCLUP on a real Flower deployment on loopback: one SuperLink, two SuperNodes, `flwr run`,
# offline (no telemetry, no update check, no runtime dependency install). Then print the
# in-process runner's result on the same clients for comparison. Needs icml25[fed] installed.
set -euo pipefail
cd "$(dirname "$0")"
bash ../flower_loopback.sh
python - <<'PY'
import numpy as np
from fedclup_app import D, problem
from icml25.pfl_tradeoff import fedclup, server_lr
# the same run config: lambda 0.5, 20 local steps, 5 rounds, server step from smoothness 3.0
res = fedclup([problem(0, 2), problem(1, 2)], 0.5, rounds=5, local_steps=20, w0=np.zeros(D),
              eta_g=server_lr(0.5, 3.0))
print("in-process w_g:", np.array2string(res.w_global, precision=10))
PY
