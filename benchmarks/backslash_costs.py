"""BackSlash costs: the coder's throughput and the rate step's training overhead.

1. Coder: a 12.6M-parameter model of Linear layers whose weights are generalized-Gaussian
   (shape 1, like trained weights), coded at delta = 1e-3. ``save_compressed`` and
   ``load_compressed`` throughput, in MB of fp32 weights per second, against two baselines
   measured in the same run on the same (quantised) weights: ``torch.save`` / ``torch.load``
   (raw fp32), and zlib level 6 on the fp32 bytes (a general-purpose lossless coder of the
   quantised values). Sizes are reported too.
2. Training step: Adam on the reproduction's MLP (784-256-128-10, batch 128). The step with
   the BackSlash post-hook (prox + shape estimate) is compared with the plain step.

Run: ``python benchmarks/backslash_costs.py [--width 2048] [--layers 3]``.
"""

from __future__ import annotations

import argparse
import tempfile
import zlib
from pathlib import Path

import numpy as np
import torch
from scipy.stats import gennorm
from torch import nn

from _timing import mean_seconds
from icml25.backslash import BackSlash, load_compressed, save_compressed
from icml25.core.models import MLP


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=3)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(*(nn.Linear(args.width, args.width) for _ in range(args.layers)))
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for m in model:
            m.weight.copy_(
                torch.tensor(gennorm.rvs(1.0, scale=0.02, size=m.weight.shape, random_state=rng))
            )
    n = sum(m.weight.numel() for m in model)
    mb = 4 * n / 1e6
    print(f"coder: {n / 1e6:.1f}M coded weights ({mb:.0f} MB fp32), delta 1e-3")
    with tempfile.TemporaryDirectory() as d:
        path, raw = Path(d) / "m.bs", Path(d) / "m.pt"
        stats = save_compressed(model, path, 1e-3)
        load_compressed(path, model)  # from here on, every coder sees the same quantised weights
        t_enc = mean_seconds(lambda: save_compressed(model, path, 1e-3))
        t_dec = mean_seconds(lambda: load_compressed(path, model))
        t_save = mean_seconds(lambda: torch.save(model.state_dict(), raw))
        t_load = mean_seconds(lambda: model.load_state_dict(torch.load(raw)))
        blob = b"".join(m.weight.detach().numpy().tobytes() for m in model)
        t_zip = mean_seconds(lambda: zlib.compress(blob, 6), 1)
        zipped = zlib.compress(blob, 6)
        t_unzip = mean_seconds(lambda: zlib.decompress(zipped), 1)
    rows = [
        ("BackSlash format", stats.bits_per_coded_param, t_enc, t_dec),
        ("torch.save fp32", 32.0, t_save, t_load),
        ("zlib-6 on fp32", 8 * len(zipped) / n, t_zip, t_unzip),
    ]
    for name, bits, te, td in rows:
        speeds = f"write {mb / te:5.0f} MB/s, read {mb / td:5.0f} MB/s"
        print(f"  {name:<17} {bits:5.2f} bits/weight, {speeds}")
    print(
        f"  ratios: encode / torch.save {t_enc / t_save:.1f}x, decode / torch.load "
        f"{t_dec / t_load:.1f}x, encode / zlib {t_enc / t_zip:.2f}x"
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
