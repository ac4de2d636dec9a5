"""``icml25 localize`` on a real installed pure-Python package with an injected bug, usage
errors, ``--model`` specs and the ``--json`` document."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from pathlib import Path

import packaging
import pytest

from icml25.cli import main
from icml25.orcaloca.cli import make_policy, run_localize
from icml25.orcaloca.policy import LLMPolicy, ReadingPolicy, RetrievalPolicy

GOOD = '        if letter == "alpha":\n            letter = "a"\n'
BAD = '        if letter == "alpha":\n            letter = "b"\n'
ISSUE = """Version("1.0alpha1") is parsed as a beta release.

    from packaging.version import Version
    print(Version("1.0alpha1").pre)

prints ('b', 1), and Version("1.0alpha1") > Version("1.0b0") is True.
Expected ('a', 1): "alpha" is the long spelling of "a".
"""
REPRODUCER = """from packaging.version import Version
assert Version("1.0alpha1").pre == ("a", 1), Version("1.0alpha1").pre
"""


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*.py")):
        h.update(p.read_bytes())
    return h.hexdigest()


@pytest.fixture
def buggy_packaging(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A copy of the installed ``packaging`` with one line changed in
    ``version.py::_parse_letter_version``; the installed package is never touched."""
    src = Path(packaging.__file__).parent
    repo = tmp_path / "repo"
    shutil.copytree(src, repo / "packaging", ignore=shutil.ignore_patterns("__pycache__"))
    version = repo / "packaging" / "version.py"
    text = version.read_text()
    assert text.count(GOOD) == 1, "the installed packaging changed; update the injected bug"
    version.write_text(text.replace(GOOD, BAD))
    issue = tmp_path / "issue.txt"
    issue.write_text(ISSUE)
    repro = tmp_path / "repro.py"
    repro.write_text(REPRODUCER)
    return repo, issue, repro


def test_localize_real_package_json(buggy_packaging):
    repo, issue, repro = buggy_packaging
    installed = Path(packaging.__file__).parent
    before = _digest(installed)
    out, err = io.StringIO(), io.StringIO()
    rc = run_localize(issue, repo, reproducer=repro, max_steps=30, as_json=True, out=out, err=err)
    assert rc == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    assert doc["schema"] == 1 and doc["model"] == "embedded"
    # the reproducer ran against the buggy copy (not the installed, correct package)
    assert doc["reproducer_exception"].startswith("AssertionError")
    assert "('b', 1)" in doc["reproducer_exception"]
    gold = "packaging/version.py::_parse_letter_version"
    searched = [s["node"] for s in doc["steps"]]
    assert gold in searched  # the agent reads the buggy function
    assert 1 <= doc["searches"] <= 30 and len(doc["steps"]) == doc["searches"]
    assert 1 <= len(doc["locations"]) <= 3
    for loc in doc["locations"]:
        assert set(loc) == {"file_path", "class_name", "method_name", "node"}
        assert (repo / loc["file_path"]).is_file()
    assert _digest(installed) == before
    # the installed package is what the test process still imports afterwards
    from packaging.version import Version

    assert Version("1.0alpha1").pre == ("a", 1)


def test_localize_text_output_via_main(buggy_packaging, capsys):
    repo, issue, _repro = buggy_packaging
    rc = main(["localize", str(issue), "--repo", str(repo), "--max-steps", "5"])
    text = capsys.readouterr().out
    assert rc == 0
    assert text.startswith("Bug locations (most likely first):")
    assert "Search trace (5 searches" in text or "searches, stopped: queue empty" in text


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--max-steps", "0"], "--max-steps must be a positive integer, got 0"),
        (["--max-steps", "-3"], "--max-steps must be a positive integer, got -3"),
        (
            ["--model", "gpt-4"],
            "--model must be embedded, reading, hf, hf:NAME_OR_PATH or openai:MODEL",
        ),
        (["--model", "openai:"], "needs a model name"),
        (["--model", "openai:m"], "needs --base-url"),
        (["--base-url", "http://x"], "--base-url goes with --model openai:MODEL"),
        (["--reproducer", "/no/such.py"], "--reproducer must be an existing Python script"),
    ],
)
def test_usage_errors(buggy_packaging, capsys, argv, words):
    repo, issue, _repro = buggy_packaging
    rc = main(["localize", str(issue), "--repo", str(repo), *argv])
    err = capsys.readouterr().err
    assert rc == 2
    assert words in err
    assert "Traceback" not in err


def test_model_specs():
    assert isinstance(make_policy("embedded"), RetrievalPolicy)
    assert isinstance(make_policy("reading"), ReadingPolicy)
    pol = make_policy("openai:my-model", base_url="http://localhost:8000")
    assert isinstance(pol, LLMPolicy)
    assert pol.lm.model == "my-model" and pol.lm.base_url == "http://localhost:8000"
    with pytest.raises(ValueError, match="base_url must start with http"):
        make_policy("openai:m", base_url="localhost:8000")


def test_a_reproducers_prints_stay_out_of_the_json(buggy_packaging, capsys):
    """Issue 56 item 7: a reproducer that prints must not corrupt --json output."""
    repo, issue, repro = buggy_packaging
    repro.write_text("print('noise from the reproducer')\n" + REPRODUCER)
    rc = main(["localize", str(issue), "--repo", str(repo), "--reproducer", str(repro), "--json"])
    out = capsys.readouterr().out
    assert rc == 0 and "noise from the reproducer" not in out
    assert json.loads(out)["reproducer_exception"].startswith("AssertionError")


def test_the_reproducer_help_line_is_a_whole_sentence(capsys):
    with pytest.raises(SystemExit):
        main(["localize", "--help"])
    assert "its call trace seeds the search" in " ".join(capsys.readouterr().out.split())


def test_the_issue_text_gets_the_tracebacks_repository_frames(tmp_path, monkeypatch):
    """An issue with a traceback names the frames it passes through: the CLI appends the
    reproducer's repository frames (outermost first) to the text the judges read."""
    from icml25.orcaloca.agent import OrcaLoca

    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "mod.py").write_text(
        "def outer(x):\n    return inner(x) + 1\n\n\ndef inner(x):\n    raise ValueError(x)\n"
    )
    issue = tmp_path / "issue.txt"
    issue.write_text("outer(3) raises instead of returning 4.\n")
    repro = tmp_path / "repro.py"
    repro.write_text("from pkg.mod import outer\nouter(3)\n")
    seen = []
    real = OrcaLoca.localize

    def spy(self, iss, graph):
        seen.append(iss.text)
        return real(self, iss, graph)

    monkeypatch.setattr(OrcaLoca, "localize", spy)
    out, err = io.StringIO(), io.StringIO()
    rc = run_localize(issue, repo, reproducer=repro, max_steps=5, out=out, err=err)
    assert rc == 0, err.getvalue()
    assert "The reproducer ended with: ValueError: 3" in seen[0]
    assert "Traceback through the repository: pkg/mod.py::outer -> pkg/mod.py::inner" in seen[0]
