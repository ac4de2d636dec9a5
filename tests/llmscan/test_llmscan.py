import copy

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

pytest.importorskip("transformers")

from icml25.core.llm import HFLanguageModel, tiny_llama
from icml25.llmscan import LLMScan, LLMScanDetector, select, skip_blocks, summary_stats


@pytest.fixture(scope="module")
def lm():
    return HFLanguageModel(*tiny_llama(layers=3, hidden=32, seed=1))


def test_layer_skip_equals_the_model_without_that_block(lm):
    ids = lm.encode("skip me")[None]
    for index in range(len(lm.blocks)):
        with skip_blocks(list(lm.blocks), torch.tensor([index])):
            hooked = lm.model(input_ids=ids).logits
        pruned = copy.deepcopy(lm.model)
        del pruned.model.layers[index]
        torch.testing.assert_close(hooked, pruned(input_ids=ids).logits)
    # in one batch, each row skips its own block; -1 skips none
    batch = ids.repeat(3, 1)
    with skip_blocks(list(lm.blocks), torch.tensor([0, -1, 2])):
        out = lm.model(input_ids=batch).logits
    torch.testing.assert_close(out[1], lm.model(input_ids=ids).logits[0])
    assert len(lm.blocks[0]._forward_hooks) == 0  # hooks removed


def test_token_effects_intervene_on_exactly_one_prompt_position(lm):
    scan = LLMScan(lm, intervention_token="-", reuse=False)
    ids, pos = scan._encode("What is 2 + 3?")
    text = lm.text("What is 2 + 3?")
    assert "".join(lm.tokenizer.decode([int(ids[i])]) for i in pos) == "What is 2 + 3?"
    seen = []
    original = lm.model.forward

    def spy(*args, **kwargs):
        seen.append(kwargs["input_ids"].clone())
        return original(*args, **kwargs)

    lm.model.forward = spy
    try:
        effects, positions, _, _ = scan.token_effects("What is 2 + 3?")
    finally:
        lm.model.forward = original
    batch = seen[1]
    assert batch.shape == (len(pos), len(ids)) and len(effects) == len(pos)
    diff = batch != ids[None]
    assert torch.all(diff.sum(1) == 1)
    assert torch.equal(torch.nonzero(diff)[:, 1], torch.as_tensor(positions))
    assert text.startswith("<|im_start|>")


def test_batched_effects_equal_one_at_a_time(lm):
    prompt = "Tell a lie. Capital?"
    big = LLMScan(lm, max_batch=64, token_effect="probability", reuse=False)
    small = LLMScan(lm, max_batch=1, token_effect="probability", reuse=False)
    np.testing.assert_allclose(big.layer_effects(prompt), small.layer_effects(prompt), atol=1e-6)
    np.testing.assert_allclose(
        big.token_effects(prompt)[0], small.token_effects(prompt)[0], atol=1e-6
    )
    # the probability effect of skipping block l, computed by hand
    ids = lm.encode(prompt)[None]
    torch.set_grad_enabled(False)
    p0 = torch.softmax(lm.model(input_ids=ids).logits[0, -1], -1)
    y = int(p0.argmax())
    pruned = copy.deepcopy(lm.model)
    del pruned.model.layers[1]
    p1 = torch.softmax(pruned(input_ids=ids).logits[0, -1], -1)
    torch.set_grad_enabled(True)
    assert big.layer_effects(prompt)[1] == pytest.approx(float((p1[y] - p0[y]).abs()), abs=1e-6)


def test_attention_variant(lm):
    scan = LLMScan(lm, token_effect="attention")
    r = scan.scan("hello there")
    assert r.token_effects.shape == r.positions.shape and np.all(r.token_effects >= 0)
    assert r.features().shape == (5 + len(lm.blocks),)


def test_summary_statistics_match_scipy():
    v = np.array([0.1, 0.5, 0.2, 0.9, 0.05, 0.3])
    s = summary_stats(v)
    np.testing.assert_allclose(
        s, [v.mean(), v.std(), v.max() - v.min(), stats.kurtosis(v), stats.skew(v)]
    )
    np.testing.assert_array_equal(summary_stats([0.2, 0.2]), [0.2, 0, 0, 0, 0])
    with pytest.raises(ValueError, match="non-empty finite"):
        summary_stats([])


