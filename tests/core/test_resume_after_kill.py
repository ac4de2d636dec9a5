"""`icml25 reproduce` interrupted (SIGINT, SIGKILL) inside its first method, between methods and
inside the report, then run again on the same --out: it resumes, reuses the finished methods
and ends with the files of an uninterrupted run, equal in every value but the clock's (issue
70). The kill points are deterministic: a driver runs the CLI with a hook that signals the
process itself at the point."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from icml25 import cli

SRC = str(Path(cli.__file__).resolve().parents[1])
METHODS = ("pan_privacy", "compositional")  # two of the cheapest tiny reproductions (~2 s, ~6 s)
ARGS = ("reproduce", *METHODS, "--budget", "tiny", "--seeds", "0")

_DRIVER = """
import os, signal, sys
point, sig, argv = sys.argv[1], getattr(signal, sys.argv[2]), sys.argv[3:]
# Ctrl-C raises KeyboardInterrupt as in a terminal, even where this process was started with
# SIGINT ignored (a background job of a non-interactive shell inherits SIG_IGN)
signal.signal(signal.SIGINT, signal.default_int_handler)
import icml25.cli as cli
from icml25.core import html, parallel, registry

def die():
    os.kill(os.getpid(), sig)

if point == "method":  # inside the first method: it measured, its entry is not saved
    real_reproducer = registry.Method.reproducer
    def reproducer(self):
        fn = real_reproducer(self)
        def run(ctx):
            out = fn(ctx)
            die()
            return out
        return run
    registry.Method.reproducer = reproducer
elif point == "between":  # the first method saved, the second not started
    real_save = parallel.save_entry
    def save_entry(out_dir, entry):
        real_save(out_dir, entry)
        die()
    parallel.save_entry = save_entry
elif point == "report":  # results.json and report.md written, report.html being rendered
    def render_html(results, run_dir):
        die()
        raise AssertionError("not interrupted")
    html.render_html = render_html
    if hasattr(cli, "render_html"):
        cli.render_html = render_html
sys.exit(cli.main(argv))
"""


def _run(tmp_path: Path, out: Path, point: str = "none", sig: str = "SIGINT"):
    driver = tmp_path / "driver.py"
    driver.write_text(_DRIVER)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([SRC, env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, str(driver), point, sig, *ARGS, "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


_SECONDS = re.compile(r"(seeds \[[^\]]*\](?:,| ·) )[0-9.]+ s")
_WALL = re.compile(r"Wall time:\*?\*? [^\n<]*")


def _without_clock(run: Path) -> dict[str, object]:
    """Every file of a run folder, with the clock's values (creation time, wall times) and
    the folder's own path masked; figures as bytes. Temporary files are left out."""
    results = json.loads((run / "results.json").read_text())
    created = results["created"]
    files: dict[str, object] = {}
    for path in sorted(run.rglob("*")):
        rel = str(path.relative_to(run))
        if not path.is_file() or path.name.startswith("."):
            continue
        if path.suffix == ".json":
            data = json.loads(path.read_text())
            for entry in data.get("methods", [data]):
                entry.pop("wall_s")
                entry.pop("cpu_s", None)  # a clock too
            data.pop("created", None)
            files[rel] = json.loads(json.dumps(data).replace(str(run), "OUT"))
        elif path.suffix in (".md", ".html"):
            text = path.read_text().replace(str(run), "OUT").replace(created, "CREATED")
            files[rel] = _WALL.sub("WALL", _SECONDS.sub(r"\1T s", text))
        else:
            files[rel] = path.read_bytes()
    return files


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("whole")
    r = _run(tmp, tmp / "run")
    assert r.returncode == 0, r.stderr
    return _without_clock(tmp / "run")


def _loadable_json(out: Path) -> list[str]:
    """The JSON files a reader would load (temporary names are not), each parsed whole."""
    names = []
    for path in out.rglob("*.json"):
        json.loads(path.read_text())  # never a half-written file under its own name
        names.append(str(path.relative_to(out)))
    return sorted(names)


def _stopped(r: subprocess.CompletedProcess, sig: str) -> None:
    if sig == "SIGKILL":
        assert r.returncode == -signal.SIGKILL, r.stderr
    else:
        assert r.returncode == cli.EXIT_INTERRUPTED, r.stderr
        assert "Traceback" not in r.stderr and "rerun with --out" in r.stderr


@pytest.mark.timeout(480)  # ~35 s on an idle 2-core machine; far more under load
@pytest.mark.parametrize("sig", ["SIGINT", "SIGKILL"])
def test_interrupted_at_each_point_then_resumed_gives_the_uninterrupted_files(
    uninterrupted, tmp_path, sig
):
    out = tmp_path / "run"
    r = _run(tmp_path, out, "method", sig)
    _stopped(r, sig)
    assert _loadable_json(out) == []  # nothing finished, nothing saved

    r = _run(tmp_path, out, "between", sig)
    _stopped(r, sig)
    assert _loadable_json(out) == ["pan_privacy/result.json"]

    r = _run(tmp_path, out, "report", sig)
    _stopped(r, sig)
    assert "pan_privacy: reusing the finished run" in r.stderr
    assert "compositional: reusing" not in r.stderr
    assert _loadable_json(out) == [
        "compositional/result.json",
        "pan_privacy/result.json",
        "results.json",
    ]
    assert not (out / "report.html").exists()

    r = _run(tmp_path, out)
    assert r.returncode == 0, r.stderr
    assert all(f"{m}: reusing the finished run" in r.stderr for m in METHODS)
    assert not list(out.rglob(".*.tmp")) and not (out / ".icml25.lock").exists()
    assert _without_clock(out) == uninterrupted
