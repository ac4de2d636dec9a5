"""The executors give the same entries as a serial run, and report a crash like a crash."""

import json
import textwrap

import pytest

from icml25.core import report as rep
from icml25.core import results as res
from icml25.core.parallel import longest_first, run_methods
from icml25.core.registry import Method
from icml25.methods import load_all

FAST = ("pan_privacy", "signsgd_risk")  # the two quickest tiny reproductions


def _measured(entries):
    return [
        (e["method"], [(c["id"], c["measured"], c["verdict"]) for c in e["claims"]])
        for e in entries
    ]


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    methods = load_all()
    out = tmp_path_factory.mktemp("serial")
    return run_methods([methods[s] for s in FAST], budget="tiny", seeds=[0], out_dir=out)


def test_jobs_give_the_serial_numbers_and_resume(serial, tmp_path):
    methods = [load_all()[s] for s in FAST]
    said = []
    entries = run_methods(
        methods, budget="tiny", seeds=[0], out_dir=tmp_path, jobs=2, say=said.append
    )
    assert _measured(entries) == _measured(serial)
    for e in entries:
        assert json.loads((tmp_path / e["method"] / "result.json").read_text()) == e
    again = run_methods(
        methods, budget="tiny", seeds=[0], out_dir=tmp_path, jobs=2, say=said.append
    )
    assert again == entries and sum("reusing" in line for line in said) == 2


def test_workers_pick_up_the_longest_methods_first():
    methods = load_all()
    order = [m.slug for m in longest_first(list(methods.values()))]
    seconds = [methods[s].quick_seconds for s in order]
    assert seconds == sorted(seconds, reverse=True) and sorted(order) == sorted(methods)
    ms = [methods["orcaloca"], methods["maple"], methods["orcaloca"]]
    assert [m.slug for m in longest_first(ms)] == ["maple", "orcaloca", "orcaloca"]


def _fake(tmp_path, monkeypatch, name, body):
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(
            f"""
            import os
            from icml25.core.claims import Claim, Measurement, Null, Rule
            CLAIMS = (Claim("x", "s", "w", "m", Rule(">=", 0), null=Null(exempt="a fake")),)
            def reproduce(ctx):
                {body}
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the spawned workers import it too
    return Method(name, "T", "A", "ICML 2025", "http://x", "s", 1.0, name)


def test_a_worker_that_dies_or_raises_is_a_crash_and_the_others_finish(tmp_path, monkeypatch):
    dies = _fake(tmp_path, monkeypatch, "icml25_fake_dies", "os._exit(3)")
    raises = _fake(tmp_path, monkeypatch, "icml25_fake_raises", "raise RuntimeError('boom')")
    ok = _fake(tmp_path, monkeypatch, "icml25_fake_ok", "return {'x': Measurement.exact(1.0)}")
    entries = run_methods(
        [dies, raises, ok], budget="tiny", seeds=[0], out_dir=tmp_path / "o", jobs=2
    )
    by = {e["method"]: e for e in entries}
    assert "exited with code 3" in by["icml25_fake_dies"]["error"]
    assert by["icml25_fake_dies"]["claims"][0]["verdict"] == "error"
    assert "RuntimeError: boom" in by["icml25_fake_raises"]["error"]
    assert by["icml25_fake_ok"]["error"] is None
    assert by["icml25_fake_ok"]["claims"][0]["verdict"] == "reproduced"


def test_bad_executor_arguments():
    m = load_all()["pan_privacy"]
    for kwargs, match in (
        ({"jobs": 0}, "jobs must be a positive integer"),
        ({"executor": "dask"}, "executor must be one of"),
        ({"address": "auto"}, "address is for executor='ray'"),
        ({"gpus": -1.0}, "gpus must be >= 0"),
        ({"gpus": 1.0}, "gpus is for executor='ray'"),  # was silently ignored by the local one
    ):
        with pytest.raises(ValueError, match=match):
            run_methods([m], budget="tiny", seeds=[0], out_dir=None, **kwargs)


def test_report_says_where_the_time_went(serial):
    results = res.build_results(serial, "cmd")
    md = rep.render_markdown(results)
    total = sum(e["wall_s"] for e in serial)
    assert f"**Wall time:** {total:.0f} s in all" in md
    assert all(f"{e['method']} {e['wall_s']:.0f} s" in md for e in serial)


def test_ray_executor_gives_the_serial_numbers(serial, tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    try:
        methods = [load_all()[s] for s in FAST]
        entries = run_methods(methods, budget="tiny", seeds=[0], out_dir=tmp_path, executor="ray")
    finally:
        ray.shutdown()
    assert _measured(entries) == _measured(serial)
    for e in entries:
        assert json.loads((tmp_path / e["method"] / "result.json").read_text()) == e
        for fig in e["figures"]:
            assert (tmp_path / fig).stat().st_size > 0
