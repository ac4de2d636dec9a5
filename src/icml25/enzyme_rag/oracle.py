"""The hidden evaluation oracle of the synthetic benchmark (reproduction only).

NOT used by training: the generator and the guidance classifier learn from (substrate, enzyme)
pairs only; ``tests/enzyme_rag`` checks that no training module imports this one.

Activity of aligned sequence ``x`` on molecule ``m``::

    activity(x, m) = pocket(x, m) * fold(x)

``pocket`` is the fraction of the K pocket columns holding a residue that fits the molecule:
column ``k`` wants one of ``partners[k]`` when ``m`` carries functional group ``k`` (a real
SMARTS match on the real molecule) and a small residue (G/A) when it does not. ``fold`` is a
foldability proxy: the best mean log-probability of the scaffold columns under any enzyme
family's profile, rescaled so that a uniformly random sequence scores 0 and the family
consensus 1 (clipped to [0, 1]).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml25.enzyme_rag.chem import parse_smiles
from icml25.enzyme_rag.sequences import AMINO_ACIDS

GROUPS: tuple[tuple[str, str, str], ...] = (
    # (name, SMARTS, residues that fit it in the pocket)
    ("carboxylic acid", "[CX3](=O)[OX2H1,OX1-]", "KR"),
    ("amine", "[NX3;H2,H1;!$(NC=O);!$(N-a)]", "DE"),
    ("hydroxyl", "[OX2H][CX4,c]", "ST"),
    ("ketone", "[#6][CX3](=O)[#6]", "HQ"),
    ("aromatic ring", "a1aaaaa1", "FWY"),
    ("halogen", "[F,Cl,Br,I]", "LIV"),
    ("sulfur", "[#16]", "CM"),
    ("amide", "[NX3][CX3](=O)", "N"),
)
ABSENT = "GA"
"""Residues that fit a pocket column whose functional group the molecule lacks."""

_AA = {c: i for i, c in enumerate(AMINO_ACIDS)}


def functional_groups(smiles: Sequence[str]) -> np.ndarray:
    """``(n, K)`` booleans: which of :data:`GROUPS` each molecule carries (RDKit SMARTS)."""
    from rdkit import Chem

    mols = parse_smiles(smiles)
    pats = [Chem.MolFromSmarts(s) for _, s, _ in GROUPS]
    return np.array([[m.HasSubstructMatch(p) for p in pats] for m in mols], dtype=bool)


def fitting_residues(groups: np.ndarray) -> list[list[np.ndarray]]:
    """For each molecule (rows of ``groups``) and pocket column, the residue ids that fit."""
    fits = [np.array([_AA[c] for c in r]) for _, _, r in GROUPS]
    absent = np.array([_AA[c] for c in ABSENT])
    return [[fits[k] if g[k] else absent for k in range(len(GROUPS))] for g in groups]


@dataclass(frozen=True)
class ActivityOracle:
    """The hidden activity and foldability model.

    Attributes
    ----------
    pocket : ``(K,)`` alignment columns of the pocket.
    profiles : ``(F, L, 20)`` per-family residue probabilities (all families, train and test).
    """

    pocket: np.ndarray
    profiles: np.ndarray

    @property
    def scaffold(self) -> np.ndarray:
        keep = np.ones(self.profiles.shape[1], dtype=bool)
        keep[self.pocket] = False
        return np.flatnonzero(keep)

    def pocket_score(self, tokens: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """Fraction of pocket columns that fit; ``groups`` is one row (K,) or one per sequence."""
        x = np.asarray(tokens)
        g = np.broadcast_to(np.asarray(groups, dtype=bool), (len(x), len(GROUPS)))
        res = x[:, self.pocket]  # (n, K)
        ok = np.zeros(res.shape, dtype=bool)
        for k, (_, _, partners) in enumerate(GROUPS):
            fit = np.isin(res[:, k], [_AA[c] for c in partners])
            small = np.isin(res[:, k], [_AA[c] for c in ABSENT])
            ok[:, k] = np.where(g[:, k], fit, small)
        return ok.mean(axis=1)

    def _loglik(self, tokens: np.ndarray) -> np.ndarray:
        x = np.asarray(tokens)[:, self.scaffold]  # (n, S); gaps (20) get the floor
        logp = np.log(self.profiles[:, self.scaffold])  # (F, S, 20)
        floor = float(logp.min())
        logp = np.concatenate([logp, np.full((*logp.shape[:2], 1), floor)], axis=2)
        cols = np.arange(x.shape[1])
        per_family = logp[:, cols[None, :], x].mean(axis=2)  # (F, n)
        return per_family.max(axis=0)

    def foldability(self, tokens: np.ndarray) -> np.ndarray:
        """Foldability proxy in [0, 1] (0: random sequence level, 1: a family consensus)."""
        logp = np.log(self.profiles[:, self.scaffold])
        hi = logp.max(axis=2).mean(axis=1).max()  # consensus
        lo = logp.mean(axis=2).mean(axis=1).max()  # expected under uniform residues
        return np.clip((self._loglik(tokens) - lo) / (hi - lo), 0.0, 1.0)

    def activity(self, tokens: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """``pocket_score * foldability`` per sequence."""
        return self.pocket_score(tokens, groups) * self.foldability(tokens)
