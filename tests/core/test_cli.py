"""The command line as a user runs it (subprocess)."""

import json
import subprocess
import sys


def _run(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "icml25", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


def test_list_shows_methods():
    out = _run("list")
    assert out.returncode == 0, out.stderr
    assert "constrained_clustering" in out.stdout


def test_reproduce_report_and_resume(tmp_path):
    out_dir = tmp_path / "run"
    args = ("reproduce", "constrained_clustering", "--budget", "tiny", "--seeds", "0")
    r = _run(*args, "--out", str(out_dir))
    assert r.returncode == 0, r.stderr
    results = json.loads((out_dir / "results.json").read_text())
    assert results["command"].startswith("icml25 reproduce constrained_clustering")
    assert (out_dir / "report.md").exists()
    # each entry records its CPU seconds and the run its machine; list --measured shows them
    entry, env = results["methods"][0], results["environment"]
    assert 0 < entry["cpu_s"] and env["cpu"] and env["cores"] >= 1
    assert f"**CPU time:** {entry['cpu_s']:.0f} s" in (out_dir / "report.md").read_text()
    shown = _run("list", "--measured", str(out_dir))
    assert shown.returncode == 0, shown.stderr
    row = next(x for x in shown.stdout.splitlines() if "constrained_clustering" in x)
    assert "CPU-s (tiny)" in row and "not in this run" in shown.stdout
    assert env["cpu"][:20] in " ".join(shown.stdout.split())
    bad = _run("list", "--measured", str(tmp_path / "nowhere"))
    assert bad.returncode == 2 and "--measured" in bad.stderr
    # resume: a second run with the same settings reuses the finished method
    r2 = _run(*args, "--out", str(out_dir))
    assert r2.returncode == 0 and "reusing" in r2.stderr
    # report rebuilds report.md from results.json alone
    (out_dir / "report.md").unlink()
    r3 = _run("report", str(out_dir))
    assert r3.returncode == 0, r3.stderr
    assert "constrained_clustering" in (out_dir / "report.md").read_text()
    # --publish writes REPRODUCTION.md with figures copied beside it
    pub = tmp_path / "repo"
    pub.mkdir()
    r4 = _run("report", str(out_dir), "--publish", cwd=pub)
    assert r4.returncode == 0, r4.stderr
    text = (pub / "REPRODUCTION.md").read_text()
    assert "(docs/reproduction/report.html#constrained_clustering--" in text
    for fig in results["methods"][0]["figures"]:
        assert (pub / "docs" / "reproduction" / fig).exists()


def test_bad_arguments_are_clear(tmp_path):
    r = _run("reproduce", "no_such_method", "--out", str(tmp_path))
    assert r.returncode == 2 and "unknown method" in r.stderr
    r = _run("reproduce", "--seeds", "a,b")
    assert r.returncode == 2 and "--seeds" in r.stderr
    r = _run("reproduce", "--jobs", "0")
    assert r.returncode == 2 and "--jobs must be a positive integer" in r.stderr
    r = _run("reproduce", "pan_privacy", "--address", "auto", "--out", str(tmp_path))
    assert r.returncode == 2 and "--address needs --executor ray" in r.stderr
    r = _run("reproduce", "pan_privacy", "--gpus", "1", "--out", str(tmp_path))
    assert r.returncode == 2 and "--gpus needs --executor ray" in r.stderr
    r = _run("report", str(tmp_path / "missing"))
    assert r.returncode == 2 and "no results.json" in r.stderr
    r = _run("collect", str(tmp_path / "out"), str(tmp_path / "missing"))
    assert r.returncode == 2 and "no results.json" in r.stderr


def test_collect_then_publish(tmp_path):
    """A quick run collected with a later one, then published: the sources table names both."""
    first, second = tmp_path / "first", tmp_path / "second"
    assert (
        _run(
            "reproduce", "pan_privacy", "--budget", "tiny", "--seeds", "0", "--out", str(first)
        ).returncode
        == 0
    )
    assert (
        _run(
            "reproduce", "signsgd_risk", "--budget", "tiny", "--seeds", "0", "--out", str(second)
        ).returncode
        == 0
    )
    r = _run("collect", str(tmp_path / "pub"), str(first), str(second))
    assert r.returncode == 0, r.stderr
    results = json.loads((tmp_path / "pub" / "results.json").read_text())
    assert {m["method"] for m in results["methods"]} == {"signsgd_risk", "pan_privacy"}
    assert {s["source"] for s in results["sources"]} == {str(first), str(second)}


def test_scipy_methods_import_without_torch():
    """constrained_clustering and pan_privacy are SciPy/NumPy methods: importing them must not
    import torch (2 s), which core.validate imported before (issue 56 item 10)."""
    code = (
        "import sys, icml25.constrained_clustering, icml25.pan_privacy; "
        "print('torch' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"
