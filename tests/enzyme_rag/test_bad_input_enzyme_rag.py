"""enzyme_rag: bad input at every public entry point gets a clear error."""

# not entry points: ALPHABET, AMINO_ACIDS, OADMLoss, Retrieval, TrainHistory, Aligner

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("rdkit")

from icml25.enzyme_rag import (
    AxialMSADiffusion,
    EnzymeRAG,
    EnzymeSubstrateClassifier,
    SubstrateRetriever,
    anchor_align,
    bulk_tanimoto,
    center_star_align,
    check_alignment,
    clustalo_align,
    decode,
    default_aligner,
    diversity,
    encode,
    evaluate,
    identity,
    mafft_align,
    max_identity,
    molecule_features,
    morgan_fingerprints,
    msa_batch,
    oadm_loss,
    pack_fingerprints,
    pad_tokens,
    parse_smiles,
    query_msas,
    read_fasta,
    read_reaction_table,
    retrieval_table,
    sample_oadm,
    train_classifier,
    train_generator,
)

SMILES = ["CCO", "CCN", "CCC"]


def _model() -> AxialMSADiffusion:
    return AxialMSADiffusion(mol_dim=4, dim=8, heads=2, layers=1, max_length=8)


def test_invalid_smiles() -> None:
    with pytest.raises(ValueError, match=r"smiles\[1\] is not a valid SMILES"):
        parse_smiles(["CCO", "C1CC"])
    with pytest.raises(ValueError, match="at least one SMILES"):
        parse_smiles([])
    with pytest.raises(ValueError, match="one string"):
        parse_smiles("CCO")
    with pytest.raises(ValueError, match="not a valid SMILES"):
        morgan_fingerprints(["xyz"])
    with pytest.raises(ValueError, match="n_bits must be a multiple of 64"):
        morgan_fingerprints(["CCO"], n_bits=100)
    with pytest.raises(ValueError, match="radius"):
        molecule_features(["CCO"], radius=-1)
    with pytest.raises(ValueError, match="not a valid SMILES"):
        molecule_features(["CC(("])


def test_fingerprint_arrays() -> None:
    with pytest.raises(ValueError, match="fps must be a boolean array"):
        pack_fingerprints(np.zeros((2, 100), dtype=bool))
    with pytest.raises(ValueError, match="library must be a non-empty"):
        bulk_tanimoto(np.zeros(64, dtype=bool), np.zeros((0, 64), dtype=bool))
    with pytest.raises(ValueError, match="query must have 64 columns"):
        bulk_tanimoto(np.zeros(128, dtype=bool), np.zeros((2, 64), dtype=bool))
    with pytest.raises(ValueError, match="both be boolean or both packed"):
        bulk_tanimoto(np.zeros(64, dtype=bool), np.zeros((2, 1), dtype=np.uint64))


def test_non_amino_acid_letters(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="non-amino-acid letters 'BZ'"):
        encode(["ACBZ"])
    with pytest.raises(ValueError, match="row 0 has 3, row 1 has 4"):
        encode(["ACD", "ACDE"])
    with pytest.raises(ValueError, match="tokens must be a 2-D array"):
        decode(np.array([[0, 25]]))
    with pytest.raises(ValueError, match="non-amino-acid"):
        anchor_align(["MKT", "MK1"])
    with pytest.raises(ValueError, match="at least one sequence"):
        anchor_align([])
    with pytest.raises(ValueError, match="aligned rows of one length"):
        identity(np.array([0, 1]), np.array([0, 1, 2]))
    fa = tmp_path / "bad.fasta"
    fa.write_text(">e1\nMKTXJ\n")
    with pytest.raises(ValueError, match="non-amino-acid"):
        read_fasta(fa)
    fa.write_text("MKT\n")
    with pytest.raises(ValueError, match="before the first '>' header"):
        read_fasta(fa)
    tab = tmp_path / "r.csv"
    tab.write_text("smiles,enzyme\nCCO,e1\n")
    with pytest.raises(ValueError, match="must have a column 'substrate_smiles'"):
        read_reaction_table(tab)


