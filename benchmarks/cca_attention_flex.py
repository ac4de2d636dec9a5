"""CCA's FlexAttention path against SDPA on the device it runs on (CUDA where present).

For each sequence length L, one (B=1, H=8, L, D=64) causal self-attention pass in ``--dtype``:
- ``sdpa``: ``scaled_dot_product_attention(is_causal=True)`` (on CUDA, PyTorch picks its
  flash kernel for these shapes), the natural baseline;
- ``flex``: :func:`icml25.cca_attention.flex.flex_cca_attention` (g = 16, s = 256, what
  ``cca_attention`` runs on CUDA), compiled (a Triton kernel on CUDA, an Inductor C++ kernel
  on the CPU);
- ``kernel``: the same call with ``backend="kernel"`` (the CPU kernel; on CUDA its
  plain-PyTorch blocks), for reference; skipped with ``--no-kernel``.

Times are the median of ``--repeats`` runs after two warm-ups (CUDA events on CUDA, the wall
clock on the CPU); the first call's compile time is printed apart. ``--backward`` times forward
+ backward (CUDA only: FlexAttention has no CPU backward). Printed: milliseconds, the
SDPA/flex ratio from the same run, and the device's name. Run:
``python benchmarks/cca_attention_flex.py [--device cuda] [--lengths 16384,32768,65536,131072]
[--dtype bfloat16] [--backward]``; on the CPU try ``--device cpu --lengths 2048,4096,8192
--dtype float32``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable

import torch
import torch.nn.functional as F

from icml25.cca_attention import cca_attention
from icml25.cca_attention.flex import flex_cca_attention

G, S, HEADS, DIM = 16, 256, 8, 64


def _timer(device: torch.device, fn: Callable[[], None], repeats: int) -> float:
    """Median seconds of ``fn`` over ``repeats`` runs after two warm-ups."""
    for _ in range(2):
        fn()
    runs = []
    for _ in range(repeats):
        if device.type == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            torch.cuda.synchronize()
            runs.append(a.elapsed_time(b) / 1000)
        else:
            t0 = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def _pass(
    name: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, backward: bool
) -> Callable[[], None]:
    grad = torch.randn_like(q) if backward else None

    def run() -> None:
        for x in (q, k, v):
            x.grad = None
        with torch.set_grad_enabled(backward):
            if name == "sdpa":
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            elif name == "flex":  # compiled on every device (cca_attention compiles on CUDA)
                out = flex_cca_attention(q, k, v, group_size=G, window=S, compile=True)
            else:
                out = cca_attention(q, k, v, group_size=G, window=S, backend=name)
            if grad is not None:
                out.backward(grad)

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--lengths", default="16384,32768,65536,131072")
    ap.add_argument("--dtype", default="bfloat16", choices=["float32", "float16", "bfloat16"])
    ap.add_argument("--backward", action="store_true")
    ap.add_argument("--no-kernel", action="store_true", help="skip the kernel path")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    if args.backward and device.type == "cpu":
        raise SystemExit("--backward needs CUDA: FlexAttention has no backward on the CPU")
    card = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    what = "forward + backward" if args.backward else "forward"
    print(f"{what}; B=1, H={HEADS}, D={DIM}, {args.dtype}, CCA g={G}, s={S}; device: {card}")
    names = ["sdpa", "flex"] + ([] if args.no_kernel else ["kernel"])
    print(f"{'L':>7} " + " ".join(f"{n + ' ms':>11}" for n in names) + f" {'sdpa/flex':>10}")
    warnings.filterwarnings("ignore", message=".*flex_attention called without torch.compile")
    for length in (int(x) for x in args.lengths.split(",")):
        torch.manual_seed(0)
        q, k, v = (
            torch.randn(1, HEADS, length, DIM, device=device, dtype=dtype).requires_grad_(
                args.backward
            )
            for _ in range(3)
        )
        times = {}
        for name in names:
            run = _pass(name, q, k, v, args.backward)
            if name == "flex":
                t0 = time.perf_counter()
                run()  # the first call compiles (once per shape)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                first = time.perf_counter() - t0
            times[name] = _timer(device, run, args.repeats)
        row = " ".join(f"{1000 * times[n]:>11.2f}" for n in names)
        print(f"{length:>7} {row} {times['sdpa'] / times['flex']:>9.2f}x  (first flex call "
              f"{first:.1f} s)")  # fmt: skip


if __name__ == "__main__":
    main()
