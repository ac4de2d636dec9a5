"""The real data of the reproduction on real enzymes (issue 52): which run selects it, where
the files are, the cached join of EVODEX reactions with Swiss-Prot sequences, and the pieces
the run builds on it. Apart from :mod:`icml25.enzyme_rag.experiments_real` (the run itself) so
that neither file passes ~600 lines.

Selection: the real path runs at the ``full`` budget, and at any budget when
``ICML25_ENZYME_REAL=1``; ``ICML25_ENZYME_REAL=0`` turns it off. Data locations:
``ICML25_EVODEX_CSV`` (else the installed ``evodex`` package) and ``ICML25_ENZYME_BLASTDB``
(BLAST database paths separated by ``os.pathsep``; else the three ``metastudent-data``
databases).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from icml25.enzyme_rag.alignment import Aligner
from icml25.enzyme_rag.data import (
    EnzymeData,
    blastdbcmd_sequences,
    join_sequences,
    read_evodex_reactions,
    uniprot_accession,
)

__all__ = [
    "BLASTDB_ENV",
    "EVODEX_ENV",
    "PROFILE_MAX",
    "REAL_ENV",
    "cache_dir",
    "caching_aligner",
    "ec_profile_members",
    "load_join",
    "locate_real_data",
    "real_selected",
    "restrict_length",
]

METASTUDENT = "/usr/share/metastudent-data/dataset_201401/{}/goasp.fasta"
REAL_ENV = "ICML25_ENZYME_REAL"
EVODEX_ENV = "ICML25_EVODEX_CSV"
BLASTDB_ENV = "ICML25_ENZYME_BLASTDB"
PROFILE_MAX = 30
"""At most this many natural enzymes build a target EC's profile HMM."""


def real_selected(budget: str) -> bool:
    """Whether the real path runs: ``ICML25_ENZYME_REAL`` = 1 / 0, else only at ``full``."""
    flag = os.environ.get(REAL_ENV, "").strip()
    if flag in ("0", "1"):
        return flag == "1"
    if flag:
        raise ValueError(f"{REAL_ENV} must be 0 or 1 (or unset), got {flag!r}")
    return budget == "full"


