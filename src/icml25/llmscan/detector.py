"""The misbehaviour detector: scikit-learn models on LLMScan's causal features.

:class:`LLMScanDetector` follows scikit-learn's shape (``fit`` / ``predict_proba`` /
``predict``) on prompts; ``fit_features`` / ``score_features`` / ``predict_proba_features``
take precomputed feature matrices (scan once, compare detectors).

The official detector (``combine="average"``, the default): two ``MLPRegressor(100)``
(``max_iter=500`` as in the official code, scikit-learn defaults otherwise), one on the 5
token statistics and one on the layer effects, each fit on the 0/1 labels **unscaled**, and
the two predictions averaged. With ``features="token"`` or ``"layer"`` one such regressor on
that part alone. The ablation ``combine="concat"``: one standardised classifier
(``classifier="mlp"``: ``MLPClassifier(100)``, or ``"logreg"``) on the concatenated features.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from icml25.core import validate as V
from icml25.llmscan.scan import STAT_NAMES, LLMScan

FEATURE_KINDS = ("both", "token", "layer")
# the official detectors' iteration cap (``MLPRegressor(..., max_iter=500)`` in
# ``causality_analysis_combine.py``; scikit-learn's default is 200)
MAX_ITER = 500
COMBINE_KINDS = ("average", "concat")


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


def _features(features: Any) -> np.ndarray:
    """``features`` as a finite 2-D float array; numbers given as strings are refused."""
    if np.asarray(features).dtype.kind in "US":
        raise ValueError(f"features must be numbers, not strings, got {np.asarray(features)!r}")
    return V.finite_array("features", features, ndim=2)


class LLMScanDetector:
    """Detects misbehaviour from a prompt's causal scan, before any text is generated."""

    def __init__(
        self,
        scan: LLMScan | None = None,
        *,
        features: str = "both",
        combine: str = "average",
        classifier: str = "mlp",
        random_state: int = 0,
    ) -> None:
        if features not in FEATURE_KINDS:
            raise ValueError(f"features must be one of {FEATURE_KINDS}, got {features!r}")
        if combine not in COMBINE_KINDS:
            raise ValueError(f"combine must be one of {COMBINE_KINDS}, got {combine!r}")
        if classifier not in ("mlp", "logreg"):
            raise ValueError(f"classifier must be 'mlp' or 'logreg', got {classifier!r}")
        self.scan, self.features, self.combine = scan, features, combine
        self.classifier = classifier
        self.random_state = V.integer("random_state", random_state, low=0, high=2**32 - 1)
        self.models_: list[tuple[str, Any]] = []
        self.n_features_in_ = 0

    def _parts(self) -> list[str]:
        if self.combine == "concat":
            return ["both"]
        return ["token", "layer"] if self.features == "both" else [self.features]

    def _make(self) -> Any:
        if self.combine == "average":
            return MLPRegressor(
                hidden_layer_sizes=(100,), max_iter=MAX_ITER, random_state=self.random_state
            )
        if self.classifier == "mlp":
            clf: Any = MLPClassifier(
                hidden_layer_sizes=(100,), max_iter=MAX_ITER, random_state=self.random_state
            )
        else:
            clf = LogisticRegression(max_iter=2000)
        return make_pipeline(StandardScaler(), clf)

    def fit_features(self, features: np.ndarray, y: Sequence[int] | np.ndarray) -> LLMScanDetector:
        X = _features(features)
        select(X, "both")
        labels = np.asarray(y)
        if labels.shape != (X.shape[0],) or set(np.unique(labels)) - {0, 1}:
            raise ValueError(f"y must be {X.shape[0]} labels in {{0, 1}}, got {labels!r}")
        if len(np.unique(labels)) < 2:
            raise ValueError("y must contain both classes (0: normal, 1: misbehaviour)")
        import warnings

        from sklearn.exceptions import ConvergenceWarning

        self.models_ = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for part in self._parts():
                self.models_.append(
                    (
                        part,
                        self._make().fit(
                            select(X, part),
                            labels.astype(np.float64) if self.combine == "average" else labels,
                        ),
                    )
                )
        self.n_features_in_ = X.shape[1]
        return self

    def score_features(self, features: np.ndarray) -> np.ndarray:
        """``(n,)`` misbehaviour scores: the averaged regressions (official), or the
        classifier's probability of misbehaviour (``combine="concat"``)."""
        if not self.models_:
            raise RuntimeError("call fit or fit_features first")
        X = _features(features)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"features must have {self.n_features_in_} columns (5 token statistics + "
                f"{self.n_features_in_ - 5} layer effects, as fitted), got shape {X.shape}"
            )
        if self.combine == "concat":
            return self.models_[0][1].predict_proba(select(X, "both"))[:, 1]
        return np.mean([m.predict(select(X, part)) for part, m in self.models_], axis=0)

    def predict_proba_features(self, features: np.ndarray) -> np.ndarray:
        """``(n, 2)``: probabilities of normal behaviour and of misbehaviour (the averaged
        regressions' score clipped to [0, 1])."""
        s = np.clip(self.score_features(features), 0.0, 1.0)
        return np.stack([1 - s, s], axis=1)

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
