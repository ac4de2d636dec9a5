"""Method READMEs' claims tables are generated (icml25 readme) and current."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icml25.core.readme import END, START, claims_table, readme_path, update_readmes, with_table
from icml25.methods import load_all

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "docs" / "reproduction" / "results.json"


def test_with_table_replaces_only_between_the_markers():
    text = f"# T\n\nbefore\n{START}\nold\nrows\n{END}\nafter\n"
    assert with_table(text, "NEW") == f"# T\n\nbefore\n{START}\nNEW\n{END}\nafter\n"
    for bad in ("no markers", f"{END}\n{START}", f"{START}\n{START}\n{END}"):
        with pytest.raises(ValueError, match="must hold the lines"):
            with_table(bad, "x")


def test_the_table_lists_every_claim_with_its_published_verdict():
    method = load_all()["pan_privacy"]
    claims = method.claims("full")
    published = {
        "methods": [
            {
                "method": "pan_privacy",
                "claims": [
                    {
                        "id": claims[0].id,
                        "verdict": "partial",
                        "measured": {"mean": 0.5, "std": 0.0, "n": 1, "values": [0.5]},
                        "interval": None,
                    }
                ],
            }
        ]
    }
    table = claims_table(method, published).splitlines()
    assert len(table) == 2 + len(claims)
    assert table[2].startswith(f"| {claims[0].id} | ") and table[2].endswith("| **partial** |")
    assert all(r.endswith("| **not published** |") for r in table[3:])


def test_every_method_readme_table_is_current():
    published = json.loads(PUBLISHED.read_text()) if PUBLISHED.is_file() else None
    stale = update_readmes(load_all(), published, check=True)
    assert not stale, f"run `icml25 readme` (stale: {[str(p) for p in stale]})"


def test_readme_paths_are_the_method_folders():
    for slug, method in load_all().items():
        assert readme_path(method).parent.name == slug