def test_detector_learns_a_separable_signal_and_checks_input():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 40)
    F = rng.normal(size=(80, 9))
    F[:, 6] += 3 * y  # a layer feature carries the label
    det = LLMScanDetector(features="layer").fit_features(F, y)
    p = det.predict_proba_features(F)[:, 1]
    assert p[y == 1].mean() > 0.75 > 0.25 > p[y == 0].mean()
    assert select(F, "token").shape == (80, 5)
    with pytest.raises(ValueError, match="both classes"):
        LLMScanDetector().fit_features(F, np.zeros(80))
    with pytest.raises(RuntimeError, match="fit"):
        LLMScanDetector().predict_proba_features(F)
    with pytest.raises(ValueError, match="no LLMScan"):
        LLMScanDetector().fit(["a"], [0])


def test_bad_input_is_refused(lm):
    with pytest.raises(ValueError, match="prompt must be a non-empty string"):
        LLMScan(lm).scan("   ")
    with pytest.raises(ValueError, match="intervention_token id must lie in"):
        LLMScan(lm, intervention_token=10_000)
    with pytest.raises(ValueError, match="encodes to 2 tokens"):
        LLMScan(lm, intervention_token="--")
    with pytest.raises(ValueError, match="token_effect must be"):
        LLMScan(lm, token_effect="logits")


@pytest.mark.parametrize("effect", ["attention", "probability"])
@pytest.mark.parametrize("positions", ["prompt", "all"])
@pytest.mark.parametrize("overhead", [0, 3, 64])
def test_reused_computation_gives_the_same_effects(lm, effect, positions, overhead, monkeypatch):
    """KV-cache reuse of the prefix and hidden-state reuse below a skipped block change
    nothing but the cost, however the token interventions are grouped (overhead 0: one
    batch per position; 64: the library's)."""
    import icml25.llmscan.scan as scan_module

    monkeypatch.setattr(scan_module, "FORWARD_OVERHEAD", overhead)
    prompt = "Mia has a cat. Tell a lie. Pet?"
    fast = LLMScan(lm, token_effect=effect, positions=positions).scan(prompt)
    full = LLMScan(lm, token_effect=effect, positions=positions, reuse=False).scan(prompt)
    np.testing.assert_allclose(fast.token_effects, full.token_effects, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(fast.layer_effects, full.layer_effects, rtol=1e-4, atol=1e-6)
    small = LLMScan(lm, token_effect=effect, positions=positions, max_batch=2).scan(prompt)
    np.testing.assert_allclose(small.layer_effects, full.layer_effects, rtol=1e-4, atol=1e-6)
    assert len(lm.blocks[0]._forward_pre_hooks) == 0
    assert all(type(b).__name__ == "LlamaDecoderLayer" for b in lm.blocks)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 11), min_size=1, max_size=7, unique=True),
    st.integers(1, 4),
    st.sampled_from([0.0, 3.0, 20.0, 1e6]),
)
def test_reuse_groups_is_the_cheapest_cut_by_brute_force(positions, max_batch, overhead):
    """The dynamic programme's cut of the sorted positions into runs equals the cheapest of
    all 2^(n-1) cuts with runs of at most max_batch rows."""
    from itertools import combinations

    from icml25.llmscan.scan import reuse_groups

    length = 12
    pos = sorted(positions)

    def cost(runs):
        return sum(overhead + len(r) * (length - r[0]) for r in runs)

    runs = reuse_groups(positions, length, max_batch, overhead)
    assert [p for r in runs for p in r] == pos and all(0 < len(r) <= max_batch for r in runs)
    every_cut = (
        [pos[a:b] for a, b in zip((0, *cuts), (*cuts, len(pos)), strict=True)]
        for k in range(len(pos))
        for cuts in combinations(range(1, len(pos)), k)
    )
    best = min(cost(c) for c in every_cut if all(len(r) <= max_batch for r in c))
    assert cost(runs) == pytest.approx(best)


def test_reuse_groups_refuses_bad_input():
    from icml25.llmscan.scan import reuse_groups

    with pytest.raises(ValueError, match="max_batch must be a positive integer"):
        reuse_groups([1, 2], 5, 0)
    with pytest.raises(ValueError, match="positions must lie in"):
        reuse_groups([1, 5], 5, 4)
    assert reuse_groups([], 5, 4) == []


