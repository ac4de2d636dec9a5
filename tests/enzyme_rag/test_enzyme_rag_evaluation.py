"""enzyme_rag, issue 52: evaluation with real sequence tools (BLASTp identity, an exact global
aligner, profile-HMM scores), on sequences written in the test."""

from __future__ import annotations

import importlib.util
import shutil
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from icml25.enzyme_rag.evaluation import blastp_identity, global_identity, profile_hmm_scores

AA = "ACDEFGHIKLMNPQRSTVWY"
RNG = np.random.default_rng(0)
FAMILY = "".join(RNG.choice(list(AA), 80))


def _mutant(seq: str, n: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    s = list(seq)
    for i in rng.choice(len(s), n, replace=False):
        s[i] = AA[(AA.index(s[i]) + 1 + rng.integers(19)) % 20]
    return "".join(s)


def test_global_identity_exact_cases() -> None:
    refs = [FAMILY, _mutant(FAMILY, 40, 1)]
    got = global_identity([FAMILY, _mutant(FAMILY, 8, 2), FAMILY[:40]], refs)
    assert got[0] == 1.0
    assert got[1] == pytest.approx(72 / 80)  # 8 substitutions, no gaps
    assert got[2] == pytest.approx(40 / 80)  # half deleted: 40 matches over 80 columns
    with pytest.raises(ValueError, match=r"queries\[0\] must hold only"):
        global_identity(["MK1"], refs)


def test_blastp_hook_parses_tabular_output(tmp_path: Path) -> None:
    exe = tmp_path / "blastp"
    exe.write_text(
        f"#!{sys.executable}\n"
        "print('q0\\tr0\\t50.0\\t100'); print('q0\\tr1\\t90.5\\t80')\n"
        "print('q1\\tr0\\t99.0\\t20'); print('q2\\tr0\\t30.0\\t60')\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    got = blastp_identity(["MKT", "MKA", "MKW"], ["MKT", "MKA"], executable=str(exe))
    assert got.tolist() == [0.905, 0.0, 0.3]  # q1's hit covers 20% of it: not counted
    assert blastp_identity(["MKT", "MKA", "MKW"], ["MKT"], executable=str(exe), min_coverage=0.1)[
        1
    ] == pytest.approx(0.99)
    with pytest.raises(ValueError, match="min_coverage"):
        blastp_identity(["MKT"], ["MKT"], min_coverage=2.0)
    with pytest.raises(RuntimeError, match="not installed"):
        blastp_identity(["MKT"], ["MKT"], executable=str(tmp_path / "absent"))


@pytest.mark.skipif(shutil.which("blastp") is None, reason="Debian ncbi-blast+ not installed")
def test_real_blastp_agrees_with_the_exact_aligner_on_substitutions() -> None:
    queries = [FAMILY, _mutant(FAMILY, 8, 2), "".join(RNG.choice(list(AA), 80))]
    got = blastp_identity(queries, [FAMILY])
    assert got[0] == 1.0
    assert got[1] == pytest.approx(0.9, abs=0.03)  # local alignment over the whole length
    assert got[2] < 0.5  # a random sequence: no hit, or a short weak one


@pytest.mark.skipif(importlib.util.find_spec("pyhmmer") is None, reason="pyhmmer not installed")
def test_profile_hmm_scores_family_above_random() -> None:
    rows = [_mutant(FAMILY, 10, s) for s in range(8)]
    members = [_mutant(FAMILY, 10, s) for s in range(100, 104)]
    randoms = ["".join(np.random.default_rng(1000 + s).choice(list(AA), 80)) for s in range(4)]
    scores = profile_hmm_scores(rows, members + randoms)
    assert np.all(np.isfinite(scores[:4]))
    worst_member = scores[:4].min()
    assert np.all(np.nan_to_num(scores[4:], nan=-np.inf) < worst_member)


def test_profile_hmm_inputs() -> None:
    with pytest.raises(ValueError, match="rows of one length"):
        profile_hmm_scores(["MKT", "MK"], ["MKT"])
    with pytest.raises(ValueError, match=r"sequences\[0\] must hold only"):
        profile_hmm_scores(["MKT", "MK-"], ["MK*"])
