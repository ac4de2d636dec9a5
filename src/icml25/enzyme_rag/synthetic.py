"""The synthetic zero-shot benchmark of the reproduction: real molecules, synthetic enzymes.

Molecules are real (RDKit's bundled NCI set, ``Data/NCI/first_5K.smi``). Enzyme families are
synthetic: each family has a residue profile over the scaffold columns of a fixed-length
alignment; an enzyme of substrate ``m`` is drawn from its family's profile, and its pocket
columns hold residues that fit ``m``'s functional groups (each with probability
``pocket_fidelity``, else a random residue). The zero-shot split holds out substrates (no
molecule shared) and draws test enzymes from families never seen in training, dropping any
test enzyme with identity >= ``max_split_identity`` to a training enzyme (paper: < 30%).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml25.enzyme_rag.chem import bulk_tanimoto, morgan_fingerprints, pack_fingerprints
from icml25.enzyme_rag.oracle import GROUPS, ActivityOracle, fitting_residues, functional_groups
from icml25.enzyme_rag.sequences import identity_matrix


@dataclass(frozen=True)
class Benchmark:
    """Train and held-out (zero-shot) substrates, enzymes and pairs, plus the hidden oracle."""

    train_smiles: list[str]
    test_smiles: list[str]
    train_groups: np.ndarray
    test_groups: np.ndarray
    sequences: np.ndarray
    """Training enzymes, aligned token ids (N, L)."""
    pairs: np.ndarray
    """(P, 2) training (substrate, enzyme) pairs."""
    test_sequences: np.ndarray
    test_pairs: np.ndarray
    family: np.ndarray
    test_family: np.ndarray
    oracle: ActivityOracle
    split_identity: float
    """Highest identity of any test enzyme to any training enzyme."""


def nci_smiles(n: int, *, seed: int = 0) -> list[str]:
    """``n`` distinct canonical SMILES with 6-40 heavy atoms, drawn at random (``seed``) from
    RDKit's NCI first-5K set (only as many lines are parsed as needed)."""
    from rdkit import Chem, RDConfig, RDLogger

    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]
    path = Path(RDConfig.RDDataDir) / "NCI" / "first_5K.smi"
    lines = [ln.split()[0] for ln in path.read_text().splitlines() if ln.strip()]
    out: dict[str, None] = {}
    for i in np.random.default_rng(seed).permutation(len(lines)):
        mol = Chem.MolFromSmiles(lines[i])
        if mol is None or not 6 <= mol.GetNumHeavyAtoms() <= 40:
            continue
        out[Chem.MolToSmiles(mol)] = None
        if len(out) == n:
            return list(out)
    raise ValueError(f"the NCI set has fewer than n={n} usable molecules")


def _profiles(rng: np.random.Generator, n_fam: int, length: int, consensus: float) -> np.ndarray:
    prof = np.full((n_fam, length, 20), (1 - consensus - 0.27) / 16)
    for f in range(n_fam):
        for i in range(length):
            aa = rng.permutation(20)[:4]
            prof[f, i, aa[0]] = consensus
            prof[f, i, aa[1:]] = 0.09
    return prof / prof.sum(axis=2, keepdims=True)


def _families(rng: np.random.Generator, smiles: list[str], n_fam: int, noise: float) -> np.ndarray:
    fps = pack_fingerprints(morgan_fingerprints(smiles))
    centres = rng.permutation(len(smiles))[:n_fam]
    fam = bulk_tanimoto(fps[centres], fps).argmax(axis=0)
    flip = rng.random(len(smiles)) < noise
    fam[flip] = rng.integers(n_fam, size=int(flip.sum()))
    return fam


def _draw(
    rng: np.random.Generator,
    oracle: ActivityOracle,
    family: int,
    groups: np.ndarray,
    fidelity: float,
) -> np.ndarray:
    prof = oracle.profiles[family]
    cum = prof.cumsum(axis=1)
    x = (rng.random(prof.shape[0])[:, None] > cum).sum(axis=1).clip(0, 19)
    fits = fitting_residues(groups[None])[0]
    for k, col in enumerate(oracle.pocket):
        x[col] = rng.choice(fits[k]) if rng.random() < fidelity else rng.integers(20)
    return x.astype(np.int64)


def make_benchmark(
    *,
    n_train: int,
    n_test: int,
    enzymes_per_substrate: int = 3,
    length: int = 40,
    n_train_families: int = 10,
    n_test_families: int = 4,
    consensus: float = 0.6,
    pocket_fidelity: float = 0.85,
    max_split_identity: float = 0.3,
    family_noise: float = 0.2,
    seed: int = 0,
) -> Benchmark:
    """Build the benchmark (see the module docstring). A substrate's family is that of the most
    Tanimoto-similar of ``n_*_families`` randomly chosen centre molecules (a random family with
    probability ``family_noise``), so similar substrates tend to share an enzyme family: the
    premise that makes retrieval by substrate similarity informative."""
    rng = np.random.default_rng(seed)
    chosen = nci_smiles(n_train + n_test, seed=seed)
    train_smiles, test_smiles = chosen[:n_train], chosen[n_train:]
    k = len(GROUPS)
    n_fam = n_train_families + n_test_families
    oracle = ActivityOracle(
        pocket=np.sort(rng.permutation(length)[:k]),
        profiles=_profiles(rng, n_fam, length, consensus),
    )
    g_train = functional_groups(train_smiles)
    g_test = functional_groups(test_smiles)

    fam_train = _families(rng, train_smiles, n_train_families, family_noise)
    fam_test = n_train_families + _families(rng, test_smiles, n_test_families, family_noise)
    seqs: list[np.ndarray] = []
    pairs: list[tuple[int, int]] = []
    fams: list[int] = []
    for s in range(n_train):
        f = int(fam_train[s])
        for _ in range(enzymes_per_substrate):
            pairs.append((s, len(seqs)))
            seqs.append(_draw(rng, oracle, f, g_train[s], pocket_fidelity))
            fams.append(f)
    train = np.stack(seqs)

    t_seqs: list[np.ndarray] = []
    t_pairs: list[tuple[int, int]] = []
    t_fams: list[int] = []
    for s in range(n_test):
        got = 0
        for _ in range(100 * enzymes_per_substrate):
            f = int(fam_test[s])
            x = _draw(rng, oracle, f, g_test[s], pocket_fidelity)
            if identity_matrix(x[None], train).max() >= max_split_identity:
                continue
            t_pairs.append((s, len(t_seqs)))
            t_seqs.append(x)
            t_fams.append(f)
            got += 1
            if got == enzymes_per_substrate:
                break
        if got == 0:
            raise RuntimeError(f"no test enzyme below {max_split_identity} identity for {s}")
    test = np.stack(t_seqs)
    return Benchmark(
        train_smiles=train_smiles,
        test_smiles=test_smiles,
        train_groups=g_train,
        test_groups=g_test,
        sequences=train,
        pairs=np.asarray(pairs, dtype=np.int64),
        test_sequences=test,
        test_pairs=np.asarray(t_pairs, dtype=np.int64),
        family=np.asarray(fams),
        test_family=np.asarray(t_fams),
        oracle=oracle,
        split_identity=float(identity_matrix(test, train).max()),
    )
