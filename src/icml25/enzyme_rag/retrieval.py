"""Retrieval of enzymes by substrate similarity (paper Eq. 5).

A stored substrate returns its own enzymes (Eq. 5a) unless excluded; otherwise stored
substrates are ranked by Tanimoto similarity of Morgan fingerprints to the target and ``d``
enzymes are gathered from the best-ranked substrates' enzyme sets, in rank order (Eq. 5b).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml25.core import validate as V
from icml25.enzyme_rag.chem import bulk_tanimoto, morgan_fingerprints, pack_fingerprints

__all__ = ["Retrieval", "SubstrateRetriever"]


@dataclass(frozen=True)
class Retrieval:
    """Result of one retrieval: enzyme indices (rank order), the substrate each came from and
    that substrate's Tanimoto similarity to the target."""

    enzymes: np.ndarray
    substrates: np.ndarray
    similarity: np.ndarray


class SubstrateRetriever:
    """Index of substrate -> enzyme pairs searched by Tanimoto similarity.

    Parameters
    ----------
    radius, n_bits
        Morgan fingerprint settings.

    Attributes (after :meth:`fit`)
    ------------------------------
    fingerprints_ : packed ``uint64`` fingerprints of the stored substrates.
    enzymes_of_ : list of enzyme-index arrays, one per stored substrate.
    smiles_ : the stored SMILES.

    Examples
    --------
    >>> r = SubstrateRetriever().fit(["CCO", "CCCO", "c1ccccc1"], [[0], [1, 2], [3]])
    >>> r.retrieve("CCCCO", d=2).enzymes.tolist()
    [1, 2]
    """

    def __init__(self, *, radius: int = 2, n_bits: int = 2048) -> None:
        self.radius = radius
        self.n_bits = n_bits

    def fit(self, smiles: Sequence[str], enzymes: Sequence[Sequence[int]]) -> SubstrateRetriever:
        """Store substrates (SMILES) and, for each, the indices of the enzymes that act on it."""
        smiles = list(smiles)
        lists = [np.asarray(e, dtype=np.int64).reshape(-1) for e in enzymes]
        if len(lists) != len(smiles):
            raise ValueError(
                f"enzymes must give one enzyme list per substrate ({len(smiles)}), got {len(lists)}"
            )
        for i, e in enumerate(lists):
            if e.size == 0:
                raise ValueError(f"enzymes[{i}] must list at least one enzyme, got none")
            if e.min() < 0:
                raise ValueError(f"enzymes[{i}] must hold indices >= 0, got {e.min()}")
        fps = morgan_fingerprints(smiles, radius=self.radius, n_bits=self.n_bits)
        self.fingerprints_ = pack_fingerprints(fps)
        self.enzymes_of_ = lists
        self.smiles_ = smiles
        return self

    def similarity(self, smiles: str | Sequence[str]) -> np.ndarray:
        """Tanimoto similarity of a target (or several) to every stored substrate."""
        self._check_fitted()
        single = isinstance(smiles, str)
        q: list[str] = [smiles] if isinstance(smiles, str) else list(smiles)
        fps = pack_fingerprints(morgan_fingerprints(q, radius=self.radius, n_bits=self.n_bits))
        sim = bulk_tanimoto(fps, self.fingerprints_)
        return sim[0] if single else sim

    def retrieve(
        self,
        smiles: str,
        *,
        d: int,
        exclude: Sequence[int] = (),
        exclude_enzymes: Sequence[int] = (),
        similarity: np.ndarray | None = None,
    ) -> Retrieval:
        """The ``d`` enzymes of the substrates most similar to ``smiles``.

        Parameters
        ----------
        smiles
            The target molecule.
        d
            Number of enzymes to gather (``>= 1``).
        exclude
            Stored substrate indices to skip.
        exclude_enzymes
            Enzyme indices to drop from every stored substrate's set. During training pass the
            target's own enzymes: skipping only the target's entry (``exclude``) still returns
            them through any similar substrate that the same enzyme acts on.
        similarity
            Precomputed :meth:`similarity` of the target (saves the fingerprinting).
        """
        self._check_fitted()
        d = V.integer("d", d, low=1)
        sim = self.similarity(smiles) if similarity is None else np.asarray(similarity)
        if sim.shape != (len(self.smiles_),):
            raise ValueError(f"similarity must have shape ({len(self.smiles_)},), got {sim.shape}")
        skip = np.zeros(len(sim), dtype=bool)
        ex = np.asarray(list(exclude), dtype=np.int64)
        if ex.size:
            if ex.min() < 0 or ex.max() >= len(sim):
                raise ValueError(
                    f"exclude must hold substrate indices in [0, {len(sim)}), got {ex}"
                )
            skip[ex] = True
        drop = np.unique(np.asarray(list(exclude_enzymes), dtype=np.int64))
        order = np.argsort(-np.where(skip, -np.inf, sim), kind="stable")
        order = order[~skip[order]]
        enz: list[int] = []
        src: list[int] = []
        for s in order:
            own = self.enzymes_of_[s]
            if drop.size:
                own = own[~np.isin(own, drop)]
            take = own[: d - len(enz)]
            enz.extend(int(e) for e in take)
            src.extend([int(s)] * len(take))
            if len(enz) >= d:
                break
        if not enz:
            raise ValueError(
                "the retrieval set is empty: every stored substrate or enzyme was excluded"
            )
        src_arr = np.asarray(src, dtype=np.int64)
        return Retrieval(np.asarray(enz, dtype=np.int64), src_arr, sim[src_arr])

    def _check_fitted(self) -> None:
        if not hasattr(self, "fingerprints_"):
            raise RuntimeError("SubstrateRetriever is not fitted: call fit(smiles, enzymes) first")
