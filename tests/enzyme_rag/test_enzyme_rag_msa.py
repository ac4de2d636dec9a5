"""enzyme_rag, issue 52: per-query multiple alignment (aligner hook, center-star fallback,
Clustal Omega / MAFFT through a subprocess) and variable-length output, on small files written
in the test."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("rdkit")

from icml25.enzyme_rag import (
    EnzymeRAG,
    EnzymeSubstrateClassifier,
    center_star_align,
    check_alignment,
    clustalo_align,
    encode,
    msa_batch,
    pad_tokens,
    query_msas,
    read_fasta,
    read_reaction_table,
)
from icml25.enzyme_rag.sequences import GAP_ID

AA = "ACDEFGHIKLMNPQRSTVWY"


def _nw_score(a: str, b: str, match: int = 2, mismatch: int = -1, gap: int = -2) -> int:
    """Optimal global score by the textbook recursion (memoised), independent of the
    library's Needleman-Wunsch."""
    from functools import cache

    @cache
    def f(i: int, j: int) -> int:
        if i == 0 or j == 0:
            return gap * (i + j)
        s = match if a[i - 1] == b[j - 1] else mismatch
        return max(f(i - 1, j - 1) + s, f(i - 1, j) + gap, f(i, j - 1) + gap)

    return f(len(a), len(b))


def _row_score(x: str, y: str) -> int:
    return sum(
        -2 if "-" in (p, q) else (2 if p == q else -1)
        for p, q in zip(x, y, strict=True)
        if (p, q) != ("-", "-")
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="ACDEK", min_size=1, max_size=9), min_size=1, max_size=5))
def test_center_star_rows_are_the_inputs_with_gaps(seqs: list[str]) -> None:
    rows = center_star_align(seqs)
    check_alignment(seqs, rows)  # one length, order kept, residues unchanged
    assert not any(all(r[j] == "-" for r in rows) for j in range(len(rows[0])))  # no empty column
    if len(seqs) == 2:  # two sequences: the pairwise alignment is optimal
        assert _row_score(*rows) == _nw_score(*seqs)


def test_center_star_known_case_and_identical_rows() -> None:
    assert center_star_align(["MKTAYIAK"] * 3) == ["MKTAYIAK"] * 3
    rows = center_star_align(["MKTAYIAKQR", "MKTAYAKQR", "MKTWAYIAKQRLL"])
    assert rows[2] == "MKTWAYIAKQRLL"  # the longest holds every column here
    assert all(len(r) == 13 for r in rows)
    with pytest.raises(ValueError, match="sequences\\[1\\]"):
        center_star_align(["MKT", "MK1"])
    with pytest.raises(TypeError, match="list of strings"):
        center_star_align("MKT")


def _fake_tool(tmp_path: Path, body: str) -> str:
    exe = tmp_path / "fake_clustalo"
    exe.write_text(f"#!{sys.executable}\n{body}")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_clustalo_hook_parses_fasta_and_restores_input_order(tmp_path: Path) -> None:
    # a stand-in executable that writes the records in reverse order, gapped to one length
    exe = _fake_tool(
        tmp_path,
        "import sys\n"
        "path = sys.argv[sys.argv.index('-i') + 1]\n"
        "recs = [b.split('\\n', 1) for b in open(path).read().split('>')[1:]]\n"
        "w = max(len(s.strip()) for _, s in recs)\n"
        "for name, s in reversed(recs):\n"
        "    print('>' + name.strip() + ' x'); print(s.strip().ljust(w, '-'))\n",
    )
    rows = clustalo_align(["MKTAY", "MK", "MKTAYIAK"], executable=exe)
    assert rows == ["MKTAY---", "MK------", "MKTAYIAK"]
    bad = _fake_tool(tmp_path, "print('>s0'); print('WWW'); print('>s1'); print('WWW')\n")
    with pytest.raises(ValueError, match="not sequence 0 with gaps"):
        clustalo_align(["MKT", "MKA"], executable=bad)
    with pytest.raises(RuntimeError, match="not installed"):
        clustalo_align(["MKT", "MKA"], executable=str(tmp_path / "absent"))


@pytest.mark.skipif(shutil.which("clustalo") is None, reason="Debian clustalo not installed")
def test_real_clustalo_aligns_in_input_order() -> None:
    seqs = ["MKTAYIAKQR", "MKTAYAKQR", "MKTWAYIAKQRLL", "MKAYIAKR"]
    rows = clustalo_align(seqs)
    check_alignment(seqs, rows)


def test_msa_batch_drops_empty_columns_and_pads_with_gaps() -> None:
    a = encode(["MK-T", "MKAT", "MK-T"])  # column 2 is a gap in rows 0 and 2
    b = encode(["AC", "AD", "AE"])
    target, ctx = msa_batch([a, b], d=0)
    assert ctx is None and target.tolist()[1] == [*encode(["AC"])[0].tolist(), GAP_ID]
    assert target.shape == (2, 3)  # a loses its empty column at d=0: "MKT"; b padded
    target, ctx = msa_batch([a, b], d=1)
    assert target.shape == (2, 4) and ctx is not None and ctx.shape == (2, 1, 4)
    assert ctx[0, 0].tolist() == encode(["MKAT"])[0].tolist()


