"""Real enzymatic reactions joined with real enzyme sequences (issue 52).

Sources that ship offline:

* PyPI ``evodex`` (MIT): ``evodex/data/selected_reactions.csv``, 27,450 atom-mapped enzymatic
  reactions (reaction SMILES in ``unmapped``), an EC number on every row (``ec_num``) and
  UniProt / Swiss-Prot accessions on about 6,200 (``protein_refs``, a Python list literal, with
  ``protein_db``). :func:`read_evodex_reactions` reads it.
* Debian ``ncbi-blast+`` (``blastdbcmd``) extracts sequences by accession from a BLAST protein
  database such as the Swiss-Prot one in Debian ``metastudent-data``:
  :func:`blastdbcmd_sequences`. Any ``{accession: sequence}`` mapping works as well (a FASTA
  read with :func:`~icml25.enzyme_rag.sequences.read_fasta` and :func:`uniprot_accession`).

The *substrate* of a reaction is, as in the paper (§4.1), its least common reactant once
cofactors and currency metabolites are removed (:data:`CURRENCY`, matched by the InChIKey's
connectivity block so protonation states match; ties go to the larger molecule). The zero-shot
split (:func:`zero_shot_split`) holds out substrates and removes from training every substrate
at or above a Tanimoto similarity to a held-out one, and every held-out pair whose enzyme also
occurs in training.
"""

from __future__ import annotations

import ast
import csv
import functools
import subprocess
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml25.core import validate as V
from icml25.enzyme_rag.chem import bulk_tanimoto, morgan_fingerprints, pack_fingerprints
from icml25.enzyme_rag.sequences import AMINO_ACIDS

__all__ = [
    "CURRENCY",
    "EnzymeData",
    "Reaction",
    "blastdbcmd_sequences",
    "evodex_reactions_path",
    "join_sequences",
    "read_evodex_reactions",
    "uniprot_accession",
    "zero_shot_split",
]

CURRENCY: dict[str, str] = {
    "water": "O",
    "proton": "[H+]",
    "dioxygen": "O=O",
    "carbon dioxide": "O=C=O",
    "bicarbonate": "OC(=O)[O-]",
    "ammonia": "N",
    "ammonium": "[NH4+]",
    "hydrogen peroxide": "OO",
    "phosphate": "OP(=O)(O)O",
    "diphosphate": "OP(=O)(O)OP(=O)(O)O",
    "NAD+": "NC(=O)c1ccc[n+]([C@@H]2O[C@H](COP(=O)(O)OP(=O)(O)OC[C@H]3O[C@@H](n4cnc5c(N)ncnc54)"
    "[C@H](O)[C@@H]3O)[C@@H](O)[C@H]2O)c1",
    "NADH": "NC(=O)C1=CN([C@@H]2O[C@H](COP(=O)(O)OP(=O)(O)OC[C@H]3O[C@@H](n4cnc5c(N)ncnc54)"
    "[C@H](O)[C@@H]3O)[C@@H](O)[C@H]2O)C=CC1",
    "NADP+": "NC(=O)c1ccc[n+]([C@@H]2O[C@H](COP(=O)(O)OP(=O)(O)OC[C@H]3O[C@@H](n4cnc5c(N)ncnc54)"
    "[C@H](OP(=O)(O)O)[C@@H]3O)[C@@H](O)[C@H]2O)c1",
    "NADPH": "NC(=O)C1=CN([C@@H]2O[C@H](COP(=O)(O)OP(=O)(O)OC[C@H]3O[C@@H](n4cnc5c(N)ncnc54)"
    "[C@H](OP(=O)(O)O)[C@@H]3O)[C@@H](O)[C@H]2O)C=CC1",
    "ATP": "Nc1ncnc2c1ncn2[C@@H]1O[C@H](COP(=O)(O)OP(=O)(O)OP(=O)(O)O)[C@@H](O)[C@H]1O",
    "ADP": "Nc1ncnc2c1ncn2[C@@H]1O[C@H](COP(=O)(O)OP(=O)(O)O)[C@@H](O)[C@H]1O",
    "AMP": "Nc1ncnc2c1ncn2[C@@H]1O[C@H](COP(=O)(O)O)[C@@H](O)[C@H]1O",
    "coenzyme A": "CC(C)(COP(=O)(O)OP(=O)(O)OC[C@H]1O[C@@H](n2cnc3c(N)ncnc32)[C@H](O)[C@@H]1"
    "OP(=O)(O)O)[C@@H](O)C(=O)NCCC(=O)NCCS",
    "FAD": "Cc1cc2nc3c(=O)[nH]c(=O)nc-3n(C[C@H](O)[C@H](O)[C@H](O)COP(=O)(O)OP(=O)(O)OC[C@H]3"
    "O[C@@H](n4cnc5c(N)ncnc54)[C@H](O)[C@@H]3O)c2cc1C",
    "S-adenosyl-L-methionine": "C[S+](CC[C@H](N)C(=O)O)C[C@H]1O[C@@H](n2cnc3c(N)ncnc32)"
    "[C@H](O)[C@@H]1O",
    "S-adenosyl-L-homocysteine": "N[C@@H](CCSC[C@H]1O[C@@H](n2cnc3c(N)ncnc32)[C@H](O)"
    "[C@@H]1O)C(=O)O",
    "glutathione": "N[C@@H](CCC(=O)N[C@@H](CS)C(=O)NCC(=O)O)C(=O)O",
}
"""Cofactors and currency metabolites dropped from a reaction's reactants before its substrate
is chosen (matched by InChIKey connectivity, so charge and protonation variants match too)."""


