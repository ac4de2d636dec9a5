"""The reproduction on real enzymes (issue 52): selection, fallback, pieces, and the whole path
on small files written here (skipped where BLAST, Clustal Omega or pyhmmer are absent)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from icml25.core.claims import gate_key, null_key
from icml25.core.runner import RunContext
from icml25.enzyme_rag.data import EnzymeData
from icml25.enzyme_rag.experiments_real import (
    RealConfig,
    auc_of_rows,
    learned_ratio,
    real_measurements,
)
from icml25.enzyme_rag.experiments_real_data import (
    BLASTDB_ENV,
    EVODEX_ENV,
    REAL_ENV,
    caching_aligner,
    ec_profile_members,
    real_selected,
    restrict_length,
)
from icml25.enzyme_rag.figures import REAL_ARMS, real_arms
from icml25.enzyme_rag.real_claims import REAL_CLAIMS

pytest.importorskip("rdkit")

TINY = RealConfig(
    max_length=200,
    n_train=0,
    n_test=3,
    d=2,
    dim=8,
    layers=1,
    gen_steps=4,
    clf_steps=4,
    batch=4,
    samples=2,
    positions_per_step=16,
)


def _ctx(tmp_path: Path, budget: str = "tiny") -> RunContext:
    return RunContext(budget=budget, seeds=(0,), out_dir=tmp_path)  # type: ignore[arg-type]


def test_selection_by_budget_and_option(monkeypatch):
    monkeypatch.delenv(REAL_ENV, raising=False)
    assert real_selected("full") and not real_selected("quick") and not real_selected("tiny")
    monkeypatch.setenv(REAL_ENV, "1")
    assert real_selected("tiny")
    monkeypatch.setenv(REAL_ENV, "0")
    assert not real_selected("full")
    monkeypatch.setenv(REAL_ENV, "yes")
    with pytest.raises(ValueError, match=REAL_ENV):
        real_selected("full")


@pytest.mark.parametrize("why", ["not selected", "missing data"])
def test_fallback_makes_every_real_claim_out_of_scale(monkeypatch, tmp_path, why):
    if why == "not selected":
        monkeypatch.setenv(REAL_ENV, "0")
    else:  # forced: the data path points nowhere
        monkeypatch.setenv(REAL_ENV, "1")
        monkeypatch.setenv(EVODEX_ENV, str(tmp_path / "absent.csv"))
    ctx = _ctx(tmp_path)
    out = real_measurements(ctx, TINY)
    assert any("not run" in n for n in ctx.notes)
    if why == "missing data":
        assert any("absent.csv" in n for n in ctx.notes)
    judged = 0
    for c in REAL_CLAIMS:
        if c.rule is None or c.gate is None:  # unmeasured
            assert c.id not in out
        j = c.judge(out.get(c.id), out.get(null_key(c.id)), out.get(gate_key(c.id)))
        assert j.verdict == "out of scale", (c.id, j)
        judged += c.gate is not None
    assert judged >= 4


def test_real_figure_draws_every_arm_of_every_seed(tmp_path):
    rng = np.random.default_rng(0)
    runs = [{"seed": s, "hmm": {a: rng.normal(size=5) for a in REAL_ARMS}} for s in (0, 1)]
    ctx = _ctx(tmp_path)
    ctx.save_figure(real_arms(runs), "enzyme_rag_real_arms")
    png = tmp_path / "enzyme_rag_real_arms.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ctx.figures == [f"{tmp_path.name}/enzyme_rag_real_arms.png"]
    with pytest.raises(KeyError, match="copy"):  # a run without an arm is refused loudly
        real_arms([{"seed": 0, "hmm": {"natural": np.ones(2)}}])


def test_ec_profile_members_full_ec_then_three_levels():
    ecs = [["1.1.1.1"], ["1.1.1.1"], ["1.1.1.1", "2.7.1.1"], ["1.1.1.2"], ["1.1.1.3"], ["3.1.1.1"]]
    # full EC: enzymes 0, 1, 2; leaving out the target's own enzyme 0 leaves 1 and 2
    assert ec_profile_members(["1.1.1.1"], ecs, [0]).tolist() == [1, 2]
    # only one other enzyme with 1.1.1.2's full EC is absent: fall back to 1.1.1.*
    assert ec_profile_members(["1.1.1.2"], ecs, [3]).tolist() == [0, 1, 2, 4]
    # nothing shares 3.1.1: empty
    assert ec_profile_members(["3.1.1.1"], ecs, [5]).size == 0
    # the limit keeps a subset of the members
    got = ec_profile_members(["1.1.1.1"], ecs, [], limit=2)
    assert len(got) == 2 and set(got) <= {0, 1, 2}


def test_restrict_length_reindexes_pairs():
    data = EnzymeData(
        smiles=["CCO", "CCCO", "CCN"],
        ids=["A", "B", "C"],
        sequences=["M" * 60, "M" * 300, "K" * 80],
        pairs=np.array([[0, 0], [0, 1], [1, 1], [2, 2]]),
        ec_of_substrate=[("1.1.1.1",), ("1.1.1.1",), ("2.6.1.1",)],
    )
    r = restrict_length(data, 100)
    assert r.smiles == ["CCO", "CCN"] and r.ids == ["A", "C"]
    assert [(r.smiles[s], r.ids[e]) for s, e in r.pairs] == [("CCO", "A"), ("CCN", "C")]
    with pytest.raises(ValueError, match="no enzyme"):
        restrict_length(data, 10)


def test_auc_of_rows_closed_forms():
    rows = np.array([[0.9, 1], [0.8, 1], [0.1, 0], [0.2, 0]])
    assert auc_of_rows(rows) == 1.0
    rows[:, 1] = 1 - rows[:, 1]
    assert auc_of_rows(rows) == 0.0
    assert auc_of_rows(np.array([[0.5, 1], [0.5, 0]])) == 0.5
    assert np.isnan(auc_of_rows(np.array([[0.5, 1], [0.4, 1]])))


def test_learned_ratio_fails_without_a_positive_natural_score():
    assert learned_ratio(50.0, 100.0) == 0.5
    assert np.isnan(learned_ratio(-1.1, -2.3))  # not 0.48: both are below any family
    assert np.isnan(learned_ratio(3.0, 0.0))


def test_caching_aligner_aligns_each_input_once():
    calls = []

    def aligner(seqs):
        calls.append(tuple(seqs))
        return list(seqs)

    run = caching_aligner(aligner)
    assert run(["MK", "MR"]) == ["MK", "MR"]
    assert run(["MK", "MR"]) == ["MK", "MR"]
    run(["MR", "MK"])
    assert calls == [("MK", "MR"), ("MR", "MK")]


def test_caching_aligner_on_disk_is_shared_between_instances(tmp_path):
    calls = []

    def aligner(seqs):
        calls.append(tuple(seqs))
        return [s + "-" for s in seqs]

    first = caching_aligner(aligner, tmp_path / "msa")
    assert first(["MK", "MR"]) == ["MK-", "MR-"]
    second = caching_aligner(aligner, tmp_path / "msa")  # another process, a later run
    assert second(["MK", "MR"]) == ["MK-", "MR-"]
    assert calls == [("MK", "MR")]
    assert len(list((tmp_path / "msa").glob("msa-*.json"))) == 1
    # a file whose stored input is not this input (a hash collision, a hand edit) is not used
    (f,) = (tmp_path / "msa").glob("msa-*.json")
    f.write_text('{"input": ["XX"], "rows": ["XX"]}')
    assert caching_aligner(aligner, tmp_path / "msa")(["MK", "MR"]) == ["MK-", "MR-"]
    assert len(calls) == 2


def test_a_seed_is_saved_and_reused_only_for_the_same_config_and_data(monkeypatch, tmp_path):
    from types import SimpleNamespace

    from icml25.enzyme_rag import experiments_real as real

    calls = []

    def fake_seed(cfg, st, seed, ctx):
        calls.append(seed)
        rng = np.random.default_rng(seed)
        return {
            "seed": seed,
            "hmm": {"full": rng.normal(size=3), "copy": rng.normal(size=3)},
            "ident": {"full": rng.random(3)},
            "novelty": rng.random(5),
            "novelty_null": np.ones(5),
            "diversity": float("nan"),
            "auc_rows": rng.random((4, 2)),
            "auc_rows_null": rng.random((4, 2)),
            "lengths": 12.5,
            "train_cpu_s": 1.0,
            "cpu_s": 2.0,
            "loss_end": 2.9,
        }

    monkeypatch.setattr(real, "_run_seed", fake_seed)
    ctx = _ctx(tmp_path)
    st = SimpleNamespace(stats="join: 10 substrates")
    first = real._checkpointed_seed(TINY, st, 3, ctx)
    again = real._checkpointed_seed(TINY, st, 3, ctx)
    assert calls == [3]
    for k, v in first.items():
        if isinstance(v, dict):
            for a in v:
                np.testing.assert_array_equal(again[k][a], v[a])
        else:
            np.testing.assert_array_equal(again[k], v)
    real._checkpointed_seed(TINY, SimpleNamespace(stats="join: 11 substrates"), 3, ctx)
    bigger = replace(TINY, max_length=300)
    real._checkpointed_seed(bigger, SimpleNamespace(stats="join: 11 substrates"), 3, ctx)
    assert calls == [3, 3, 3]


def test_one_seed_says_what_is_missing(monkeypatch, tmp_path):
    from icml25.enzyme_rag.reproduce import one_seed

    monkeypatch.setenv(EVODEX_ENV, str(tmp_path / "absent.csv"))
    with pytest.raises(RuntimeError, match=r"absent\.csv"):
        one_seed(_ctx(tmp_path), 0)
    from icml25.cli import main  # what `icml25 seed enzyme_rag 0` calls

    with pytest.raises(RuntimeError, match=r"absent\.csv"):
        main(["seed", "enzyme_rag", "0", "--budget", "tiny", "--out", str(tmp_path)])


SMILES = [
    "CCO", "CCCO", "CCCCO", "CC(C)O", "OCCO", "CC(=O)O", "CCC(=O)O", "CCCC(=O)O",
    "OC(=O)CC(=O)O", "NCC(=O)O", "c1ccccc1O", "Cc1ccccc1O", "Oc1ccc(Cl)cc1", "Nc1ccccc1",
    "CCN", "CCCN", "NCCN", "CC(N)C", "C1CCCCC1", "C1CCOC1", "CCOCC", "CC(=O)C", "CCC(=O)C",
    "O=CC", "O=CCC", "c1ccncc1", "c1ccc2ccccc2c1", "CSC", "CCS", "ClCCCl",
]  # fmt: skip
EC = ["1.1.1.1", "3.1.1.1", "2.6.1.1", "4.2.1.1", "1.14.13.1"]


def _write_data(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    aa = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    fams = [rng.choice(aa, size=70) for _ in EC]
    rows, fasta = ["unmapped,ec_num,protein_refs,protein_db,natural"], []
    for i, smi in enumerate(SMILES):
        f = i % len(EC)
        seq = fams[f].copy()
        mut = rng.random(70) < 0.15
        seq[mut] = rng.choice(aa, size=int(mut.sum()))
        acc = f"P{i:05d}"
        fasta.append(f">{acc}|GO:0003824\n{''.join(seq)}\n")
        rows.append(f"{smi}.O>>{smi},{EC[f]},\"['{acc}']\",uniprot,True")
    csv = tmp_path / "selected_reactions.csv"
    csv.write_text("\n".join(rows) + "\n")
    fa = tmp_path / "db" / "goasp.fasta"
    fa.parent.mkdir()
    fa.write_text("".join(fasta))
    subprocess.run(
        ["makeblastdb", "-in", str(fa), "-dbtype", "prot"], check=True, capture_output=True
    )
    return csv, fa


def test_real_path_end_to_end_on_small_files(monkeypatch, tmp_path):
    for tool in ("makeblastdb", "blastdbcmd", "blastp", "clustalo"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed")
    pytest.importorskip("pyhmmer")
    csv, db = _write_data(tmp_path)
    monkeypatch.setenv(REAL_ENV, "1")
    monkeypatch.setenv(EVODEX_ENV, str(csv))
    monkeypatch.setenv(BLASTDB_ENV, str(db))
    monkeypatch.setenv("ICML25_CACHE", str(tmp_path / "cache"))
    ctx = _ctx(tmp_path)
    out = real_measurements(ctx, TINY)
    assert not any("not run" in n for n in ctx.notes), ctx.notes
    assert ctx.figures == [f"{tmp_path.name}/enzyme_rag_real_arms.png"]
    assert list((tmp_path / "cache" / "enzyme_rag").glob("join-*.json"))  # the join is cached
    for c in REAL_CLAIMS:
        if c.rule is None:
            continue
        assert np.isfinite(out[c.id].mean), c.id
    # copying a training enzyme is never novel: BLASTp identity 1 to the training set
    assert out[null_key("real_novelty")].mean == pytest.approx(1.0)
    assert out["real_split_tanimoto"].mean < 0.8
    # each seed is saved in the run's folder; a second run in another folder recomputes it
    # (the join and the MSAs read from the cache) with the same numbers, and a run in the
    # same folder reuses the saved seed, as seeds computed in parallel processes are
    assert (tmp_path / "real-seed0-tiny.json").is_file()
    other = tmp_path / "other"
    again = real_measurements(_ctx(other), TINY)
    assert again["real_full_vs_copy"].values == out["real_full_vs_copy"].values
    assert list((tmp_path / "cache" / "enzyme_rag" / "msa").glob("msa-*.json"))
    said: list[str] = []
    ctx3 = RunContext(budget="tiny", seeds=(0,), out_dir=tmp_path, progress=said.append)  # type: ignore[arg-type]
    third = real_measurements(ctx3, TINY)
    assert any("reusing" in m for m in said)
    for k, m in out.items():
        assert third[k].values == m.values, k
