"""The measured effect of the reproduction's departures from the official code (issue 53).

Each variant reruns the reproduction's settings (``run_setting``, the quick budget's sizes) with
one departure undone, on the same seeds, and prints the claims' paired differences beside the
reproduction's own configuration:

- ``cnn_no_bn``: the official CNN has no BatchNorm: the CNN setting with ``SmallCNN(batchnorm=
  False)`` for the classifier, ``g'`` and the null model;
- ``mlp_3x512``: the official MLP is 3 x 512 (ours 256-128);
- ``pmi_50``: the official PMI critic trains 50 epochs (the quick budget 10, full 50).

Run: ``python benchmarks/pointwise_info_departures.py [--seeds 0,1,2]``; it prints a markdown
table (mean ± std over seeds) for NOTES.md.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml25.core.models import MLP, SmallCNN
from icml25.core.runner import RunContext
from icml25.pointwise_info import experiments as E


def _metrics(r: dict[str, Any]) -> dict[str, float]:
    au = {m: 100 * r["failure"][m]["auroc"] for m in E.METHODS}
    sc = {m: r["calibration"][m]["sce"] for m in ("MSP", "TS", "PVI-cal")}
    return {
        "PVI - max(PMI, PSI)": au["PVI"] - max(au["PMI"], au["PSI"]),
        "PVI - MSP": au["PVI"] - au["MSP"],
        "PMI AUROC": au["PMI"],
        "SCE vs MSP (%)": 100 * (sc["MSP"] - sc["PVI-cal"]) / sc["MSP"],
        "SCE vs TS (%)": 100 * (sc["PVI-cal"] - sc["TS"]) / sc["TS"],
        "accuracy": 100 * r["acc"],
    }


def run(setting: str, budget: E.Budget, seeds: list[int], model_fn: Any = None) -> list[dict]:
    ctx = RunContext("quick", tuple(seeds), Path("unused"))
    original = E._split

    def split(s: str, b: E.Budget, seed: int) -> E.Split:
        sp = original(s, b, seed)
        return sp if model_fn is None else dataclasses.replace(sp, model_fn=model_fn)

    E._split = split
    try:
        return [_metrics(E.run_setting(setting, budget, seed, ctx)) for seed in seeds]
    finally:
        E._split = original


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", default="0,1,2")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    torch.set_num_threads(1)
    quick = E.BUDGETS["quick"]
    variants = {
        ("cnn", "ours (SmallCNN with BatchNorm)"): run("cnn", quick, seeds),
        ("cnn", "official: no BatchNorm"): run(
            "cnn", quick, seeds, lambda: SmallCNN(10, batchnorm=False)
        ),
        ("cnn", "official: PMI 50 epochs (quick: 10)"): run(
            "cnn", dataclasses.replace(quick, pmi_epochs=50), seeds
        ),
        ("mlp", "ours (256-128)"): run("mlp", quick, seeds),
        ("mlp", "official: 3 x 512"): run("mlp", quick, seeds, lambda: MLP(784, (512,) * 3, 10)),
        ("mlp", "official: PMI 50 epochs (quick: 10)"): run(
            "mlp", dataclasses.replace(quick, pmi_epochs=50), seeds
        ),
    }
    keys = list(next(iter(variants.values()))[0])
    print(f"seeds {seeds}, quick sizes; mean ± std over seeds")
    print("| setting | variant | " + " | ".join(keys) + " |")
    print("|---|---|" + "---|" * len(keys))
    for (setting, name), rows in variants.items():
        cells = []
        for k in keys:
            v = np.array([r[k] for r in rows])
            cells.append(f"{v.mean():+.2f} ± {v.std(ddof=1):.2f}")
        print(f"| {setting} | {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
