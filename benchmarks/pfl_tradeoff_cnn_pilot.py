"""Pilot for pfl_tradeoff's CNN recipe (issue 37): which CNN and local learning rate beats
logistic regression under local training on the class sweep's per-client data (180 images).

Split seed 100 (not a claim seed), c in {2, 6, 10}, local training only (the ``LOCAL`` arm),
the full budget's 20 rounds x 5 epochs. Prints each candidate's local accuracy per c, its mean
gain over logistic regression (the ``cnn_beats_logreg_locally`` metric) and its CPU time for the
ten clients. Run with ``OMP_NUM_THREADS=1``:

    PYTHONPATH=src python benchmarks/pfl_tradeoff_cnn_pilot.py [candidate ...]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from icml25.core.data import load_image_benchmark
from icml25.pfl_tradeoff.images import (
    LOCAL,
    ConvNet,
    LogReg,
    TwoConvNet,
    run_arms,
    split_by_classes,
)

SEED = 100
CS = (2, 6, 10)
CANDIDATES = {
    # name: (model, lr, batch)
    "logreg": (LogReg(), 0.01, 32),
    "conv8_lr0.01": (ConvNet(8), 0.01, 32),
    "conv8_lr0.05": (ConvNet(8), 0.05, 32),
    "conv16_lr0.05": (ConvNet(16), 0.05, 32),
    "conv32_lr0.05": (ConvNet(32), 0.05, 32),
    "two4x8_lr0.05": (TwoConvNet(4, 8), 0.05, 32),
    "two8x16_lr0.01": (TwoConvNet(8, 16), 0.01, 32),
    "two8x16_lr0.05": (TwoConvNet(8, 16), 0.05, 32),
    "two8x16_lr0.1": (TwoConvNet(8, 16), 0.1, 32),
    "two8x16h64_lr0.05": (TwoConvNet(8, 16, 64), 0.05, 32),
}


def main(names: list[str]) -> None:
    X, y, Xt, yt, data = load_image_benchmark(mnist_test=1000)
    print(data, flush=True)
    splits = {c: split_by_classes(X, y, Xt, yt, c, np.random.default_rng([SEED, c])) for c in CS}
    base: dict[int, float] = {}
    for name in ["logreg", *[n for n in names if n != "logreg"]]:
        model, lr, batch = CANDIDATES[name]
        accs = []
        t0 = time.process_time()
        for c in CS:
            res, _ = run_arms(
                model, splits[c], [LOCAL], rounds=20, epochs=5, lr=lr, batch=batch, seed=SEED
            )
            accs.append(res[0].accuracy)
        cpu = time.process_time() - t0
        if name == "logreg":
            base = dict(zip(CS, accs, strict=True))
        gain = float(np.mean([a - base[c] for c, a in zip(CS, accs, strict=True)]))
        cells = ", ".join(f"c={c}: {a:.1f}" for c, a in zip(CS, accs, strict=True))
        print(f"{name:24s} {cells}  gain {gain:+.2f}  cpu {cpu:.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(CANDIDATES))