@dataclass(frozen=True)
class Reaction:
    """One reaction: its substrate (canonical SMILES), EC number and enzyme accessions."""

    substrate: str
    ec: str
    accessions: tuple[str, ...]
    reactants: tuple[str, ...]
    """The reactants left once the currency metabolites are dropped (canonical SMILES)."""


@dataclass(frozen=True)
class EnzymeData:
    """Substrates, enzyme sequences and (substrate, enzyme) pairs, with the EC numbers."""

    smiles: list[str]
    ids: list[str]
    sequences: list[str]
    pairs: np.ndarray
    """``(P, 2)`` (substrate index, enzyme index)."""
    ec_of_substrate: list[tuple[str, ...]]

    def enzymes_of(self, s: int) -> np.ndarray:
        return self.pairs[self.pairs[:, 0] == s, 1]


def evodex_reactions_path() -> Path:
    """Where ``pip install evodex`` put ``selected_reactions.csv`` (``FileNotFoundError`` with
    the install command when it is not installed)."""
    import importlib.util

    spec = importlib.util.find_spec("evodex")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the evodex package is not installed: make enzyme-data (or pip install --no-deps "
            "evodex), or pass the path of selected_reactions.csv"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "selected_reactions.csv"
    if not path.is_file():
        raise FileNotFoundError(f"evodex is installed but {path} is missing")
    return path


def _connectivity(smiles: str) -> str | None:
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return None
    key = Chem.MolToInchiKey(mol)
    return key.split("-")[0] if key else None


def _canonical(smiles: str) -> str | None:
    from rdkit import Chem

    mol = Chem.MolFromSmiles(smiles)
    return None if mol is None else Chem.MolToSmiles(mol)


@functools.lru_cache(maxsize=1 << 16)
def _heavy_atoms(smiles: str) -> int:
    from rdkit import Chem

    mol = Chem.MolFromSmiles(smiles)
    return 0 if mol is None else mol.GetNumHeavyAtoms()


def _accessions(text: str, db: str) -> tuple[str, ...]:
    text = (text or "").strip()
    if not text or db.strip().lower() not in ("uniprot", "swissprot"):
        return ()
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = [t for t in text.replace(";", ",").split(",") if t.strip()]
    if isinstance(value, str):
        value = [value]
    return tuple(str(v).strip() for v in value if str(v).strip())


def read_evodex_reactions(
    path: str | Path | None = None,
    *,
    currency: Mapping[str, str] = CURRENCY,
    natural_only: bool = False,
    min_heavy_atoms: int = 2,
) -> list[Reaction]:
    """Reactions of an EVODEX ``selected_reactions.csv`` (default: the installed package's).

    Each row's reactants (``unmapped`` left of ``>>``) lose the ``currency`` metabolites and
    molecules under ``min_heavy_atoms``; the substrate is the remaining reactant that occurs
    in the fewest rows of the file (ties: more heavy atoms, then the SMILES). Rows without a
    remaining reactant are skipped. ``natural_only`` keeps the rows marked ``natural``.
    """
    path = evodex_reactions_path() if path is None else Path(path)
    min_heavy_atoms = V.integer("min_heavy_atoms", min_heavy_atoms, low=1)
    drop = {k for k in (_connectivity(s) for s in currency.values()) if k}
    rows: list[tuple[tuple[str, ...], str, tuple[str, ...]]] = []
    conn_cache: dict[str, str | None] = {}
    canon_cache: dict[str, str | None] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        need = {"unmapped", "ec_num", "protein_refs", "protein_db"}
        missing = need - set(reader.fieldnames or [])
        if missing:
            raise ValueError(f"{path} is not an EVODEX reaction table: no column(s) {missing}")
        for line, row in enumerate(reader, 2):
            if natural_only and row.get("natural", "").strip() != "True":
                continue
            rxn = row["unmapped"].strip()
            if ">>" not in rxn:
                raise ValueError(f"{path}:{line}: unmapped must be reaction SMILES 'A.B>>C'")
            kept = []
            for smi in rxn.split(">>")[0].split("."):
                if smi not in canon_cache:
                    canon_cache[smi] = _canonical(smi)
                    conn_cache[smi] = _connectivity(smi)
                can = canon_cache[smi]
                if can is None or conn_cache[smi] in drop or _heavy_atoms(can) < min_heavy_atoms:
                    continue
                kept.append(can)
            if kept:
                ec = row["ec_num"].strip()
                rows.append(
                    (
                        tuple(dict.fromkeys(kept)),
                        ec,
                        _accessions(row["protein_refs"], row["protein_db"]),
                    )
                )
    counts = Counter(s for reactants, _, _ in rows for s in reactants)
    out = []
    for reactants, ec, acc in rows:
        sub = min(reactants, key=lambda s: (counts[s], -_heavy_atoms(s), s))
        out.append(Reaction(sub, ec, acc, reactants))
    if not out:
        raise ValueError(f"{path}: no reaction kept a substrate")
    return out


def uniprot_accession(header_id: str) -> str:
    """``sp|P12345|NAME_HUMAN`` / ``tr|...`` / ``P12345|GO:...`` / ``P12345.2`` -> ``P12345``."""
    parts = header_id.split("|")
    acc = parts[1] if len(parts) >= 2 and parts[0] in ("sp", "tr") else parts[0]
    return acc.split(".")[0]


def blastdbcmd_sequences(
    db: str | Path | Sequence[str | Path],
    accessions: Iterable[str],
    *,
    executable: str = "blastdbcmd",
) -> dict[str, str]:
    """Sequences of ``accessions`` from BLAST protein databases (Debian ``ncbi-blast+``).

    Each database is read once in full (``blastdbcmd -entry all -outfmt '%t<TAB>%s'``) and
    its records are kept whose title's accession (:func:`uniprot_accession` of the title's
    first word) is wanted: this works for databases built without ``-parse_seqids``, such as
    the Swiss-Prot ones of Debian ``metastudent-data`` (titles ``ACCESSION|GO:...``).
    Accessions no database holds are left out, and so are sequences with letters outside the
    20 amino acids.
    """
    want = {a.strip() for a in accessions if a.strip()}
    dbs = [db] if isinstance(db, (str, Path)) else list(db)
    out: dict[str, str] = {}
    allowed = set(AMINO_ACIDS)
    for one in dbs:
        argv = [executable, "-db", str(one), "-entry", "all", "-outfmt", "%t\t%s"]
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except FileNotFoundError as e:
            raise RuntimeError(
                f"{executable} is not installed ({e}): apt-get install ncbi-blast+"
            ) from e
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stdout:
            title, _, seq = line.rstrip("\n").partition("\t")
            words = title.split()
            if not words:
                continue
            acc = uniprot_accession(words[0])
            seq = seq.strip().upper()
            if acc in want and acc not in out and seq and set(seq) <= allowed:
                out[acc] = seq
        err = proc.stderr.read()
        if proc.wait() != 0:
            raise RuntimeError(f"blastdbcmd failed on {one} ({proc.returncode}): {err[:500]}")
    return out


def join_sequences(
    reactions: Sequence[Reaction],
    sequences: Mapping[str, str],
    *,
    min_length: int = 50,
    max_length: int = 1000,
) -> EnzymeData:
    """(substrate, enzyme) pairs of the reactions whose accessions have a sequence (of
    ``min_length``..``max_length`` residues) in ``sequences``; each substrate keeps the EC
    numbers of its reactions."""
    seqs = {uniprot_accession(k): v.upper() for k, v in sequences.items()}
    sub_index: dict[str, int] = {}
    enz_index: dict[str, int] = {}
    pairs: set[tuple[int, int]] = set()
    ecs: dict[int, set[str]] = {}
    for r in reactions:
        for a in r.accessions:
            seq = seqs.get(uniprot_accession(a))
            if seq is None or not min_length <= len(seq) <= max_length:
                continue
            s = sub_index.setdefault(r.substrate, len(sub_index))
            e = enz_index.setdefault(uniprot_accession(a), len(enz_index))
            pairs.add((s, e))
            ecs.setdefault(s, set()).add(r.ec)
    if not pairs:
        raise ValueError("no reaction accession has a sequence in `sequences`")
    ids = list(enz_index)
    return EnzymeData(
        smiles=list(sub_index),
        ids=ids,
        sequences=[seqs[i] for i in ids],
        pairs=np.asarray(sorted(pairs), dtype=np.int64),
        ec_of_substrate=[tuple(sorted(ecs[s])) for s in range(len(sub_index))],
    )


@dataclass(frozen=True)
class Split:
    """Substrate indices of the zero-shot split and what was dropped to make it."""

    train: np.ndarray
    test: np.ndarray
    dropped_similar: np.ndarray
    """Substrates removed from training: Tanimoto >= max_tanimoto to a held-out substrate."""
    test_pairs: np.ndarray
    """Held-out pairs kept: their enzyme acts on no training substrate."""
    train_pairs: np.ndarray
    max_test_train_tanimoto: float


def zero_shot_split(
    data: EnzymeData,
    *,
    test_fraction: float = 0.1,
    max_tanimoto: float = 0.8,
    seed: int = 0,
) -> Split:
    """Hold out a random ``test_fraction`` of the substrates; drop from training every
    substrate with Morgan/Tanimoto similarity ``>= max_tanimoto`` to a held-out one, and every
    held-out pair whose enzyme also acts on a training substrate (held-out substrates left
    without pairs leave the test set)."""
    test_fraction = V.probability("test_fraction", test_fraction)
    max_tanimoto = V.probability("max_tanimoto", max_tanimoto)
    n = len(data.smiles)
    if n < 2:
        raise ValueError(f"data must hold at least 2 substrates to split, got {n}")
    rng = np.random.default_rng(seed)
    n_test = min(n - 1, max(1, round(test_fraction * n)))
    test = np.sort(rng.permutation(n)[:n_test])
    rest = np.setdiff1d(np.arange(n), test)
    fps = pack_fingerprints(morgan_fingerprints(data.smiles))
    sim = bulk_tanimoto(fps[rest], fps[test]).max(axis=1)
    dropped = rest[sim >= max_tanimoto]
    train = rest[sim < max_tanimoto]
    p = data.pairs
    train_pairs = p[np.isin(p[:, 0], train)]
    test_pairs = p[np.isin(p[:, 0], test) & ~np.isin(p[:, 1], train_pairs[:, 1])]
    test = np.unique(test_pairs[:, 0])
    top = float(bulk_tanimoto(fps[train], fps[test]).max()) if len(train) and len(test) else 0.0
    return Split(train, test, dropped, test_pairs, train_pairs, top)
