"""No tracked file names a path of the machine that made it (a home folder, a scratch disk's
run folder): docs and published results name run folders relative to the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MACHINE_PATH = re.compile(r"(?<![\w.~/-])/(?:work|root|home|tmp|Users|mnt|opt|private)/[\w.-]")
# Lines that name such a path on purpose: the rule itself, and text a test feeds in.
ALLOWED = (
    ("src/icml25/core/publish.py", "Paths of the machine that made a run"),
    ("src/icml25/orcaloca/reproducers.py", "home = /home/me"),
    ("tests/test_no_machine_paths.py", ""),
)


def _tracked() -> list[str]:
    try:
        out = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [p for p in out.splitlines() if not p.endswith((".png", ".gz", ".pt", ".bin"))]


def machine_paths(path: str, text: str) -> list[str]:
    found = []
    for i, line in enumerate(text.splitlines(), 1):
        if MACHINE_PATH.search(line) and not any(
            path == f and words in line for f, words in ALLOWED
        ):
            found.append(f"{path}:{i}: {line.strip()[:120]}")
    return found


def test_no_tracked_file_names_a_machine_path():
    bad = []
    for path in _tracked():
        try:
            text = (ROOT / path).read_text()
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        bad += machine_paths(path, text)
    assert not bad, "\n".join(bad)


def test_the_check_finds_a_path_and_spares_debian_data():
    assert machine_paths("x.md", "see /work/runs/pub24/report.html")
    assert machine_paths("x.md", "ICML25_CACHE=/root/cache python x.py")
    assert not machine_paths("x.md", "Fashion-MNIST from /usr/share/datasets/fashion-mnist")
    assert not machine_paths("x.md", "runs/pub24 and docs/reproduction/x.png")
