"""FedGVI's client cost: a conjugate update against the gradient-based one it replaces.

The abstract claims conjugate updates "decrease computational complexity at the clients".
On the 1-D Gaussian location model with the IMQ score-matching loss (n points, KL to the
cavity), the same local posterior is computed three ways:
- conjugate: the closed form (one pass over the data);
- L-BFGS on the exact expected loss;
- Adam on reparameterised Monte Carlo samples (the paper's generic client: 150 samples,
  500 steps), as for a non-conjugate model.
Printed: wall time per client update and the ratio to the conjugate one, and the posterior
mean each gives.
"""

from __future__ import annotations

import numpy as np
import torch

from _timing import mean_seconds
from icml25.fedgvi import (
    KL,
    GaussianLocation,
    IMQScoreMatching,
    LocalOptimizer,
    NatGaussian,
    local_posterior,
)


def main() -> None:
    rng = np.random.default_rng(0)
    cavity = NatGaussian.from_moments([0.5], [2.0])
    loss = IMQScoreMatching(1.0)
    adam = LocalOptimizer(method="adam", steps=500, lr=0.01, samples=150)
    print(f"{'n':>6} {'method':>12} {'seconds':>10} {'x conjugate':>12} {'mean':>10}")
    for n in (50, 500, 5000):
        x = rng.normal(0, 1, n)
        x[: n // 5] = rng.normal(8, 1, n // 5)
        model = GaussianLocation(x)

        def conjugate(m: GaussianLocation = model) -> NatGaussian:
            return local_posterior(cavity, m, loss, KL())

        def lbfgs(m: GaussianLocation = model) -> NatGaussian:
            return local_posterior(cavity, m, loss, KL(), conjugate=False)

        def monte_carlo(m: GaussianLocation = model) -> NatGaussian:
            g = torch.Generator().manual_seed(0)
            return local_posterior(
                cavity, m, loss, KL(), conjugate=False, optimizer=adam, generator=g
            )

        runs = {"conjugate": conjugate, "L-BFGS": lbfgs, "Adam MC": monte_carlo}
        base = None
        for name, fn in runs.items():
            sec = mean_seconds(fn, repeats=3 if name != "Adam MC" else 1)
            base = base or sec
            mean = float(fn().mean[0])
            print(f"{n:>6} {name:>12} {sec:>10.5f} {sec / base:>12.1f} {mean:>10.5f}")


if __name__ == "__main__":
    main()
