"""Cost of IT3 per test batch against plain inference, the ZigZag recursion and Tent.

The CNN of the reproduction (SmallCNN with BatchNorm, ZigZag injection at ``block2``) on
batches of 64 Fashion-MNIST-sized images, and the GNN (16-node graphs, batches of 32). Each
method is timed on the same batches in this run; ratios are against plain inference
``f(x, 0)``. IT3 and Tent use the same number of Adam steps. Weights are random (cost does not
depend on training). Run: ``python benchmarks/it3_cost.py [--steps 10] [--repeats 20]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import torch

from _timing import mean_seconds
from icml25.core.models import SmallCNN
from icml25.it3 import IT3, ZigZag, tent, zigzag_recursion
from icml25.it3.experiments import DenseGNN, random_graphs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; steps={args.steps}")

    cnn = ZigZag(SmallCNN(10), 10, layer="block2", channels=32).eval()
    cnn.mark_trained()
    x = torch.randn(64, 1, 28, 28)
    it3 = IT3(cnn, steps=args.steps, lr=1e-3)
    rows = {
        "plain f(x, 0)": lambda: torch.no_grad()(cnn)(x),
        "ZigZag recursion": lambda: zigzag_recursion(cnn, x),
        f"Tent, {args.steps} steps": lambda: tent(cnn, x, steps=args.steps, lr=1e-3),
        f"IT3, {args.steps} steps": lambda: it3(x),
    }
    _table("CNN, batch 64", rows, args.repeats)

    feats, adj, _ = random_graphs(32, np.random.default_rng(0))
    xg = torch.as_tensor(feats, dtype=torch.float32)
    ag = torch.as_tensor(adj, dtype=torch.float32)
    gnn = ZigZag(DenseGNN(4), 1, task="regression").eval()
    gnn.mark_trained()
    it3g = IT3(gnn, steps=args.steps, lr=1e-3)
    rows = {
        "plain f(x, 0)": lambda: torch.no_grad()(gnn)(xg, ag),
        "ZigZag recursion": lambda: zigzag_recursion(gnn, xg, ag),
        f"IT3, {args.steps} steps": lambda: it3g(xg, ag),
    }
    _table("GNN, 32 graphs of 16 nodes", rows, args.repeats)


def _table(title: str, rows: dict[str, Callable[[], object]], repeats: int) -> None:
    print(f"\n{title}")
    base = None
    for name, fn in rows.items():
        ms = 1e3 * mean_seconds(fn, repeats)
        base = base or ms
        print(f"  {name:<22} {ms:8.2f} ms/batch   {ms / base:6.1f}x plain")


if __name__ == "__main__":
    main()
