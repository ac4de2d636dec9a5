"""results.json's ``seeds`` are the seeds IT3's reproduction ran (issue 66): the notebook
setting runs more seeds than the CNN, MLP and GNN in the full budget (10 against 5), and both
sets are recorded, whatever the CLI asked for."""

from __future__ import annotations

from typing import Any

import pytest

from icml25.core.runner import run_method
from icml25.it3 import reproduce as R
from icml25.it3.claims import CLAIMS
from icml25.it3.experiments import BUDGETS
from icml25.methods import load_all


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """Every setting replaced by a stub that records the seeds it is run on."""
    seen: dict[str, list[int]] = {"notebook": [], "cnn": [], "mlp": [], "gnn": []}

    def stub(name: str) -> Any:
        def run(_cfg: Any, seed: int, _ctx: Any) -> dict[str, Any]:
            seen[name].append(seed)
            return {"seed": seed}

        return run

    for name in seen:
        monkeypatch.setattr(R, f"{name}_experiment", stub(name))
    monkeypatch.setattr(R, "notebook_measurements", lambda _nb: {"notebook_gain": 1.0})
    monkeypatch.setattr(R, "seed_measurements", lambda *_runs: {c.id: 1.0 for c in CLAIMS})
    monkeypatch.setattr(R, "notes", lambda *_a: [])
    monkeypatch.setattr(R, "severity_panels", lambda *_a: [])
    monkeypatch.setattr(R, "idempotence_histograms", lambda *_a: ())
    monkeypatch.setattr(R.figures, "severity", lambda *_a: _Figure())
    monkeypatch.setattr(R.figures, "idempotence_error", lambda *_a: _Figure())
    monkeypatch.setattr(R.RunContext, "save_figure", lambda *_a: None)
    return seen


class _Figure:
    pass


@pytest.mark.parametrize(
    ("budget", "cli", "main", "notebook"),
    [
        ("full", [0, 1, 2], range(5), range(10)),
        ("full", [0, 1, 2, 3, 4, 5, 6], range(7), range(10)),
        ("quick", [0, 1, 2], range(3), range(3)),
        ("quick", [4], (4, 5, 6), (4, 5, 6)),
        ("tiny", [0], (0,), (0,)),
    ],
)
def test_results_record_the_seeds_every_setting_ran(
    ran: dict[str, list[int]], tmp_path: Any, budget: str, cli: list[int], main: Any,
    notebook: Any,
) -> None:  # fmt: skip
    entry = run_method(load_all()["it3"], budget=budget, seeds=cli, out_dir=tmp_path)
    assert entry["error"] is None, entry["error"]
    assert ran["notebook"] == list(notebook)
    assert ran["cnn"] == ran["mlp"] == ran["gnn"] == list(main)
    assert entry["seeds"] == sorted(set(ran["notebook"]) | set(ran["cnn"]))
    assert entry["requested_seeds"] == cli
    assert len(main) >= BUDGETS[budget].seeds and len(notebook) >= BUDGETS[budget].nb_seeds