def test_pad_tokens_and_pooled_classifier_ignore_length() -> None:
    tok = pad_tokens(["MKT", "MKTAYI"])
    assert tok.shape == (2, 6) and (tok[0, 3:] == GAP_ID).all()
    clf = EnzymeSubstrateClassifier(length=None, mol_dim=4)
    mol = np.zeros((1, 4), dtype=np.float32)
    import torch

    with torch.no_grad():
        one = clf(torch.as_tensor(pad_tokens(["MKTAY"])), torch.as_tensor(mol))
        padded = clf(torch.as_tensor(encode(["MKTAY----"])), torch.as_tensor(mol))
        other = clf(torch.as_tensor(pad_tokens(["WWCAY"])), torch.as_tensor(mol))
    # trailing gaps are empty positions: the score is that of the unpadded sequence
    assert float(one) == pytest.approx(float(padded), abs=1e-6)
    assert abs(float(one) - float(other)) > 1e-6  # and the residues matter


def test_per_query_msa_fit_and_generate_from_files(tmp_path: Path) -> None:
    """The whole path on small files: a FASTA of unaligned enzymes of different lengths and a
    reaction table; the aligner is called once per query with the retrieved sequences; the
    outputs have the gaps deleted, so their lengths vary and never exceed the width."""
    rng = np.random.default_rng(0)
    base = "".join(rng.choice(list(AA), 14))
    seqs = {f"e{i}": base[: 9 + i % 5] + "".join(rng.choice(list(AA), i % 3)) for i in range(8)}
    fa = tmp_path / "enzymes.fasta"
    fa.write_text("".join(f">{k} enzyme\n{v}\n" for k, v in seqs.items()))
    smiles = ["CCO", "CCCO", "c1ccccc1O", "CC(=O)O", "NCCC(=O)O", "c1ccccc1Cl", "CCN", "OCC(O)CO"]
    tab = tmp_path / "reactions.csv"
    tab.write_text(
        "substrate_smiles,enzyme_id\n"
        + "".join(f"{s},e{i}\n" for i, s in enumerate(smiles))
        + "CCCCO,e0\nCCCCO,e1\n"  # e0 and e1 also act on a similar substrate
    )
    records = read_fasta(fa)
    pairs_named = read_reaction_table(tab)
    subs = sorted({s for s, _ in pairs_named})
    ids = sorted(records)
    index = [(subs.index(s), ids.index(e)) for s, e in pairs_named]
    calls: list[list[str]] = []

    def recording(rows: list[str]) -> list[str]:
        calls.append(list(rows))
        return center_star_align(rows)

    rag = EnzymeRAG(
        d=2, depths=(0, 2), aligner=recording, dim=16, heads=2, layers=1,
        generator_steps=4, classifier_steps=3, batch_size=4,
    ).fit(subs, [records[i] for i in ids], index)  # fmt: skip
    # training: one alignment per distinct (target, context), target first, never its own
    # enzymes in the context
    enz_of = {s: {e for t, e in index if t == s} for s in range(len(subs))}
    assert calls and all(len(c) == 3 for c in calls)
    for s, _ in index:
        assert not set(rag.contexts_[s, :2].tolist()) & enz_of[s]
    msas = query_msas([records[i] for i in ids], np.asarray(index), rag.contexts_[:, :2], recording)
    assert len(msas) == len(index) and all(m.shape[0] == 3 for m in msas)
    for (_, e), m in zip(index, msas, strict=True):  # the target row is on top
        assert "".join("ACDEFGHIKLMNPQRSTVWY-"[t] for t in m[0]).replace("-", "") == records[ids[e]]
    calls.clear()
    out = rag.generate("CCCCCO", n=6)
    assert len(calls) == 1 and len(calls[0]) == 2  # one MSA of the 2 retrieved enzymes
    width = len(center_star_align(calls[0])[0])
    assert all(len(x) <= width for x in out)
    assert all(set(x) <= set(AA) for x in out)
    tok = rag.generate_tokens("CCCCCO", n=6)
    assert tok.shape == (6, width)
    assert len({len(x) for x in rag.generate("CCCCCO", n=20, seed=3)}) > 1  # variable length
    assert rag.generate_tokens(None, n=2, d=0, length=7).shape == (2, 7)
    # several positions unmasked per step: the same call, another (valid) sample of that width
    fast = rag.generate_tokens("CCCCCO", n=6, positions_per_step=3)
    assert fast.shape == (6, width) and fast.min() >= 0
    with pytest.raises(ValueError, match="positions_per_step"):
        rag.generate_tokens("CCCCCO", n=2, positions_per_step=0)


def test_aligner_argument_is_checked() -> None:
    with pytest.raises(ValueError, match="aligner"):
        EnzymeRAG(aligner="clustalw").fit(["CCO"], ["MKT"], [(0, 0)])
    with pytest.raises(TypeError, match="unaligned strings"):
        EnzymeRAG(aligner=center_star_align).fit(["CCO"], np.zeros((1, 3), int), [(0, 0)])


def test_default_aligner_falls_back_without_the_debian_tools(monkeypatch) -> None:
    from icml25.enzyme_rag import default_aligner

    monkeypatch.setenv("PATH", os.devnull)
    assert default_aligner() is center_star_align
