import json
import shutil
import sys
import types

import pytest

from icml25.core import report as rep
from icml25.core import results as rs
from icml25.core.claims import Claim, Gate, Measurement, Null, Rule, gate_key, null_key
from icml25.core.publish import publish as publish_run
from icml25.core.registry import Method
from icml25.core.runner import one_thread, run_method, save_entry, saved_entry
from icml25.core.seeding import seed_everything
from icml25.methods import load_all


def _fake_method(monkeypatch, reproduce):
    mod = types.ModuleType("icml25_fake_repro")
    mod.CLAIMS = (
        Claim(
            "acc",
            "accuracy is high",
            "Table 1",
            "accuracy",
            Rule(">=", 0.9),
            0.95,
            null=Null(arm="shuffled labels"),
        ),
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
        return {
            "acc": [0.92 + 0.01 * s for s in ctx.seeds],
            null_key("acc"): [0.1 + 0.01 * s for s in ctx.seeds],
        }

    m = _fake_method(monkeypatch, reproduce)
    entry = run_method(m, budget="tiny", seeds=[0, 1, 2], out_dir=tmp_path)
    assert entry["error"] is None
    verdicts = {c["id"]: c["verdict"] for c in entry["claims"]}
    assert verdicts == {"acc": "reproduced", "big": "out of scale"}
    acc = entry["claims"][0]
    assert acc["measured"]["mean"] == pytest.approx(0.93)
    assert acc["interval"]["method"] == "t (n=3)" and acc["interval"]["low"] > 0.9
    assert acc["null"]["arm"] == "shuffled labels" and acc["null"]["verdict"] == "not reproduced"
    assert acc["null"]["measured"]["mean"] == pytest.approx(0.11)
    assert (tmp_path / "fake" / "curve.png").stat().st_size > 0

    results = rs.build_results([entry], "icml25 reproduce fake")
    rs.write_results(results, tmp_path)
    loaded = rs.load_results(tmp_path)
    assert loaded == json.loads(json.dumps(results))
    md = rep.render_markdown(loaded)
    assert "| fake | acc | 0.95 | 0.93 ± 0.01 (n=3) [0.913, 0.947] t |" in md
    assert "shuffled labels: 0.11" in md and "![curve](fake/curve.png)" in md
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
        rs.load_results(tmp_path)
    (tmp_path / "results.json").write_text('{"x": 1}')
    with pytest.raises(ValueError, match="not an icml25 results file"):
        rs.load_results(tmp_path)


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
    mod.reproduce = lambda ctx: {  # both fail their rules
        "acc": Measurement.exact(0.5),
        "shuffled": Measurement.exact(0.9),
    }
    monkeypatch.setitem(sys.modules, "icml25_fake_controls", mod)
    m = Method("fake", "Fake", "A. B.", "ICML 2025", "http://x", "s", 1.0, "icml25_fake_controls")
    entry = run_method(m, budget="tiny", seeds=[0], out_dir=tmp_path)
    assert [c["kind"] for c in entry["claims"]] == ["claim", "control"]
    results = json.loads(json.dumps(rs.build_results([entry], "cmd")))
    assert rs.verdict_counts(results) == {"not reproduced": 1}
    assert [r[1] for r in rep.claim_rows(results)] == ["acc"]
    assert [r[1] for r in rep.claim_rows(results, kind="control")] == ["shuffled"]
    md = rep.render_markdown(results)
    assert "**Verdicts:** 1 not reproduced\n" in md
    tally, controls = md.split("**Controls**")
    assert "| fake | acc |" in tally and "shuffled" not in tally.split("## fake")[0]
    assert "| fake | shuffled |" in controls and "**shuffled** (control)" in md
    # entries written before controls existed count as claims
    del results["methods"][0]["claims"][1]["kind"]
    assert rs.verdict_counts(results) == {"not reproduced": 2}
    with pytest.raises(ValueError, match="kind must be one of"):
        Claim("x", "s", "w", "m", Rule(">=", 0), kind="ablation")


def _module(monkeypatch, name, claims, reproduce):
    mod = types.ModuleType(name)
    mod.CLAIMS = claims
    mod.reproduce = reproduce
    monkeypatch.setitem(sys.modules, name, mod)
    return Method("fake", "Fake", "A. B.", "ICML 2025", "http://x", "s", 1.0, name)


def test_null_arms_and_gates_reach_results_and_report(tmp_path, monkeypatch):
    claims = (
        Claim("free", "a", "w", "m", Rule(">=", 0.5), null=Null(arm="no update")),
        Claim(
            "gated",
            "b",
            "w",
            "m",
            Rule(">=", 0.5),
            null=Null(exempt="a theorem"),
            gate=Gate("ceiling arm"),
        ),
        Claim("bare", "c", "w", "m", Rule(">=", 0.5)),
    )

    def reproduce(ctx):
        return {
            "free": Measurement.exact(0.9),
            null_key("free"): Measurement.exact(0.8),  # passes without the mechanism
            "gated": Measurement.exact(0.1),
            gate_key("gated"): Measurement.exact(0.2),  # the ceiling fails: out of scale
            "bare": Measurement.exact(0.9),
        }

    m = _module(monkeypatch, "icml25_fake_power", claims, reproduce)
    entry = run_method(m, budget="tiny", seeds=[0], out_dir=tmp_path)
    assert entry["error"] is None, entry["error"]
    by = {c["id"]: c for c in entry["claims"]}
    assert by["free"]["rule_verdict"] == "reproduced" and by["free"]["verdict"] == "inconclusive"
    assert "null arm (no update) is reproduced" in by["free"]["reason"]
    assert by["gated"]["verdict"] == "out of scale" and by["gated"]["gate"]["passed"] is False
    assert by["gated"]["null"] == {"exempt": "a theorem"}
    assert by["bare"]["verdict"] == "inconclusive" and by["bare"]["null"] is None
    results = json.loads(json.dumps(rs.build_results([entry], "cmd")))
    assert results["schema"] == 2
    assert rs.verdict_counts(results) == {"inconclusive": 2, "out of scale": 1}
    md = rep.render_markdown(results)
    assert "FAILED: ceiling arm = 0.2 (needs mean >= 0.5)" in md
    assert "inconclusive (no null arm declared)" in md


def test_undeclared_null_or_gate_key_is_a_crash(tmp_path, monkeypatch):
    claims = (Claim("x", "a", "w", "m", Rule(">=", 0.5), null=Null(exempt="why")),)
    m = _module(monkeypatch, "icml25_fake_keys", claims, lambda ctx: {null_key("x"): 1.0})
    entry = run_method(m, budget="tiny", seeds=[0], out_dir=tmp_path)
    assert "must be declared on its Claim" in entry["error"]


def test_schema_1_files_still_load_and_render(tmp_path):
    old = {
        "schema": 1,
        "created": "2026-01-01T00:00:00+00:00",
        "command": "icml25 reproduce",
        "environment": {"python": "3.11", "platform": "x", "packages": {}, "git_commit": None},
        "methods": [
            {
                "method": "fake",
                "paper": {"title": "T", "authors": "A", "venue": "ICML 2025", "url": "u"},
                "budget": "full",
                "seeds": [0],
                "wall_s": 1.0,
                "claims": [
                    {
                        "id": "acc",
                        "statement": "s",
                        "where": "w",
                        "metric": "m",
                        "paper_value": 0.9,
                        "measured": {"mean": 0.9, "std": 0.0, "n": 1, "values": [0.9]},
                        "rule": "mean >= 0.8",
                        "verdict": "reproduced",
                    }
                ],
                "figures": [],
                "notes": [],
                "error": None,
            }
        ],
    }
    (tmp_path / "results.json").write_text(json.dumps(old))
    loaded = rs.load_results(tmp_path)
    md = rep.render_markdown(loaded)
    assert "| fake | acc | 0.9 | 0.9 | mean >= 0.8 | — | — | reproduced |" in md
    rep.print_table(loaded)
    new = json.loads(json.dumps(old))
    new["schema"] = 2
    c = new["methods"][0]["claims"][0]
    c.update(verdict="inconclusive", rule_verdict="reproduced", reason="no null arm declared")
    (moved,) = rs.moved_verdicts(old, new)
    assert (moved["old"], moved["new"], moved["why"]) == ("reproduced", "inconclusive", "null")


def test_tiny_report_says_it_is_a_smoke_test(tmp_path, monkeypatch):
    claims = (Claim("x", "a", "w", "m", Rule(">=", 0.5), null=Null(exempt="why")),)
    m = _module(monkeypatch, "icml25_fake_tiny", claims, lambda ctx: {"x": 1.0})
    for budget, smoke in (("tiny", True), ("quick", False)):
        entry = run_method(m, budget=budget, seeds=[0], out_dir=tmp_path)
        md = rep.render_markdown(rs.build_results([entry], "cmd"))
        assert ("This is a smoke test" in md) is smoke


def _schema1(values, rule="mean >= 0.8 (partial if >= 0.5)", verdict="reproduced", method="fake"):
    return {
        "schema": 1,
        "created": "2026-01-01T00:00:00+00:00",
        "command": f"icml25 reproduce {method} --budget full",
        "environment": {"python": "3.11", "platform": "x", "packages": {}, "git_commit": "abc"},
        "methods": [
            {
                "method": method,
                "paper": {"title": "T", "authors": "A", "venue": "ICML 2025", "url": "u"},
                "budget": "full",
                "seeds": list(range(len(values))),
                "wall_s": 1.0,
                "claims": [
                    {
                        "id": "acc",
                        "statement": "s",
                        "where": "w",
                        "metric": "m",
                        "paper_value": 0.9,
                        "measured": Measurement.of(values).to_json(),
                        "rule": rule,
                        "verdict": verdict,
                    },
                    {
                        "id": "big",
                        "statement": "s",
                        "where": "w",
                        "metric": "-",
                        "paper_value": None,
                        "measured": None,
                        "rule": "out of scale: 1000 GPUs",
                        "verdict": "out of scale",
                    },
                ],
                "figures": [f"{method}/curve.png"],
                "notes": [],
                "error": None,
            }
        ],
    }


@pytest.mark.parametrize(
    "rule",
    [
        Rule(">=", 0.8),
        Rule("<=", 0.4, partial=0.7),
        Rule(">", -1.5, partial=-3.0),
        Rule("<", 1e-5),
        Rule(">=", 12345.0, partial=100.0),
    ],
)
def test_parse_rule_inverts_describe(rule):
    parsed = rs.parse_rule(rule.describe())
    assert parsed is not None
    # describe() rounds to three decimals or three significant digits: compare what it shows
    assert parsed.describe() == rule.describe() and parsed.op == rule.op


def test_parse_rule_refuses_other_text():
    assert rs.parse_rule("out of scale: 1000 GPUs") is None
    assert rs.parse_rule("median >= 1") is None


def test_rejudge_schema1_uses_t_intervals_and_never_reproduces():
    clear = rs.rejudge_schema1(_schema1([0.9, 0.91, 0.92])["methods"][0])
    acc, big = clear["claims"]
    # the t interval of the old per-seed values, by scipy
    from scipy import stats

    lo, hi = stats.t.interval(0.9, 2, loc=0.91, scale=stats.sem([0.9, 0.91, 0.92]))
    assert acc["interval"]["low"] == pytest.approx(lo) and acc["interval"]["high"] == pytest.approx(
        hi
    )
    assert acc["rule_verdict"] == "reproduced" and acc["verdict"] == "inconclusive"
    assert acc["reason"] == rs.PRE_AUDIT and rs.why_moved(acc) == "null"
    assert big["verdict"] == "out of scale" and big["interval"] is None
    noisy = rs.rejudge_schema1(_schema1([0.3, 0.95, 0.99])["methods"][0])
    assert noisy["claims"][0]["verdict"] == "inconclusive"
    assert "straddles" in noisy["claims"][0]["reason"]
    failed = rs.rejudge_schema1(_schema1([0.1, 0.12, 0.11], verdict="not reproduced")["methods"][0])
    assert failed["claims"][0]["verdict"] == "not reproduced"
    assert "schema-1" in clear["notes"][-1]


def test_collect_takes_each_method_from_the_last_source_and_publishes(tmp_path):
    a, b, out, root = (tmp_path / n for n in ("a", "b", "out", "root"))
    for d, res in ((a, _schema1([0.9, 0.91, 0.92])), (b, _schema1([0.1, 0.1, 0.2], method="fake"))):
        (d / "fake").mkdir(parents=True)
        (d / "fake" / "curve.png").write_bytes(d.name.encode())
        (d / "results.json").write_text(json.dumps(res))
    new = _schema1([0.5], method="other")
    new["schema"] = 2
    new["methods"][0]["figures"] = []
    new["methods"][0]["claims"] = new["methods"][0]["claims"][1:]
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "results.json").write_text(json.dumps(new))
    results = rs.collect([a, b, tmp_path / "c"], out, "icml25 collect out a b c", load_all())
    assert [m["method"] for m in results["methods"]] == ["fake", "other"]
    assert [s["source"] for s in results["sources"]] == [str(b), str(tmp_path / "c")]
    fake = results["methods"][0]
    assert fake["claims"][0]["measured"]["values"] == [0.1, 0.1, 0.2]
    assert (out / "fake" / "curve.png").read_bytes() == b"b"
    assert rs.load_results(out)["sources"] == results["sources"]
    root.mkdir()
    page = publish_run(rs.load_results(out), out, root).read_text()
    assert "collected with `icml25 collect out a b c`" in page
    assert "| fake | full | 0,1,2 | `icml25 reproduce fake --budget full` | `abc` | 1 | 0 |" in page
    assert (root / "docs" / "reproduction" / "fake" / "curve.png").exists()
    # collecting from a collected (published) file keeps where each method came from
    again = rs.collect([out], tmp_path / "again", "icml25 collect again out", load_all())
    assert [s["source"] for s in again["sources"]] == [str(b), str(tmp_path / "c")]


