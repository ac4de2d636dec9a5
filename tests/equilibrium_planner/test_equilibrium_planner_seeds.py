"""results.json's ``seeds`` are the seeds the planner's reproduction ran (issue 66): tiny and
quick run the first of the CLI's seeds, full every seed given and at least five (the CLI's
default 0, 1, 2 extended to 0-4), and each run records those, not the CLI's."""

from __future__ import annotations

from typing import Any

import pytest

from icml25.core.runner import run_method
from icml25.equilibrium_planner import reproduce as R
from icml25.equilibrium_planner.claims import CLAIMS
from icml25.methods import load_all


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One seed's training and evaluation replaced by a stub that records the seed."""
    seen: list[int] = []

    def run_seed(_cfg: Any, seed: int, _progress: Any) -> dict[str, Any]:
        seen.append(seed)
        return {"seed": seed, "curves": {}}

    monkeypatch.setattr(R, "run_seed", run_seed)
    monkeypatch.setattr(R, "measures", lambda runs: {c.id: [1.0] * len(runs) for c in CLAIMS})
    monkeypatch.setattr(R, "notes", lambda *_a: None)
    monkeypatch.setattr(R.figures, "sr_vs_iterations", lambda _curves: None)
    monkeypatch.setattr(R.RunContext, "save_figure", lambda *_a: None)
    return seen


@pytest.mark.parametrize(
    ("budget", "cli", "expected"),
    [
        ("full", [0, 1, 2], [0, 1, 2, 3, 4]),
        ("full", [3, 1, 4, 5, 9, 2], [3, 1, 4, 5, 9, 2]),
        ("quick", [0, 1, 2], [0]),
        ("quick", [7, 8], [7]),
        ("tiny", [0, 1, 2], [0]),
    ],
)
def test_results_record_the_seeds_run(
    ran: list[int], tmp_path: Any, budget: str, cli: list[int], expected: list[int]
) -> None:
    entry = run_method(
        load_all()["equilibrium_planner"], budget=budget, seeds=cli, out_dir=tmp_path
    )
    assert entry["error"] is None, entry["error"]
    assert ran == expected
    assert entry["seeds"] == sorted(set(expected))
    assert entry["requested_seeds"] == cli
