"""BackSlash in a DistributedDataParallel loop: two CPU processes under torchrun (gloo) hold
identical weights after every rate step, with the coded size of one process on whole batches."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("ddp_worker.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timeout(300)
def test_backslash_under_torchrun_ddp(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(_free_port()),
        str(WORKER),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    subprocess.run([sys.executable, str(WORKER), "--single"], env=env, check=True, timeout=120)
    r0, r1, single = (
        json.loads((tmp_path / f"{n}.json").read_text()) for n in ("rank0", "rank1", "single")
    )
    assert r0["digest"] == r1["digest"]  # identical replicas, bit for bit
    assert r0["zeros"] > 0  # the prox acted
    assert r0["bits"] == pytest.approx(single["bits"], rel=1e-3)