def test_collect_refuses_a_folder_without_results(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no results\.json"):
        rs.collect([tmp_path], tmp_path / "out", "x", load_all())


def test_republishing_the_same_run_keeps_its_moved_verdicts(tmp_path):
    old = _schema1([0.9, 0.91, 0.92])
    new = _schema1([0.1, 0.1, 0.2], verdict="not reproduced")
    new["created"] = "2026-02-01T00:00:00+00:00"
    for d, res in ((tmp_path / "old", old), (tmp_path / "new", new)):
        (d / "fake").mkdir(parents=True)
        (d / "fake" / "curve.png").write_bytes(b"x")
        (d / "results.json").write_text(json.dumps(res))
    root = tmp_path / "root"
    root.mkdir()
    publish_run(rs.load_results(tmp_path / "old"), tmp_path / "old", root)
    first = publish_run(rs.load_results(tmp_path / "new"), tmp_path / "new", root).read_text()
    assert "1 verdicts moved" in first and "| reproduced | not reproduced |" in first
    second = publish_run(rs.load_results(tmp_path / "new"), tmp_path / "new", root).read_text()
    assert second == first


def test_collect_rebuilds_the_texts_of_unchanged_claims_from_the_code(tmp_path):
    """Issue 56: a saved run's claim texts are rebuilt for its budget where the claim (id,
    kind, rule, null arm and gate) is today's; a claim whose rule moved keeps the run's texts."""
    from icml25.core.claims import Measurement
    from icml25.core.runner import make_entry
    from icml25.methods import get

    m = get("pan_privacy")
    claims = m.claims("full")
    measured = {c.id: Measurement.of([1.0, 1.0, 1.0]) for c in claims}
    entry = make_entry(m, budget="full", seeds=[0, 1, 2], wall_s=1.0, claims=claims,
                       measured=measured, error=None)  # fmt: skip
    first, second = entry["claims"][0], entry["claims"][1]
    first["metric"] = "the quick budget's old words"
    second["metric"], second["rule"] = "old words, old rule", "mean >= 123"
    if first.get("null") and "arm" in first["null"]:
        first["null"]["arm"] = "an old arm"
    res = rs.build_results([entry], "icml25 reproduce pan_privacy --budget full")
    (tmp_path / "run").mkdir()
    rs.write_results(res, tmp_path / "run")
    out = rs.collect([tmp_path / "run"], tmp_path / "out", "icml25 collect out run", load_all())
    got = out["methods"][0]["claims"]
    assert got[0]["metric"] == claims[0].metric
    if claims[0].null is not None and claims[0].null.arm is not None:
        assert got[0]["null"]["arm"] == claims[0].null.arm
    assert got[1]["metric"] == "old words, old rule"
    assert out["sources"][0]["texts_from_code"] == 1
    assert [c["verdict"] for c in got] == [c["verdict"] for c in entry["claims"]]
    # a published file holding a re-judged schema-1 run keeps that run's texts
    published = rs.load_results(tmp_path / "out")
    published["methods"][0]["notes"].append(rs.REJUDGED_NOTE)  # as rejudge_schema1 leaves it
    published["methods"][0]["claims"][0]["metric"] = "the schema-1 run's words"
    (tmp_path / "pub").mkdir()
    (tmp_path / "pub" / "results.json").write_text(json.dumps(published))
    again = rs.collect(
        [tmp_path / "pub"], tmp_path / "again", "icml25 collect again pub", load_all()
    )
    assert again["methods"][0]["claims"][0]["metric"] == "the schema-1 run's words"
    assert again["sources"][0]["texts_from_code"] == 0
    assert again["sources"][0]["schema"] == 1  # the provenance says what the run was


def test_seeds_run_extends_cuts_and_is_what_results_record(tmp_path, monkeypatch):
    """A budget that runs more (or fewer) seeds than the CLI gave records the seeds it ran."""
    from icml25.core.runner import RunContext

    ctx = RunContext(budget="full", seeds=(0, 1, 2), out_dir=tmp_path)
    assert ctx.seeds_run(at_least=5) == (0, 1, 2, 3, 4)
    assert ctx.seeds_run(at_most=1) == (0,)
    assert ctx.seeds_run(at_least=3, at_most=1) == (0, 1, 2)
    assert ctx.ran_seeds == {0, 1, 2, 3, 4}
    assert RunContext(budget="full", seeds=(7,), out_dir=tmp_path).seeds_run(3) == (7, 8, 9)
    assert RunContext(budget="full", seeds=(5, 0), out_dir=tmp_path).seeds_run(3, 3) == (5, 0, 6)
    with pytest.raises(ValueError, match="at_most"):
        ctx.seeds_run(at_most=0)
    with pytest.raises(ValueError, match="at least one seed"):
        RunContext(budget="full", seeds=(), out_dir=tmp_path).seeds_run(at_least=2)
    m = _fake_method(monkeypatch, lambda c: {"acc": [1.0] * len(c.seeds_run(at_least=5))})
    assert run_method(m, budget="full", seeds=[0, 1, 2], out_dir=tmp_path)["seeds"] == [
        0,
        1,
        2,
        3,
        4,
    ]
    m = _fake_method(monkeypatch, lambda c: {"acc": [1.0] * len(c.seeds)})
    assert run_method(m, budget="full", seeds=[0, 1, 2], out_dir=tmp_path)["seeds"] == [0, 1, 2]


def test_one_thread_pins_torch_and_blas_and_restores_them():
    import torch
    from threadpoolctl import threadpool_info

    def blas() -> set[int]:
        return {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}

    before_torch, before_blas = torch.get_num_threads(), blas()

    @one_thread()
    def inside() -> tuple[int, set[int]]:
        return torch.get_num_threads(), blas()

    assert inside() == (1, {1} if before_blas else set())
    assert torch.get_num_threads() == before_torch and blas() == before_blas
    with pytest.raises(RuntimeError), one_thread():  # restored after an exception too
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before_torch and blas() == before_blas


def _published_pair(tmp_path):
    old = _schema1([0.9, 0.91, 0.92])
    new = _schema1([0.1, 0.1, 0.2], verdict="not reproduced")
    new["created"] = "2026-02-01T00:00:00+00:00"
    new["command"] = f"icml25 reproduce fake --out {tmp_path}/scratch/runs/pub9"
    new["methods"][0]["notes"] = [f"read {tmp_path}/data/x.csv and /usr/share/datasets/y"]
    for d, res in ((tmp_path / "old", old), (tmp_path / "new", new)):
        (d / "fake").mkdir(parents=True)
        (d / "fake" / "curve.png").write_bytes(b"x")
        (d / "results.json").write_text(json.dumps(res))
    root = tmp_path / "root"
    root.mkdir()
    return root


def test_publish_writes_no_machine_path_and_no_copy_of_the_old_results(tmp_path):
    root = _published_pair(tmp_path)
    publish_run(rs.load_results(tmp_path / "old"), tmp_path / "old", root)
    page = publish_run(rs.load_results(tmp_path / "new"), tmp_path / "new", root).read_text()
    docs = root / "docs" / "reproduction"
    published = (docs / "results.json").read_text()
    for text in (page, published, (docs / "report.html").read_text()):
        assert str(tmp_path) not in text
    assert "--out runs/pub9" in published and "/usr/share/datasets/y" in published
    assert not (docs / "previous.json").exists()
    assert json.loads(published)["published"]["moved"][0]["new"] == "not reproduced"
    assert "[acc](docs/reproduction/report.html#fake--acc)" in page
    assert 'id="fake--acc"' in (docs / "report.html").read_text()


def test_republishing_from_the_published_folder_itself_keeps_it_whole(tmp_path):
    root = _published_pair(tmp_path)
    publish_run(rs.load_results(tmp_path / "old"), tmp_path / "old", root)
    first = publish_run(rs.load_results(tmp_path / "new"), tmp_path / "new", root).read_text()
    docs = root / "docs" / "reproduction"
    again = publish_run(rs.load_results(docs), docs, root).read_text()
    assert (
        again.split("published with")[1].split("\n")[1:]
        == first.split("published with")[1].split("\n")[1:]
    )
    assert (docs / "fake" / "curve.png").exists()


def test_a_publish_with_a_missing_figure_changes_nothing(tmp_path):
    root = _published_pair(tmp_path)
    publish_run(rs.load_results(tmp_path / "old"), tmp_path / "old", root)
    before = (root / "REPRODUCTION.md").read_text()
    (tmp_path / "new" / "fake" / "curve.png").unlink()
    with pytest.raises(FileNotFoundError, match=r"fake/curve\.png"):
        publish_run(rs.load_results(tmp_path / "new"), tmp_path / "new", root)
    assert (root / "REPRODUCTION.md").read_text() == before
    assert (root / "docs" / "reproduction" / "fake" / "curve.png").exists()


def test_a_legacy_previous_json_gives_the_moves_of_a_republished_run(tmp_path):
    root = _published_pair(tmp_path)
    docs = root / "docs" / "reproduction"
    publish_run(rs.load_results(tmp_path / "new"), tmp_path / "new", root)  # nothing before
    assert "Moved verdicts" not in (root / "REPRODUCTION.md").read_text()
    shutil.copy(tmp_path / "old" / "results.json", docs / "previous.json")
    page = publish_run(rs.load_results(tmp_path / "new"), tmp_path / "new", root).read_text()
    assert "1 verdicts moved" in page and not (docs / "previous.json").exists()