def test_empty_retrieval_set() -> None:
    r = SubstrateRetriever().fit(["CCO"], [[0]])
    with pytest.raises(ValueError, match="retrieval set is empty"):
        r.retrieve("CCN", d=1, exclude=[0])
    with pytest.raises(ValueError, match="d must be an integer >= 1"):
        r.retrieve("CCN", d=0)
    with pytest.raises(ValueError, match=r"enzymes\[0\] must list at least one enzyme"):
        SubstrateRetriever().fit(["CCO"], [[]])
    with pytest.raises(RuntimeError, match="not fitted"):
        SubstrateRetriever().retrieve("CCO", d=1)
    with pytest.raises(ValueError, match=r"only 0 enzymes|retrieval set is empty"):
        retrieval_table(r, d=1)


def test_models_reject_bad_shapes() -> None:
    with pytest.raises(ValueError, match="dim must be a multiple of heads"):
        AxialMSADiffusion(mol_dim=4, dim=10, heads=3)
    with pytest.raises(ValueError, match="mol_dim must be an integer >= 1"):
        EnzymeSubstrateClassifier(length=4, mol_dim=0)
    m = _model()
    with pytest.raises(ValueError, match="query must hold token ids"):
        m(torch.full((1, 4), 30))
    with pytest.raises(ValueError, match="context must be"):
        m(torch.zeros(1, 4, dtype=torch.long), torch.zeros(1, 2, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="mol must have shape"):
        m(torch.zeros(1, 4, dtype=torch.long), None, torch.zeros(1, 3))
    with pytest.raises(ValueError, match="weighting must be one of"):
        oadm_loss(m, torch.zeros(2, 4, dtype=torch.long), weighting="flat")
    with pytest.raises(ValueError, match="target must be"):
        oadm_loss(m, torch.zeros(2, 4))
    with pytest.raises(ValueError, match="positions_per_step must be an integer >= 1"):
        sample_oadm(m, length=4, n=1, positions_per_step=0)
    with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
        sample_oadm(m, length=4, n=1, temperature=0.0)


def test_training_arguments() -> None:
    seqs = np.zeros((3, 4), dtype=np.int64)
    mols = np.zeros((3, 4))
    pairs = np.array([[0, 0], [1, 1], [2, 2]])
    clf = EnzymeSubstrateClassifier(length=4, mol_dim=4)
    with pytest.raises(ValueError, match="pairs must be a non-empty"):
        train_classifier(clf, sequences=seqs, mol_features=mols, pairs=np.zeros((0, 2)))
    with pytest.raises(ValueError, match="lr must be a finite number > 0"):
        train_classifier(clf, sequences=seqs, mol_features=mols, pairs=pairs, lr=-1.0)
    with pytest.raises(ValueError, match="mol_features must be finite"):
        train_classifier(clf, sequences=seqs, mol_features=mols * np.nan, pairs=pairs)
    ctx = np.zeros((3, 1), dtype=np.int64)
    with pytest.raises(ValueError, match="guidance_weight must be a finite number >= 0"):
        train_generator(
            _model(),
            sequences=seqs,
            mol_features=mols,
            pairs=pairs,
            contexts=ctx,
            depths=(1,),
            guidance_weight=-1.0,
        )
    with pytest.raises(ValueError, match=r"depths\[i\] must be an integer"):
        train_generator(
            _model(), sequences=seqs, mol_features=mols, pairs=pairs, contexts=ctx, depths=(5,)
        )
    with pytest.raises(ValueError, match=r"pairs\[:, 1\] must be enzyme indices"):
        train_generator(
            _model(),
            sequences=seqs,
            mol_features=mols,
            pairs=np.array([[0, 7]]),
            contexts=ctx,
            depths=(1,),
        )


def test_enzyme_rag_inputs() -> None:
    with pytest.raises(ValueError, match="non-amino-acid"):
        EnzymeRAG().fit(SMILES, ["ACDE", "ACD1", "ACDF"], [(0, 0), (1, 1), (2, 2)])
    with pytest.raises(ValueError, match="not a valid SMILES"):
        EnzymeRAG(generator_steps=1, classifier_steps=1).fit(
            ["CCO", "C(", "CC"], ["ACDE", "ACDG", "ACDF"], [(0, 0), (1, 1), (2, 2)]
        )
    with pytest.raises(ValueError, match="substrate 2 has none"):
        EnzymeRAG().fit(SMILES, ["ACDE", "ACDG"], [(0, 0), (1, 1)])
    with pytest.raises(RuntimeError, match="not fitted"):
        EnzymeRAG().generate("CCO")
    # refused at fit under the constructor's own name, before any training
    with pytest.raises(ValueError, match=r"classifier_batch_size must be .*>= 2.*got 1"):
        EnzymeRAG(classifier_batch_size=1).fit(
            SMILES, ["ACDE", "ACDG", "ACDF"], [(0, 0), (1, 1), (2, 2)]
        )


def test_metrics_inputs() -> None:
    with pytest.raises(ValueError, match="at least 2 sequences"):
        diversity(["ACDE"])
    with pytest.raises(ValueError, match="aligned to one length"):
        max_identity(["ACDE"], ["ACD"])
    with pytest.raises(TypeError, match="evaluator must be callable"):
        evaluate(None, ["ACDE"], "CCO")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="evaluator must return 1 finite scores"):
        evaluate(lambda x, s: np.array([np.nan]), ["ACDE"], "CCO")


