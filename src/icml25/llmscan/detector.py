"""The misbehaviour detector: a scikit-learn classifier on LLMScan's causal features.

:class:`LLMScanDetector` follows scikit-learn's shape (``fit`` / ``predict_proba`` /
``predict``) on prompts; ``fit_features`` / ``predict_proba_features`` take precomputed
feature matrices (scan once, compare detectors). The paper's detectors: an MLP (hidden
(100,), Adam, ``max_iter=500``) or logistic regression, on [token statistics, layer effects]
(``features="both"``), or on either part alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from icml25.core import validate as V
from icml25.llmscan.scan import STAT_NAMES, LLMScan

FEATURE_KINDS = ("both", "token", "layer")


def select(features: np.ndarray, which: str) -> np.ndarray:
    """The token-statistics columns, the layer-effect columns, or both, of ``(n, 5 + L)``."""
    if which not in FEATURE_KINDS:
        raise ValueError(f"which must be one of {FEATURE_KINDS}, got {which!r}")
    F = np.asarray(features, dtype=np.float64)
    if F.ndim != 2 or F.shape[1] <= len(STAT_NAMES):
        raise ValueError(f"features must be (n, 5 + L) with L >= 1, got shape {F.shape}")
    if which == "token":
        return F[:, : len(STAT_NAMES)]
    if which == "layer":
        return F[:, len(STAT_NAMES) :]
    return F


class LLMScanDetector:
    """Detects misbehaviour from a prompt's causal scan, before any text is generated."""

    def __init__(
        self,
        scan: LLMScan | None = None,
        *,
        features: str = "both",
        classifier: str = "mlp",
        random_state: int = 0,
    ) -> None:
        if features not in FEATURE_KINDS:
            raise ValueError(f"features must be one of {FEATURE_KINDS}, got {features!r}")
        if classifier not in ("mlp", "logreg"):
            raise ValueError(f"classifier must be 'mlp' or 'logreg', got {classifier!r}")
        self.scan, self.features, self.classifier = scan, features, classifier
        self.random_state = random_state
        self.model_: Pipeline | None = None

    def _make(self) -> Pipeline:
        if self.classifier == "mlp":
            clf: Any = MLPClassifier(
                hidden_layer_sizes=(100,), max_iter=500, random_state=self.random_state
            )
        else:
            clf = LogisticRegression(max_iter=2000)
        return make_pipeline(StandardScaler(), clf)

    def fit_features(self, features: np.ndarray, y: Sequence[int] | np.ndarray) -> LLMScanDetector:
        X = select(V.finite_array("features", features, ndim=2), self.features)
        labels = np.asarray(y)
        if labels.shape != (X.shape[0],) or set(np.unique(labels)) - {0, 1}:
            raise ValueError(f"y must be {X.shape[0]} labels in {{0, 1}}, got {labels!r}")
        if len(np.unique(labels)) < 2:
            raise ValueError("y must contain both classes (0: normal, 1: misbehaviour)")
        self.model_ = self._make().fit(X, labels)
        return self

    def predict_proba_features(self, features: np.ndarray) -> np.ndarray:
        if self.model_ is None:
            raise RuntimeError("call fit or fit_features first")
        X = V.finite_array("features", features, ndim=2)
        return self.model_.predict_proba(select(X, self.features))

    def _scan(self, prompts: Sequence[str]) -> np.ndarray:
        if self.scan is None:
            raise ValueError("this detector has no LLMScan: pass scan= or use *_features")
        return self.scan.features(prompts)

    def fit(self, prompts: Sequence[str], y: Sequence[int]) -> LLMScanDetector:
        return self.fit_features(self._scan(prompts), y)

    def predict_proba(self, prompts: Sequence[str]) -> np.ndarray:
        """``(n, 2)``: probabilities of normal behaviour and of misbehaviour."""
        return self.predict_proba_features(self._scan(prompts))

    def predict(self, prompts: Sequence[str]) -> np.ndarray:
        return (self.predict_proba(prompts)[:, 1] >= 0.5).astype(int)
