"""Cost of drift calibration: a task's ``fit_task`` against plain LoRA fine-tuning, the
vectorised Mahalanobis loss against the official pairwise loop, and the memory kept per old
class against a replay buffer.

``fit_task`` of task 1 (two classes, 600 images of 28x28, 3 epochs, batch 48, TinyViT dim 64,
depth 3, rank-8 LoRA on k and v: the quick reproduction's setting) from the same task-0 learner,
for each switch combination; the ratio is against plain LoRA fine-tuning (no mean shift, no
covariance calibration or distillation, no alignment) measured in this run. Images are random:
the cost does not depend on the pixels. Run: ``python benchmarks/drift_calibration_cost.py
[--repeats 3]``.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import time

import numpy as np
import torch
from torch.nn import functional as F

from icml25.drift_calibration import (
    DriftCalibratedLearner,
    TinyViT,
    mahalanobis_pair_loss,
    precision_from_features,
)

OFF = dict(mean_shift=False, covariance_calibration=False, distillation=False, alignment=False)
VARIANTS = {
    "plain LoRA fine-tuning": OFF,
    "+ classifier alignment": OFF | dict(alignment=True),
    "+ mean shift": OFF | dict(alignment=True, mean_shift=True),
    "+ covariance calib. + distillation": OFF
    | dict(covariance_calibration=True, distillation=True),
    "full method": dict(
        mean_shift=True, covariance_calibration=True, distillation=True, alignment=True
    ),
}


def _loop_loss(f_old, f_new, labels, precisions):
    """The official double loop over same-class pairs (for timing only)."""
    a, b = F.normalize(f_old, dim=1), F.normalize(f_new, dim=1)
    total = f_new.new_zeros(())
    for i, j in itertools.combinations(range(len(labels)), 2):
        if labels[i] == labels[j]:
            P = precisions[labels[i]].float()
            do, dn = a[i] - a[j], b[i] - b[j]
            total = total + (torch.sqrt(do @ P @ do + 1e-8) - torch.sqrt(dn @ P @ dn + 1e-8)).abs()
    return total / len(labels)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    rng = np.random.default_rng(0)
    X0 = rng.random((800, 784), dtype=np.float32)
    y0 = np.repeat([0, 1, 2, 3], 200)
    X1 = rng.random((600, 784), dtype=np.float32)
    y1 = np.repeat([4, 5], 300)
    torch.manual_seed(0)
    base = DriftCalibratedLearner(
        TinyViT(dim=64, depth=3), rank=8, epochs_first=1, epochs=3, optimizer="sgd", lr=0.005
    ).fit_task(X0, y0)

    print("\nfit_task of one task (600 images, 3 epochs)")
    ref = None
    for name, flags in VARIANTS.items():
        times = []
        for _ in range(args.repeats):
            learner = copy.deepcopy(base)
            for k, v in flags.items():
                setattr(learner, k, v)
            t0 = time.perf_counter()
            learner.fit_task(X1, y1)
            times.append(time.perf_counter() - t0)
        s = float(np.median(times))
        ref = ref or s
        print(f"  {name:<36} {s:7.2f} s   {s / ref:5.2f}x plain")

    print("\nMahalanobis loss, one batch of 48 (2 classes), forward + backward")
    for d in (64, 768):
        g = torch.Generator().manual_seed(0)
        f_old = torch.randn(48, d, generator=g)
        f_new = f_old + 0.1 * torch.randn(48, d, generator=g)
        labels = torch.arange(48) % 2
        P = torch.stack(
            [precision_from_features(torch.randn(100, d, generator=g)) for _ in range(2)]
        )
        rows = {}
        for name, fn in (("vectorised", mahalanobis_pair_loss), ("pairwise loop", _loop_loss)):
            x = f_new.clone().requires_grad_()
            t0 = time.perf_counter()
            for _ in range(args.repeats):
                fn(f_old, x, labels, P).backward()
            rows[name] = (time.perf_counter() - t0) / args.repeats
        print(
            f"  D={d:<4} vectorised {1e3 * rows['vectorised']:8.2f} ms, loop "
            f"{1e3 * rows['pairwise loop']:8.1f} ms: loop / vectorised = "
            f"{rows['pairwise loop'] / rows['vectorised']:.0f}x"
        )

    print("\nMemory kept per old class: mean (float32) + covariance (float64, as stored)")
    for d, img, label in (
        (64, 784, "TinyViT, 28x28 grey"),
        (768, 224 * 224 * 3, "ViT-B/16, 224x224 RGB"),
    ):
        stats = 4 * d + 8 * d * d
        for per_class in (20, 50):
            print(
                f"  {label:<22} D={d:<4} stats {stats / 1024:8.1f} KiB vs replay of {per_class} "
                f"uint8 images {per_class * img / 1024:8.1f} KiB: "
                f"ratio {stats / (per_class * img):.2f}"
            )


if __name__ == "__main__":
    main()
