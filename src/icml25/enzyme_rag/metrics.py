"""Evaluation that does not depend on the guidance classifier: novelty (max identity to the
training enzymes), diversity (mean pairwise distance), and scoring by an activity /
foldability evaluator supplied separately."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from icml25.enzyme_rag.sequences import encode, identity_matrix

__all__ = ["diversity", "evaluate", "max_identity"]


def _tokens(x: np.ndarray | Sequence[str], name: str) -> np.ndarray:
    if isinstance(x, np.ndarray) and x.dtype.kind in "iu":
        if x.ndim != 2 or x.shape[0] == 0:
            raise ValueError(f"{name} must be a non-empty (n, L) token array, got {x.shape}")
        return x
    return encode(list(x), name=name)


def max_identity(
    generated: np.ndarray | Sequence[str], reference: np.ndarray | Sequence[str]
) -> np.ndarray:
    """For each generated aligned row, its highest identity to any reference row (novelty is
    ``1 - max_identity``; the paper uses BLASTp against Swiss-Prot)."""
    g = _tokens(generated, "generated")
    r = _tokens(reference, "reference")
    if g.shape[1] != r.shape[1]:
        raise ValueError(
            f"generated and reference must be aligned to one length, got "
            f"{g.shape[1]} and {r.shape[1]}"
        )
    return identity_matrix(g, r).max(axis=1)


def diversity(generated: np.ndarray | Sequence[str]) -> float:
    """Mean pairwise ``1 - identity`` among the generated rows (needs at least two)."""
    g = _tokens(generated, "generated")
    if len(g) < 2:
        raise ValueError(f"generated must hold at least 2 sequences for diversity, got {len(g)}")
    m = identity_matrix(g, g)
    iu = np.triu_indices(len(g), 1)
    return float(1.0 - m[iu].mean())


def evaluate(
    evaluator: Callable[[np.ndarray, str], np.ndarray],
    generated: np.ndarray | Sequence[str],
    smiles: str,
) -> np.ndarray:
    """Scores of ``evaluator(tokens, smiles)`` for the generated rows; checks the evaluator
    returns one finite score per sequence. The evaluator (activity or foldability predictor,
    e.g. UniKP / ESMFold, or a synthetic oracle) must be independent of the guidance
    classifier."""
    if not callable(evaluator):
        raise TypeError(f"evaluator must be callable, got {type(evaluator).__name__}")
    g = _tokens(generated, "generated")
    out = np.asarray(evaluator(g, smiles), dtype=np.float64)
    if out.shape != (len(g),) or not np.all(np.isfinite(out)):
        raise ValueError(f"evaluator must return {len(g)} finite scores, got shape {out.shape}")
    return out