def test_alignment_inputs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one sequence"):
        center_star_align([])
    with pytest.raises(ValueError, match=r"sequences\[0\] must hold only"):
        center_star_align(["MK*"])
    with pytest.raises(ValueError, match="must return 2 rows, got 1"):
        check_alignment(["MK", "MA"], ["MK"])
    with pytest.raises(ValueError, match="rows of one length"):
        check_alignment(["MK", "MAT"], ["MK", "MAT"])
    with pytest.raises(ValueError, match="row 1 is not sequence 1"):
        check_alignment(["MK", "MA"], ["MK", "MW"])
    with pytest.raises(RuntimeError, match="clustalo is not installed"):
        clustalo_align(["MKT", "MKA"], executable=str(tmp_path / "absent"))
    with pytest.raises(RuntimeError, match="mafft is not installed"):
        mafft_align(["MKT", "MKA"], executable=str(tmp_path / "absent"))
    assert callable(default_aligner())


def test_msa_helpers_inputs() -> None:
    with pytest.raises(ValueError, match="at least one sequence"):
        pad_tokens([])
    with pytest.raises(ValueError, match=r"sequences\[1\] must hold only"):
        pad_tokens(["MK", "M1"])
    with pytest.raises(ValueError, match="aligner must return rows of one length"):
        query_msas(["MKT", "MA"], np.array([[0, 0]]), np.array([[1]]), lambda rows: list(rows))
    with pytest.raises(ValueError, match="not sequence 0 with gaps"):
        query_msas(["MKT", "MA"], np.array([[0, 0]]), np.array([[1]]), lambda r: ["MAT", "MK-"])
    a = encode(["MK", "MA"])
    with pytest.raises(ValueError, match=r"msas\[0\] must be \(>= 1 \+ d = 6, W\)"):
        msa_batch([a], d=5)  # more rows asked than the alignment holds
    with pytest.raises(ValueError, match="at least one alignment"):
        msa_batch([], d=0)
    with pytest.raises(ValueError, match="msas must hold one alignment per pair"):
        train_generator(
            _model(),
            sequences=encode(["MKTA", "MKTW"]),
            mol_features=np.zeros((1, 4)),
            pairs=np.array([[0, 0]]),
            contexts=np.array([[1]]),
            depths=(1,),
            msas=[],
            steps=1,
        )


def test_data_loader_inputs(tmp_path: Path) -> None:
    from icml25.enzyme_rag.data import (
        EnzymeData,
        join_sequences,
        read_evodex_reactions,
        zero_shot_split,
    )

    bad = tmp_path / "r.csv"
    bad.write_text("unmapped,ec_num,protein_refs,protein_db\nCCO,1.1.1.1,[],\n")
    with pytest.raises(ValueError, match="unmapped must be reaction SMILES"):
        read_evodex_reactions(bad)
    with pytest.raises(ValueError, match="min_heavy_atoms"):
        read_evodex_reactions(bad, min_heavy_atoms=0)
    with pytest.raises(ValueError, match="no reaction accession"):
        join_sequences([], {})
    one = EnzymeData(["CCO"], ["e"], ["MKT"], np.array([[0, 0]]), [("1",)])
    with pytest.raises(ValueError, match="at least 2 substrates"):
        zero_shot_split(one)
    with pytest.raises(ValueError, match="test_fraction"):
        zero_shot_split(one, test_fraction=1.5)
