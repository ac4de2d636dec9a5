"""Device following (issue 67) of the language-model code paths of LLMScan and MAPLE: the scan's
encoded prompts, intervened batches and block bookkeeping, MAPLE's shared-prefix label scorer and
its sentence encoder.

The convention is that of ``tests/test_devices.py``: everything runs where the wrapped model is,
results come back as NumPy through ``.cpu()``. Without a GPU the check is **no default-device
tensors**: under ``with torch.device("meta")`` every factory call without a ``device=`` lands on
``meta``, so a CPU model must still give exactly its CPU results (each of these fails on the code
before this module: its ids and index tensors were made on the default device). Where CUDA is
present, CUDA against CPU. (FedGVI is a float64 NumPy API that computes on the CPU by design:
tensors on any device are copied there by ``validate.real_array``; its README says so.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

from icml25.core.llm import HFLanguageModel, tiny_llama
from icml25.llmscan import LLMScan
from icml25.maple import LabelScorer
from icml25.maple.learners import SentenceEncoder

META = torch.device("meta")
PROMPT = "is the sky green today? answer yes or no"


def _scan_features(scanner: LLMScan) -> list[np.ndarray]:
    res = scanner.scan(PROMPT)
    return [np.asarray(res.token_effects), np.asarray(res.layer_effects), res.features()]


@pytest.mark.parametrize("reuse", [True, False])
@pytest.mark.parametrize("effect", ["attention", "probability"])
def test_llmscan_makes_no_tensor_on_the_default_device(reuse: bool, effect: str) -> None:
    lm = HFLanguageModel(*tiny_llama(layers=3, hidden=32, seed=1))
    scanner = LLMScan(lm, reuse=reuse, token_effect=effect, max_batch=4)
    want = _scan_features(scanner)
    with torch.device(META):
        got = _scan_features(scanner)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def test_label_scorer_shared_prefix_makes_no_tensor_on_the_default_device() -> None:
    lm = HFLanguageModel(*tiny_llama(layers=2, hidden=32, seed=0))
    scorer = LabelScorer(lm, ("red", "blue", "green"), batch_size=3)
    prompts = [
        f"Instructions.\n\nText: demo\nCategory: red\n\nText: q{i * 'x'}\n" for i in range(4)
    ]
    want = scorer.log_probs(prompts)
    with torch.device(META):
        got = scorer.log_probs(prompts)
    np.testing.assert_array_equal(got, want)


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BERT and its WordPiece tokenizer saved as a local folder (no hub)."""
    from transformers import BertConfig, BertModel, BertTokenizer

    folder = tmp_path_factory.mktemp("tiny-bert")
    words = "the a sky is green blue red text category demo query yes no".split()
    (folder / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n"
    )
    BertTokenizer(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=5 + len(words), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64,
    )  # fmt: skip
    BertModel(cfg).save_pretrained(folder)
    return folder


def test_sentence_encoder_takes_a_device_and_makes_no_default_device_tensor(
    tiny_encoder: Path,
) -> None:
    texts = ["the sky is green", "a red demo", "query yes"]
    want = SentenceEncoder(tiny_encoder)(texts)
    enc = SentenceEncoder(tiny_encoder, device="cpu")
    with torch.device(META):
        got = enc(texts)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.float64 and got.shape == (3, 16)
    missing = "cuda" if not torch.cuda.is_available() else "cuda:99"
    with pytest.raises(ValueError, match=f"device {missing!r} is not available"):
        SentenceEncoder(tiny_encoder, device=missing)
    with pytest.raises(ValueError, match="device must be a torch device"):
        SentenceEncoder(tiny_encoder, device="gpu0")


@pytest.mark.cuda
def test_llm_paths_on_cuda_match_the_cpu(tiny_encoder: Path) -> None:
    def both(make: Any) -> tuple[Any, Any]:
        model, tok = tiny_llama(layers=3, hidden=32, seed=1)
        cpu = make(HFLanguageModel(model, tok))
        gpu = make(HFLanguageModel(model.to("cuda"), tok))
        return cpu, gpu

    a, b = both(lambda lm: _scan_features(LLMScan(lm, max_batch=4)))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-3, atol=1e-5)
    prompts = [f"Text: q{i * 'x'}\nCategory:" for i in range(3)]
    a, b = both(lambda lm: LabelScorer(lm, ("red", "blue")).log_probs(prompts))
    np.testing.assert_allclose(a, b, atol=1e-4)
    texts = ["the sky is green", "a red demo"]
    np.testing.assert_allclose(
        SentenceEncoder(tiny_encoder)(texts),
        SentenceEncoder(tiny_encoder, device="cuda")(texts),
        atol=1e-5,
    )
