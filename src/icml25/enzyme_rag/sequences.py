"""Protein sequences: the token alphabet, FASTA and reaction-table readers, a reference-anchored
alignment, and sequence identity.

Tokens: the 20 amino acids (``ACDEFGHIKLMNPQRSTVWY``, ids 0-19), the gap ``-`` (20) and the
mask (21, only ever an input to the generator).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
GAP = "-"
ALPHABET = AMINO_ACIDS + GAP
"""Output alphabet of the generator: 20 amino acids and the gap."""
GAP_ID = 20
MASK_ID = 21
N_TOKENS = 21
"""Number of output tokens (amino acids + gap)."""
N_INPUT_TOKENS = 22
"""Number of input tokens (amino acids + gap + mask)."""
_INDEX = {c: i for i, c in enumerate(ALPHABET)}

__all__ = [
    "ALPHABET",
    "AMINO_ACIDS",
    "anchor_align",
    "decode",
    "encode",
    "identity",
    "read_fasta",
    "read_reaction_table",
]


def encode(sequences: Iterable[str], *, name: str = "sequences", gaps: bool = True) -> np.ndarray:
    """Token ids ``(n, L)`` (int64) of equal-length sequences (aligned rows when ``gaps``).

    Raises ``ValueError`` naming the first sequence with a letter outside the 20 amino acids
    (and ``-`` when ``gaps``), or rows of different lengths.
    """
    if isinstance(sequences, str):
        sequences = [sequences]
    rows = list(sequences)
    if not rows:
        raise ValueError(f"{name} must hold at least one sequence, got none")
    allowed = ALPHABET if gaps else AMINO_ACIDS
    length = None
    out = []
    for i, s in enumerate(rows):
        if not isinstance(s, str) or not s:
            raise ValueError(f"{name}[{i}] must be a non-empty string, got {s!r}")
        s = s.upper()
        bad = sorted({c for c in s if c not in allowed})
        if bad:
            raise ValueError(
                f"{name}[{i}] must hold only the letters {allowed!r}, got non-amino-acid "
                f"letters {''.join(bad)!r}"
            )
        if length is None:
            length = len(s)
        elif len(s) != length:
            raise ValueError(
                f"{name} must be aligned rows of one length; row 0 has {length}, row {i} has "
                f"{len(s)} (align them first, e.g. with anchor_align)"
            )
        out.append([_INDEX[c] for c in s])
    return np.asarray(out, dtype=np.int64)


def decode(tokens: np.ndarray, *, drop_gaps: bool = True) -> list[str]:
    """Strings from token ids ``(n, L)``; predicted gaps are deleted when ``drop_gaps`` (as the
    paper does after sampling)."""
    arr = np.asarray(tokens)
    if arr.ndim == 1:
        arr = arr[None]
    if arr.ndim != 2 or (arr.size and (arr.min() < 0 or arr.max() >= N_TOKENS)):
        raise ValueError(f"tokens must be a 2-D array of ids in [0, {N_TOKENS}), got {arr.shape}")
    seqs = ["".join(ALPHABET[int(t)] for t in row) for row in arr]
    return [s.replace(GAP, "") for s in seqs] if drop_gaps else seqs


def read_fasta(path: str | Path) -> dict[str, str]:
    """Records of a FASTA file as ``{id: sequence}`` (the id is the header's first word).

    Raises ``ValueError`` for text before the first header, a duplicate id, an empty record
    or a letter outside the 20 amino acids.
    """
    records: dict[str, list[str]] = {}
    current: str | None = None
    with open(path, encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line:
                continue
            if line.startswith(">"):
                parts = line[1:].split()
                if not parts:
                    raise ValueError(f"{path}:{lineno}: a FASTA header needs an id")
                current = parts[0]
                if current in records:
                    raise ValueError(f"{path}:{lineno}: duplicate FASTA id {current!r}")
                records[current] = []
            elif current is None:
                raise ValueError(f"{path}:{lineno}: sequence text before the first '>' header")
            else:
                records[current].append(line.replace("*", ""))
    out = {k: "".join(v).upper() for k, v in records.items()}
    if not out:
        raise ValueError(f"{path} holds no FASTA records")
    for k, s in out.items():
        encode([s], name=f"FASTA record {k!r}", gaps=False)
    return out


def read_reaction_table(
    path: str | Path, *, smiles_column: str = "substrate_smiles", enzyme_column: str = "enzyme_id"
) -> list[tuple[str, str]]:
    """``(substrate SMILES, enzyme id)`` pairs from a CSV reaction table (csv module)."""
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        cols = reader.fieldnames or []
        for col in (smiles_column, enzyme_column):
            if col not in cols:
                raise ValueError(f"reaction table {path} must have a column {col!r}, got {cols}")
        pairs = [(row[smiles_column].strip(), row[enzyme_column].strip()) for row in reader]
    if not pairs:
        raise ValueError(f"reaction table {path} has no rows")
    return pairs


def _global_align(a: str, b: str, match: int, mismatch: int, gap: int) -> tuple[str, str]:
    """Needleman-Wunsch global alignment (linear gap cost); returns the two gapped strings."""
    n, m = len(a), len(b)
    score = np.zeros((n + 1, m + 1), dtype=np.int64)
    score[:, 0] = gap * np.arange(n + 1)
    score[0, :] = gap * np.arange(m + 1)
    av = np.frombuffer(a.encode(), dtype=np.uint8)
    bv = np.frombuffer(b.encode(), dtype=np.uint8)
    for i in range(1, n + 1):
        sub = np.where(bv == av[i - 1], match, mismatch)
        diag = score[i - 1, :-1] + sub
        up = score[i - 1, 1:] + gap
        best = np.maximum(diag, up)
        row = score[i]
        for j in range(1, m + 1):  # left moves depend on the row itself
            row[j] = max(best[j - 1], row[j - 1] + gap)
    out_a, out_b = [], []
    i, j = n, m
    while i > 0 or j > 0:
        if i > 0 and j > 0:
            s = match if a[i - 1] == b[j - 1] else mismatch
            if score[i, j] == score[i - 1, j - 1] + s:
                out_a.append(a[i - 1])
                out_b.append(b[j - 1])
                i, j = i - 1, j - 1
                continue
        if i > 0 and score[i, j] == score[i - 1, j] + gap:
            out_a.append(a[i - 1])
            out_b.append(GAP)
            i -= 1
        else:
            out_a.append(GAP)
            out_b.append(b[j - 1])
            j -= 1
    return "".join(reversed(out_a)), "".join(reversed(out_b))


def anchor_align(
    sequences: Sequence[str],
    *,
    reference: str | None = None,
    match: int = 2,
    mismatch: int = -1,
    gap: int = -2,
) -> list[str]:
    """Align sequences to one reference (the first sequence by default) so every row has the
    reference's length: each is globally aligned to the reference (Needleman-Wunsch), and
    its insertions relative to the reference are dropped (the A3M convention of HHblits).

    A stand-in for the ClustalW multiple alignment of the paper: rows are mutually aligned
    only through the reference.
    """
    seqs = list(sequences)
    if not seqs:
        raise ValueError("sequences must hold at least one sequence, got none")
    for i, s in enumerate(seqs):
        encode([s], name=f"sequences[{i}]", gaps=False)
    ref = seqs[0] if reference is None else reference
    encode([ref], name="reference", gaps=False)
    out = []
    for s in seqs:
        ra, sa = _global_align(ref.upper(), s.upper(), match, mismatch, gap)
        out.append("".join(c for r, c in zip(ra, sa, strict=True) if r != GAP))
    return out


def identity(a: str | np.ndarray, b: str | np.ndarray) -> float:
    """Sequence identity: matching columns / columns where either row has a residue, for two
    aligned rows of one length (strings or token ids); unaligned strings of different length
    are globally aligned first."""
    if isinstance(a, str) and isinstance(b, str):
        if len(a) != len(b):
            a, b = _global_align(a.replace(GAP, ""), b.replace(GAP, ""), 2, -1, -2)
        ta, tb = encode([a])[0], encode([b])[0]
    else:
        ta, tb = np.asarray(a), np.asarray(b)
        if ta.shape != tb.shape or ta.ndim != 1:
            raise ValueError(
                f"a and b must be aligned rows of one length, got {ta.shape}, {tb.shape}"
            )
    both = (ta != GAP_ID) | (tb != GAP_ID)
    n = int(both.sum())
    return float(((ta == tb) & (ta != GAP_ID)).sum() / n) if n else 0.0


def identity_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Identities of every row of ``a`` ``(n, L)`` to every row of ``b`` ``(m, L)`` (aligned
    token ids), as :func:`identity` computes them, shape ``(n, m)``."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(
            f"a and b must be (n, L) and (m, L) token arrays, got {a.shape}, {b.shape}"
        )
    out = np.empty((len(a), len(b)))
    b_res = b != GAP_ID
    for i, row in enumerate(a):
        res = row != GAP_ID
        match = ((b == row[None]) & res[None]).sum(axis=1)
        cols = (res[None] | b_res).sum(axis=1)
        out[i] = np.where(cols > 0, match / np.maximum(cols, 1), 0.0)
    return out
