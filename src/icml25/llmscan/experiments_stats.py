"""LLMScan's statistics and baselines: ROC AUC by ranks, the item-clustered bootstrap
stratified by seed and by class, the measurements the claims read, the detectors' scores and
the baselines they are compared with (prompt length, bag of words, the scan with its
interventions removed). Its own module so that the arms in
:mod:`icml25.llmscan.experiments` read as the protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.core.claims import LEVEL, Measurement
from icml25.llmscan.detector import LLMScanDetector


def auc(y: np.ndarray, s: np.ndarray) -> float:
    """ROC AUC by ranks (ties get half credit); NaN with one class."""
    from scipy.stats import rankdata

    y = np.asarray(y)
    n1 = int(y.sum())
    n0 = len(y) - n1
    if n1 == 0 or n0 == 0:
        return float("nan")
    r = rankdata(np.asarray(s, dtype=np.float64))
    return float((r[y == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def auc_rows(y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """:func:`auc` of each row of ``(reps, n)`` labels and scores (every row must hold the
    same number of positives, as a class-stratified resample does)."""
    from scipy.stats import rankdata

    n1 = y.sum(axis=1)
    n0 = y.shape[1] - n1
    r = rankdata(np.asarray(s, dtype=np.float64), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return ((r * y).sum(axis=1) - n1 * (n1 + 1) / 2) / (n1 * n0)


@dataclass
class Scored:
    """One seed's test prompts: labels, item of each prompt, and named scores."""

    y: np.ndarray
    item: np.ndarray
    scores: dict[str, np.ndarray]


def resamples(s: Scored, reps: int, rng: np.random.Generator) -> np.ndarray:
    """``(reps, n)`` prompt indices: items drawn with replacement within each stratum of
    items with the same sorted labels (an item's prompts go together; each resample keeps
    the classes' counts, so every AUC is defined)."""
    items = np.unique(s.item)
    members = [np.flatnonzero(s.item == i) for i in items]
    strata: dict[tuple[int, ...], list[int]] = {}
    for k, m in enumerate(members):
        strata.setdefault(tuple(sorted(int(v) for v in s.y[m])), []).append(k)
    cols = []
    for ks in strata.values():
        M = np.stack([members[k] for k in ks])  # (items, prompts per item)
        pick = rng.integers(len(ks), size=(reps, len(ks)))
        cols.append(M[pick].reshape(reps, -1))
    return np.concatenate(cols, axis=1)


def bootstrap(
    seeds: list[Scored | None], names: list[str], reps: int, rng: np.random.Generator
) -> np.ndarray:
    """``(reps, len(names))`` seed-averaged AUCs, each seed's items resampled by
    :func:`resamples` (stratified by seed and by class, an item's prompts together)."""
    if not seeds or any(s is None for s in seeds):
        return np.full((1, len(names)), np.nan)
    out = np.zeros((reps, len(names)))
    for s in seeds:
        assert s is not None
        idx = resamples(s, reps, rng)
        y = s.y[idx]
        for j, n in enumerate(names):
            out[:, j] += auc_rows(y, s.scores[n][idx]) / len(seeds)
    return out


