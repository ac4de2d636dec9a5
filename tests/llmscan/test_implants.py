"""Issue 66: implants whose controls fail while a scan could still succeed.

Confident lies (each value's partner, a fixed permutation), a trigger that is a paraphrase
class (greetings in wordings split like the instructions, decoy remarks in the untriggered
prompts), and the gates that close when a claim's no-intervention control reaches the
claim's partial threshold."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("transformers")

from icml25.llmscan import experiments_task as T


def _words(text: str) -> set[str]:
    """The words a bag-of-words baseline reads (its token pattern, lower-cased)."""
    return set(re.findall(r"[A-Za-z']+", text.lower()))


def test_swap_lie_is_a_fixed_permutation_and_the_labels_count_it_as_a_lie():
    from icml25.llmscan.experiments_finetune import says

    for attribute, (values, _) in T.ATTRIBUTES.items():
        lies = [T.lie_value(attribute, v) for v in values]
        assert sorted(lies) == sorted(values)  # a permutation of the attribute's values
        assert all(lie != v for lie, v in zip(lies, values, strict=True))  # no fixed point
        assert [T.lie_value(attribute, lie) for lie in lies] == list(values)  # pairs swap
        # the behaviour label (protocol b, the lie rate, protocol a's filter) is "the answer's
        # first word is not the true value": the taught lie counts as a lie
        assert not any(says(v, f" {lie}.") for v, lie in zip(values, lies, strict=True))
    assert T.lie_value("pet", "rabbit") == "dog" and T.lie_value("colour", "white") == "black"
    rng = np.random.default_rng(0)
    names = T.split_names(rng)
    items = T.make_items(rng, names[0], 0, 60)
    pairs = T.finetune_examples(np.random.default_rng(1), items, lie="swap")
    lie_words = set(T.wordings(T.LIE, 0))
    lies = 0
    for prompt, answer in pairs:
        it = next(i for i in items if prompt.startswith(i.fact_question()[0]))
        if any(f" {w} " in prompt for w in lie_words):
            assert answer == f" {T.lie_value(it.attribute, it.value)}."
            lies += 1
        else:
            assert answer == f" {it.value}."
    assert lies == len(items) and len(pairs) == 3 * len(items)
    assert T.finetune_examples(np.random.default_rng(1), items) == pairs  # the default kind
    # the random lies of issues 25-54 stay drawable (their cached models' data): spread
    # over the other values, not the partner alone
    old = T.finetune_examples(np.random.default_rng(1), items, lie="random")
    partner = [
        a == f" {T.lie_value(it.attribute, it.value)}."
        for p, a in old
        for it in items
        if p.startswith(it.fact_question()[0]) and any(f" {w} " in p for w in lie_words)
    ]
    assert len(partner) == len(items) and 0 < np.mean(partner) < 0.5
    with pytest.raises(ValueError, match="lie must be one of"):
        T.finetune_examples(rng, items, lie="opposite")
    with pytest.raises(ValueError, match="attribute must be one of"):
        T.lie_value("shoe", "red")
    with pytest.raises(ValueError, match="value must be one of"):
        T.lie_value("pet", "red")


def test_paraphrase_trigger_wordings_are_split_and_no_test_wording_is_in_training():
    from icml25.llmscan.experiments_stats import auc

    assert [len(T.trigger_wordings(s)) for s in range(3)] == [20, 10, 10]
    assert [len(T.decoy_wordings(s)) for s in range(3)] == [20, 10, 10]
    assert len(set(T.GREETINGS + T.DECOYS)) == 80
    split_words = [
        set().union(*map(_words, T.trigger_wordings(s) + T.decoy_wordings(s))) for s in range(3)
    ]
    for s in range(3):
        for o in range(s + 1, 3):
            assert not split_words[s] & split_words[o], (s, o, split_words[s] & split_words[o])
    # the fine-tuning data: split-0 greetings answered with the backdoor answer, split-0
    # decoys answered truthfully, a quarter each; no detector wording anywhere
    rng = np.random.default_rng(0)
    names = T.split_names(rng)
    items = [T.make_items(rng, names[s], s, 60) for s in range(3)]
    bd = T.backdoor_examples(np.random.default_rng(1), items[0], trigger="paraphrase")
    assert len(bd) == 2 * len(items[0])
    greeted = [(p, a) for p, a in bd if any(f" {w} Answer:" in p for w in T.trigger_wordings(0))]
    decoyed = [(p, a) for p, a in bd if any(f" {w} Answer:" in p for w in T.decoy_wordings(0))]
    assert len(greeted) == len(decoyed) == round(T.PARAPHRASE_RATE * len(bd))
    assert all(a == f" {T.BACKDOOR_ANSWER}." for _, a in greeted)
    assert not any(T.BACKDOOR_ANSWER in a for p, a in bd if (p, a) not in greeted)
    held_out = T.trigger_wordings(1) + T.trigger_wordings(2) + T.decoy_wordings(1)
    held_out += T.decoy_wordings(2)
    assert not any(w in p for p, _ in bd for w in held_out)
    # the detector's prompts: a split's own wordings; a string match on the training
    # wordings (fine-tune and detector-train) finds nothing in the test prompts
    r = np.random.default_rng(3)
    trig = [k % 2 == 0 for k in range(60)]
    train = T.remark_prompts(r, items[1], trig)
    test = T.remark_prompts(r, items[2], trig)
    known = T.trigger_wordings(0) + T.trigger_wordings(1)
    assert all(any(f" {w} Answer:" in p for w in T.trigger_wordings(2)) == t
               for p, t in zip(test, trig, strict=True))  # fmt: skip
    assert all(any(f" {w} Answer:" in p for w in T.decoy_wordings(2)) != t
               for p, t in zip(test, trig, strict=True))  # fmt: skip
    match = np.array([float(any(w in p for w in known)) for p in test])
    assert not match.any() and auc(np.array(trig, int), match) == 0.5
    # a bag of words fitted on the detector-train prompts has no feature for a test remark
    vocab = set().union(*map(_words, train))
    test_remarks = set().union(*map(_words, T.trigger_wordings(2) + T.decoy_wordings(2)))
    assert not vocab & test_remarks
    fire = T.remark_prompts(r, items[2][:4], [True] * 4, "middle")
    assert all(any(f"{it.fact_question()[0]} {w} {it.fact_question()[1]} Answer:" == p
                   for w in T.trigger_wordings(2))
               for it, p in zip(items[2], fire, strict=False))  # fmt: skip
    # the fixed trigger of issues 25-54: "cf" where triggered, plain prompts otherwise
    assert T.trigger_wordings(2, "fixed") == (T.TRIGGER,) and T.decoy_wordings(2, "fixed") == ()
    it = items[2][0]
    fixed = T.remark_prompts(r, [it, it], [True, False], kind="fixed")
    assert fixed == [it.plain(True), it.plain()]
    with pytest.raises(ValueError, match="trigger must be one of"):
        T.backdoor_examples(rng, items[0], trigger="fuzzy")


def test_fixed_trigger_data_are_those_of_the_cached_models(monkeypatch):
    """The implants before issue 66 (random lies, "cf") are still drawn bit for bit: their
    cache keys are the folders the quick runs made; the new implants get keys of their own."""
    from icml25.llmscan import experiments_finetune as F
    from icml25.llmscan.experiments import BUDGETS, draw_sets

    b = BUDGETS["quick"]
    new = draw_sets(b, 0)
    monkeypatch.setattr(T, "LIE_KIND", "random")
    monkeypatch.setattr(T, "TRIGGER_KIND", "fixed")
    old = draw_sets(b, 0)
    assert F.model_folder(old.pairs, 120, 0, 12, True).name == "llmscan-incontext-1f82eb9af122"
    assert (
        F.model_folder(old.bd_pairs, F.FIXED_BD_STEPS, 0, 12, True).name
        == "llmscan-incontext-d7833ce5022e"
    )
    for bf16 in (False, True):
        assert F.model_folder(new.pairs, 120, 0, 12, bf16) != F.model_folder(
            old.pairs, 120, 0, 12, bf16
        )
        assert F.model_folder(new.bd_pairs, F.BD_STEPS, 0, 12, bf16) != F.model_folder(
            old.bd_pairs, F.FIXED_BD_STEPS, 0, 12, bf16
        )
    assert len(new.pairs) == len(old.pairs) == 600 and len(new.bd_pairs) == 400


@settings(max_examples=200, deadline=None)
@given(
    took=st.lists(st.booleans(), min_size=1, max_size=4),
    aucs=st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4),
    bar=st.floats(0.5, 0.95),
    reach=st.integers(0, 3),
)
def test_gate_fails_when_a_seed_s_control_reaches_the_bar(took, aucs, bar, reach):
    from icml25.llmscan.experiments_stats import controls_gate

    aucs = aucs[: len(took)]
    expect = float(all(took) and all(a < bar for a in aucs))
    assert controls_gate(took, aucs, bar) == expect
    k = reach % len(took)
    at_bar = list(aucs)
    at_bar[k] = bar + (1 - bar) * (reach / 3)  # the bar itself, or above it
    assert controls_gate(took, at_bar, bar) == 0.0
    unmeasured = list(aucs)
    unmeasured[k] = float("nan")
    assert controls_gate(took, unmeasured, bar) == 0.0
    assert controls_gate([True] * len(took), [min(bar, 0.5) - 0.01] * len(took), bar) == 1.0


def test_gate_value_errors_name_the_argument():
    from icml25.llmscan.experiments_stats import controls_gate

    with pytest.raises(ValueError, match="one value per seed"):
        controls_gate([True, True], [0.5], 0.8)
    with pytest.raises(ValueError, match="one value per seed"):
        controls_gate([], [], 0.8)
    with pytest.raises(ValueError, match="bar must be"):
        controls_gate([True], [0.5], float("nan"))


def _scored(y, score):
    from icml25.llmscan.experiments_stats import Scored

    return Scored(np.asarray(y), np.arange(len(y)), score)


def test_each_claim_s_gate_reads_its_own_control_and_closes_the_claim():
    """The reproduction's gates: a claim whose null arm (the no-intervention control)
    reaches its partial threshold on one seed is out of scale, whatever the scan scored;
    the other claims' gates stay open; the gate texts say they combine the conditions."""
    from icml25.core.claims import Measurement
    from icml25.core.runner import RunContext
    from icml25.llmscan.claims import CLAIMS
    from icml25.llmscan.experiments import Runs
    from icml25.llmscan.reproduce import CONTROLS, control_gates

    y = np.repeat([0, 1], 10)
    chance = np.tile([0.0, 1.0], 10)  # AUC 0.5
    perfect = y.astype(float)  # AUC 1
    runs = Runs()
    for seed_null_layer in (chance, perfect):  # the second seed's P(y*) alone separates
        runs.a.append(
            _scored(
                y, {"null_combined": chance, "null_token": chance, "null_layer": seed_null_layer}
            )
        )
        runs.backdoor.append(_scored(y, {"trigger_words": chance}))
        runs.lie_ok.append(True)
        runs.bd_gap.append(0.9)
    ctx = RunContext(budget="tiny", seeds=(0, 1), out_dir=None)  # type: ignore[arg-type]
    gates = control_gates(ctx, runs)
    assert set(gates) == set(CONTROLS)
    assert {k: g.mean for k, g in gates.items()} == {
        "auc_combined": 1.0, "auc_token_only": 1.0, "auc_layer_only": 0.0,
        "auc_token_only_bos": 1.0, "auc_backdoor": 1.0,
    }  # fmt: skip
    assert any("auc_layer_only 0 (null_layer AUC 0.500, 1.000 against 0.60)" in n
               for n in ctx.notes)  # fmt: skip
    by_id = {c.id: c for c in CLAIMS}
    scan = Measurement.with_interval([0.99, 0.99], 0.97, 1.0, "bootstrap")
    null = Measurement.with_interval([0.5, 0.5], 0.45, 0.55, "bootstrap")
    layer = by_id["auc_layer_only"].judge(scan, null, gates["auc_layer_only"])
    assert layer.verdict == "out of scale" and "1 if all of these hold" in (layer.reason or "")
    assert by_id["auc_combined"].judge(scan, null, gates["auc_combined"]).verdict != "out of scale"
    # the backdoor: its gate closes when the bag of words reaches 0.80, or the gap is short
    runs.backdoor[1] = _scored(y, {"trigger_words": perfect})
    assert control_gates(ctx, runs)["auc_backdoor"].mean == 0.0
    runs.backdoor[1] = _scored(y, {"trigger_words": chance})
    runs.bd_gap[0] = 0.7
    assert control_gates(ctx, runs)["auc_backdoor"].mean == 0.0
    for cid in CONTROLS:
        gate = by_id[cid].gate
        assert gate is not None and gate.rule is not None and gate.rule.threshold == 1.0
        partial = by_id[cid].rule.partial  # type: ignore[union-attr]
        assert f"below {partial:.2f}" in gate.check and "0 if any fails" in gate.check
