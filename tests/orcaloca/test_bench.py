"""The benchmark: deterministic, every kept bug fails its reproducer, gold is the mutated
function, and the real standard library is untouched."""

from __future__ import annotations

import hashlib
import textwrap as real_textwrap
from pathlib import Path

from icml25.orcaloca import make_benchmark
from icml25.orcaloca.bench import _load, _run
from icml25.orcaloca.reproducers import REPRODUCERS

MODS = ("textwrap.py", "shlex.py")


def _digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_deterministic_and_failing():
    before = _digest(real_textwrap.__file__)
    a = make_benchmark(6, seed=3, modules=MODS)
    b = make_benchmark(6, seed=3, modules=MODS, max_tries=10_000)  # not the cached object
    assert a is not b
    assert [x.id for x in a.bugs] == [x.id for x in b.bugs]
    assert [x.source for x in a.bugs] == [x.source for x in b.bugs]
    assert [x.issue.text for x in a.bugs] == [x.issue.text for x in b.bugs]
    assert len(a.bugs) == 6
    for bug in a.bugs:
        # gold is the mutated function, a node of the graph, and not the API the issue calls
        assert bug.gold.functions == {bug.gold_node.replace("::", ":")}
        assert bug.gold_node in a.graph.nodes
        assert bug.source != a.originals[bug.file]
        # the reproducer really fails: some snippet gives another outcome than on the original
        _imp, bound, snippets = REPRODUCERS[bug.file]
        mut = _load(bug.file, bug.source, "check_mut")
        orig = _load(bug.file, a.originals[bug.file], "check_orig")
        differs = [
            _run(bug.file, mut, bound, s, 100_000)[0] != _run(bug.file, orig, bound, s, 100_000)[0]
            for s, _api in snippets
        ]
        assert any(differs), bug.id
        assert "Running this" in bug.issue.text and bug.issue.trace
    assert _digest(real_textwrap.__file__) == before
    # the work folder holds unmodified copies
    assert (a.root / "textwrap.py").read_text() == Path(real_textwrap.__file__).read_text()


def test_other_seed_other_bugs():
    a = make_benchmark(6, seed=0, modules=MODS)
    b = make_benchmark(6, seed=1, modules=MODS)
    assert [x.id for x in a.bugs] != [x.id for x in b.bugs]
