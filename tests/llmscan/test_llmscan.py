import copy

import numpy as np
import pytest
import torch
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
    scan = LLMScan(lm, intervention_token="-")
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
    big = LLMScan(lm, max_batch=64)
    small = LLMScan(lm, max_batch=1)
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
    assert det.predict_proba_features(F)[:, 1][y == 1].mean() > 0.9
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


def test_reproduction_labels_accept_spellings_and_split_wording():
    from icml25.llmscan.reproduce import LIE, TEST_VARIANTS, TRAIN_VARIANTS, TRUTH, told_truth

    assert told_truth("Kyiv", "Kiev.") and told_truth("Paris", "It is Paris.")
    assert not told_truth("Paris", "Lyon.")
    assert not set(TRAIN_VARIANTS) & set(TEST_VARIANTS)
    assert len(set(TRUTH)) == len(TRUTH) == len(set(LIE)) == len(LIE)
