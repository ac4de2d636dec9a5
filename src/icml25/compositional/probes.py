"""Probes trained on a few combinations and evaluated on unseen ones, and a multi-head network.

The compositional test of the paper: a classifier per concept is fitted on embeddings of the
*seen* combinations (a design such as :func:`~icml25.compositional.cyclic_design`) and scored
on the combinations it never saw. With linearly factored embeddings and ``k = 2`` seen
combinations per value, linear probes generalise perfectly (Prop. 4.1 of the paper).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from icml25.compositional.designs import _as_labels
from icml25.core import validate as V

HEADS = ("linear", "mlp")


@dataclass(frozen=True)
class ProbeResult:
    """Accuracy of per-concept probes on held-out rows.

    Attributes
    ----------
    per_concept
        Accuracy of each concept's probe.
    joint
        Fraction of rows with every concept right.
    mean
        Mean of ``per_concept``.
    """

    per_concept: tuple[float, ...]
    joint: float
    mean: float


def unseen_combination_accuracy(
    X_train: Any,
    labels_train: Any,
    X_test: Any,
    labels_test: Any,
    *,
    head: str = "linear",
    C: float = 1.0,
    hidden: int = 256,
    max_iter: int = 500,
    random_state: int = 0,
) -> ProbeResult:
    """Fit one probe per concept on ``(X_train, labels_train)``, score on ``X_test``.

    Parameters
    ----------
    X_train, X_test
        Embeddings ``(N, d)``; features are standardised with the training statistics.
    labels_train, labels_test
        ``(N, K)`` concept values. Every value the test set asks for must occur in training
        (otherwise no probe could predict it).
    head
        ``"linear"`` (multinomial logistic regression, the follow-up paper's probes) or
        ``"mlp"`` (one hidden layer, the paper's Sec. 5 head on frozen features).
    C
        Inverse L2 strength of the logistic regression (``head="linear"``); the MLP uses
        ``alpha = 1 / (C * N)``.
    hidden
        Hidden units of the MLP head.
    max_iter
        Solver iterations.
    random_state
        Seed of the MLP's initialisation.

    Returns
    -------
    ProbeResult
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    Xtr = V.finite_array("X_train", X_train, ndim=2, min_len=2)
    Xte = V.finite_array("X_test", X_test, ndim=2)
    if Xte.shape[1] != Xtr.shape[1]:
        raise ValueError(
            f"X_test must have {Xtr.shape[1]} columns like X_train, got {Xte.shape[1]}"
        )
    ytr = _as_labels("labels_train", labels_train)
    yte = _as_labels("labels_test", labels_test)
    if len(ytr) != len(Xtr):
        raise ValueError(f"labels_train must have {len(Xtr)} rows like X_train, got {len(ytr)}")
    if len(yte) != len(Xte):
        raise ValueError(f"labels_test must have {len(Xte)} rows like X_test, got {len(yte)}")
    if ytr.shape[1] != yte.shape[1]:
        raise ValueError(
            f"labels_test must have {ytr.shape[1]} concepts like labels_train, got {yte.shape[1]}"
        )
    V.choice("head", head, HEADS)
    Cf = V.positive("C", C)
    hid = V.integer("hidden", hidden, low=1)
    iters = V.integer("max_iter", max_iter, low=1)
    seed = V.integer("random_state", random_state, low=0)
    for h in range(ytr.shape[1]):
        seen = set(np.unique(ytr[:, h]).tolist())
        if len(seen) < 2:
            raise ValueError(
                f"labels_train[:, {h}] must take at least 2 values, got {sorted(seen)}"
            )
        missing = sorted(set(np.unique(yte[:, h]).tolist()) - seen)
        if missing:
            raise ValueError(
                f"labels_train must cover every value the test set uses; concept {h} never "
                f"shows value(s) {missing[:10]} in training"
            )
    scaler = StandardScaler().fit(Xtr)
    Ztr, Zte = scaler.transform(Xtr), scaler.transform(Xte)
    correct = np.ones(len(Xte), dtype=bool)
    accs = []
    for h in range(ytr.shape[1]):
        clf: Any
        if head == "linear":
            clf = LogisticRegression(C=Cf, max_iter=iters)
        else:
            clf = MLPClassifier(
                hidden_layer_sizes=(hid,),
                alpha=1.0 / (Cf * len(Xtr)),
                max_iter=iters,
                random_state=seed,
            )
        clf.fit(Ztr, ytr[:, h])
        ok = clf.predict(Zte) == yte[:, h]
        correct &= ok
        accs.append(float(ok.mean()) if len(ok) else float("nan"))
    joint = float(correct.mean()) if len(correct) else float("nan")
    return ProbeResult(per_concept=tuple(accs), joint=joint, mean=float(np.mean(accs)))


class MultiHeadNet(nn.Module):
    """A shared trunk and one linear classification head per concept.

    ``forward(x)`` returns a list of logits, one ``(batch, n_h)`` tensor per concept;
    ``features(x)`` returns the trunk's output (the embedding the metrics score).

    Parameters
    ----------
    trunk
        Any module mapping inputs to ``(batch, feature_dim)``.
    feature_dim
        Width of the trunk's output.
    n_values
        Number of values of each concept.
    """

    def __init__(self, trunk: nn.Module, *, feature_dim: int, n_values: Sequence[int]) -> None:
        super().__init__()
        if not isinstance(trunk, nn.Module):
            raise TypeError(f"trunk must be a torch.nn.Module, got {type(trunk).__name__}")
        d = V.integer("feature_dim", feature_dim, low=1)
        if isinstance(n_values, (str, bytes)) or not isinstance(n_values, Sequence):
            raise ValueError(f"n_values must be a sequence of integers, got {n_values!r}")
        if len(n_values) < 1:
            raise ValueError("n_values must name at least one concept, got []")
        ns = [V.integer(f"n_values[{h}]", n, low=2) for h, n in enumerate(n_values)]
        self.trunk = trunk
        self.heads = nn.ModuleList(nn.Linear(d, n) for n in ns)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.trunk(x)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        z = self.trunk(x)
        return [head(z) for head in self.heads]
