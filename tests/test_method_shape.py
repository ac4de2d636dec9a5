"""Every method in the same shape (CONTRIBUTING.md): the files, grep-able claim ids, keyword-only
budgets, and no source file over ~600 lines without a reason in its docstring."""

from __future__ import annotations

import ast
import dataclasses
import importlib
from pathlib import Path

import pytest

import icml25
from icml25.methods import load_all

SRC = Path(icml25.__file__).parent
METHODS = sorted(load_all())
SHAPE = ("__init__.py", "claims.py", "experiments.py", "figures.py", "reproduce.py")
MAX_LINES = 600
REASON = "Long by design:"  # a docstring of a longer module says why, after these words


@pytest.mark.parametrize("slug", METHODS)
def test_the_method_has_the_common_files(slug):
    folder = SRC / slug
    missing = [f for f in (*SHAPE, "README.md", "NOTES.md") if not (folder / f).is_file()]
    assert not missing, f"{slug} lacks {missing}"
    assert load_all()[slug].module == f"icml25.{slug}.reproduce"


@pytest.mark.parametrize("slug", METHODS)
def test_every_claim_id_is_written_out_in_the_claims_files(slug):
    text = "".join(p.read_text() for p in (SRC / slug).glob("*claims*.py"))
    missing = [c.id for c in load_all()[slug].claims("quick") if f'id="{c.id}"' not in text]
    assert not missing, f'{slug}: ids not written as id="..." in its claims files: {missing}'


@pytest.mark.parametrize("slug", METHODS)
def test_budgets_are_keyword_only_dataclasses(slug):
    budgets = importlib.import_module(f"icml25.{slug}.experiments").BUDGETS
    assert set(budgets) == {"tiny", "quick", "full"}
    for name, b in budgets.items():
        assert dataclasses.is_dataclass(b), f"{slug} {name}: not a dataclass"
        positional = [f.name for f in dataclasses.fields(b) if not f.kw_only]
        assert not positional, f"{slug} {name}: positional fields {positional}"


def _too_long(path: Path) -> bool:
    text = path.read_text()
    if len(text.splitlines()) <= MAX_LINES:
        return False
    doc = ast.get_docstring(ast.parse(text)) or ""
    return REASON not in doc


def test_no_source_file_is_long_without_a_reason():
    bad = sorted(
        f"{p.relative_to(SRC)} ({len(p.read_text().splitlines())} lines)"
        for p in SRC.rglob("*.py")
        if _too_long(p)
    )
    assert not bad, f"over {MAX_LINES} lines without '{REASON}' in the docstring: {bad}"


def test_the_length_check_can_fail(tmp_path):
    long = tmp_path / "m.py"
    long.write_text('"""A module."""\n' + "x = 1\n" * MAX_LINES)
    assert _too_long(long)
    long.write_text(f'"""A module. {REASON} one class."""\n' + "x = 1\n" * MAX_LINES)
    assert not _too_long(long)
