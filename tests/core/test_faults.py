"""Faults (issue 70): workers die with their run, one process at a time on a run folder, every
file written by rename, and damaged run folders refused with a message naming the file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from icml25 import cli
from icml25.core import results as res

SRC = str(Path(cli.__file__).resolve().parents[1])
WAIT_S = 30.0  # a bound for processes to exit, far above what they need (well under a second)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not reaped, does not)."""
    try:
        import psutil
    except ImportError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return True
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _wait_for(predicate, what: str, timeout: float = WAIT_S, proc=None) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the process ended (exit {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.05)


def _env(*paths: Path) -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), SRC, env.get("PYTHONPATH", "")])
    return env


# --- workers die with their parent ---------------------------------------------------------

_FAKE = """
import os, time
from icml25.core.claims import Claim, Measurement, Null, Rule
CLAIMS = (Claim("x", "s", "w", "m", Rule(">=", 0), null=Null(exempt="a fake")),)
def reproduce(ctx):
    ctx.out_dir.parent.mkdir(parents=True, exist_ok=True)
    (ctx.out_dir.parent / "{name}.pid").write_text(str(os.getpid()))
    time.sleep({sleep})
    return {{"x": Measurement.exact(1.0)}}
"""

_DRIVER = """
import multiprocessing.resource_tracker as rt, sys, threading, time
from pathlib import Path
from icml25.core.parallel import run_methods
from icml25.core.registry import Method
out = Path(sys.argv[1])
def tracker():
    while not (out / "icml25_fake_slow.pid").exists():
        time.sleep(0.02)
    (out / "tracker.pid").write_text(str(rt._resource_tracker._pid))
if __name__ == "__main__":  # the spawned workers import this module too
    threading.Thread(target=tracker, daemon=True).start()
    methods = [Method(n, "T", "A", "ICML 2025", "http://x", "s", q, n)
               for n, q in (("icml25_fake_slow", 2.0), ("icml25_fake_fast", 1.0))]
    run_methods(methods, budget="tiny", seeds=[0], out_dir=out, jobs=2)
"""


