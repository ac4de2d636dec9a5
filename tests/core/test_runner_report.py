import json
import sys
import types

import pytest

from icml25.core import report as rep
from icml25.core.claims import Claim, Rule
from icml25.core.registry import Method
from icml25.core.runner import run_method, save_entry, saved_entry
from icml25.core.seeding import seed_everything


def _fake_method(monkeypatch, reproduce):
    mod = types.ModuleType("icml25_fake_repro")
    mod.CLAIMS = (
        Claim("acc", "accuracy is high", "Table 1", "accuracy", Rule(">=", 0.9), 0.95),
        Claim("big", "needs a cluster", "Table 2", "-", None, out_of_scale="1000 GPUs"),
    )
    mod.reproduce = reproduce
    monkeypatch.setitem(sys.modules, "icml25_fake_repro", mod)
    return Method("fake", "Fake", "A. B.", "ICML 2025", "http://x", "s", 1.0, "icml25_fake_repro")


def test_run_method_judges_and_reports(tmp_path, monkeypatch):
    def reproduce(ctx):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots()
        ax.plot([0, 1])
        ctx.save_figure(fig, "curve")
        return {"acc": [0.92 + 0.01 * s for s in ctx.seeds]}

    m = _fake_method(monkeypatch, reproduce)
    entry = run_method(m, budget="tiny", seeds=[0, 1], out_dir=tmp_path)
    assert entry["error"] is None
    verdicts = {c["id"]: c["verdict"] for c in entry["claims"]}
    assert verdicts == {"acc": "reproduced", "big": "out of scale"}
    assert entry["claims"][0]["measured"]["mean"] == pytest.approx(0.925)
    assert (tmp_path / "fake" / "curve.png").stat().st_size > 0

    results = rep.build_results([entry], "icml25 reproduce fake")
    rep.write_results(results, tmp_path)
    loaded = rep.load_results(tmp_path)
    assert loaded == json.loads(json.dumps(results))
    md = rep.render_markdown(loaded)
    assert "| fake | acc | 0.95 |" in md and "![curve](fake/curve.png)" in md
    for key in ("method", "paper", "budget", "seeds", "wall_s", "claims", "figures"):
        assert key in loaded["methods"][0]
    assert set(loaded["environment"]) >= {"packages", "platform", "git_commit", "python"}


def test_crash_is_recorded_not_raised(tmp_path, monkeypatch):
    def reproduce(ctx):
        raise RuntimeError("boom")

    entry = run_method(
        _fake_method(monkeypatch, reproduce), budget="tiny", seeds=[0], out_dir=tmp_path
    )
    assert "boom" in entry["error"]
    assert {c["verdict"] for c in entry["claims"]} == {"error"}
    save_entry(tmp_path, entry)
    assert saved_entry(tmp_path, "fake", "tiny", [0]) is None  # a crash is not reused on resume


def test_unknown_claim_id_is_a_crash(tmp_path, monkeypatch):
    m = _fake_method(monkeypatch, lambda ctx: {"nope": 1.0})
    entry = run_method(m, budget="tiny", seeds=[0], out_dir=tmp_path)
    assert "unknown claims" in entry["error"]


def test_saved_entry_resumes_only_same_settings(tmp_path, monkeypatch):
    m = _fake_method(monkeypatch, lambda ctx: {"acc": 1.0})
    entry = run_method(m, budget="tiny", seeds=[0], out_dir=tmp_path)
    save_entry(tmp_path, entry)
    assert saved_entry(tmp_path, "fake", "tiny", [0]) == json.loads(json.dumps(entry))
    assert saved_entry(tmp_path, "fake", "quick", [0]) is None
    assert saved_entry(tmp_path, "fake", "tiny", [0, 1]) is None


def test_load_results_rejects_other_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="icml25 reproduce"):
        rep.load_results(tmp_path)
    (tmp_path / "results.json").write_text('{"x": 1}')
    with pytest.raises(ValueError, match="not an icml25 results file"):
        rep.load_results(tmp_path)


def test_seeding_gives_same_numbers():
    import numpy as np
    import torch

    # the legacy global NumPy state is what seed_everything must also set
    a = (seed_everything(3).random(4), np.random.rand(2), torch.rand(2))  # noqa: NPY002
    b = (seed_everything(3).random(4), np.random.rand(2), torch.rand(2))  # noqa: NPY002
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and torch.equal(a[2], b[2])
    assert not np.array_equal(seed_everything(4).random(4), a[0])
    with pytest.raises(ValueError, match="seed"):
        seed_everything(-1)


def test_controls_are_reported_apart_and_not_counted(tmp_path, monkeypatch):
    mod = types.ModuleType("icml25_fake_controls")
    mod.CLAIMS = (
        Claim("acc", "accuracy is high", "Table 1", "accuracy", Rule(">=", 0.9), 0.95),
        Claim(
            "shuffled", "chance on shuffled labels", "ours", "acc", Rule("<=", 0.2), kind="control"
        ),
    )
    mod.reproduce = lambda ctx: {"acc": 0.5, "shuffled": 0.9}  # both fail their rules
    monkeypatch.setitem(sys.modules, "icml25_fake_controls", mod)
    m = Method("fake", "Fake", "A. B.", "ICML 2025", "http://x", "s", 1.0, "icml25_fake_controls")
    entry = run_method(m, budget="tiny", seeds=[0], out_dir=tmp_path)
    assert [c["kind"] for c in entry["claims"]] == ["claim", "control"]
    results = json.loads(json.dumps(rep.build_results([entry], "cmd")))
    assert rep.verdict_counts(results) == {"not reproduced": 1}
    assert [r[1] for r in rep.claim_rows(results)] == ["acc"]
    assert [r[1] for r in rep.claim_rows(results, kind="control")] == ["shuffled"]
    md = rep.render_markdown(results)
    assert "**Verdicts:** 1 not reproduced\n" in md
    tally, controls = md.split("**Controls**")
    assert "| fake | acc |" in tally and "shuffled" not in tally.split("## fake")[0]
    assert "| fake | shuffled |" in controls and "**shuffled** (control)" in md
    # entries written before controls existed count as claims
    del results["methods"][0]["claims"][1]["kind"]
    assert rep.verdict_counts(results) == {"not reproduced": 2}
    with pytest.raises(ValueError, match="kind must be one of"):
        Claim("x", "s", "w", "m", Rule(">=", 0), kind="ablation")
