"""The layering rules of DESIGN.md, checked on the source: a method never imports another
method, and ``core`` never imports a method."""

import ast
from pathlib import Path

import pytest

import icml25
from icml25.methods import load_all

SRC = Path(icml25.__file__).parent
METHODS = sorted(load_all())


def _imported_packages(folder: Path) -> set[tuple[str, str]]:
    found = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "icml25" and len(parts) > 1:
                    found.add((parts[1], str(path.relative_to(SRC))))
    return found


@pytest.mark.parametrize("slug", METHODS)
def test_a_method_imports_no_other_method(slug):
    others = set(METHODS) - {slug}
    bad = sorted(
        f"{where} imports icml25.{pkg}"
        for pkg, where in _imported_packages(SRC / slug)
        if pkg in others
    )
    assert not bad, bad


def test_core_imports_no_method():
    bad = sorted(
        f"{where} imports icml25.{pkg}"
        for pkg, where in _imported_packages(SRC / "core")
        if pkg in METHODS
    )
    assert not bad, bad
