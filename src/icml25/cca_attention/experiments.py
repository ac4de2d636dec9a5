"""The arms of CCA-Attention's reproduction: the needle task, the SmolLM2 fine-tune and its
perplexity, and the cost of one attention pass. :mod:`icml25.cca_attention.reproduce` holds
the claims and puts these together.

- **Needle task** (parts (a) and (b)): :func:`needle_batch`, :func:`train`,
  :func:`correct` (which held-out items a model answers right).
- **A pretrained LM** (part (c)): :func:`module_tokens` (standard-library source as text),
  :func:`token_nlls` / :func:`perplexity` (over the positions >= ``skip`` of every chunk),
  :func:`finetune_lm` (the official recipe's shape: AdamW, linear warm-up then a constant
  rate, gradient clipping, gradient accumulation, resumable), :func:`use_local` (CCA's own
  window without its core tokens: the null arm) and :func:`finetune_comparison`.
- **Cost** (part (d)): :func:`forward_cost` runs :func:`forward_cost_here` in a fresh process;
  :func:`forward_costs` runs several, each in a child forked from one fresh process.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from icml25.cca_attention.attention import cca_attention, expand_kv, visible_groups
from icml25.cca_attention.model import TinyLM
from icml25.core import validate as V

VOCAB, FILLER, VALUES, MARK, QUERY = 32, 20, 8, 30, 31
SPEED_G, SPEED_S, SPEED_HEADS, SPEED_DIM = 16, 256, 8, 64  # (d): one forward pass
LM_G, LM_S = 16, 128
EVAL_MODULES = ("argparse", "tarfile", "difflib")
FINETUNE_MODULES = (
    "configparser",
    "calendar",
    "fractions",
    "statistics",
    "shlex",
    "ipaddress",
    "pickletools",
    "smtplib",
    "imaplib",
    "mailbox",
    "pydoc",
    "inspect",
    "typing",
    "dataclasses",
    "enum",
)
SPEED_METHODS = ("sdpa", "cca", "cca-fast", "cca-dense")
"""``cca-dense``: CCA's kernel with a window over the whole sequence (no core token is ever
visible: causal attention through the same blocks), the speed claims' null arm."""