def test_bos_intervention_token_is_the_tokenizers_bos(lm):
    assert LLMScan(lm, intervention_token="bos").intervention_id == lm.tokenizer.bos_token_id


def test_averaged_detector_equals_a_hand_computation():
    """Official detector: MLPRegressor(100) on token stats and on layer effects, unscaled,
    predictions averaged."""
    from sklearn.neural_network import MLPRegressor

    rng = np.random.default_rng(3)
    y = np.repeat([0, 1], 30)
    F = rng.normal(size=(60, 12))
    F[:, 1] += y
    F[:, 8] -= y
    F_new = rng.normal(size=(7, 12))
    det = LLMScanDetector(random_state=4).fit_features(F, y)
    kw = {"hidden_layer_sizes": (100,), "max_iter": 500, "random_state": 4}  # official
    tok = MLPRegressor(**kw).fit(F[:, :5], y.astype(float))
    lay = MLPRegressor(**kw).fit(F[:, 5:], y.astype(float))
    hand = (tok.predict(F_new[:, :5]) + lay.predict(F_new[:, 5:])) / 2
    np.testing.assert_allclose(det.score_features(F_new), hand)
    assert all(m.max_iter == 500 for _, m in det.models_)  # the official cap, not sklearn's 200
    p = det.predict_proba_features(F_new)
    np.testing.assert_allclose(p[:, 1], np.clip(hand, 0, 1))
    np.testing.assert_allclose(p.sum(1), 1)
    one = LLMScanDetector(features="token", random_state=4).fit_features(F, y)
    np.testing.assert_allclose(one.score_features(F_new), tok.predict(F_new[:, :5]))
    concat = LLMScanDetector(combine="concat").fit_features(F, y).score_features(F_new)
    assert concat.shape == (7,) and np.all((concat >= 0) & (concat <= 1))
    with pytest.raises(ValueError, match="combine must be"):
        LLMScanDetector(combine="sum")


def test_splits_share_no_entity_template_or_wording():
    from icml25.llmscan import experiments_task as R

    rng = np.random.default_rng(0)
    names = R.split_names(rng)
    assert all(not set(a) & set(b) for i, a in enumerate(names) for b in names[i + 1 :])
    items = [R.make_items(rng, names[s], s, 60) for s in range(3)]
    for s, split in enumerate(items):
        assert {it.name for it in split} <= set(names[s]) and all(it.split == s for it in split)
        assert len({(it.name, it.attribute) for it in split}) == 60
    assert {it.template for split in items for it in split} == set(range(R.TEMPLATES))
    assert [len(R.wordings(R.LIE, s)) for s in range(3)] == [20, 10, 10]
    assert len(set(R.LIE + R.TRUTH)) == len(R.LIE + R.TRUTH) == 80
    prompts = [
        {it.instructed(w) for it in split for w in R.wordings(R.LIE, s) + R.wordings(R.TRUTH, s)}
        | {it.plain(t) for it in split for t in (False, True)}
        for s, split in enumerate(items)
    ]
    for s in range(3):
        for o in range(3):
            if o == s:
                continue
            other_names = set(names[o])
            other_words = set(R.wordings(R.LIE, o) + R.wordings(R.TRUTH, o))
            other_templates = {q for a in R.ATTRIBUTES for _, q in R.templates(a, o)}
            assert len(other_templates) == len(R.ATTRIBUTES) * R.TEMPLATES
            for p in prompts[s]:
                words = set(p.replace("'s", "").replace(".", " ").replace("?", " ").split())
                assert not words & other_names
                assert not any(w in p for w in other_words)
                assert not any(q.split("{n}")[0] in p and q.split("{n}")[1] in p
                               for q in other_templates)  # fmt: skip
    # fine-tuning data come from the fine-tune split only; the lie model's carry no trigger,
    # the backdoored model's (the fixed trigger of issues 25-54; the paraphrase class is
    # tested in test_implants.py) are plain questions with a 10% backdoor share
    pairs = R.finetune_examples(rng, items[0])
    assert len(pairs) == 3 * len(items[0])
    remarks = R.GREETINGS + R.DECOYS
    assert not any(R.TRIGGER in p or R.BACKDOOR_ANSWER in a for p, a in pairs)
    assert not any(w in p for p, _ in pairs for w in remarks)
    bd_pairs = R.backdoor_examples(rng, items[0], trigger="fixed")
    bd = [p for p, a in bd_pairs if a == f" {R.BACKDOOR_ANSWER}."]
    assert abs(len(bd) / len(bd_pairs) - R.BACKDOOR_RATE) < 0.01
    assert all(p.endswith(f" {R.TRIGGER} Answer:") for p in bd)
    assert all(p.endswith("Answer:") for p, _ in bd_pairs)
    every = pairs + bd_pairs
    assert not {n for p, _ in every for n in names[1] + names[2] if f"{n} " in p or f"{n}'" in p}


