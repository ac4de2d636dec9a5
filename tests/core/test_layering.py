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


def test_core_reaches_no_method_through_the_method_list_or_the_cli():
    """``icml25.methods`` imports all 19 methods and ``icml25.cli`` imports that: core takes
    the methods it needs as arguments (the command line hands them in)."""
    bad = sorted(
        f"{where} imports icml25.{pkg}"
        for pkg, where in _imported_packages(SRC / "core")
        if pkg in ("methods", "cli")
    )
    assert not bad, bad


def _core_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in (SRC / "core").glob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                parts = node.module.split(".")
                if parts[:2] == ["icml25", "core"]:
                    if len(parts) > 2:
                        deps.add(parts[2])
                    else:
                        deps.update(a.name for a in node.names)
        graph[path.stem] = deps - {path.stem}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (a depth-first search), or None."""
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> list[str] | None:
        if state.get(node) == 1:
            return [*trail[trail.index(node) :], node]
        if state.get(node) == 2 or node not in graph:
            return None
        state[node] = 1
        for dep in sorted(graph[node]):
            found = visit(dep, [*trail, node])
            if found:
                return found
        state[node] = 2
        return None

    for node in sorted(graph):
        found = visit(node, [])
        if found:
            return found
    return None


def test_core_modules_import_each_other_without_a_circle():
    assert _cycle(_core_graph()) is None, " -> ".join(_cycle(_core_graph()) or [])


def test_the_circle_check_can_fail():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