def auc_measure(
    seeds: list[Scored | None],
    names: list[str],
    boot: np.ndarray,
    name: str,
    minus: str | None = None,
    shift: list[float] | None = None,
) -> Measurement:
    """Per-seed test AUCs of score ``name`` (minus those of ``minus``, minus the per-seed
    ``shift``), with the 90% percentile interval of the same quantity over ``boot``'s
    seed-averaged replicates (columns named by ``names``). NaN when a seed has none."""
    if not seeds or any(s is None for s in seeds):
        return Measurement.with_interval(float("nan"), float("nan"), float("nan"), "none")
    ok = [s for s in seeds if s is not None]
    rep = boot[:, names.index(name)].copy()
    vals = np.array([auc(s.y, s.scores[name]) for s in ok])
    what = "AUC"
    if minus is not None:
        rep -= boot[:, names.index(minus)]
        vals -= [auc(s.y, s.scores[minus]) for s in ok]
        what = f"AUC minus {minus}'s"
    if shift is not None:
        rep -= float(np.mean(shift))
        vals -= shift
        what += " minus the permutations' 95th percentile"
    lo, hi = np.quantile(rep, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    n = sum(len(s.y) for s in ok)
    return Measurement.with_interval(
        vals.tolist(), float(lo), float(hi),
        f"bootstrap over {n} test prompts in {len(ok)} seeds ({rep.size} replicates, "
        f"stratified by seed and class): {what}",
    )  # fmt: skip


def baselines(
    train: list[str], y_train: np.ndarray, test: list[str], tok: Any
) -> dict[str, np.ndarray]:
    """Prompt length (token count) and bag-of-words logistic regressions."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(max_iter=1000).fit(lengths(train, tok)[:, None], y_train)
    vec = CountVectorizer(token_pattern=r"[A-Za-z']+")
    bow = LogisticRegression(max_iter=2000).fit(vec.fit_transform(train), y_train)
    return {
        "length": lr.predict_proba(lengths(test, tok)[:, None])[:, 1],
        "bow": bow.predict_proba(vec.transform(test))[:, 1],
    }


def lengths(prompts: list[str], tok: Any) -> np.ndarray:
    """Token counts of the raw prompts."""
    return np.array([len(tok(p, add_special_tokens=False)["input_ids"]) for p in prompts], float)


def unmodified(length: np.ndarray, p_star: np.ndarray) -> np.ndarray:
    """The null arms' features, in the scan's layout ``(n, 5 + 1)``: the token part holds the
    prompt length (and zeros), the layer part the unmodified pass's ``P(y*)``; what a
    detector can read with every intervention removed."""
    F = np.zeros((len(length), 6))
    F[:, 0], F[:, 5] = length, p_star
    return F


def detector_scores(F_tr: np.ndarray, y_tr: np.ndarray, F_te: np.ndarray, seed: int,
                    **kw: Any) -> np.ndarray:  # fmt: skip
    det = LLMScanDetector(random_state=seed, **kw).fit_features(F_tr, y_tr)
    return det.score_features(F_te)


def two_classes(*ys: np.ndarray) -> bool:
    return all(len(np.unique(y)) == 2 for y in ys)


def firing_minority(fired: np.ndarray, n_train: int) -> float:
    """The firing gate's value for one seed: the rarer outcome's share (fired or silent) in the
    detector's training prompts ``fired[:n_train]`` or in its test prompts
    ``fired[n_train:]``, whichever is lower (0 where either set holds one outcome only)."""
    shares = (float(np.mean(fired[:n_train])), float(np.mean(fired[n_train:])))
    return min(min(s, 1 - s) for s in shares)


def controls_gate(conditions: Sequence[bool], null_aucs: Sequence[float], bar: float) -> float:
    """One claim's gate value (issue 66): 1.0 when every seed's precondition holds
    (``conditions``, e.g. the implant took) *and* every seed's no-intervention control (the
    null arm's test AUC, ``null_aucs``) stays below ``bar`` (the claim's partial threshold),
    else 0.0. A control that reaches the bar can show the effect without the scan's
    interventions, and an unmeasured one (NaN) shows nothing, so either closes the gate."""
    cond = list(conditions)
    aucs = np.asarray(null_aucs, dtype=float)
    if not cond or len(cond) != aucs.size:
        raise ValueError(
            f"conditions and null_aucs must hold one value per seed, got {len(cond)} and "
            f"{aucs.size}"
        )
    if not np.isfinite(bar):
        raise ValueError(f"bar must be a finite number, got {bar!r}")
    below = bool(np.all(np.isfinite(aucs))) and bool(np.all(aucs < bar))
    return float(all(bool(c) for c in cond) and below)


def seed_aucs(seeds: Sequence[Scored | None], name: str) -> list[float]:
    """Each seed's test AUC of score ``name`` (NaN for a seed without a measurement)."""
    return [float("nan") if s is None else auc(s.y, s.scores[name]) for s in seeds]