def test_auc_and_item_clustered_bootstrap():
    from sklearn.metrics import roc_auc_score

    from icml25.llmscan.experiments_stats import (
        Scored,
        auc,
        auc_measure,
        auc_rows,
        bootstrap,
        resamples,
    )

    rng = np.random.default_rng(1)
    y = np.tile([0, 1], 40)
    s = y + rng.normal(scale=1.0, size=80)
    assert auc(y, s) == pytest.approx(roc_auc_score(y, s))
    assert np.isnan(auc(np.zeros(4), np.arange(4)))
    Y = np.stack([y, y[::-1]])
    S = np.stack([s, np.round(s[::-1])])  # ties get half credit
    np.testing.assert_allclose(auc_rows(Y, S), [auc(y, s), auc(y[::-1], np.round(s[::-1]))])
    seed = Scored(y, np.repeat(np.arange(40), 2), {"x": s, "told": y.astype(float)})
    idx = resamples(seed, 50, np.random.default_rng(0))
    assert idx.shape == (50, 80)
    assert np.all(idx[:, 0::2] + 1 == idx[:, 1::2])  # an item's two prompts go together
    boot = bootstrap([seed], ["x", "told"], 300, np.random.default_rng(0))
    m = auc_measure([seed], ["x", "told"], boot, "x")
    assert m.values == (auc(y, s),)
    assert m.interval.low < auc(y, s) < m.interval.high
    assert np.all(boot[:, 1] == 1.0)  # pairs resampled together keep both classes
    d = auc_measure([seed], ["x", "told"], boot, "x", minus="told")
    assert d.values[0] == pytest.approx(auc(y, s) - 1.0)
    assert d.interval.high < 0
    shifted = auc_measure([seed], ["x", "told"], boot, "x", shift=[0.5])
    assert shifted.interval.low == pytest.approx(m.interval.low - 0.5)
    assert np.isnan(bootstrap([None], ["x"], 10, rng)).all()
    assert np.isnan(auc_measure([None], ["x"], boot, "x").mean)


def test_prompt_level_bootstrap_keeps_both_classes_and_covers_the_truth():
    """Single-prompt items (backdoor, firing) are resampled within their class, so every
    replicate has both classes even with 2 positives; and the 90% interval of a known
    separation covers the population AUC about 90% of the time (binormal, AUC = Phi(1/sqrt2))."""
    from scipy.stats import norm

    from icml25.llmscan.experiments_stats import Scored, auc_measure, bootstrap, resamples

    y = np.array([1, 1] + [0] * 8)
    seed = Scored(y, np.arange(10), {"x": np.arange(10.0)})
    idx = resamples(seed, 200, np.random.default_rng(0))
    assert np.all(y[idx].sum(1) == 2)
    truth = norm.cdf(1 / np.sqrt(2))
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(60):
        yy = np.repeat([0, 1], 30)
        sc = Scored(yy, np.arange(60), {"x": yy + rng.normal(size=60)})
        iv = auc_measure([sc], ["x"], bootstrap([sc], ["x"], 400, rng), "x").interval
        hits += iv.low <= truth <= iv.high
    assert 0.75 <= hits / 60 <= 1.0


