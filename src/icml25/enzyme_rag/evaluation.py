"""Evaluation of generated enzymes with real sequence tools, none used in training or guidance
(issue 52, item 3).

* :func:`blastp_identity`: for each generated sequence, its highest BLASTp percent identity to
  a set of references (the target's natural enzymes, or the training set for novelty), with
  Debian ``ncbi-blast+`` (``blastp -subject``, no database needed);
* :func:`global_identity`: the same question answered exactly, by Needleman-Wunsch global
  alignment in pure Python (identity over the aligned columns where either sequence has a
  residue), for machines without BLAST and for tests;
* :func:`profile_hmm_scores`: bit scores of sequences under a profile HMM built from an
  alignment of natural enzymes (e.g. the target EC's), with ``pyhmmer`` (HMMER3).
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from icml25.enzyme_rag.sequences import AMINO_ACIDS, GAP, _global_align, identity

__all__ = ["blastp_identity", "global_identity", "profile_hmm_scores"]


def _check(seqs: Sequence[str], name: str, *, gaps: bool = False) -> list[str]:
    if isinstance(seqs, str):
        raise TypeError(f"{name} must be a list of strings, got a single str")
    out = list(seqs)
    if not out:
        raise ValueError(f"{name} must hold at least one sequence, got none")
    allowed = set(AMINO_ACIDS + (GAP if gaps else ""))
    for i, s in enumerate(out):
        if not isinstance(s, str) or not s.replace(GAP, ""):
            raise ValueError(f"{name}[{i}] must be a non-empty sequence, got {s!r}")
        bad = sorted(set(s.upper()) - allowed)
        if bad:
            raise ValueError(f"{name}[{i}] must hold only amino-acid letters, got {''.join(bad)!r}")
    return [s.upper() for s in out]


def global_identity(queries: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """Highest global-alignment identity of each query to any reference, in [0, 1]."""
    q = _check(queries, "queries")
    r = _check(references, "references")
    out = np.zeros(len(q))
    for i, a in enumerate(q):
        best = 0.0
        for b in r:
            ra, rb = _global_align(a, b, 2, -1, -2)
            best = max(best, identity(ra, rb))
        out[i] = best
    return out


def blastp_identity(
    queries: Sequence[str],
    references: Sequence[str],
    *,
    executable: str = "blastp",
    evalue: float = 10.0,
    min_coverage: float = 0.5,
) -> np.ndarray:
    """Highest BLASTp percent identity / 100 of each query to any reference, counting only
    hits whose alignment covers at least ``min_coverage`` of the query (BLAST's identity is over
    its local alignment, which for a short hit says little); 0 where no hit qualifies."""
    q = _check(queries, "queries")
    r = _check(references, "references")
    if not 0.0 <= min_coverage <= 1.0:
        raise ValueError(f"min_coverage must be in [0, 1], got {min_coverage!r}")
    with tempfile.TemporaryDirectory(prefix="icml25-blastp-") as tmp:
        qf, rf = Path(tmp) / "q.fasta", Path(tmp) / "r.fasta"
        qf.write_text("".join(f">q{i}\n{s}\n" for i, s in enumerate(q)))
        rf.write_text("".join(f">r{i}\n{s}\n" for i, s in enumerate(r)))
        argv = [
            executable,
            "-query",
            str(qf),
            "-subject",
            str(rf),
            "-outfmt",
            "6 qseqid sseqid pident qcovhsp",
            "-evalue",
            str(evalue),
        ]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
        except FileNotFoundError as e:
            raise RuntimeError(
                f"{executable} is not installed ({e}): apt-get install ncbi-blast+, or use "
                "global_identity"
            ) from e
    if done.returncode != 0:
        raise RuntimeError(f"blastp failed ({done.returncode}): {done.stderr.strip()[:500]}")
    out = np.zeros(len(q))
    for line in done.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) < 4 or not parts[0].startswith("q"):
            continue
        if float(parts[3]) / 100.0 < min_coverage:
            continue
        i = int(parts[0][1:])
        out[i] = max(out[i], float(parts[2]) / 100.0)
    return out


def profile_hmm_scores(alignment: Sequence[str], sequences: Sequence[str]) -> np.ndarray:
    """Bit scores of ``sequences`` under a profile HMM built (HMMER3's ``hmmbuild`` defaults,
    through ``pyhmmer``) from ``alignment`` (gapped rows of one length, e.g. a Clustal Omega
    MSA of the target EC's natural enzymes). Sequences HMMER reports no hit for get NaN."""
    rows = _check(alignment, "alignment", gaps=True)
    if len({len(x) for x in rows}) != 1:
        raise ValueError("alignment must be rows of one length (align the natural enzymes first)")
    seqs = _check(sequences, "sequences")
    try:
        from pyhmmer import easel, plan7
    except ImportError as e:
        raise RuntimeError("pyhmmer is not installed: make enzyme-data") from e
    alphabet = easel.Alphabet.amino()
    msa = easel.TextMSA(
        name=b"family",
        sequences=[
            easel.TextSequence(name=f"n{i}".encode(), sequence=s) for i, s in enumerate(rows)
        ],
    ).digitize(alphabet)
    background = plan7.Background(alphabet)
    hmm, _, _ = plan7.Builder(alphabet).build_msa(msa, background)
    block = easel.TextSequenceBlock(
        [easel.TextSequence(name=f"s{i}".encode(), sequence=s) for i, s in enumerate(seqs)]
    ).digitize(alphabet)
    pipeline = plan7.Pipeline(
        alphabet, background=background, bias_filter=False, F1=1.0, F2=1.0, F3=1.0, E=1e9
    )
    out = np.full(len(seqs), np.nan)
    for hit in pipeline.search_hmm(hmm, block):
        name = hit.name.decode() if isinstance(hit.name, bytes) else str(hit.name)
        out[int(name[1:])] = float(hit.score)
    return out
