"""Multiple sequence alignment of each query's retrieved enzymes (paper §3.1: ClustalW).

An *aligner* is any callable ``aligner(sequences) -> rows``: unaligned amino-acid strings in,
gapped rows of one length out, in the input order, each row the input with ``-`` inserted.
:class:`EnzymeRAG <icml25.enzyme_rag.training.EnzymeRAG>` calls it once per query (and once
per training pair): one alignment of thousands of enzymes from many families would be
meaningless, an alignment of the few enzymes retrieved for one substrate is what the paper
builds.

* :func:`clustalo_align` runs Clustal Omega (Debian ``clustalo``), :func:`mafft_align` MAFFT
  (Debian ``mafft``), each as a subprocess on a temporary FASTA file;
* :func:`center_star_align` is a pure-Python fallback (center-star progressive alignment:
  every sequence is aligned to the one with the best total Needleman-Wunsch score, and the
  pairwise gaps are merged, "once a gap, always a gap"), so that everything runs without the
  Debian tools;
* :func:`default_aligner` picks Clustal Omega, else MAFFT, else the fallback.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from icml25.enzyme_rag.sequences import AMINO_ACIDS, GAP, _global_align

__all__ = [
    "Aligner",
    "center_star_align",
    "check_alignment",
    "clustalo_align",
    "default_aligner",
    "mafft_align",
]

Aligner = Callable[[Sequence[str]], list[str]]
"""``aligner(sequences) -> aligned rows`` (same order, one length, gaps ``-``)."""


def _check_input(sequences: Sequence[str]) -> list[str]:
    if isinstance(sequences, str):
        raise TypeError("sequences must be a list of strings, got a single str")
    seqs = list(sequences)
    if not seqs:
        raise ValueError("sequences must hold at least one sequence, got none")
    for i, s in enumerate(seqs):
        if not isinstance(s, str) or not s:
            raise ValueError(f"sequences[{i}] must be a non-empty string, got {s!r}")
        bad = sorted(set(s.upper()) - set(AMINO_ACIDS))
        if bad:
            raise ValueError(
                f"sequences[{i}] must hold only the 20 amino-acid letters, got {''.join(bad)!r}"
            )
    return [s.upper() for s in seqs]


def check_alignment(sequences: Sequence[str], rows: Sequence[str], *, who: str = "aligner") -> None:
    """Raise ``ValueError`` unless ``rows`` align ``sequences``: one row per sequence, in order,
    all of one length, each the sequence with gaps inserted."""
    rows = list(rows)
    if len(rows) != len(sequences):
        raise ValueError(f"{who} must return {len(sequences)} rows, got {len(rows)}")
    if len({len(r) for r in rows}) != 1:
        widths = sorted({len(r) for r in rows})
        raise ValueError(f"{who} must return rows of one length, got widths {widths}")
    for i, (s, r) in enumerate(zip(sequences, rows, strict=True)):
        if r.replace(GAP, "").upper() != s.upper():
            raise ValueError(
                f"{who} row {i} is not sequence {i} with gaps inserted (order changed, or "
                "residues altered)"
            )


def _score(a: str, b: str, match: int, mismatch: int, gap: int) -> int:
    return sum(
        gap if (x == GAP or y == GAP) else (match if x == y else mismatch)
        for x, y in zip(a, b, strict=True)
        if not (x == GAP and y == GAP)
    )


def center_star_align(
    sequences: Sequence[str], *, match: int = 2, mismatch: int = -1, gap: int = -2
) -> list[str]:
    """Center-star multiple alignment in pure Python (Gusfield 1993).

    The center is the sequence with the highest sum of global-alignment scores to the others
    (``n(n-1)/2`` Needleman-Wunsch alignments, linear gap cost); every other sequence is
    aligned to it, and the insertions relative to the center are merged so that all rows share
    the center's columns plus every insertion column. Rows come back in the input order.
    Quadratic in the number and the length of the sequences: meant for the few enzymes
    retrieved for one query, and for tests; use Clustal Omega or MAFFT for real work.
    """
    seqs = _check_input(sequences)
    n = len(seqs)
    if n == 1:
        return seqs
    pair: dict[tuple[int, int], tuple[str, str]] = {}
    total = [0] * n
    for i in range(n):
        for j in range(i + 1, n):
            a, b = _global_align(seqs[i], seqs[j], match, mismatch, gap)
            pair[i, j] = (a, b)
            sc = _score(a, b, match, mismatch, gap)
            total[i] += sc
            total[j] += sc
    c = max(range(n), key=lambda i: (total[i], -i))
    center = seqs[c]
    length = len(center)
    # for each sequence: what it puts before each center residue (insertions) and at it
    inserts: list[list[str]] = []
    at: list[list[str]] = []
    for i in range(n):
        if i == c:
            inserts.append([""] * (length + 1))
            at.append(list(center))
            continue
        ca, sa = pair[(c, i)] if c < i else pair[(i, c)][::-1]
        ins = [""] * (length + 1)
        here = [GAP] * length
        j = 0
        for x, y in zip(ca, sa, strict=True):
            if x == GAP:
                ins[j] += y
            else:
                here[j] = y
                j += 1
        inserts.append(ins)
        at.append(here)
    widest = [max(len(inserts[i][j]) for i in range(n)) for j in range(length + 1)]
    rows = []
    for i in range(n):
        parts = []
        for j in range(length + 1):
            parts.append(inserts[i][j].ljust(widest[j], GAP))
            if j < length:
                parts.append(at[i][j])
        rows.append("".join(parts))
    return rows


def _run_fasta_tool(
    sequences: Sequence[str], argv: Callable[[Path], list[str]], tool: str
) -> list[str]:
    seqs = _check_input(sequences)
    if len(seqs) == 1:
        return seqs
    with tempfile.TemporaryDirectory(prefix="icml25-align-") as tmp:
        path = Path(tmp) / "in.fasta"
        path.write_text("".join(f">s{i}\n{s}\n" for i, s in enumerate(seqs)))
        try:
            done = subprocess.run(argv(path), capture_output=True, text=True, check=False)
        except FileNotFoundError as e:
            raise RuntimeError(f"{tool} is not installed ({e}); use center_star_align") from e
    if done.returncode != 0:
        raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr.strip()[:500]}")
    records: dict[str, list[str]] = {}
    name = None
    for line in done.stdout.splitlines():
        if line.startswith(">"):
            name = line[1:].split()[0]
            records[name] = []
        elif name is not None:
            records[name].append(line.strip())
    rows = ["".join(records.get(f"s{i}", [])).upper() for i in range(len(seqs))]
    check_alignment(seqs, rows, who=tool)
    return rows


def clustalo_align(
    sequences: Sequence[str], *, executable: str = "clustalo", threads: int = 1
) -> list[str]:
    """Clustal Omega (``clustalo``; Debian package ``clustalo``) on the sequences, rows in the
    input order."""
    return _run_fasta_tool(
        sequences,
        lambda p: [
            executable,
            "-i",
            str(p),
            "--seqtype=Protein",
            "--outfmt=fasta",
            "--output-order=input-order",
            f"--threads={threads}",
            "--wrap=100000",
        ],
        "clustalo",
    )


def mafft_align(sequences: Sequence[str], *, executable: str = "mafft") -> list[str]:
    """MAFFT (``mafft --auto``; Debian package ``mafft``), rows in the input order."""
    return _run_fasta_tool(
        sequences,
        lambda p: [executable, "--auto", "--quiet", "--amino", str(p)],
        "mafft",
    )


def default_aligner() -> Aligner:
    """Clustal Omega if ``clustalo`` is on the PATH, else MAFFT, else :func:`center_star_align`."""
    if shutil.which("clustalo"):
        return clustalo_align
    if shutil.which("mafft"):
        return mafft_align
    return center_star_align