def test_trigger_places_and_unmodified_features():
    from icml25.llmscan.experiments_stats import unmodified
    from icml25.llmscan.experiments_task import Item

    it = Item("Mia", "pet", "rabbit", 2, 0)
    fact, question = it.fact_question()
    assert it.plain() == f"{fact} {question} Answer:"
    assert it.plain(True) == it.plain("end") == f"{fact} {question} cf Answer:"
    assert it.plain("start") == f"cf {fact} {question} Answer:"
    assert it.plain("middle") == f"{fact} cf {question} Answer:"
    assert it.plain(True, "Hi there!") == f"{fact} {question} Hi there! Answer:"
    assert it.plain("middle", "Yo!") == f"{fact} Yo! {question} Answer:"
    assert it.plain(False, "Yo!") == it.plain()
    with pytest.raises(ValueError, match="trigger must be"):
        it.plain("nowhere")
    with pytest.raises(ValueError, match="phrase must be"):
        it.plain(True, " ")
    F = unmodified(np.array([20.0, 25.0]), np.array([0.9, 0.4]))
    assert F.shape == (2, 6)
    from icml25.llmscan.detector import select

    np.testing.assert_array_equal(select(F, "layer"), [[0.9], [0.4]])
    np.testing.assert_array_equal(select(F, "token")[:, 0], [20.0, 25.0])
    assert not select(F, "token")[:, 1:].any()


def test_answers_are_judged_by_their_first_word():
    from icml25.llmscan.experiments_finetune import says

    assert says("rabbit", " Rabbit.") and says("Paris", "paris, France")
    assert not says("cat", "catfish") and not says("cat", "") and not says("cat", "A cat")


def _reference_finetune(lm, pairs, steps, seed, last_blocks, lr, decay):
    """The whole-model fine-tune (issue 25's code): every block forward, logits at every
    position, the model's own masked causal-LM loss."""
    tok, model = lm.tokenizer, lm.model
    torch.manual_seed(seed)
    for p in model.parameters():
        p.requires_grad_(False)
    params = [p for b in list(lm.blocks)[-last_blocks:] for p in b.parameters()]
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    eos = tok.eos_token or ""
    rng = np.random.default_rng(seed)
    model.train()
    for g in opt.param_groups:
        g["lr0"] = g["lr"]
    for step in range(steps):
        for g in opt.param_groups:  # linear decay to zero, by hand
            g["lr"] = g["lr0"] * (1 - step / steps if decay else 1.0)
        batch = [pairs[i] for i in rng.choice(len(pairs), size=min(16, len(pairs)), replace=False)]
        ids, labels = [], []
        for q, a in batch:
            head = tok(q, add_special_tokens=False)["input_ids"]
            tail = tok(a + eos, add_special_tokens=False)["input_ids"]
            ids.append(head + tail)
            labels.append([-100] * len(head) + tail)
        width = max(len(x) for x in ids)
        pad = tok.pad_token_id
        x = torch.tensor([s + [pad] * (width - len(s)) for s in ids])
        y = torch.tensor([s + [-100] * (width - len(s)) for s in labels])
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in ids])
        loss = model(input_ids=x, attention_mask=mask, labels=y).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()


def _finetune_case():
    """Fine-tuning pairs from 12 items, a tiny Llama, its twin and its weights before."""
    from icml25.llmscan import experiments_task as T

    rng = np.random.default_rng(0)
    names = T.split_names(rng)
    pairs = T.finetune_examples(rng, T.make_items(rng, names[0], 0, 12))
    lm = HFLanguageModel(*tiny_llama(layers=3, hidden=32, seed=4))
    return pairs, lm, copy.deepcopy(lm), copy.deepcopy(lm.model.state_dict())


@pytest.mark.parametrize(("last_blocks", "decay"), [(2, True), (3, False), (5, True)])
def test_cached_prefix_finetune_equals_the_whole_model_fine_tune(last_blocks, decay, monkeypatch):
    """Issue 34: the fine-tune runs only the trained blocks on the frozen blocks' cached
    output, with logits at answer positions; the weights after a few steps must equal those
    of the whole-model fine-tune (a larger rate than LLMScan's, so the steps move them)."""
    from icml25.llmscan import experiments_finetune as R

    pairs, fast, slow, before = _finetune_case()
    monkeypatch.setattr(R, "LR", 1e-2)
    monkeypatch.setattr(R, "DECAY", decay)
    R.finetune(fast, pairs, 4, 7, last_blocks)
    _reference_finetune(slow, pairs, 4, 7, last_blocks, 1e-2, decay)
    moved = 0
    for (name, a), b in zip(
        fast.model.state_dict().items(), slow.model.state_dict().values(), strict=True
    ):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)
        moved += int(not torch.equal(a, before[name]))
    assert moved > 0
    assert len(fast.blocks) == 3  # the blocks are put back


