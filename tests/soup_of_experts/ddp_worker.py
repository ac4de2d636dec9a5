"""One rank of the 2-process ``torchrun`` test: a few soup training steps under DDP (gloo).

Run as ``python -m torch.distributed.run --nproc_per_node 2 ddp_worker.py OUT_DIR``; each rank
saves its bank and the ``h`` of every step to ``OUT_DIR/rank<r>.pt``.
"""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist

from icml25.soup_of_experts import (
    ByteGPT,
    MixtureSampler,
    SoupOfExperts,
    SparseDirichlet,
    train_soup,
)

STEPS, BATCH, SEED, K = 3, 4, 5, 3


def setup() -> tuple[SoupOfExperts, MixtureSampler, SparseDirichlet]:
    """The same soup, data and meta-distribution in every process (and in the test)."""
    g = torch.Generator().manual_seed(0)
    doms = [torch.randint(0, 256, (300,), generator=g) for _ in range(K)]
    lm = ByteGPT(dim=16, layers=1, heads=2, context=8, seed=0)
    soup = SoupOfExperts(lm, n_domains=K, n_experts=4, expert_init_std=0.01, seed=0)
    return soup, MixtureSampler(doms, seq_len=8), SparseDirichlet(K, max_support=2)


def main(out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    soup, sampler, meta = setup()
    log = train_soup(soup, sampler, meta, steps=STEPS, batch_size=BATCH, lr=1e-2, seed=SEED)
    bank = torch.cat([p.detach().reshape(-1) for p in soup.parameters()])
    torch.save(
        {"bank": bank, "h": log.domain_weights, "world": dist.get_world_size()},
        f"{out}/rank{rank}.pt",
    )
    dist.barrier()
    dist.destroy_process_group()
    # End without interpreter finalisation: a gloo thread still releasing the last
    # backward's allreduce when the interpreter finalises aborts the rank (SIGABRT after
    # every output was written). Why, and how often, in tests/backslash/ddp_worker.py.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1])
