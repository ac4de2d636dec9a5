"""Molecules: RDKit Morgan fingerprints, Tanimoto similarity (bulk, NumPy popcount), and the
fixed-size molecule encoding the generator and the classifier read.

RDKit is imported lazily (install the ``chem`` extra: ``pip install icml25[chem]``), so the
package imports without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from icml25.core import validate as V

__all__ = [
    "bulk_tanimoto",
    "molecule_features",
    "morgan_fingerprints",
    "pack_fingerprints",
    "parse_smiles",
]


def _rdkit() -> Any:
    try:
        from rdkit import Chem, RDLogger
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "enzyme_rag's chemistry needs RDKit: pip install 'icml25[chem]' (or pip install rdkit)"
        ) from exc
    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]
    return Chem


def parse_smiles(smiles: Sequence[str], *, name: str = "smiles") -> list[Any]:
    """RDKit molecules for a list of SMILES; raises ``ValueError`` naming the first invalid one.

    Parameters
    ----------
    smiles
        SMILES strings.
    name
        The argument name used in error messages.
    """
    if isinstance(smiles, str):
        raise ValueError(f"{name} must be a sequence of SMILES strings, got one string {smiles!r}")
    smiles = list(smiles)
    if not smiles:
        raise ValueError(f"{name} must hold at least one SMILES string, got an empty sequence")
    Chem = _rdkit()
    mols = []
    for i, s in enumerate(smiles):
        if not isinstance(s, str) or not s.strip():
            raise ValueError(f"{name}[{i}] must be a non-empty SMILES string, got {s!r}")
        mol = Chem.MolFromSmiles(s)
        if mol is None:
            raise ValueError(f"{name}[{i}] is not a valid SMILES (RDKit cannot parse it): {s!r}")
        mols.append(mol)
    return mols


def morgan_fingerprints(
    smiles: Sequence[str], *, radius: int = 2, n_bits: int = 2048
) -> np.ndarray:
    """Morgan (ECFP-like) bit fingerprints as a boolean array of shape ``(n, n_bits)``.

    Parameters
    ----------
    smiles
        SMILES strings (each must parse).
    radius
        Morgan radius (2 gives ECFP4).
    n_bits
        Fingerprint length (a multiple of 64, so fingerprints pack into 64-bit words).
    """
    radius = V.integer("radius", radius, low=0, high=8)
    n_bits = V.integer("n_bits", n_bits, low=64)
    if n_bits % 64:
        raise ValueError(f"n_bits must be a multiple of 64, got {n_bits}")
    mols = parse_smiles(smiles)
    from rdkit.Chem import rdFingerprintGenerator

    gen = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
    return np.stack([gen.GetFingerprintAsNumPy(m).astype(bool) for m in mols])


def pack_fingerprints(fps: np.ndarray) -> np.ndarray:
    """Pack boolean fingerprints ``(n, n_bits)`` into ``uint64`` words ``(n, n_bits // 64)``."""
    fps = np.asarray(fps)
    if fps.ndim != 2 or fps.shape[1] % 64 or fps.dtype != bool:
        raise ValueError(
            "fps must be a boolean array of shape (n, n_bits) with n_bits a multiple of 64, "
            f"got dtype {fps.dtype} and shape {fps.shape}"
        )
    packed = np.packbits(fps, axis=1, bitorder="little")
    return np.ascontiguousarray(packed).view(np.uint64)


def _popcount(words: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words).sum(axis=-1, dtype=np.int64)
    table = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)  # pragma: no cover
    return table[words.view(np.uint8)].sum(axis=-1, dtype=np.int64)  # pragma: no cover


def bulk_tanimoto(query: np.ndarray, library: np.ndarray) -> np.ndarray:
    r"""Tanimoto similarity of one or more query fingerprints to every library fingerprint.

    .. math:: T(a, b) = \frac{|a \wedge b|}{|a| + |b| - |a \wedge b|}

    (0 when both are empty). Works on boolean fingerprints or on the packed ``uint64`` words
    of :func:`pack_fingerprints` (faster: one popcount per 64 bits).

    Parameters
    ----------
    query
        One fingerprint ``(n_bits,)`` or several ``(q, n_bits)`` (or packed words).
    library
        Fingerprints ``(n, n_bits)`` (or packed words), in the same form as ``query``.

    Returns
    -------
    ``(n,)`` for one query, ``(q, n)`` for several.
    """
    q = np.asarray(query)
    lib = np.asarray(library)
    if lib.ndim != 2 or lib.shape[0] == 0:
        raise ValueError(f"library must be a non-empty 2-D fingerprint array, got {lib.shape}")
    if q.dtype != lib.dtype:
        raise ValueError(
            f"query and library must both be boolean or both packed; got {q.dtype} and {lib.dtype}"
        )
    single = q.ndim == 1
    q2 = q[None] if single else q
    if q2.ndim != 2 or q2.shape[1] != lib.shape[1]:
        raise ValueError(f"query must have {lib.shape[1]} columns like library, got {q.shape}")
    if lib.dtype == bool:
        q2, lib = pack_fingerprints(q2), pack_fingerprints(lib)
    elif lib.dtype != np.uint64:
        raise ValueError(f"fingerprints must be boolean or packed uint64, got {lib.dtype}")
    n_lib = _popcount(lib)
    n_q = _popcount(q2)
    inter = np.stack([_popcount(np.bitwise_and(lib, row)) for row in q2])
    union = n_q[:, None] + n_lib[None, :] - inter
    sim = np.where(union > 0, inter / np.maximum(union, 1), 0.0)
    return sim[0] if single else sim


def molecule_features(smiles: Sequence[str], *, n_bits: int = 256, radius: int = 2) -> np.ndarray:
    """The molecule encoding the generator and the classifier read: folded Morgan *count*
    fingerprints, ``log1p``-scaled, as ``float32`` of shape ``(n, n_bits)``.

    The paper encodes the molecule with a graph attention network; this fixed encoding plus a
    learned MLP inside the models stands in for it.
    """
    radius = V.integer("radius", radius, low=0, high=8)
    n_bits = V.integer("n_bits", n_bits, low=8)
    mols = parse_smiles(smiles)
    from rdkit.Chem import rdFingerprintGenerator

    gen = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
    counts = np.stack([gen.GetCountFingerprintAsNumPy(m) for m in mols]).astype(np.float32)
    return np.log1p(counts)