def locate_real_data() -> tuple[Path, list[Path]] | str:
    """``(EVODEX csv, BLAST databases)``, or a sentence saying what is missing."""
    csv_env = os.environ.get(EVODEX_ENV, "").strip()
    if csv_env:
        csv = Path(csv_env)
        if not csv.is_file():
            return f"{EVODEX_ENV}={csv_env} is not a file"
    else:
        try:
            from icml25.enzyme_rag.data import evodex_reactions_path

            csv = evodex_reactions_path()
        except FileNotFoundError as e:
            return str(e)
    db_env = os.environ.get(BLASTDB_ENV, "").strip()
    dbs = (
        [Path(p) for p in db_env.split(os.pathsep) if p]
        if db_env
        else [Path(METASTUDENT.format(a)) for a in ("MFO", "BPO", "CCO")]
    )
    have = [p for p in dbs if Path(f"{p}.pin").is_file() or Path(f"{p}.pal").is_file()]
    if not have:
        return (
            f"no BLAST protein database at {', '.join(map(str, dbs))} (make enzyme-data, "
            f"or set {BLASTDB_ENV})"
        )
    missing = [t for t in ("blastdbcmd", "blastp") if shutil.which(t) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (apt-get install ncbi-blast+)"
    if shutil.which("clustalo") is None and shutil.which("mafft") is None:
        return "no multiple aligner (apt-get install clustalo): the per-query MSAs need one"
    try:
        import pyhmmer  # noqa: F401
    except ImportError:
        return "pyhmmer is not installed (make enzyme-data)"
    return csv, have


def cache_dir() -> Path:
    """``$ICML25_CACHE/enzyme_rag`` (default ``.cache/enzyme_rag``): the join and the MSAs."""
    return Path(os.environ.get("ICML25_CACHE", ".cache")).expanduser() / "enzyme_rag"


def load_join(csv: Path, dbs: Sequence[Path]) -> tuple[EnzymeData, dict[str, list[str]]]:
    """The join of :func:`~icml25.enzyme_rag.data.join_sequences` (50..1,000 residues) and each
    enzyme's EC numbers, cached as JSON under ``$ICML25_CACHE/enzyme_rag`` keyed by the files'
    paths, sizes and times."""
    key_src = [str(csv), csv.stat().st_size, csv.stat().st_mtime]
    for db in dbs:
        for ext in (".pin", ".psq"):
            f = Path(f"{db}{ext}")
            if f.exists():
                key_src += [str(f), f.stat().st_size, f.stat().st_mtime]
    key = hashlib.sha256(json.dumps(key_src).encode()).hexdigest()[:16]
    path = cache_dir() / f"join-{key}.json"
    if path.is_file():
        raw = json.loads(path.read_text())
    else:
        reactions = read_evodex_reactions(csv)
        seqs = blastdbcmd_sequences(dbs, {a for r in reactions for a in r.accessions})
        data = join_sequences(reactions, seqs)
        ec_of: dict[str, set[str]] = {}
        for r in reactions:
            for a in r.accessions:
                ec_of.setdefault(uniprot_accession(a), set()).add(r.ec)
        raw = {
            "smiles": data.smiles,
            "ids": data.ids,
            "sequences": data.sequences,
            "pairs": data.pairs.tolist(),
            "ec_of_substrate": [list(x) for x in data.ec_of_substrate],
            "ec_of_enzyme": {i: sorted(ec_of.get(i, ())) for i in data.ids},
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(raw))
        tmp.replace(path)
    data = EnzymeData(
        smiles=raw["smiles"],
        ids=raw["ids"],
        sequences=raw["sequences"],
        pairs=np.asarray(raw["pairs"], dtype=np.int64).reshape(-1, 2),
        ec_of_substrate=[tuple(x) for x in raw["ec_of_substrate"]],
    )
    return data, raw["ec_of_enzyme"]


def restrict_length(data: EnzymeData, max_length: int) -> EnzymeData:
    """The join without enzymes longer than ``max_length`` (and substrates left without one)."""
    keep_e = np.array([len(s) <= max_length for s in data.sequences])
    p = data.pairs[keep_e[data.pairs[:, 1]]]
    if not len(p):
        raise ValueError(f"no enzyme of at most {max_length} residues in the join")
    subs, enz = np.unique(p[:, 0]), np.unique(p[:, 1])
    s_new = {int(s): i for i, s in enumerate(subs)}
    e_new = {int(e): i for i, e in enumerate(enz)}
    return EnzymeData(
        smiles=[data.smiles[s] for s in subs],
        ids=[data.ids[e] for e in enz],
        sequences=[data.sequences[e] for e in enz],
        pairs=np.array([[s_new[int(s)], e_new[int(e)]] for s, e in p], dtype=np.int64),
        ec_of_substrate=[data.ec_of_substrate[s] for s in subs],
    )


def ec_profile_members(
    target_ecs: Sequence[str],
    enzyme_ecs: Sequence[Sequence[str]],
    exclude: Sequence[int],
    *,
    limit: int = PROFILE_MAX,
    seed: int = 0,
) -> np.ndarray:
    """Enzymes that share a full EC number with the target (leaving out ``exclude``, the
    target's own enzymes); where fewer than 2 do, those sharing the first three EC levels.
    At most ``limit``, a fixed random choice. Empty where fewer than 2 qualify."""
    ex = {int(i) for i in exclude}
    want = set(target_ecs)
    for level in (4, 3):
        pre = {".".join(e.split(".")[:level]) for e in want}
        hits = [
            i
            for i, ecs in enumerate(enzyme_ecs)
            if i not in ex and any(".".join(e.split(".")[:level]) in pre for e in ecs)
        ]
        if len(hits) >= 2:
            rng = np.random.default_rng(seed)
            arr = np.asarray(hits, dtype=np.int64)
            return np.sort(rng.permutation(arr)[:limit]) if len(arr) > limit else arr
    return np.zeros(0, dtype=np.int64)


def caching_aligner(aligner: Aligner, folder: Path | None = None) -> Aligner:
    """``aligner`` with a cache keyed by its input (seeds share the per-query MSAs); with
    ``folder``, also on disk there, one JSON file per input (keyed by the aligner's name and
    the sequences), so that seeds in separate processes and later runs share them too."""
    cache: dict[tuple[str, ...], list[str]] = {}
    name = getattr(aligner, "__name__", type(aligner).__name__)

    def run(sequences: Sequence[str]) -> list[str]:
        key = tuple(sequences)
        if key in cache:
            return cache[key]
        path = None
        if folder is not None:
            digest = hashlib.sha256("\n".join((name, *key)).encode()).hexdigest()[:24]
            path = folder / f"msa-{digest}.json"
            if path.is_file():
                saved = json.loads(path.read_text())
                if saved.get("input") == list(key):
                    cache[key] = saved["rows"]
                    return cache[key]
        cache[key] = list(aligner(list(key)))
        if path is not None:
            folder.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"input": list(key), "rows": cache[key]}))
            tmp.replace(path)
        return cache[key]

    return run
