"""Soup-of-Experts costs: ``instantiate`` against the machine's memory bandwidth, and training
throughput of the soup against the generic model, both measured in this run.

1. ``instantiate(h)`` for a byte-level GPT of >= 10M parameters with 32 dense experts. The
   weighted sum ``S + sum_j alpha_j E_j`` must read the whole bank once, so its floor is the
   time to stream ``(n + 1) P`` floats. The baseline is a plain ``torch`` copy of the same
   bytes (``dst.copy_(bank)``) in this run; the ratio printed is ``copy time / instantiate
   time`` (1.0: instantiation as fast as copying the bank; the issue aims for >= 0.5).
2. Training throughput (sequences/s) of ``train_soup`` against ``train_on_mixture`` for the
   reproduction's quick model (dim 48, 2 layers, 16 domains and experts), same batches.

Run: ``python benchmarks/soup_of_experts_costs.py [--dim 384 --layers 6 --experts 32]
[--train-steps 40] [--only instantiate|training]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from icml25.soup_of_experts import (
    ByteGPT,
    MixtureSampler,
    SoupOfExperts,
    SparseDirichlet,
    train_on_mixture,
    train_soup,
)


def median_seconds(fn: object, repeats: int) -> float:
    fn()  # type: ignore[operator]  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--experts", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--train-steps", type=int, default=40)
    ap.add_argument("--only", choices=("instantiate", "training"), default=None)
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    if args.only != "training":
        with torch.no_grad():
            bench_instantiate(args)
    if args.only != "instantiate":
        bench_training(args)


def bench_instantiate(args: argparse.Namespace) -> None:
    lm = ByteGPT(dim=args.dim, layers=args.layers, heads=8, context=64)
    soup = SoupOfExperts(lm, n_domains=16, n_experts=args.experts)
    del lm
    P = soup.num_model_parameters
    bank = torch.cat([soup.shared.detach()[None], soup.experts.detach()])  # (n + 1, P)
    nbytes = bank.numel() * bank.element_size()
    dst = torch.empty_like(bank)
    h = np.full(16, 1 / 16)
    t_copy = median_seconds(lambda: dst.copy_(bank), args.repeats)
    t_sum = median_seconds(lambda: soup._flat(soup.coefficients(h)), args.repeats)
    t_inst = median_seconds(lambda: soup.instantiate(h), args.repeats)
    print(f"\n1. instantiate: P = {P / 1e6:.1f}M parameters, {args.experts} experts, bank "
          f"{nbytes / 2**30:.2f} GiB")  # fmt: skip
    print(f"   torch copy of bank    {t_copy * 1e3:8.1f} ms  ({nbytes / t_copy / 1e9:.1f} GB/s)")
    print(f"   weighted sum S + a.E  {t_sum * 1e3:8.1f} ms  (ratio to copy {t_copy / t_sum:.2f})")
    print(f"   instantiate(h)        {t_inst * 1e3:8.1f} ms  (ratio to copy {t_copy / t_inst:.2f})")


def bench_training(args: argparse.Namespace) -> None:
    g = torch.Generator().manual_seed(0)
    doms = [torch.randint(0, 256, (20_000,), generator=g) for _ in range(16)]
    sampler = MixtureSampler(doms, seq_len=48)
    meta = SparseDirichlet(16, max_support=3)
    steps, batch = args.train_steps, 16

    def generic() -> None:
        train_on_mixture(ByteGPT(dim=48, layers=2, heads=4, context=48), sampler,
                         sampler.natural_weights, steps=steps, batch_size=batch)  # fmt: skip

    def soup_run() -> None:
        s = SoupOfExperts(ByteGPT(dim=48, layers=2, heads=4, context=48), n_domains=16,
                          n_experts=16)  # fmt: skip
        train_soup(s, sampler, meta, steps=steps, batch_size=batch)

    t_gen = median_seconds(generic, 3)
    t_soup = median_seconds(soup_run, 3)
    print(f"\n2. training, quick model, {steps} steps x {batch} sequences of 48 bytes")
    print(f"   generic model   {steps * batch / t_gen:8.0f} sequences/s")
    print(f"   soup (16 exp.)  {steps * batch / t_soup:8.0f} sequences/s  "
          f"(ratio soup/generic {t_gen / t_soup:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
