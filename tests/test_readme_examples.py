"""Every method README opens with a "Use it in your own code" example that runs as written
(issue 56): the first ```python block after that heading is executed here, in a temporary
folder, as a user would paste it. A block may start with ``# needs: transformers`` (or flwr,
rdkit): it is skipped where that package is missing."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from icml25.methods import load_all

ROOT = Path(__file__).resolve().parents[1]
HEADING = "## Use it in your own code"
# Methods whose README has no executed example yet; each one added removes its name. It must
# end empty.
WITHOUT_EXAMPLE: set[str] = set()


def example(slug: str) -> str | None:
    """The first python block after the heading in the method's README (None if absent)."""
    text = (ROOT / "src" / "icml25" / slug / "README.md").read_text(encoding="utf-8")
    at = text.find(HEADING)
    if at < 0:
        return None
    m = re.search(r"^```python\n(.*?)^```", text[at:], flags=re.S | re.M)
    return None if m is None else m.group(1)


@pytest.mark.parametrize("slug", sorted(load_all()))
def test_the_readme_example_runs_as_written(slug, tmp_path, monkeypatch):
    code = example(slug)
    if code is None and slug in WITHOUT_EXAMPLE:
        pytest.skip(f"{slug}: no README example yet")
    assert code is not None, f"src/icml25/{slug}/README.md has no '{HEADING}' python block"
    first = code.splitlines()[0] if code else ""
    for name in (
        re.findall(r"[\w-]+", first.removeprefix("# needs:"))
        if first.startswith("# needs:")
        else []
    ):
        pytest.importorskip(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
    exec(compile(code, f"{slug}/README.md", "exec"), {"__name__": "__readme__"})


def test_the_list_of_methods_without_an_example_only_shrinks():
    """A method with an example must leave WITHOUT_EXAMPLE (so that its example runs)."""
    stale = sorted(s for s in WITHOUT_EXAMPLE if example(s) is not None)
    assert not stale, (
        f"these READMEs have an example now: remove them from WITHOUT_EXAMPLE: {stale}"
    )


def test_the_root_readme_example_runs_as_written(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    at = text.find("## Use one method")
    m = re.search(r"^```python\n(.*?)^```", text[at:], flags=re.S | re.M)
    assert at >= 0 and m is not None, "README.md has no '## Use one method' python block"
    monkeypatch.chdir(tmp_path)
    exec(compile(m.group(1), "README.md", "exec"), {"__name__": "__readme__"})


def test_the_root_readme_states_the_published_tally():
    import json

    from icml25.core.results import tally_text

    published = json.loads((ROOT / "docs" / "reproduction" / "results.json").read_text())
    assert tally_text(published).replace(",", "") in " ".join(
        (ROOT / "README.md").read_text().replace("**", "").replace(",", "").split()
    )