# ----------------------------------------------------------------------------- (a), (b)
def needle_far(length: int) -> int:
    """The ``MARK`` of a needle sequence of ``length`` tokens sits at a position in
    ``1 .. needle_far(length) - 1``."""
    return max(2, length - max(96, length // 3))


def needle_min_distance(length: int) -> int:
    """The fewest tokens between a needle's value ``v`` and the final ``QUERY`` (94 at 128
    and 256 tokens; fewer in shorter sequences, where the mark sits at position 1)."""
    return length - needle_far(length) - 2


def needle_batch(n: int, length: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` sequences with ``MARK v`` at least :func:`needle_min_distance` tokens before the
    final ``QUERY``; targets ``v``."""
    ids = torch.randint(0, FILLER, (n, length), generator=gen)
    vals = torch.randint(FILLER, FILLER + VALUES, (n,), generator=gen)
    far = needle_far(length)
    pos = torch.randint(1, far, (n,), generator=gen)
    ids[torch.arange(n), pos] = MARK
    ids[torch.arange(n), pos + 1] = vals
    ids[:, -1] = QUERY
    return ids, vals


def train(model: TinyLM, steps: int, length: int, seed: int) -> None:
    """Adam (lr 3e-3), batches of 32 needle sequences drawn from ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        ids, vals = needle_batch(32, length, gen)
        loss = F.cross_entropy(model(ids)[:, -1], vals)
        opt.zero_grad()
        loss.backward()
        opt.step()


@torch.no_grad()
def correct(model: TinyLM, length: int, seed: int, items: int = 1000) -> np.ndarray:
    """Whether the model names the value of each of ``items`` held-out needle sequences (the
    same sequences for every model of a seed: paired items)."""
    ids, vals = needle_batch(items, length, torch.Generator().manual_seed(10_000 + seed))
    return (model(ids)[:, -1].argmax(-1) == vals).numpy().astype(float)


# ----------------------------------------------------------------------------- (d)
def _rss_kib(field: str) -> int:
    """``VmRSS`` or ``VmHWM`` from ``/proc/self/status``; elsewhere the ``getrusage`` peak."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))
    except OSError:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the high-water mark to the current resident set
    except OSError:  # not Linux: growth over the process's earlier peak (may read 0)
        pass


def forward_cost_here(
    method: str, length: int, repeats: int = 3, *, backward: bool = False, threads: int = 1
) -> dict[str, Any]:
    """Cost of one (1, 8, L, 64) float32 causal attention pass, forward or, with
    ``backward``, forward and backward, on ``threads`` threads.

    After a warm-up, each of ``repeats - 1`` runs is timed (wall and this process's CPU time;
    with one thread the CPU time is what the wall time would be on an idle machine, and other
    processes' load hardly moves it) and its peak growth of resident memory is read: Linux's
    high-water mark (``VmHWM``), reset to the current resident set before the run
    (``/proc/self/clear_refs``), minus that resident set. Returns the lists ``cpu_runs``,
    ``wall_runs`` and ``mib_runs`` (one entry per timed run), and ``seconds``,
    ``cpu_seconds`` (the best run) and ``mib`` (the largest peak). Run it in a fresh process
    (:func:`forward_cost`) whose allocator hands every block of 64 KiB or more back to the
    system when it is freed (``MALLOC_MMAP_THRESHOLD_``), so that freed memory is not there
    to be reused unseen.

    Methods: ``sdpa`` (PyTorch's fused causal SDPA), ``cca`` (g = 16, s = 256, the default
    low-memory kernel), ``cca-fast`` (``low_memory=False``) and ``cca-dense`` (CCA's kernel
    with a window covering the sequence: no compression, the null arm)."""
    V.choice("method", method, SPEED_METHODS)
    V.integer("repeats", repeats, low=2)
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, SPEED_HEADS, length, SPEED_DIM) for _ in range(3))
    grad = torch.randn_like(q) if backward else None
    for x in (q, k, v):
        x.requires_grad_(backward)
    walls, cpus, mibs = [], [], []
    for i in range(repeats):
        for x in (q, k, v):
            x.grad = None
        if i >= 1:  # after the warm-up
            _reset_peak()
            base = _rss_kib("VmRSS")
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.set_grad_enabled(backward):
            if method == "sdpa":
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                window = length if method == "cca-dense" else SPEED_S
                low_memory = method != "cca-fast"
                out = cca_attention(
                    q, k, v, group_size=SPEED_G, window=window, low_memory=low_memory
                )
            if grad is not None:
                out.backward(grad)
        del out
        if i >= 1:
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            mibs.append((_rss_kib("VmHWM") - base) / 1024)
    return {
        "seconds": min(walls),
        "cpu_seconds": min(cpus),
        "mib": max(mibs),
        "wall_runs": walls,
        "cpu_runs": cpus,
        "mib_runs": mibs,
    }


def forward_cost(
    method: str, length: int, repeats: int = 3, *, backward: bool = False, threads: int = 1
) -> dict[str, Any]:
    """:func:`forward_cost_here` in a fresh Python process."""
    V.choice("method", method, SPEED_METHODS)
    code = (
        "import json; from icml25.cca_attention.experiments import forward_cost_here as f; "
        f"print(json.dumps(f({method!r}, {int(length)}, {int(repeats)}, "
        f"backward={bool(backward)}, threads={int(threads)})))"
    )
    env = os.environ | {"MALLOC_MMAP_THRESHOLD_": "65536"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if run.returncode:
        raise RuntimeError(f"forward_cost({method!r}, {length}) failed:\n{run.stderr[-2000:]}")
    return dict(json.loads(run.stdout.strip().splitlines()[-1]))


# One fresh process imports torch once, then forks a child per (method, length): each child
# starts from that clean process (torch imported, no tensor made, no thread pool started) as a
# fresh interpreter would, without paying the ~1.6 CPU-s of importing torch again.
_FORK_SERVER = """
import json, os, sys, traceback
from icml25.cca_attention.experiments import forward_cost_here as f
for req in json.loads(sys.argv[1]):
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            out = f(req[0], req[1], req[2], backward=req[3], threads=req[4])
            sys.stdout.write("forward_cost " + json.dumps(out) + "\\n")
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if os.waitpid(pid, 0)[1]:
        sys.exit(f"forward_cost{tuple(req[:2])} failed")
"""


def forward_costs(
    runs: Sequence[tuple[str, int]],
    repeats: int = 3,
    *,
    backward: bool = False,
    threads: int = 1,
) -> list[dict[str, Any]]:
    """:func:`forward_cost` of each ``(method, length)`` of ``runs``, in that order, each in a
    process of its own: one fresh Python process (with the same allocator setting) imports
    torch once and forks a child per run, which measures and exits. A forked child's CPU time,
    wall time and resident-memory growth are measured as a fresh process's are (the
    high-water mark is reset in the child after its warm-up; the pages it shares with its
    parent were resident before); only the import is not repeated."""
    for method, length in runs:
        V.choice("method", method, SPEED_METHODS)
        V.integer("length", length, low=1)
    V.integer("repeats", repeats, low=2)
    if not hasattr(os, "fork"):  # Windows: a fresh process each, as forward_cost does
        return [forward_cost(m, n, repeats, backward=backward, threads=threads) for m, n in runs]
    reqs = [[m, int(n), int(repeats), bool(backward), int(threads)] for m, n in runs]
    env = os.environ | {"MALLOC_MMAP_THRESHOLD_": "65536"}
    run = subprocess.run(
        [sys.executable, "-c", _FORK_SERVER, json.dumps(reqs)],
        capture_output=True,
        text=True,
        env=env,
    )
    tag = "forward_cost "
    lines = [x[len(tag) :] for x in run.stdout.splitlines() if x.startswith(tag)]
    if run.returncode or len(lines) != len(reqs):
        raise RuntimeError(f"forward_costs({list(runs)}) failed:\n{run.stderr[-2000:]}")
    return [dict(json.loads(line)) for line in lines]


# ----------------------------------------------------------------------------- (c)
def module_tokens(names: tuple[str, ...], tok: Any) -> list[torch.Tensor]:
    """Token ids of the source files of standard-library modules (one 1-D tensor each)."""
    import importlib
    import inspect

    out = []
    for name in names:
        path = inspect.getsourcefile(importlib.import_module(name))
        if path is None:
            raise FileNotFoundError(f"no source file for the standard-library module {name!r}")
        text = Path(path).read_text(encoding="utf-8")
        out.append(torch.tensor(tok(text, add_special_tokens=False, verbose=False)["input_ids"]))
    return out


@torch.no_grad()
def token_nlls(model: Any, docs: list[torch.Tensor], length: int, skip: int) -> np.ndarray:
    """Next-token NLLs ``(chunks, length - skip)`` of the tokens at positions >= ``skip`` of
    every ``length``-token chunk of every document (each document holds a whole number of
    chunks; a trailing partial chunk is dropped), in document and chunk order."""
    if not 0 <= skip < length:
        raise ValueError(f"skip must be in [0, length = {length}), got {skip}")
    if not docs or min(len(d) for d in docs) < length:
        raise ValueError(f"every document must hold at least one chunk of {length} tokens")
    model.eval()
    batch = max(1, 4096 // length)  # about 4K tokens a forward pass
    rows = []
    for doc in docs:
        chunks = doc[: len(doc) // length * length].reshape(-1, length)
        for i in range(0, len(chunks), batch):
            ids = chunks[i : i + batch]
            logits = model(input_ids=ids).logits[:, :-1]
            nll = F.cross_entropy(logits.float().transpose(1, 2), ids[:, 1:], reduction="none")
            rows.append(nll[:, max(0, skip - 1) :].double().numpy())  # targets at >= skip
    return np.concatenate(rows)


def perplexity(model: Any, docs: list[torch.Tensor], length: int, skip: int) -> float:
    """exp(mean next-token NLL) over the tokens at positions >= ``skip`` of every
    ``length``-token chunk of every document (see :func:`token_nlls`)."""
    return math.exp(float(token_nlls(model, docs, length, skip).mean()))


@dataclass(frozen=True)
class Recipe:
    """The fine-tune: the official recipe's shape at a laptop's length.

    The official ``run_scripts/finetune.sh`` (chenyaofo/CCA-Attention at 052cc8e) trains with
    AdamW (weight decay 0) at lr 2e-5, 20 linear warm-up steps then a constant rate
    (``constant_with_warmup``), gradient clipping at norm 2.0, 1 sequence x 4 accumulation
    steps x 8 GPUs per update, at the evaluation length, for 1,000 updates (about 262M
    tokens on 7-8B models). Here: the same schedule shape, clipping and loss, at ``lr``
    (the package's 1e-4 for a 135M model, fixed before any run) and over ``steps`` updates of
    ``accumulate`` windows of ``length`` tokens each."""

    lr: float = 1e-4
    warmup: int = 0
    """Linear warm-up updates (the rate grows from lr/warmup to lr), then constant."""
    clip: float | None = 2.0
    accumulate: int = 1

    def rate(self, update: int) -> float:
        """The learning rate of update ``update`` (0-based)."""
        return self.lr * min(1.0, (update + 1) / self.warmup) if self.warmup else self.lr


def finetune_lm(
    model: Any,
    text: torch.Tensor,
    steps: int,
    length: int,
    seed: int,
    *,
    recipe: Recipe = Recipe(),
    checkpoint: Path | None = None,
    every: int = 25,
    progress: Callable[[str], None] | None = None,
) -> None:
    """Fine-tune ``model`` in place by :class:`Recipe`: ``steps`` updates, each over
    ``recipe.accumulate`` windows of ``length`` tokens of the 1-D ``text`` at offsets drawn
    from a generator seeded with ``seed`` (next-token loss, averaged over the windows).
    Leaves the model in eval mode.

    With ``checkpoint``, the model, optimizer, generator and update are saved there every
    ``every`` updates and at the end, through a temporary file; a call that finds the file
    resumes from it, and the result equals an uninterrupted run's."""
    V.integer("steps", steps, low=0)
    V.integer("length", length, low=2)
    V.integer("every", every, low=1)
    V.integer("recipe.accumulate", recipe.accumulate, low=1)
    V.integer("recipe.warmup", recipe.warmup, low=0)
    V.positive("recipe.lr", recipe.lr)
    if recipe.clip is not None:
        V.positive("recipe.clip", recipe.clip)
    if not (isinstance(text, torch.Tensor) and text.dim() == 1):
        raise ValueError(f"text must be a 1-D tensor of token ids, got {type(text).__name__}")
    if len(text) <= length:
        raise ValueError(f"text has {len(text)} tokens: it needs more than length = {length}")
    opt = torch.optim.AdamW(model.parameters(), lr=recipe.lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    done = 0
    if checkpoint is not None and checkpoint.exists():
        state = torch.load(checkpoint, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        gen.set_state(state["generator"])
        done = state["step"]

    def save(step: int) -> None:
        if checkpoint is None:
            return
        state = {"model": model.state_dict(), "optimizer": opt.state_dict()}
        state |= {"generator": gen.get_state(), "step": step}
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        torch.save(state, checkpoint.with_suffix(".tmp"))
        checkpoint.with_suffix(".tmp").replace(checkpoint)

    model.train()
    for step in range(done, steps):
        for group in opt.param_groups:
            group["lr"] = recipe.rate(step)
        opt.zero_grad()
        total = 0.0
        for _ in range(recipe.accumulate):
            start = int(torch.randint(0, len(text) - length, (1,), generator=gen))
            x = text[start : start + length][None]
            loss = model(input_ids=x, labels=x).loss / recipe.accumulate
            loss.backward()
            total += float(loss.detach())
        if recipe.clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.clip)
        opt.step()
        if progress is not None:
            progress(f"step {step + 1}/{steps}, loss {total:.3f}, lr {recipe.rate(step):.2e}")
        if (step + 1) % every == 0 and step + 1 < steps:
            save(step + 1)
    if steps > done:
        save(steps)
    model.eval()


def _local_fn(group_size: int, window: int) -> Any:
    def attention(
        module: torch.nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        dropout: float = 0.0,
        scaling: float | None = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, None]:
        if query.shape[2] != key.shape[2]:
            raise NotImplementedError("the local-window arm runs whole sequences (no cache)")
        L = query.shape[2]
        k, v = expand_kv(query, key, value)
        t = torch.arange(L)
        start = group_size * visible_groups(L, group_size, window)
        mask = (t[None, :] <= t[:, None]) & (t[None, :] >= start[:, None])
        out = F.scaled_dot_product_attention(query, k, v, attn_mask=mask, scale=scaling)
        return out.transpose(1, 2).contiguous(), None

    return attention


def use_local(model: Any, *, group_size: int, window: int) -> str:
    """Switch a loaded HF model to CCA's raw window *without* its core tokens: query ``t``
    sees positions ``g J(t) .. t`` only (the null arm of the LM claims). Whole sequences
    only (no KV cache); :func:`~icml25.cca_attention.hf.use_full` switches back."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    V.integer("group_size", group_size, low=1)
    V.integer("window", window, low=0)
    name = f"cca_local_g{group_size}_s{window}"
    AttentionInterface.register(name, _local_fn(group_size, window))
    AttentionMaskInterface.register(name, sdpa_mask)
    model.set_attn_implementation(name)
    model._cca_settings = None
    return name


LM_ARMS = ("full", "cca", "local")


def set_arm(model: Any, arm: str) -> None:
    """Full attention, CCA (g = 16, s = 128) or CCA's window without core tokens."""
    from icml25.cca_attention.hf import use_cca, use_full

    V.choice("arm", arm, LM_ARMS)
    if arm == "full":
        use_full(model)
    elif arm == "cca":
        use_cca(model, group_size=LM_G, window=LM_S)
    else:
        use_local(model, group_size=LM_G, window=LM_S)


def load_lm(tiny: bool) -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct (float32), or for tests a tiny random Llama."""
    from icml25.core.llm import load_causal_lm, tiny_llama

    if tiny:
        return tiny_llama(layers=2, hidden=32, heads=4, seed=0, kv_heads=2)
    return load_causal_lm(quiet=True)


def finetune_comparison(
    model: Any,
    load: Callable[[], Any],
    docs: list[torch.Tensor],
    text: torch.Tensor,
    lengths: tuple[int, ...],
    steps: int,
    seed: int,
    *,
    window: int = 512,
    recipe: Recipe = Recipe(),
    arms: Sequence[str] = ("full", "cca"),
    checkpoints: Path | None = None,
    every: int = 25,
    progress: Callable[[str], None] = lambda _msg: None,
) -> dict[str, list[np.ndarray]]:
    """Part (c): per-token NLLs (:func:`token_nlls`, positions >= s) at each of ``lengths`` of
    ``model`` under each of ``arms`` (:func:`set_arm`), then of a fresh copy from ``load()``
    per arm after the same fine-tune on ``text`` (:func:`finetune_lm`, ``window``-token
    sequences, the same windows for every arm). Keys ``<arm>`` and ``<arm>+ft``, one array per
    length. With ``checkpoints`` (a folder) each fine-tune checkpoints there every ``every``
    updates and resumes."""
    for arm in arms:
        V.choice("arm", arm, LM_ARMS)
    progress(f"(c) perplexity before fine-tuning at L = {lengths}")
    nll: dict[str, list[np.ndarray]] = {}
    for arm in arms:
        set_arm(model, arm)
        nll[arm] = [token_nlls(model, docs, n, LM_S) for n in lengths]
    for arm in arms:
        progress(f"(c) fine-tuning a {arm}-attention copy ({steps} steps)")
        model = load()
        set_arm(model, arm)
        ckpt = None if checkpoints is None else checkpoints / f"finetune_{arm}.pt"
        finetune_lm(
            model,
            text,
            steps,
            window,
            seed,
            recipe=recipe,
            checkpoint=ckpt,
            every=every,
            progress=progress,
        )
        nll[f"{arm}+ft"] = [token_nlls(model, docs, n, LM_S) for n in lengths]
    return nll