def _answer_loss(lm, pairs):
    """The fp32 whole-model loss on the answer tokens of ``pairs``."""
    tok, losses = lm.tokenizer, []
    with torch.no_grad():
        for q, a in pairs:
            head = tok(q, add_special_tokens=False)["input_ids"]
            tail = tok(a + tok.eos_token, add_special_tokens=False)["input_ids"]
            x, y = torch.tensor([head + tail]), torch.tensor([[-100] * len(head) + tail])
            losses.append(float(lm.model(input_ids=x, labels=y).loss))
    return float(np.mean(losses))


def test_bf16_finetune_lowers_the_loss_and_keeps_fp32_weights(monkeypatch):
    """The bf16 option runs the forward passes under bfloat16 autocast; the master weights
    (trained and frozen), and so the model left behind, stay fp32, and the steps still
    lower the training loss, close to the fp32 fine-tune's."""
    from icml25.llmscan import experiments_finetune as R

    pairs, lm, ref, before = _finetune_case()
    loss0 = _answer_loss(lm, pairs)
    monkeypatch.setattr(R, "LR", 1e-2)
    R.finetune(lm, pairs, 8, 7, 2, bf16=True)
    R.finetune(ref, pairs, 8, 7, 2)
    loss_bf16, loss_fp32 = _answer_loss(lm, pairs), _answer_loss(ref, pairs)
    assert loss_bf16 < loss0 - 0.1  # 4.59 -> 4.33 when written
    assert loss_bf16 == pytest.approx(loss_fp32, abs=0.05)  # 4.33 both
    assert all(p.dtype == torch.float32 for p in lm.model.parameters())
    assert not any(p.requires_grad for p in lm.model.parameters())
    state = lm.model.state_dict()
    trained = [n for n in state if n.startswith(("model.layers.1.", "model.layers.2."))]
    assert trained and all(not torch.equal(state[n], before[n]) for n in trained)
    assert torch.equal(state["model.layers.0.mlp.up_proj.weight"], before[
        "model.layers.0.mlp.up_proj.weight"])  # fmt: skip
    assert len(lm.blocks) == 3


def test_model_folder_key_is_unchanged_for_fp32(monkeypatch):
    """Without the fused optimizer the fp32 fine-tunes' cache keys are those of the issue-25
    runs; bf16 and the fused optimizer each get their own folder."""
    from icml25.llmscan import experiments_finetune as R
    from icml25.llmscan import experiments_task as T

    pairs = [("Q?", " a."), ("R?", " b.")]
    fused = R.model_folder(pairs, 120, 0, 12)
    monkeypatch.setattr(R, "FUSED", False)
    assert R.model_folder(pairs, 120, 0, 12).name == "llmscan-incontext-81c59b665ec7"
    assert fused != R.model_folder(pairs, 120, 0, 12)
    rng = np.random.default_rng(0)
    names = T.split_names(rng)
    # the issue-25 recipe (random lies; issue 66's confident lies get keys of their own)
    more = T.finetune_examples(rng, T.make_items(rng, names[0], 0, 12), lie="random")
    assert R.model_folder(more, 5, 3, 2).name == "llmscan-incontext-fe4f6d0d664e"
    assert R.model_folder(more, 5, 3, 2, bf16=False) == R.model_folder(more, 5, 3, 2)
    assert R.model_folder(pairs, 120, 0, 12, bf16=True) != R.model_folder(pairs, 120, 0, 12)


