"""Launched by test_ddp.py under ``torchrun --nproc_per_node 2`` (gloo, CPU): BackSlash attached
to the optimizer of a DistributedDataParallel model, each rank on its own half of every batch.
Each rank writes its weights' coded size and a digest of its weights to ``$OUT/rank<r>.json``;
with ``--single`` the same training runs in one process on the whole batches."""

import hashlib
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from icml25.backslash import BackSlash, coded_bits, default_rate_params

STEPS, BATCH, DELTA = 5, 32, 0.01


def data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    X = torch.randn(STEPS * BATCH, 10, generator=g)
    return X, (X[:, 0] > 0).long()


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))


def train(net: nn.Module, shard: slice, step_batches: int) -> None:
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    BackSlash(net, lam=50.0, nu=0.7).attach(opt)
    X, y = data()
    for s in range(step_batches):
        xb, yb = X[s * BATCH : (s + 1) * BATCH][shard], y[s * BATCH : (s + 1) * BATCH][shard]
        opt.zero_grad()
        nn.functional.cross_entropy(net(xb), yb).backward()
        opt.step()


def report(net: nn.Module, path: Path) -> None:
    ps = [p for _, p in default_rate_params(net)]
    bits = sum(coded_bits(p, DELTA) for p in ps)
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in ps)).hexdigest()
    zeros = sum(int((p == 0).sum()) for p in ps)
    path.write_text(json.dumps({"bits": bits, "digest": digest, "zeros": zeros}))


def main() -> None:
    out = Path(os.environ["OUT"])
    if "--single" in sys.argv:
        net = model()
        train(net, slice(None), STEPS)
        report(net, out / "single.json")
        return
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = nn.parallel.DistributedDataParallel(model())
    half = BATCH // world
    train(ddp, slice(rank * half, (rank + 1) * half), STEPS)
    report(ddp.module, out / f"rank{rank}.json")
    dist.destroy_process_group()
    # End without interpreter finalisation. The last backward's allreduce work holds the
    # Python context torch stashes in thread-local state during backward; a gloo worker
    # thread may still be releasing it (which takes the GIL) when the interpreter
    # finalises, and Python 3.11 then ends that thread inside a C++ destructor:
    # "terminate called without an active exception", SIGABRT, after every output was
    # written (5 of 240 two-process runs here; PyTorch 2.13, gloo). os._exit skips it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
