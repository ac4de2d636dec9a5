"""enzyme_rag, issue 52: the real-data join (EVODEX reactions with EC numbers and UniProt
accessions, sequences from a BLAST database through blastdbcmd or from a FASTA) and the
zero-shot split, on small files written in the test."""

from __future__ import annotations

import shutil
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rdkit")

from icml25.enzyme_rag.chem import bulk_tanimoto, morgan_fingerprints, pack_fingerprints
from icml25.enzyme_rag.data import (
    blastdbcmd_sequences,
    join_sequences,
    read_evodex_reactions,
    uniprot_accession,
    zero_shot_split,
)
from icml25.enzyme_rag.sequences import read_fasta

NADH = (
    "NC(=O)C1=CN([C@@H]2O[C@H](COP(=O)(O)OP(=O)(O)OC[C@H]3O[C@@H](n4cnc5c(N)ncnc54)[C@H](O)"
    "[C@@H]3O)[C@@H](O)[C@H]2O)C=CC1"
)
HEADER = (
    "rxn_idx,mapped,unmapped,orig_rxn_text,rule,rule_id,source,steps,quality,natural,"
    "organism,protein_refs,protein_db,ec_num\n"
)


def _row(i: int, rxn: str, refs: str, db: str, ec: str, natural: str = "True") -> str:
    return f'{i},x,"{rxn}",t,r,0,direct,single,1.0,{natural},org,"{refs}",{db},{ec}\n'


def _write_evodex(path: Path) -> None:
    path.write_text(
        HEADER
        # acetaldehyde + NADH + H+ -> ethanol + NAD+ (NADH and H+ are currency metabolites)
        + _row(0, f"CC=O.{NADH}.[H+]>>CCO", "['P00330']", "uniprot", "1.1.1.1")
        # the same enzyme on propanal, and a second enzyme on it
        + _row(1, f"CCC=O.{NADH}.[H+]>>CCCO", "['P00330', 'Q9XYZ1']", "swissprot", "1.1.1.1")
        # water + ethyl acetate: water dropped; substrate = the ester
        + _row(2, "O.CCOC(C)=O>>CCO.CC(=O)O", "['P12345']", "uniprot", "3.1.1.1")
        # no accession (EC only): a reaction, but no pair
        + _row(3, "O.CCOC(=O)CC>>CCO.CCC(=O)O", "[]", "", "3.1.1.1", "False")
        # only currency metabolites: skipped
        + _row(4, "O.[H+]>>O", "['P99999']", "uniprot", "9.9.9.9")
        # a genbank reference is not a UniProt accession
        + _row(5, "CCCCO.O=O>>CCCC=O.OO", "['AAB12345']", "genbank", "1.1.3.13")
    )


def test_read_evodex_drops_currency_and_keeps_ec_and_accessions(tmp_path: Path) -> None:
    path = tmp_path / "selected_reactions.csv"
    _write_evodex(path)
    rx = read_evodex_reactions(path)
    assert [r.substrate for r in rx] == ["CC=O", "CCC=O", "CCOC(C)=O", "CCOC(=O)CC", "CCCCO"]
    assert [r.ec for r in rx] == ["1.1.1.1", "1.1.1.1", "3.1.1.1", "3.1.1.1", "1.1.3.13"]
    assert rx[1].accessions == ("P00330", "Q9XYZ1")
    assert rx[3].accessions == () and rx[4].accessions == ()  # none / not UniProt
    assert all("O" != s and "[H+]" not in s for r in rx for s in r.reactants)
    assert len(read_evodex_reactions(path, natural_only=True)) == 4
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not an EVODEX reaction table"):
        read_evodex_reactions(bad)


