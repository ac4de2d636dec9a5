"""The shared per-seed checkpoint (RunContext.checkpoint), atomic writes and `icml25 seed`."""

from __future__ import annotations

import json
import pickle

import pytest

from icml25.cli import main
from icml25.core.runner import RunContext, atomic_write_bytes


def _ctx(tmp_path):
    return RunContext(budget="tiny", seeds=(0,), out_dir=tmp_path / "m")


@pytest.mark.parametrize("codec", ["json", "pickle"])
def test_checkpoint_computes_once_then_reuses_for_the_same_key(tmp_path, codec):
    ctx, calls = _ctx(tmp_path), []

    def compute():
        calls.append(1)
        return {"a": [1.5, 2.0]}

    assert ctx.checkpoint("seed0", "k1", compute, codec=codec) == {"a": [1.5, 2.0]}
    assert ctx.checkpoint("seed0", "k1", compute, codec=codec) == {"a": [1.5, 2.0]}
    assert len(calls) == 1
    ctx.checkpoint("seed0", "k2", compute, codec=codec)  # another key: recomputed
    assert len(calls) == 2


def test_checkpoint_encode_decode_round_trip(tmp_path):
    ctx = _ctx(tmp_path)
    first = ctx.checkpoint(
        "s",
        "k",
        lambda: {0.5: 1.0},
        encode=lambda r: {str(k): v for k, v in r.items()},
        decode=lambda r: {float(k): v for k, v in r.items()},
    )
    again = ctx.checkpoint(
        "s",
        "k",
        lambda: pytest.fail("recomputed"),
        decode=lambda r: {float(k): v for k, v in r.items()},
    )
    assert first == again == {0.5: 1.0}
    assert json.loads((ctx.out_dir / "s.json").read_text()) == {"key": "k", "result": {"0.5": 1.0}}


@pytest.mark.parametrize("damage", [b"", b"{not json", b"[1, 2]", b'{"key": "k"}'])
def test_a_damaged_checkpoint_is_recomputed_not_a_crash(tmp_path, damage):
    ctx = _ctx(tmp_path)
    ctx.out_dir.mkdir(parents=True)
    (ctx.out_dir / "s.json").write_bytes(damage)
    assert ctx.checkpoint("s", "k", lambda: 7) == 7
    assert ctx.checkpoint("s", "k", lambda: pytest.fail("recomputed")) == 7


def test_atomic_write_keeps_the_old_file_when_the_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    atomic_write_bytes(path, b"good")

    def boom(*_a):
        raise OSError("disk full")

    monkeypatch.setattr("os.fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(path, b"new data")
    assert path.read_bytes() == b"good"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]  # no temporary left behind
    pickle.dumps(path)  # (a Path pickles: checkpoints may hold them)


def test_seed_command_refuses_a_method_without_one_seed(tmp_path, capsys):
    assert main(["seed", "pan_privacy", "0", "--out", str(tmp_path)]) == 2
    assert "does not checkpoint single seeds" in capsys.readouterr().err
    assert main(["seed", "no_such_method", "0", "--out", str(tmp_path)]) == 2


def test_resume_reuses_a_method_that_ran_fewer_seeds_than_asked_and_skips_damaged_files(tmp_path):
    from icml25.core.runner import save_entry, saved_entry

    entry = {"method": "m", "budget": "quick", "seeds": [0], "requested_seeds": [0, 1, 2],
             "claims": [], "error": None}  # fmt: skip
    save_entry(tmp_path, entry)
    assert saved_entry(tmp_path, "m", "quick", [0, 1, 2]) == entry
    assert saved_entry(tmp_path, "m", "quick", [0]) is None
    assert saved_entry(tmp_path, "m", "full", [0, 1, 2]) is None
    for damage in (b"\x00\xff garbage", b"[1, 2]", b'{"method": "m", "budget": "quick"}', b""):
        (tmp_path / "m" / "result.json").write_bytes(damage)
        assert saved_entry(tmp_path, "m", "quick", [0, 1, 2]) is None


def test_results_json_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    from icml25.core.results import write_results

    write_results({"schema": 2, "methods": []}, tmp_path)
    before = (tmp_path / "results.json").read_bytes()

    def boom(*_a):
        raise OSError("disk full")

    monkeypatch.setattr("os.fsync", boom)
    with pytest.raises(OSError):
        write_results({"schema": 2, "methods": [{"x": 1}]}, tmp_path)
    assert (tmp_path / "results.json").read_bytes() == before
