"""IPV-Bench throughput: clips generated per second and clips per second through the temporal
model, each against reading the same frames from memory, measured in the same run.

    PYTHONPATH=src python benchmarks/ipv_bench_throughput.py [--clips 256]

Baseline: copying the clips' frames out of an in-memory array (``frames.copy()``) and
converting them to float (what any evaluation has to do at least once). The ratios say how
many times slower generation and model evaluation are than that floor.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from _timing import mean_seconds
from icml25.ipv_bench import CLASS_NAMES, TemporalModel, generate_clips, predict_proba


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--clips", type=int, default=256)
    args = ap.parse_args()
    n = args.clips
    clips = generate_clips(n, seed=0, as_uint8=True)
    frames = clips.frames
    model = TemporalModel(n_classes=len(CLASS_NAMES), width=8).eval()
    x = torch.as_tensor(frames)

    t_read = mean_seconds(lambda: frames.copy().astype(np.float32) / 255.0)
    t_gen = mean_seconds(lambda: generate_clips(n, seed=1, as_uint8=True), repeats=1)
    t_eval = mean_seconds(lambda: predict_proba(model, x, batch_size=128))
    print(f"clips: {n} x {frames.shape[1]} frames of {frames.shape[3]}x{frames.shape[4]} RGB")
    print(f"read from memory : {n / t_read:10.0f} clips/s (baseline)")
    print(f"generate          : {n / t_gen:10.0f} clips/s   {t_gen / t_read:8.1f}x baseline")
    print(f"temporal model    : {n / t_eval:10.0f} clips/s   {t_eval / t_read:8.1f}x baseline")
    print(f"torch threads: {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