def test_substrate_is_the_least_common_reactant(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    # the thiol R-SH occurs in every row (a co-substrate); each row's own partner is rarer
    path.write_text(
        HEADER
        + _row(0, "CCS.CC(=O)Cl>>x", "['A1']", "uniprot", "2.3.1.1")
        + _row(1, "CCS.CCC(=O)Cl>>x", "['A1']", "uniprot", "2.3.1.1")
        + _row(2, "CCS.CCCC(=O)Cl>>x", "['A2']", "uniprot", "2.3.1.1")
    )
    assert [r.substrate for r in read_evodex_reactions(path)] == [
        "CC(=O)Cl",
        "CCC(=O)Cl",
        "CCCC(=O)Cl",
    ]


def test_join_with_a_fasta_and_uniprot_headers(tmp_path: Path) -> None:
    path = tmp_path / "selected_reactions.csv"
    _write_evodex(path)
    fa = tmp_path / "sprot.fasta"
    long = "M" + "ACDEFGHIKLMNPQRSTVWY" * 3
    fa.write_text(
        f">sp|P00330|ADH1_YEAST Alcohol dehydrogenase 1\n{long}\n"
        f">sp|Q9XYZ1|ADH_X other\n{long[::-1]}\n"
        f">sp|P12345|EST_X esterase\nMKT\n"  # too short: dropped
    )
    seqs = {uniprot_accession(k): v for k, v in read_fasta(fa).items()}
    data = join_sequences(read_evodex_reactions(path), seqs)
    assert data.smiles == ["CC=O", "CCC=O"]
    assert data.ids == ["P00330", "Q9XYZ1"]
    assert data.pairs.tolist() == [[0, 0], [1, 0], [1, 1]]
    assert data.ec_of_substrate == [("1.1.1.1",), ("1.1.1.1",)]
    assert data.enzymes_of(1).tolist() == [0, 1]
    assert uniprot_accession("tr|A0A0|X_Y") == "A0A0" and uniprot_accession("P1.2") == "P1"
    with pytest.raises(ValueError, match="no reaction accession"):
        join_sequences(read_evodex_reactions(path), {})


def test_blastdbcmd_hook_reads_titles_and_sequences(tmp_path: Path) -> None:
    exe = tmp_path / "blastdbcmd"
    # a stand-in that prints a database the way metastudent-data's do: ACCESSION|GO terms
    exe.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "assert sys.argv[sys.argv.index('-entry') + 1] == 'all'\n"
        "db = sys.argv[sys.argv.index('-db') + 1]\n"
        "recs = {'a': [('P00330|GO:0004022', 'MSIPETQK'), ('Q9XYZ1|GO:1', 'MKXT')],\n"
        "        'b': [('sp|P12345|EST_X esterase', 'MKTAY'), ('P00330|GO:2', 'WWWW')]}\n"
        "if db not in recs: sys.exit('BLAST Database error: No alias or index file found')\n"
        "for t, s in recs[db]: print(t + '\\t' + s)\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    wanted = ["P00330", "Q9XYZ1", "P12345", "NOPE"]
    got = blastdbcmd_sequences(["a", "b"], wanted, executable=str(exe))
    # X is not one of the 20 amino acids: left out; the first database wins for P00330
    assert got == {"P00330": "MSIPETQK", "P12345": "MKTAY"}
    with pytest.raises(RuntimeError, match="blastdbcmd failed on c"):
        blastdbcmd_sequences("c", ["P1"], executable=str(exe))
    with pytest.raises(RuntimeError, match="not installed"):
        blastdbcmd_sequences("db", ["P1"], executable=str(tmp_path / "absent"))


METASTUDENT = Path("/usr/share/metastudent-data/dataset_201401/MFO/goasp.fasta")


@pytest.mark.skipif(
    not (METASTUDENT.with_suffix(".fasta.pin").exists() and shutil.which("blastdbcmd")),
    reason="Debian metastudent-data / ncbi-blast+ not installed",
)
def test_real_swissprot_blast_database() -> None:
    got = blastdbcmd_sequences(METASTUDENT, ["B0RED7"])
    assert set(got) == {"B0RED7"} and len(got["B0RED7"]) == 263


def test_zero_shot_split_holds_out_substrates_similar_ones_and_shared_enzymes() -> None:
    from icml25.enzyme_rag.data import EnzymeData

    smiles = ["CCCCCCO", "CCCCCCCO", "c1ccccc1O", "c1ccccc1N", "CC(=O)O", "OCC(O)CO", "CCN", "CCS"]
    pairs = np.array([[i, i] for i in range(8)] + [[1, 0], [3, 9], [6, 9]])
    data = EnzymeData(
        smiles=smiles,
        ids=[f"e{i}" for i in range(10)],
        sequences=["M"] * 10,
        pairs=pairs,
        ec_of_substrate=[("1",)] * 8,
    )
    for seed in range(6):
        sp = zero_shot_split(data, test_fraction=0.25, max_tanimoto=0.5, seed=seed)
        assert not set(sp.train) & set(sp.test)
        fps = pack_fingerprints(morgan_fingerprints(smiles))
        if len(sp.test) and len(sp.train):
            sim = bulk_tanimoto(fps[sp.train], fps[sp.test])
            assert sim.max() < 0.5 and sp.max_test_train_tanimoto == pytest.approx(sim.max())
        # no held-out pair's enzyme acts on a training substrate
        assert not set(sp.test_pairs[:, 1]) & set(sp.train_pairs[:, 1])
        assert set(sp.test_pairs[:, 0]) == set(sp.test)
