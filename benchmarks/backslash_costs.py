"""BackSlash costs: the coder's throughput and the rate step's training overhead.

1. Coder: a 12.6M-parameter model of Linear layers whose weights are generalized-Gaussian
   (shape 1, like trained weights; ``--shape 2`` for Gaussian), coded at delta = 1e-3. For
   both codecs (Exp-Golomb and the interleaved NumPy rANS) the size in bits per weight beside
   the order-0 entropy of the quantised weights, and ``save_compressed`` / ``load_compressed``
   throughput in MB of fp32 weights per second, against baselines measured in the same run on
   the same quantised weights: constriction's rANS (the maintained library; coding the symbols
   only, no file), ``torch.save`` / ``torch.load`` (raw fp32), zlib level 6 and zstd level 3
   on the fp32 bytes and on the quantised integers (int32).
2. Training step: Adam on the reproduction's MLP (784-256-128-10, batch 128). The step with
   the BackSlash post-hook (prox + shape estimate) is compared with the plain step.

Run: ``python benchmarks/backslash_costs.py [--width 2048] [--layers 3]``.
"""

from __future__ import annotations

import argparse
import tempfile
import zlib
from pathlib import Path

import constriction
import numpy as np
import torch
import zstandard
from scipy.stats import gennorm
from torch import nn

from _timing import mean_seconds
from icml25.backslash import BackSlash, load_compressed, quantize, save_compressed
from icml25.backslash.coding import constriction_categorical, order0_entropy_bits, symbol_table
from icml25.core.models import MLP


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--shape", type=float, default=1.0, help="generalized-Gaussian shape")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(*(nn.Linear(args.width, args.width) for _ in range(args.layers)))
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for m in model:
            m.weight.copy_(
                torch.tensor(
                    gennorm.rvs(args.shape, scale=0.02, size=m.weight.shape, random_state=rng)
                )
            )
    n = sum(m.weight.numel() for m in model)
    mb = 4 * n / 1e6
    print(
        f"coder: {n / 1e6:.1f}M coded weights ({mb:.0f} MB fp32), generalized-Gaussian shape "
        f"{args.shape}, delta 1e-3; MB/s are MB of fp32 weights per second"
    )
    rows = []
    with tempfile.TemporaryDirectory() as d:
        raw = Path(d) / "m.pt"
        save_compressed(model, Path(d) / "q.bs", 1e-3)
        load_compressed(
            Path(d) / "q.bs", model
        )  # every coder below sees the same quantised weights
        entropy = sum(order0_entropy_bits(symbol_table(quantize(m.weight, 1e-3))[1]) for m in model)
        for codec in ("eg", "rans"):
            path = Path(d) / f"m-{codec}.bs"
            stats = save_compressed(model, path, 1e-3, codec=codec)
            t_enc = mean_seconds(lambda c=codec, p=path: save_compressed(model, p, 1e-3, codec=c))
            t_dec = mean_seconds(lambda p=path: load_compressed(p, model))
            rows.append((f"BackSlash {codec}", stats.stream_bits / n, t_enc, t_dec))
        # the maintained library's rANS (constriction: one stream, a compiled binary search
        # per symbol) on the same symbols, coding only: the reference for size and speed
        tables = [symbol_table(quantize(m.weight, 1e-3)) for m in model]

        def ref_encode() -> list:
            out = []
            for _, counts, index in tables:
                coder = constriction.stream.stack.AnsCoder()
                coder.encode_reverse(index, constriction_categorical(counts))
                out.append(coder.get_compressed())
            return out

        def ref_decode(streams: list) -> None:
            for (_, counts, index), words in zip(tables, streams, strict=True):
                constriction.stream.stack.AnsCoder(words).decode(
                    constriction_categorical(counts), len(index)
                )

        streams = ref_encode()
        ref_bits = 32 * sum(len(w) for w in streams)
        rows.append(
            (
                "constriction rANS",
                ref_bits / n,
                mean_seconds(ref_encode),
                mean_seconds(lambda: ref_decode(streams)),
            )
        )
        t_save = mean_seconds(lambda: torch.save(model.state_dict(), raw))
        t_load = mean_seconds(lambda: model.load_state_dict(torch.load(raw)))
        rows.append(("torch.save fp32", 32.0, t_save, t_load))
        fp32 = b"".join(m.weight.detach().numpy().tobytes() for m in model)
        ints = b"".join(quantize(m.weight, 1e-3).astype(np.int32).tobytes() for m in model)
        for label, blob in (("fp32", fp32), ("int32 q", ints)):
            packed = zlib.compress(blob, 6)
            t_c = mean_seconds(lambda b=blob: zlib.compress(b, 6), 1)
            t_d = mean_seconds(lambda z=packed: zlib.decompress(z), 1)
            rows.append((f"zlib-6 {label}", 8 * len(packed) / n, t_c, t_d))
            zc, zd = zstandard.ZstdCompressor(level=3), zstandard.ZstdDecompressor()
            packed = zc.compress(blob)
            t_c = mean_seconds(lambda b=blob, c=zc: c.compress(b), 1)
            t_d = mean_seconds(lambda z=packed, c=zd: c.decompress(z), 1)
            rows.append((f"zstd-3 {label}", 8 * len(packed) / n, t_c, t_d))
    print(f"  order-0 entropy of the quantised weights: {entropy / n:5.2f} bits/weight")
    for name, bits, te, td in rows:
        speeds = f"write {mb / te:6.0f} MB/s, read {mb / td:6.0f} MB/s"
        print(
            f"  {name:<17} {bits:5.2f} bits/weight ({bits * n / entropy:5.3f} x entropy), {speeds}"
        )
    eg, rans, save = rows[0], rows[1], rows[3]
    print(
        f"  ratios: rans size / entropy {rans[1] * n / entropy:.4f}; read time / torch.load: "
        f"eg {eg[3] / save[3]:.1f}x, rans {rans[3] / save[3]:.1f}x"
    )

    x, y = torch.randn(128, 784), torch.randint(0, 10, (128,))

    def make(with_rate: bool):
        torch.manual_seed(0)
        m = MLP(784, (256, 128), 10)
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        if with_rate:
            BackSlash(m, lam=3e4).attach(opt)

        def step() -> None:
            opt.zero_grad()
            nn.functional.cross_entropy(m(x), y).backward()
            opt.step()

        return step

    plain, rated = make(False), make(True)
    t_plain, t_rate = mean_seconds(plain, 50), mean_seconds(rated, 50)
    print(
        f"training step (MLP 784-256-128-10, batch 128, Adam): plain {1e3 * t_plain:.2f} ms, "
        f"with BackSlash {1e3 * t_rate:.2f} ms, ratio {t_rate / t_plain:.2f}x"
    )


if __name__ == "__main__":
    main()
