"""BackSlash on an MLP with an Embedding or a BatchNorm (issue 69, item 1): does lambda mean the
same whatever else the model holds?

scikit-learn's digits (1,300 training images, 497 test), the MLP 64-128-10 trained with Adam
(lr 3e-3, batches of 128, seed 1) and the rate step at each lambda; variants: the plain MLP, an
unused ``nn.Embedding(10, 16)`` (PyTorch's N(0, 1) init, created after the Linear layers so
they start as the plain MLP's), a ``BatchNorm1d`` after the first layer, and both. Prints the
test accuracy (eval mode), the final nu, the share of exact zeros in each Linear weight and the
names of the weights folded into a BatchNorm. About 40 s on one core.

Run: ``OMP_NUM_THREADS=1 python benchmarks/backslash_collapse.py [--steps 300,1500]``; run it
under ``PYTHONPATH=<an older checkout>/src`` to see the code before the fix (issue 69: every
variant but the plain one at 0.087, chance, with both Linear layers all zeros).
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch
from sklearn.datasets import load_digits
from torch import nn

from icml25.backslash import BackSlash

DIGITS = load_digits()
X = torch.tensor(DIGITS.data / 16.0, dtype=torch.float32)
Y = torch.tensor(DIGITS.target)
SPLIT = torch.randperm(len(Y), generator=torch.Generator().manual_seed(0))
TRAIN, TEST = SPLIT[:1300], SPLIT[1300:]


class Net(nn.Module):
    def __init__(self, embedding: bool, batchnorm: bool) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.bn = nn.BatchNorm1d(128) if batchnorm else None
        self.fc2 = nn.Linear(128, 10)
        self.emb = nn.Embedding(10, 16) if embedding else None  # never read

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        if self.bn is not None:
            h = self.bn(h)
        return self.fc2(torch.relu(h))


def run(embedding: bool, batchnorm: bool, lam: float, steps: int) -> str:
    torch.manual_seed(1)
    model = Net(embedding, batchnorm)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    bs = BackSlash(model, lam=lam).attach(opt)
    g = torch.Generator().manual_seed(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(steps):
            rows = TRAIN[torch.randint(0, len(TRAIN), (128,), generator=g)]
            opt.zero_grad()
            nn.functional.cross_entropy(model(X[rows]), Y[rows]).backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        acc = float((model(X[TEST]).argmax(1) == Y[TEST]).float().mean())
    zeros = " ".join(f"{float((m.weight == 0).float().mean()):.2f}" for m in (model.fc1, model.fc2))
    dead = sorted({str(w.message).split()[5] for w in caught if "all zeros" in str(w.message)})
    folded = getattr(bs, "folded_", "-")
    return f"{acc:8.3f} {bs.nu_:5.2f}  {zeros:>9s}  {folded!s:14s} {', '.join(dead) or '-'}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", default="300,1500")
    ap.add_argument("--lams", default="1e3,1e4")
    args = ap.parse_args()
    t0 = time.process_time()
    print(
        f"{'variant':24s} {'steps':>5s} {'lam':>6s} {'accuracy':>8s} {'nu':>5s}  "
        f"{'zeros':>9s}  {'folded':14s} warned all zeros"
    )
    for steps in (int(s) for s in args.steps.split(",")):
        for lam in (float(v) for v in args.lams.split(",")):
            for emb, bn in ((False, False), (True, False), (False, True), (True, True)):
                name = "+".join(n for n, on in (("embedding", emb), ("batchnorm", bn)) if on)
                print(f"{name or 'plain':24s} {steps:5d} {lam:6.0e} {run(emb, bn, lam, steps)}")
    print(f"{time.process_time() - t0:.0f} CPU-s")


if __name__ == "__main__":
    main()