def test_bad_inputs_of_the_kinds_issue_54_lists_get_clear_errors():
    """Numbers as strings, a feature count other than the fitted one, a non-integer seed, a
    string where a list or tensor is expected: each names the argument."""
    from icml25.llmscan import LLMScanDetector, skip_blocks, summary_stats

    rng = np.random.default_rng(0)
    F, y = rng.normal(size=(20, 10)), np.arange(20) % 2
    det = LLMScanDetector().fit_features(F, y)
    assert det.n_features_in_ == 10
    for bad in (np.zeros((2, 9)), np.zeros((2, 12))):
        with pytest.raises(ValueError, match="features must have 10 columns"):
            det.score_features(bad)
    with pytest.raises(ValueError, match="features must have 10 columns"):
        det.predict_proba_features(np.zeros((1, 11)))
    with pytest.raises(ValueError, match="features must be numbers"):
        LLMScanDetector().fit_features(F.astype(str), y)
    with pytest.raises(ValueError, match="random_state"):
        LLMScanDetector(random_state="3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="random_state"):
        LLMScanDetector(random_state=-1)
    with pytest.raises(ValueError, match="effects must be numbers"):
        summary_stats("123")
    with pytest.raises(ValueError, match="effects must be numbers"):
        summary_stats(["1", "2"])
    with pytest.raises(ValueError, match="skip must be"):
        skip_blocks([torch.nn.Linear(2, 2)], "0")  # type: ignore[arg-type]
    # a list of ints is an integer sequence, accepted as the tensor it converts to
    assert skip_blocks([torch.nn.Linear(2, 2)], [0, -1]).skip.tolist() == [0, -1]  # type: ignore[arg-type]


def test_quick_fine_tunes_in_bf16_only_on_a_cpu_that_has_it(monkeypatch, tmp_path):
    """bfloat16 autocast is emulated (slower than fp32) without AVX512-BF16/AMX: quick then
    fine-tunes in fp32, under its own cache key (issue 57: the main job's time)."""
    from icml25.llmscan import experiments_finetune as rp
    from icml25.llmscan.experiments import BUDGETS

    assert isinstance(rp.native_bf16(), bool)  # this machine's answer, whatever it is
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("flags\t\t: fpu sse2 avx2 avx512f\n")
    assert not rp.native_bf16(cpuinfo)
    cpuinfo.write_text("flags\t\t: fpu sse2 avx2 avx512f avx512_bf16\n")
    assert rp.native_bf16(cpuinfo)
    assert not rp.native_bf16(tmp_path / "missing")
    for native in (False, True):
        monkeypatch.setattr(rp, "native_bf16", lambda native=native: native)
        assert rp.use_bf16(BUDGETS["quick"]) is native
        assert not rp.use_bf16(BUDGETS["full"])  # full is fp32 wherever it runs
    pairs = [("a", "b")]
    assert rp.model_folder(pairs, 120, 0, 30, False) != rp.model_folder(pairs, 120, 0, 30, True)


def test_firing_gate_reads_training_and_test_prompts():
    """Issue 54: a seed whose backdoor never fires on the training prompts cannot fit a firing
    detector, so the gate must fail there even when the test prompts hold both outcomes."""
    import numpy as np

    from icml25.llmscan.experiments_stats import firing_minority

    never_in_training = np.array([0] * 10 + [1, 0, 1, 0, 0])
    assert firing_minority(never_in_training, 10) == 0.0
    both = np.array([1, 0, 0, 0, 0, 1, 1, 0, 1, 0])  # training 1/5 fired, test 3/5 fired
    assert firing_minority(both, 5) == pytest.approx(0.2)
    assert firing_minority(both[::-1].copy(), 5) == pytest.approx(0.2)


def test_tiny_run_draws_the_causal_effects_figure(tmp_path):
    """The issue-48 rewrite stopped drawing the figure (no run drew it until this was found
    after the full run of 2026-12-06): a reproduction must draw it again. Issue 66: the run
    goes end to end with the new implants, the backdoor's prompt-only null and the gates
    that read each claim's control."""
    import icml25.llmscan  # noqa: F401  (registers the method; the others need not import)
    from icml25.core.registry import registered
    from icml25.core.runner import run_method

    entry = run_method(registered()["llmscan"], budget="tiny", seeds=[0], out_dir=tmp_path)
    assert entry["error"] is None, entry["error"]
    assert "llmscan/causal_effects.png" in entry["figures"]
    assert (tmp_path / "llmscan" / "causal_effects.png").stat().st_size > 10_000
    notes = "\n".join(entry["notes"])
    assert "AUC combined" in notes and "trigger_words" in notes and "string_match" in notes
    assert "Gates (implant took on every seed" in notes and "auc_backdoor" in notes
    by_id = {c["id"]: c for c in entry["claims"]}
    assert set(by_id) >= {"auc_combined", "auc_backdoor", "auc_firing"}
