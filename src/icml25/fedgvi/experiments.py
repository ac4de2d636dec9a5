"""The budgets of FedGVI's reproduction. Its three settings are three modules, each with its
task data, arms, measurements and report notes, because one file would pass ~900 lines:

- :mod:`icml25.fedgvi.experiments_location`: (A) the contaminated 1-D Gaussian location model
  (:func:`~icml25.fedgvi.experiments_location.run_location`, the bias ratios and the exact
  one-round check);
- :mod:`icml25.fedgvi.experiments_logistic`: (B) Bayesian logistic regression on the
  breast-cancer data (:func:`~icml25.fedgvi.experiments_logistic.run_logistic`, FedAvg, the
  accuracy, NLL and ECE statistics of per-test-point rows);
- :mod:`icml25.fedgvi.experiments_bnn`: (C) a mean-field BNN on pooled images with flipped
  labels (:func:`~icml25.fedgvi.experiments_bnn.run_bnn`, FedAvg on the same MLP).

:mod:`icml25.fedgvi.reproduce` runs them seed by seed (checkpointed) and judges the claims of
:mod:`icml25.fedgvi.claims`.
"""

from __future__ import annotations

from dataclasses import dataclass

CONTAMINATION = (0.0, 0.1, 0.2, 0.3)
"""(A)'s outlier fractions for the figure (0 and 0.2 decide claims)."""


@dataclass(frozen=True, kw_only=True)
class Budget:
    seeds: int  # seeds used: the run's first ones, extended by the next integers if fewer
    location_reps: int  # data sets per seed (the items of (A)'s bootstrap)
    location_grid_reps: int  # of those, how many run every cell (beta at every eps and prior)
    location_eps: tuple[float, ...]  # contaminations run in (A) (0 and 0.2 decide claims)
    location_rounds: int  # (A)'s round limit (few_rounds counts a run that did not stop as +1)
    lr_rounds: int  # (B)'s federated rounds
    lr_steps: int  # (B)'s Adam steps a local problem (FedAvg: a tenth as gradient steps)
    lr_samples: int  # (B)'s Monte Carlo samples a step
    bnn_train: int  # training images per client
    bnn_rounds: int  # (C)'s federated rounds
    bnn_epochs: int  # most epochs of a local problem (early stopping ends it sooner)
    bnn_patience: int  # epochs without a better objective before early stopping
    bnn_fedavg_epochs: int  # FedAvg's local epochs a round
    bnn_seeds: int  # how many of the used seeds also run (C)
    bnn_ablation: bool = True  # run the sum-S ablation arm (no claim)
    n_boot: int = 2000  # bootstrap resamples


BUDGETS = {
    "tiny": Budget(
        seeds=1,
        location_reps=2,
        location_grid_reps=0,
        location_eps=(0.0, 0.2),
        location_rounds=5,
        lr_rounds=1,
        lr_steps=10,
        lr_samples=5,
        bnn_train=100,
        bnn_rounds=1,
        bnn_epochs=2,
        bnn_patience=1,
        bnn_fedavg_epochs=1,
        bnn_seeds=1,
        bnn_ablation=False,
        n_boot=200,
    ),
    # quick: one seed (intervals: bootstraps over (A)'s data sets and the test points), the
    # claims' contaminations only, beta only in the cell its claim reads, (B) and (C) cut for
    # time (README); quick cannot resolve (C) (its gate, the data-dominated check, fails)
    "quick": Budget(
        seeds=1,
        location_reps=3,
        location_grid_reps=0,
        location_eps=(0.0, 0.2),
        location_rounds=30,
        lr_rounds=4,
        lr_steps=60,
        lr_samples=20,
        bnn_train=2000,
        bnn_rounds=3,
        bnn_epochs=8,
        bnn_patience=2,
        bnn_fedavg_epochs=2,
        bnn_seeds=1,
        bnn_ablation=False,
    ),
    # full: five seeds (>= 5 where a seed costs <= 5 minutes), 6 data sets a seed in (A) (the
    # first with every cell of the figure). (C): 3,000 images a client (9,000 against 970
    # weights), 4 rounds, the official patience of 10 and a cap of 300 epochs
    # (benchmarks/fedgvi_bnn_convergence.py's rule; NOTES.md).
    "full": Budget(
        seeds=5,
        location_reps=6,
        location_grid_reps=1,
        location_eps=CONTAMINATION,
        location_rounds=30,
        lr_rounds=5,
        lr_steps=80,
        lr_samples=20,
        bnn_train=3000,
        bnn_rounds=4,
        bnn_epochs=300,
        bnn_patience=10,
        bnn_fedavg_epochs=3,
        bnn_seeds=5,
    ),
}
