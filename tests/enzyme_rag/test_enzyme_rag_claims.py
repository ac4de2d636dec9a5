"""enzyme_rag's claims (issue 66): one "generator learned" gate for every claim that compares
outputs of trained generators, with the claim's own precondition kept inside it."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from icml25.core.claims import Claim, Measurement, Rule, gate_key, null_key
from icml25.core.runner import RunContext
from icml25.enzyme_rag import experiments_real as er
from icml25.enzyme_rag.claims import (
    ALL_COMPARED,
    ALL_PRECONDITIONS,
    CLAIMS,
    COMPARED,
    LEARNED_RULE,
    PRECONDITIONS,
    precondition_rule,
)
from icml25.enzyme_rag.experiments import learned_gates
from icml25.enzyme_rag.figures import REAL_ARMS
from icml25.enzyme_rag.real_claims import (
    REAL_COMPARED,
    REAL_LEARNED_RULE,
    REAL_PRECONDITIONS,
)
from icml25.enzyme_rag.reproduce import claim_sizes

pytest.importorskip("rdkit")

BY_ID = {c.id: c for c in CLAIMS}
SYNTHETIC = [c for c in CLAIMS if c.id in COMPARED]
REAL = [c for c in CLAIMS if c.id in REAL_COMPARED]


def test_every_claim_on_generator_outputs_has_the_learned_gate():
    """The rule: every measured claim (all of them compare generated samples) carries the
    learned gate of its part; the controls (classifier, split, oracle) and the claims declared
    out of scale carry none."""
    for c in CLAIMS:
        measured_claim = c.kind == "claim" and c.rule is not None
        assert (c.id in ALL_COMPARED) == measured_claim, c.id
        if c.id in ALL_COMPARED:
            assert c.gate is not None, c.id
            rule = LEARNED_RULE if c.id in COMPARED else REAL_LEARNED_RULE
            assert c.gate.rule == rule and not c.gate.per_seed, c.id
            assert "learned" in c.gate.check, c.id
        elif c.kind == "control":
            assert c.gate is None, c.id
    assert set(PRECONDITIONS) <= set(COMPARED) and set(REAL_PRECONDITIONS) <= set(REAL_COMPARED)
    # the unconditional and unguided generators count where their samples enter the measurement
    assert COMPARED["full_vs_unconditional"] == ("full", "uncond")
    assert COMPARED["full_vs_noguidance"] == ("full", "noguide")
    assert COMPARED["noguidance_near_retrieved"] == ("noguide",)
    assert REAL_COMPARED["real_full_vs_unconditional"] == ("full", "uncond")


def test_own_preconditions_keep_their_rules():
    """The gates of issues 48 and 52 live on inside the learned gate with their rules: the
    claim's own threshold where they named none."""
    assert precondition_rule(BY_ID["full_vs_copy"]) == Rule(">=", 0.5)
    assert precondition_rule(BY_ID["full_vs_copy_ci"]) == Rule(">", 0.0)
    assert precondition_rule(BY_ID["full_vs_noguidance"]) == Rule(">=", 0.7)
    assert precondition_rule(BY_ID["sweep_less_foldable"]) == Rule("<", 0.0)
    assert precondition_rule(BY_ID["real_full_vs_copy"]) == Rule(">", 0.0)
    assert precondition_rule(BY_ID["novelty"]) is None
    for cid, own in ALL_PRECONDITIONS.items():
        gate = BY_ID[cid].gate
        assert gate is not None and "precondition" in gate.check, cid
        assert own.check.split(",")[0] in gate.check, cid


def _values(c: Claim, passing: bool, n: int = 3) -> Measurement:
    """Per-seed values far on the passing (or failing) side of the claim's rule."""
    assert c.rule is not None
    up = c.rule.op in (">=", ">")
    side = 10.0 if up == passing else -10.0
    return Measurement.of([c.rule.threshold + side + 0.01 * i for i in range(n)])


def _own(c: Claim, holds: bool) -> Measurement:
    rule = precondition_rule(c)
    assert rule is not None
    up = rule.op in (">=", ">")
    return Measurement.of([rule.threshold + (1.0 if up == holds else -1.0)] * 3)


@pytest.mark.parametrize("learned", [0.3, 0.95])
@pytest.mark.parametrize("own_holds", [True, False])
@pytest.mark.parametrize("passing", [True, False])
def test_a_generator_that_did_not_learn_makes_every_gated_claim_out_of_scale(
    learned, own_holds, passing
):
    """The issue's case: whichever way the comparison goes, a generator under the learned
    threshold makes the claim out of scale (never *not reproduced*); a learned generator leaves
    the verdict to the claim's own precondition, then to its rule and null arm."""
    claims = [c.sized(claim_sizes("tiny")) for c in SYNTHETIC]
    gens = {g: Measurement.of([learned] * 3) for g in ("full", "noguide", "uncond")}
    own = {c.id: _own(c, own_holds) for c in claims if c.id in PRECONDITIONS}
    gates, note = learned_gates(claims, COMPARED, gens, own)
    assert set(gates) == {gate_key(c.id) for c in claims}
    assert note.startswith("generator-learned gates") and all(c.id in note for c in claims)
    for c in claims:
        null = _values(c, passing=False)
        j = c.judge(_values(c, passing), null, gates[gate_key(c.id)])
        gate_open = learned >= 0.8 and (own_holds or c.id not in PRECONDITIONS)
        if not gate_open:
            assert j.verdict == "out of scale" and j.gate_passed is False, (c.id, j)
        else:
            assert j.gate_passed is True, (c.id, j)
            assert j.verdict == ("reproduced" if passing else "not reproduced"), (c.id, j)


