"""The training loop under ``torchrun --nproc_per_node 2`` (CPU, gloo): the bank is identical
on both ranks, every rank used the same ``h`` per step, and the result equals one process
training on the two ranks' batches together (one ``h`` per global batch)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from icml25.soup_of_experts import next_token_loss
from icml25.soup_of_experts.soup import _schedule, data_generator, h_generator

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import ddp_worker as W  # noqa: E402


def reference_bank() -> tuple[torch.Tensor, list[tuple[float, ...]]]:
    """Single process: per step the shared h, rank 0's and rank 1's batches, the mean of
    their two losses (= DDP's averaged gradient), AdamW with the loop's schedule."""
    soup, sampler, meta = W.setup()
    params = list(soup.parameters())
    opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.0)
    warm = max(1, W.STEPS // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _schedule(s, W.STEPS, warm))
    h_rng = h_generator(W.SEED)
    d_rngs = [data_generator(W.SEED, r) for r in (0, 1)]
    hs = []
    for _ in range(W.STEPS):
        opt.zero_grad()
        h = meta.sample(h_rng)
        hs.append(tuple(float(x) for x in h))
        ht = torch.as_tensor(h, dtype=torch.float32)
        losses = []
        for rng in d_rngs:
            batch = sampler.sample(h, W.BATCH, rng)
            losses.append(next_token_loss(soup(ht, batch[:, :-1]), batch))
        (sum(losses) / 2).backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
    return torch.cat([p.detach().reshape(-1) for p in params]), hs


def test_two_process_torchrun_keeps_one_bank(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1")
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
        "--standalone", str(HERE / "ddp_worker.py"), str(tmp_path),
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r0 = torch.load(tmp_path / "rank0.pt")
    r1 = torch.load(tmp_path / "rank1.pt")
    assert r0["world"] == r1["world"] == 2
    assert torch.equal(r0["bank"], r1["bank"])  # identical on both ranks
    assert r0["h"] == r1["h"]  # the same h at every step on every rank
    bank, hs = reference_bank()
    assert [tuple(h) for h in r0["h"]] == hs
    # Adam divides by sqrt(v): in coordinates whose gradient is ~0 the order of DDP's float
    # reduction shows up at ~2e-5 after 3 steps (softmax router); a wrong h or batch moves the
    # bank by ~lr = 1e-2
    assert torch.allclose(r0["bank"], bank, rtol=0, atol=1e-4)
    # the bank did move: training happened
    start = torch.cat([p.detach().reshape(-1) for p in W.setup()[0].parameters()])
    assert float((r0["bank"] - start).abs().max()) > 1e-3
    assert np.isfinite(r0["bank"].numpy()).all()
