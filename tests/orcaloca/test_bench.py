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


def test_hygiene_one_token_no_internal_names_no_direct_gold_calls():
    def _tokens(line):
        out = []
        try:
            for t in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
                out.append(t.string)
        except tokenize.TokenError:  # a line of a multi-line statement
            pass
        return out

    """Issue 51 item 4: a mutant changes one operator/constant token (no added parentheses, no
    ``not (...)``), issue texts never name the work copy's module, and the reproducer's own
    code never calls the gold directly."""
    import difflib
    import io
    import tokenize

    bench = make_benchmark(40, seed=0)
    ops = set()
    for bug in bench.bugs:
        ops.add(bug.operator)
        old = bench.originals[bug.file].splitlines()
        new = bug.source.splitlines()
        diff = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
        assert len(diff) == 1, bug.id
        a, b = old[diff[0]], new[diff[0]]
        assert a.count("(") == b.count("(") and "not (" not in b.replace(a, ""), bug.id
        ta, tb = _tokens(a), _tokens(b)
        if bug.operator == "negate":
            assert abs(len(ta) - len(tb)) == 1 and "not" in set(ta) ^ set(tb), bug.id
        elif bug.operator in ("compare", "off_by_one"):
            ops_ = difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes()
            edits = [(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops_ if tag != "equal"]
            assert len(edits) == 1 and max(edits[0]) <= 2, (bug.id, edits)  # is <-> is not
        assert "orcabench" not in bug.issue.text, bug.id
        gold_q = bug.gold_node.split("::", 1)[1]
        assert not any(c.parent < 0 and c.qualname == gold_q for c in bug.issue.trace), bug.id
    assert {"compare", "negate"} <= ops