def test_learned_gate_is_the_lowest_generator_per_seed_and_nan_where_its_precondition_fails():
    c_uncond, c_copy = BY_ID["full_vs_unconditional"], BY_ID["full_vs_copy"]
    gens = {
        "full": Measurement.of([0.9, 0.85, 0.95]),
        "noguide": Measurement.of([0.9, 0.9, 0.9]),
        "uncond": Measurement.of([0.7, 0.95, 0.9]),
    }
    own = {"full_vs_unconditional": _own(c_uncond, True), "full_vs_copy": _own(c_copy, False)}
    gates, note = learned_gates([c_uncond, c_copy], COMPARED, gens, own)
    assert gates[gate_key(c_uncond.id)].values == pytest.approx((0.7, 0.85, 0.9))
    assert all(math.isnan(v) for v in gates[gate_key(c_copy.id)].values)
    assert "fails: gate NaN" in note and "holds" in note
    # a NaN learned ratio (the real part's natural enzymes at <= 0 bits) closes the gate
    gens["full"] = Measurement.of([math.nan, 0.9, 0.9])
    gates, _ = learned_gates([c_uncond], COMPARED, gens, own)
    assert math.isnan(gates[gate_key(c_uncond.id)].mean)
    # exact ratios (the real part) give an exact gate
    real = BY_ID["real_full_vs_unconditional"]
    gates, _ = learned_gates(
        [real],
        REAL_COMPARED,
        {"full": Measurement.exact(0.6), "uncond": Measurement.exact(0.55)},
        {real.id: Measurement.exact(3.0)},
    )
    g = gates[gate_key(real.id)]
    assert g.values == (0.55,) and g.interval.method == "exact"


def test_every_gated_claim_has_its_gate_in_the_tiny_run(tiny_run):
    entry, _ = tiny_run("enzyme_rag")
    by_id = {c["id"]: c for c in entry["claims"]}
    for cid in ALL_COMPARED:
        gate = by_id[cid]["gate"]
        assert gate is not None and gate["measured"] is not None, cid
    assert any(n.startswith("generator-learned gates") for n in entry["notes"])


def _fake_run(seed: int, full: float, uncond: float) -> dict:
    rng = np.random.default_rng(seed)
    n = 6
    base = {"natural": 80.0, "copy": 40.0, "random_enzyme": 1.0, "d0": full, "random_rows": full}
    base |= {"full": full, "other": full, "uncond": uncond}
    rows = np.column_stack([rng.normal(size=12), np.tile([0, 1], 6)])
    return {
        "seed": seed,
        "hmm": {a: base[a] + rng.normal(size=n) for a in REAL_ARMS},
        "ident": {a: rng.uniform(size=n) for a in REAL_ARMS if a != "natural"},
        "novelty": rng.uniform(0, 0.5, size=12),
        "novelty_null": np.ones(n),
        "diversity": 0.9,
        "auc_rows": rows,
        "auc_rows_null": rows,
        "lengths": 100.0,
        "train_cpu_s": 1.0,
        "cpu_s": 2.0,
        "loss_end": 2.5,
    }


@pytest.mark.parametrize(("full", "uncond", "open_"), [(60.0, 70.0, True), (60.0, 10.0, False)])
def test_real_measurements_return_the_learned_gates(
    monkeypatch, tmp_path: Path, full, uncond, open_
):
    """The real path end to end past its data (the seeds are stand-ins): every gated real
    claim gets its learned gate, the lowest of the generators it compares."""
    st = SimpleNamespace(
        stats="stand-in", targets=np.arange(6), profiles=[["A"]] * 6, max_tanimoto=0.5
    )
    monkeypatch.setattr(er, "real_selected", lambda budget: True)
    monkeypatch.setattr(er, "locate_real_data", lambda: (tmp_path / "x.csv", []))
    monkeypatch.setattr(er, "load_join", lambda csv, dbs: (None, {}))
    monkeypatch.setattr(er, "_setup", lambda cfg, data, ec_of: st)
    monkeypatch.setattr(
        er, "_checkpointed_seed", lambda cfg, st, seed, ctx: _fake_run(seed, full, uncond)
    )
    ctx = RunContext(budget="tiny", seeds=(0, 1, 2), out_dir=tmp_path)  # type: ignore[arg-type]
    out = er.real_measurements(ctx, er.REAL_CONFIGS["tiny"])
    for c in REAL:
        assert gate_key(c.id) in out and null_key(c.id) in out, c.id
        j = c.judge(out[c.id], out[null_key(c.id)], out[gate_key(c.id)])
        expect = open_ or REAL_COMPARED[c.id] == ("full",)
        assert j.gate_passed is expect, (c.id, j)
    ratio_uncond = out[gate_key("real_full_vs_unconditional")].mean
    assert ratio_uncond == pytest.approx(min(full, uncond) / 80.0, abs=0.02)
    assert any("generator-learned gates" in n for n in ctx.notes)