def test_a_killed_run_leaves_no_worker_and_no_resource_tracker(tmp_path):
    """A `--jobs 2` run SIGKILLed while one worker runs a method and the other idles: both
    workers and the resource tracker exit (they waited forever on their queues before)."""
    for name, sleep in (("icml25_fake_slow", 300), ("icml25_fake_fast", 0)):
        (tmp_path / f"{name}.py").write_text(_FAKE.format(name=name, sleep=sleep))
    (tmp_path / "driver.py").write_text(_DRIVER)
    out = tmp_path / "out"
    parent = subprocess.Popen(
        [sys.executable, str(tmp_path / "driver.py"), str(out)],
        env=_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pids: list[int] = []
    try:
        names = ("icml25_fake_slow.pid", "icml25_fake_fast.pid", "tracker.pid")
        _wait_for(
            lambda: (
                all((out / n).exists() for n in names)
                and (out / "icml25_fake_fast" / "result.json").exists()
            ),
            "both workers up (one busy, one idle) and the tracker",
            timeout=120,
            proc=parent,
        )
        time.sleep(0.3)  # the idle worker is back on its queue
        pids = [int((out / n).read_text()) for n in names]
        assert all(_alive(p) for p in pids) and parent.pid not in pids
        parent.kill()
        parent.wait(timeout=WAIT_S)
        deadline = time.monotonic() + WAIT_S
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [p for p in pids if _alive(p)]
        assert not left, f"processes of the killed run still alive: {left} (of {pids})"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for p in pids:  # only the pids this test's run started
            if _alive(p):
                os.kill(p, signal.SIGKILL)


# --- one process at a time on a run folder -------------------------------------------------

_HOLDER = """
import sys
from pathlib import Path
from icml25.core.runner import folder_lock
with folder_lock(Path(sys.argv[1]), "a test holder"):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def holder(tmp_path):
    """A process holding the lock of ``tmp_path / "run"``; yields (folder, pid)."""
    folder = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(folder)],
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield folder, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _refused(capsys, argv, folder, pid):
    assert cli.main(argv) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"icml25: {folder.resolve()} is in use by another icml25 process")
    assert f"pid {pid}" in err and "Traceback" not in err
    return err


def test_two_processes_on_one_out_folder_are_refused(holder, tmp_path, capsys):
    folder, proc = holder
    argv = ["reproduce", "pan_privacy", "--budget", "tiny", "--seeds", "0", "--out", str(folder)]
    _refused(capsys, argv, folder, proc.pid)
    assert not (folder / "pan_privacy").exists()  # nothing ran, nothing interleaved
    (tmp_path / "src").mkdir()
    res.write_results(res.build_results([], "cmd"), tmp_path / "src")
    _refused(capsys, ["collect", str(folder), str(tmp_path / "src")], folder, proc.pid)
    assert not (folder / "results.json").exists()
    res.write_results(res.build_results([], "cmd"), folder)
    _refused(capsys, ["report", str(folder)], folder, proc.pid)
    assert not (folder / "report.md").exists()


def test_the_lock_of_a_killed_process_is_taken_over(holder):
    from icml25.core.runner import FolderInUse, folder_lock

    folder, proc = holder
    with pytest.raises(FolderInUse, match=rf"pid {proc.pid}, a test holder"):
        with folder_lock(folder):
            pass
    proc.kill()
    proc.wait()
    assert (folder / ".icml25.lock").exists()  # a SIGKILL removes nothing: a stale lock file
    with folder_lock(folder, "the next run") as path:
        assert json.loads(path.read_text())["pid"] == os.getpid()
        with folder_lock(folder):  # re-entrant in one process (the CLI, then run_methods)
            pass
        assert path.exists()
    assert not path.exists()  # released and removed


def test_the_lock_without_fcntl_takes_over_a_dead_pid_only(tmp_path, monkeypatch):
    from icml25.core import runner

    monkeypatch.setattr(runner, "_fcntl", None)
    folder = tmp_path / "run"
    folder.mkdir()
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                          capture_output=True, check=True)  # fmt: skip
    dead = int(done.stdout)
    (folder / ".icml25.lock").write_text(json.dumps({"pid": dead, "what": "gone"}))
    with runner.folder_lock(folder) as path:
        assert json.loads(path.read_text())["pid"] == os.getpid()
    assert not path.exists()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        path.write_text(json.dumps({"pid": sleeper.pid, "what": "alive"}))
        with pytest.raises(runner.FolderInUse, match=rf"pid {sleeper.pid}, alive"):
            with runner.folder_lock(folder):
                pass
    finally:
        sleeper.kill()
        sleeper.wait()


# --- every file written by rename ----------------------------------------------------------


def _record_writes(monkeypatch, under: Path) -> list[Path]:
    """Record each file under ``under`` opened for writing by its final name (not through a
    temporary name and a rename): what a kill in the middle of the write leaves truncated.
    Files inside publish's staging folder (renamed as a whole) count as renamed."""
    import builtins
    import io

    opened: list[Path] = []
    real = builtins.open

    def spy(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and any(c in mode for c in "wax+"):
            path = Path(os.fsdecode(file)).absolute()
            in_run = path.is_relative_to(under.absolute())
            temporary = path.name.startswith(".") and path.name.endswith(".tmp")
            if in_run and not temporary and ".reproduction.new" not in path.parts:
                opened.append(path)
        return real(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy)
    return opened


def test_every_file_of_a_run_is_written_by_rename(tmp_path, monkeypatch, capsys):
    """reproduce (results.json, result.json, report.md, report.html, figures), report,
    collect and publish: no file is opened for writing by its final name."""
    run, col, repo = tmp_path / "run", tmp_path / "col", tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    opened = _record_writes(monkeypatch, tmp_path)
    argv = ["reproduce", "pan_privacy", "--budget", "tiny", "--seeds", "0", "--out", str(run)]
    assert cli.main(argv) == 0
    written = {p.name for p in run.rglob("*") if p.is_file()}
    assert {"results.json", "result.json", "report.md", "report.html"} <= written
    assert any(n.endswith(".png") for n in written)
    assert cli.main(["report", str(run), "--publish"]) == 0
    assert cli.main(["collect", str(col), str(run)]) == 0
    capsys.readouterr()
    assert opened == [], f"written in place: {sorted(set(map(str, opened)))}"
    assert not [p for p in tmp_path.rglob(".*.tmp")]  # no temporary file left


def test_a_failed_write_keeps_the_earlier_file(tmp_path, monkeypatch):
    from icml25.core import runner

    path = tmp_path / "results.json"
    runner.atomic_write_bytes(path, b'{"a": 1}')

    def full_disk(_fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runner.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        runner.atomic_write_bytes(path, b'{"a": 2, "b": "a longer file"}')
    assert path.read_bytes() == b'{"a": 1}' and sorted(p.name for p in tmp_path.iterdir()) == [
        "results.json"
    ]


def test_temporaries_of_killed_processes_are_swept_not_those_of_running_ones(tmp_path):
    from icml25.core.runner import sweep_temporaries

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                          capture_output=True, check=True)  # fmt: skip
    dead = tmp_path / "m" / f".result.json.{int(done.stdout)}.tmp"
    mine = tmp_path / f".results.json.{os.getpid()}.tmp"
    other = tmp_path / ".notes.tmp"  # not a name atomic_write_bytes makes
    for p in (dead, mine, other):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("{")
    assert sweep_temporaries(tmp_path) == [dead]
    assert not dead.exists() and mine.exists() and other.exists()


# --- damaged run folders -------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    """A finished tiny run of pan_privacy (a figure, notes, a claim, a control)."""
    run = tmp_path_factory.mktemp("good") / "run"
    argv = ["reproduce", "pan_privacy", "--budget", "tiny", "--seeds", "0", "--out", str(run)]
    r = subprocess.run(
        [sys.executable, "-m", "icml25", *argv], env=_env(), capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    return run


def _copy_run(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("report.*"))
    return dst


def _without(key_path):
    def damage(results):
        obj = results
        for k in key_path[:-1]:
            obj = obj[k]
        del obj[key_path[-1]]
        return json.dumps(results)

    return damage


DAMAGES = {
    "cut in half": (lambda text: text[: len(text) // 2], "is not valid JSON, maybe cut short"),
    "empty": (lambda _text: "", "is empty"),
    "a JSON list": (lambda _text: "[1, 2]", "it holds a JSON list, not an object"),
    "not UTF-8": (lambda _text: b"\xff\xfe{", "cannot be read"),
    "a method without paper": (
        lambda text: _without(("methods", 0, "paper"))(json.loads(text)),
        "methods[0] (pan_privacy) has no 'paper'",
    ),
    "a claim without verdict": (
        lambda text: _without(("methods", 0, "claims", 0, "verdict"))(json.loads(text)),
        "methods[0] (pan_privacy).claims[0] (",
    ),
    "a measurement without values": (
        lambda text: _without(("methods", 0, "claims", 0, "measured", "values"))(json.loads(text)),
        ".measured is not a measurement",
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
@pytest.mark.parametrize("command", ["report", "collect"])
def test_a_damaged_results_file_is_named_not_a_traceback(
    good_run, tmp_path, capsys, damage, command
):
    run = _copy_run(good_run, tmp_path / "run")
    make, expected = DAMAGES[damage]
    text = make((run / "results.json").read_text())
    path = run / "results.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    argv = (
        ["report", str(run)] if command == "report" else ["collect", str(tmp_path / "c"), str(run)]
    )
    assert cli.main(argv) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"icml25: {path}: ") and expected in err, err
    assert "Traceback" not in err and not (run / "report.md").exists()
    assert not (tmp_path / "c").exists()  # collect made nothing


def test_a_results_file_that_is_a_folder(tmp_path, capsys):
    (tmp_path / "run" / "results.json").mkdir(parents=True)
    assert cli.main(["report", str(tmp_path / "run")]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err == f"icml25: {tmp_path / 'run' / 'results.json'}: is a folder, not a results file\n"


def test_report_accepts_the_results_file_itself(good_run, tmp_path, capsys):
    run = _copy_run(good_run, tmp_path / "run")
    assert cli.main(["report", str(run / "results.json")]) == 0
    assert (run / "report.md").is_file() and (run / "report.html").is_file()


def test_collect_into_one_of_its_sources_is_refused(good_run, tmp_path, capsys):
    run = _copy_run(good_run, tmp_path / "run")
    before = (run / "results.json").read_bytes()
    for out in (run, tmp_path / "run" / "." / ""):
        assert cli.main(["collect", str(out), str(run / "results.json")]) == cli.EXIT_USAGE
        err = capsys.readouterr().err
        assert err.startswith(f"icml25: {out}: the collected folder is also a SOURCE")
        assert "Traceback" not in err
    assert (run / "results.json").read_bytes() == before


def test_a_publish_with_a_missing_figure_keeps_the_published_folder(good_run, tmp_path, capsys,
                                                                     monkeypatch):  # fmt: skip
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    run = _copy_run(good_run, tmp_path / "run")
    assert cli.main(["report", str(run), "--publish"]) == 0
    docs = repo / "docs" / "reproduction"
    before = {p.relative_to(repo): p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    broken = _copy_run(good_run, tmp_path / "broken")
    fig = json.loads((broken / "results.json").read_text())["methods"][0]["figures"][0]
    (broken / fig).unlink()
    capsys.readouterr()
    assert cli.main(["report", str(broken), "--publish"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert f"cannot publish {broken}" in err and fig in err and "nothing was published" in err
    after = {p.relative_to(repo): p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    assert after == before and (docs / fig).is_file()


def test_a_publish_killed_between_its_renames_is_put_back(good_run, tmp_path, monkeypatch):
    from icml25.core.publish import publish

    run = _copy_run(good_run, tmp_path / "run")
    results = res.load_results(run)
    publish(results, run, tmp_path)
    docs = tmp_path / "docs" / "reproduction"
    docs.rename(docs.with_name(".reproduction.old"))  # killed after the first rename
    later = dict(results, created="2099-01-01T00:00:00+00:00")  # another run
    publish(later, run, tmp_path)
    assert not docs.with_name(".reproduction.old").exists()
    moves = json.loads((docs / "results.json").read_text()).get("published")
    assert moves is not None and moves["previous"]["created"] == results["created"]


def _mutations(obj, at=()):
    """Every key deleted and every value replaced by a value of another JSON type."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj[:2])
    for k, v in list(items):
        if isinstance(obj, dict):
            yield (*at, k), "delete"
        for other in (None, "x", 1.5, True, [], {}):
            if type(other) is not type(v):
                yield (*at, k), other
        if isinstance(v, (dict, list)):
            yield from _mutations(v, (*at, k))


def test_check_results_refuses_every_damage_the_reports_cannot_render(good_run):
    """A property over every one-key damage of a real results file: check_results refuses it
    (naming the file) or markdown, HTML and the terminal table render it."""
    import copy
    import io

    from rich.console import Console

    from icml25.core import report as rep
    from icml25.core.html import render_html

    base = json.loads((good_run / "results.json").read_text())
    base["methods"][0]["claims"] = base["methods"][0]["claims"][:2]
    unrenderable = []
    for key_path, value in _mutations(base):
        results = copy.deepcopy(base)
        obj = results
        for k in key_path[:-1]:
            obj = obj[k]
        if value == "delete":
            del obj[key_path[-1]]
        else:
            obj[key_path[-1]] = value
        try:
            res.check_results(results, "F")
        except ValueError as exc:
            assert str(exc).startswith("F: ")
            continue
        try:
            rep.render_markdown(results)
            render_html(results, good_run)
            rep.print_table(results, console=Console(file=io.StringIO()))
        except Exception as exc:
            unrenderable.append((key_path, value, f"{type(exc).__name__}: {exc}"))
    assert unrenderable == []


def test_report_of_a_missing_folder_and_reproduce_into_a_file(tmp_path, capsys):
    assert cli.main(["report", str(tmp_path / "missing")]) == cli.EXIT_USAGE
    assert "no results.json in" in capsys.readouterr().err
    (tmp_path / "f").write_text("")
    argv = ["reproduce", "pan_privacy", "--budget", "tiny", "--out", str(tmp_path / "f")]
    assert cli.main(argv) == cli.EXIT_USAGE
    assert capsys.readouterr().err == f"icml25: --out {tmp_path / 'f'}: is a file, not a folder\n"
