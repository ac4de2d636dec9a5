"""Plan tokens and a small causal transformer that drafts and refines plans.

The planner is ``f(x, c)``: given the context ``c`` (task name, the agent's room, per-room
object lists with id and class name only, past feedback) and a draft plan ``x`` (``Null`` at
the start), it writes a plan. Here ``f`` is a small decoder-only transformer trained on the
spot; any model with the :class:`RefinementModel` interface (``propose``) can stand in its
place, for instance a Hugging Face causal LM prompted with the same fields as text.

Token layout of one example (``|`` separates segments)::

    BOS task words AGENT room | objects | FB feedback... | DRAFT draft-or-NULL | ANS plan END

Each object is one position whose embedding is the sum of its class, id and room embeddings
(so that copying the id of a named object is one attention lookup). Plans are tokenised as
``[ACTION] name id [name id]`` per line; feedback text is tokenised by its line kinds and the
ids, names and states it lists (the plan echo is dropped: it repeats a draft the model already
sees).

Long by design: the token vocabulary, the transformer and its LoRA fine-tune are one model whose
encoding and decoding must stay in step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from icml25.core import validate as V
from icml25.core.validate import module_device
from icml25.equilibrium_planner.env import (
    ACTIONS,
    CATALOGUE,
    MAX_ID,
    ROOMS,
    STATES,
    SUCCESS,
    Task,
)

SPECIALS = ("<pad>", "<unk>", "<bos>", "<agent>", "<fb>", "<sep>", "<draft>", "<ans>", "<null>")
FB_KEYS = (
    "fb:success",
    "fb:format",
    "fb:invalid",
    "fb:error",
    "fb:incomplete",
    "fb:state",
    "fb:pos",
)
TEMPLATE_WORDS = ("Turn", "on", "Put", "in", "Heat", "Wash")
_FB_PREFIX = {  # the official feedback lines (utils/feedback.py) and their key tokens
    "Your output does not conform": "fb:format",
    "Your output has an invalid command": "fb:invalid",
    "Your output is executed incorrectly": "fb:error",
    "You have not completed": "fb:incomplete",
    "The following objects and corresponding states": "fb:state",
    "The following objects have wrong relative position": "fb:pos",
}
_FB_TEXT = {
    "fb:format": "Your output does not conform to the required format.",
    "fb:invalid": "Your output has an invalid command: ?.",
    "fb:error": "Your output is executed incorrectly in the environment.",
    "fb:incomplete": "You have not completed this task.",
}
_STATE = re.compile(r"\((\d+), (\w+), (\w+)\)")
_POS = re.compile(r"\((\d+), (\w+)\) and \((\d+), (\w+)\)")


class Vocab:
    """The token inventory: specials, actions, ``[END]``, names, ids, states, feedback keys."""

    def __init__(self) -> None:
        words: list[str] = list(SPECIALS)
        words += [f"[{a}]" for a in ACTIONS] + ["[END]"]
        words += list(ROOMS) + list(CATALOGUE)
        words += [str(i) for i in range(MAX_ID + 1)]
        words += list(STATES) + list(FB_KEYS) + [w for w in TEMPLATE_WORDS if w not in words]
        self.words = words
        self.index = {w: i for i, w in enumerate(words)}
        self.pad, self.unk = self.index["<pad>"], self.index["<unk>"]
        self.end = self.index["[END]"]
        plan = [f"[{a}]" for a in ACTIONS] + ["[END]", *ROOMS, *CATALOGUE]
        plan += [str(i) for i in range(MAX_ID + 1)]
        # a host-side constant (token ids, not data): decode moves it to the model's device
        self.plan_tokens = torch.tensor([self.index[w] for w in plan], device="cpu")

    def __len__(self) -> int:
        return len(self.words)

    def get(self, w: str) -> int:
        return self.index.get(w, self.unk)


VOCAB = Vocab()
# plain ints: the model makes its buffers from them where it is built
_ID_TOKENS = tuple(VOCAB.index[str(i)] for i in range(1, MAX_ID + 1))
_SEGMENTS = tuple(VOCAB.index[w] for w in ("<bos>", "<fb>", "<draft>", "<ans>"))
_WORD = re.compile(r"\[\w+\]|<([^<>]*)>|\((\d+)\)|\S+")


def plan_to_tokens(plan: str | None, *, max_len: int = 60) -> list[int]:
    """Token ids of plan text (``None`` -> ``[<null>]``); unknown words become ``<unk>``."""
    if plan is None:
        return [VOCAB.index["<null>"]]
    if not isinstance(plan, str):
        raise TypeError(f"plan must be a str or None, got {type(plan).__name__}")
    out: list[int] = []
    for ln in plan.splitlines():
        ln = ln.strip()
        if not ln:
            continue
        for m in _WORD.finditer(ln):
            w = m.group(1) if m.group(1) is not None else m.group(2) or m.group(0)
            out.append(VOCAB.get(w.strip() if w.startswith("[") else w))
        if "[END]" in ln:
            break
    return out[:max_len]


def tokens_to_plan(tokens: Sequence[int]) -> str:
    """Plan text from token ids: a new line at each action token, stop at ``[END]``."""
    toks = [int(t) for t in tokens]
    if any(t < 0 or t >= len(VOCAB) for t in toks):
        raise ValueError(f"tokens must be ids in [0, {len(VOCAB) - 1}], got {toks}")
    lines: list[list[str]] = []
    for t in toks:
        w = VOCAB.words[t]
        if w == "[END]":
            lines.append(["[END]"])
            break
        if w.startswith("["):
            lines.append([w])
        elif not lines:
            lines.append([f"<{w}>"])
        elif w.isdigit():
            lines[-1].append(f"({w})")
        else:
            lines[-1].append(f"<{w}>")
    return "\n".join(" ".join(ln) for ln in lines)


def feedback_to_tokens(text: str, *, max_len: int = 32) -> list[int]:
    """Tokens of one feedback string: its line kinds and the ids/names/states they mention
    (``fb:state id name state`` per unmet state, ``fb:pos id name id name`` per object in a
    wrong position; the plan echo and an invalid command's text are dropped)."""
    if text.strip() == SUCCESS:
        return [VOCAB.index["fb:success"]]
    body = text.split("Feedback:", 1)[-1]
    out: list[int] = []
    for ln in body.splitlines():
        for prefix, key in _FB_PREFIX.items():
            if ln.strip().startswith(prefix):
                if key == "fb:state":
                    for m in _STATE.finditer(ln):
                        out += [VOCAB.index[key], *(VOCAB.get(w) for w in m.groups())]
                elif key == "fb:pos":
                    for m in _POS.finditer(ln):
                        out += [VOCAB.index[key], *(VOCAB.get(w) for w in m.groups())]
                else:
                    out.append(VOCAB.index[key])
                break
    return out[:max_len]


def tokens_to_feedback(tokens: Sequence[int]) -> str:
    """Feedback text from tokens (the world model's output): the official lines, each kind
    once; ``"Task success!"`` when success is the only kind (the official world-model
    filter)."""
    words = [VOCAB.words[int(t)] for t in tokens]
    kinds: dict[str, list[str]] = {}
    success = False
    k = 0
    while k < len(words):
        w = words[k]
        if w in ("fb:state", "fb:pos"):
            n = 3 if w == "fb:state" else 4
            args = words[k + 1 : k + 1 + n]
            if w == "fb:state":
                item = f"({', '.join(args)})"
            else:
                item = f"({', '.join(args[:2])}) and ({', '.join(args[2:])})"
            if item not in kinds.setdefault(w, []):
                kinds[w].append(item)
            k += 1 + n
            continue
        if w == "fb:success":
            success = True
        elif w in _FB_TEXT:
            kinds.setdefault(w, [])
        k += 1
    if success and not kinds:
        return SUCCESS
    lines = [_FB_TEXT[w] for w in _FB_TEXT if w in kinds]
    if kinds.get("fb:state"):
        lines.append(
            "The following objects and corresponding states do not meet the goals: "
            + ", ".join(kinds["fb:state"])
            + "."
        )
    if kinds.get("fb:pos"):
        lines.append(
            "The following objects have wrong relative position: "
            + ", ".join(kinds["fb:pos"])
            + "."
        )
    return "Feedback:\n" + "".join(ln + "\n" for ln in lines)


@dataclass(frozen=True)
class Prompt:
    """Three aligned index channels: token, id (objects only) and room (objects only)."""

    tok: tuple[int, ...]
    ids: tuple[int, ...]
    room: tuple[int, ...]


def build_prompt(
    task: Task,
    feedbacks: Sequence[str],
    draft: str | None,
    *,
    with_states: bool = False,
) -> Prompt:
    """The model's input for ``f(draft, c)``: context, feedback block (``<null>`` if empty),
    draft (``<null>`` if ``None``), then ``<ans>``. ``with_states`` adds object states (the
    world model's richer scene graph)."""
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task, got {type(task).__name__}")
    if isinstance(feedbacks, str) or not all(isinstance(f, str) for f in feedbacks):
        raise TypeError(f"feedbacks must be a sequence of strings, got {feedbacks!r:.60}")
    tok = [VOCAB.index["<bos>"]] + [VOCAB.get(w) for w in task.name.split()]
    tok += [VOCAB.index["<agent>"], VOCAB.get(task.scene.agent_room)]
    ids = [0] * len(tok)
    room = [0] * len(tok)
    init = task.scene.init_states
    for r, objs in task.scene.context().items():
        tok.append(VOCAB.get(r))
        ids.append(VOCAB.get(str(task.scene.room_ids[r])))
        room.append(VOCAB.get(r))
        for name, oid in objs:
            tok.append(VOCAB.get(name))
            ids.append(VOCAB.get(str(oid)))
            room.append(VOCAB.get(r))
            if with_states:
                for kind in ("open", "power"):
                    if (oid, kind) in init:
                        tok.append(VOCAB.get(init[(oid, kind)]))
                        ids.append(VOCAB.get(str(oid)))
                        room.append(0)
    seg = [VOCAB.index["<fb>"]]
    if feedbacks:
        for fb in feedbacks:
            seg += [*feedback_to_tokens(fb), VOCAB.index["<sep>"]]
    else:
        seg.append(VOCAB.index["<null>"])
    seg += [VOCAB.index["<draft>"], *plan_to_tokens(draft), VOCAB.index["<ans>"]]
    tok += seg
    ids += [0] * len(seg)
    room += [0] * len(seg)
    return Prompt(tuple(tok), tuple(ids), tuple(room))


class RefinementModel(Protocol):
    """What the solver needs: one refinement step ``x_{t+1} = f(x_t, c)`` for a batch."""

    def propose(
        self,
        tasks: Sequence[Task],
        feedbacks: Sequence[Sequence[str]],
        drafts: Sequence[str | None],
        *,
        top_k: int,
        generator: torch.Generator,
    ) -> list[str]: ...


class _Block(nn.Module):
    def __init__(self, d: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.drop = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor,
        past: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        # (b, n, d) -> (b, heads, n, d / heads)
        q, k, v = (t.view(b, n, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        if past is not None:  # cached keys/values of earlier positions
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.drop(self.proj(a.transpose(1, 2).reshape(b, n, d)))
        return x + self.drop(self.ff(self.ln2(x))), (k, v)


class PlanTransformer(nn.Module):
    """A decoder-only transformer over plan tokens (pre-LN, learned positions).

    Parameters
    ----------
    d_model, n_layers, n_heads
        Width, depth and attention heads (``d_model`` divisible by ``n_heads``).
    max_len
        Longest sequence (prompt + plan) it accepts.
    dropout
        Dropout on residual branches.
    tied
        Share one embedding table between the token, id and room channels and the output.
    pointer
        Write object ids by pointing (a copy head, as in pointer-generator networks): the
        logit of an id token is the largest attention score from the current position to a
        context position carrying that id (rooms and objects), and ids absent from the context
        cannot be written. Without it the output layer must learn every id's token from the id
        embeddings, which a small model trained on a few hundred items does not do: it
        memorises the training items' ids instead.
    """

    def __init__(
        self,
        *,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        max_len: int = 256,
        dropout: float = 0.0,
        tied: bool = False,
        pointer: bool = True,
    ) -> None:
        super().__init__()
        d_model = V.integer("d_model", d_model, low=8)
        n_heads = V.integer("n_heads", n_heads, low=1)
        if d_model % n_heads:
            raise ValueError(f"d_model must be divisible by n_heads={n_heads}, got {d_model}")
        n_layers = V.integer("n_layers", n_layers, low=1)
        self.max_len = V.integer("max_len", max_len, low=16)
        dropout = V.probability("dropout", dropout, open_high=True)
        n = len(VOCAB)
        self.tok = nn.Embedding(n, d_model)
        self.ids = nn.Embedding(n, d_model, padding_idx=0)
        self.room = nn.Embedding(n, d_model, padding_idx=0)
        self.pos = nn.Embedding(self.max_len, d_model)
        self.seg = nn.Embedding(len(_SEGMENTS) + 1, d_model)
        for emb in (self.tok, self.ids, self.room, self.pos, self.seg):
            # GPT-2's small initialisation: a token the model never saw (feedback, before the
            # equilibrium arm's training) starts near zero instead of as a large random vector
            nn.init.normal_(emb.weight, std=0.02)
            if emb.padding_idx is not None:
                with torch.no_grad():
                    emb.weight[emb.padding_idx].zero_()
        self.blocks = nn.ModuleList(_Block(d_model, n_heads, dropout) for _ in range(n_layers))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n, bias=False)
        self.pointer = bool(pointer)
        if self.pointer:
            self.p_query = nn.Linear(d_model, d_model)
            self.p_key = nn.Linear(d_model, d_model)
        # built on the device the parameters are built on (``with torch.device(...)``), and
        # moved with them by ``.to(...)``
        dev = self.tok.weight.device
        self.register_buffer("id_tokens", torch.tensor(_ID_TOKENS, device=dev), persistent=False)
        self.register_buffer(
            "segment_tokens", torch.tensor(_SEGMENTS, device=dev), persistent=False
        )
        if tied:
            # one table for every channel and the output: copying an object's id from its
            # context position then raises exactly that id's logit
            self.ids.weight = self.tok.weight
            self.room.weight = self.tok.weight
            self.head.weight = self.tok.weight

    def forward(
        self,
        tok: torch.Tensor,
        ids: torch.Tensor,
        room: torch.Tensor,
        valid: torch.Tensor,
        *,
        last_only: bool = False,
        past: list[tuple[torch.Tensor, torch.Tensor]] | None = None,
    ) -> torch.Tensor:
        """Logits ``(batch, length, vocab)`` (``(batch, vocab)`` of the last position with
        ``last_only``); ``valid`` marks non-padding positions (padding may be on either side).
        Positions count from the start of each segment of the prompt (context, feedback, draft,
        answer: a segment starts at ``<bos>``, ``<fb>``, ``<draft>``, ``<ans>``), and each
        segment has its own embedding, so that a feedback block of any length leaves the draft
        and the answer at the positions the model learned them. With ``past`` (a list that
        :meth:`forward` fills with each layer's keys and values, the positions reached and the
        pointer's keys, when empty), ``tok`` holds only the new positions while ``valid`` covers
        the cached ones too; the pointer can point to the positions of the first call (the
        prompt)."""
        total, n = valid.shape[1], tok.shape[1]
        dev = tok.device
        if total > self.max_len:
            raise ValueError(f"sequence length must be <= max_len={self.max_len}, got {total}")
        cached = past is not None and len(past) > 0
        if cached and past is not None:
            last_pos, seg_now = past[len(self.blocks)]
            pos = last_pos[:, None] + torch.arange(1, n + 1, device=dev)[None, :]
            seg = seg_now[:, None].expand(-1, n)
        else:
            markers: torch.Tensor = self.segment_tokens  # type: ignore[assignment]
            marker = torch.isin(tok, markers)
            idx = torch.arange(n, device=dev)[None, :].expand_as(tok)
            start = torch.where(marker, idx, torch.full_like(idx, -1)).cummax(dim=1).values
            pos = idx - start  # left padding before <bos> gets a position it never uses
            seg = marker.long().cumsum(1)
            if past is not None:
                past.append((pos[:, -1], seg[:, -1]))
        if cached and past is not None:
            past[len(self.blocks)] = (pos[:, -1], seg[:, -1])
        pos = pos.clamp(max=self.max_len - 1)
        seg = seg.clamp(max=len(_SEGMENTS))
        x = self.tok(tok) + self.ids(ids) + self.room(room) + self.pos(pos) + self.seg(seg)
        # query i sits at absolute position total - n + i
        q_at = torch.arange(total - n, total, device=dev)[:, None]
        k_at = torch.arange(total, device=dev)[None, :]
        causal, eye = k_at <= q_at, k_at == q_at  # rows of the last n positions only
        mask = (causal & valid[:, None, None, :]) | eye  # (b, 1, n, total)
        for k, blk in enumerate(self.blocks):
            kv_in = past[k] if cached and past is not None else None
            x, kv = blk(x, mask, kv_in)
            if past is not None:
                if cached:
                    past[k] = kv
                else:
                    past.insert(k, kv)
        h = self.ln(x)
        if last_only:
            h = h[:, -1:]
        logits = self.head(h)
        if self.pointer:
            if cached and past is not None:
                keys, at = past[len(self.blocks) + 1]
            else:
                keys, at = self.p_key(self.ln(x)), ids
                if past is not None:
                    past.append((keys, at))
            score = self.p_query(h) @ keys.transpose(1, 2) / keys.shape[-1] ** 0.5
            score = score.masked_fill(at[:, None, :] == 0, float("-inf"))
            copy = torch.full_like(logits, float("-inf")).scatter_reduce(
                2, at[:, None, :].expand_as(score), score, reduce="amax", include_self=True
            )
            at_ids: torch.Tensor = self.id_tokens  # type: ignore[assignment]
            logits = logits.index_copy(2, at_ids, copy[..., at_ids])
        return logits[:, -1] if last_only else logits


def collate(
    prompts: Sequence[Prompt],
    targets: Sequence[Sequence[int]] | None = None,
    *,
    left: bool,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pad prompts (+ targets) to one length. Returns tok, ids, room, valid, loss mask, on
    ``device`` (default: the CPU; assembled on the host and moved in one copy)."""
    rows = []
    for k, p in enumerate(prompts):
        t = list(targets[k]) if targets is not None else []
        rows.append(
            (
                list(p.tok) + t,
                list(p.ids) + [0] * len(t),
                list(p.room) + [0] * len(t),
                [0] * len(p.tok) + [1] * len(t),
            )
        )
    n = max(len(r[0]) for r in rows)
    out = torch.zeros(4, len(rows), n, dtype=torch.long, device="cpu")
    valid = torch.zeros(len(rows), n, dtype=torch.bool, device="cpu")
    for k, r in enumerate(rows):
        m = len(r[0])
        sl = slice(n - m, n) if left else slice(0, m)
        for c in range(4):
            out[c, k, sl] = torch.tensor(r[c], dtype=torch.long, device="cpu")
        valid[k, sl] = True
    if device is not None:
        out, valid = out.to(device), valid.to(device)
    return out[0], out[1], out[2], valid, out[3].bool()


def decode(
    model: PlanTransformer,
    prompts: Sequence[Prompt],
    *,
    top_k: int,
    generator: torch.Generator,
    max_new: int = 45,
    restrict: torch.Tensor | None = None,
) -> list[list[int]]:
    """Sample continuations token by token (``top_k=1`` is greedy) until ``[END]``.

    ``restrict`` limits the output to a set of token ids (default: plan tokens). Decoding runs
    on the model's device; the top-k draws are made on ``generator``'s device (a CPU generator
    gives the same draws for a model on any device)."""
    allowed = VOCAB.plan_tokens if restrict is None else restrict
    stop = VOCAB.end if restrict is None else int(allowed[-1])
    dev = module_device(model)
    allowed = allowed.to(dev)
    tok, ids, room, valid, _ = collate(prompts, left=True, device=dev)
    b = len(prompts)
    out: list[list[int]] = [[] for _ in range(b)]
    done = torch.zeros(b, dtype=torch.bool, device=dev)
    was_training = model.training
    model.eval()
    past: list[tuple[torch.Tensor, torch.Tensor]] = []
    new = (tok, ids, room)
    with torch.no_grad():
        for _ in range(max_new):
            if valid.shape[1] >= model.max_len:
                break
            logits = model(*new, valid, last_only=True, past=past)
            sub = logits[:, allowed]
            if top_k <= 1:
                choice = sub.argmax(-1)
            else:
                kk = min(top_k, sub.shape[1])
                vals, idx = sub.topk(kk, dim=-1)
                probs = torch.softmax(vals, dim=-1)
                draw = torch.multinomial(probs.to(generator.device), 1, generator=generator)
                choice = idx.gather(1, draw.to(dev)).squeeze(1)
            nxt = allowed[choice]
            for k, (t, d) in enumerate(zip(nxt.tolist(), done.tolist(), strict=True)):
                if not d:
                    out[k].append(t)
            done |= nxt == stop
            if bool(done.all()):
                break
            zeros = torch.zeros(b, 1, dtype=torch.long, device=dev)
            new = (nxt[:, None], zeros, zeros)
            valid = torch.cat([valid, torch.ones(b, 1, dtype=torch.bool, device=dev)], 1)
    model.train(was_training)
    return out


class _LoRAQV(nn.Module):
    """A low-rank update of the query and value rows of a fused ``qkv`` weight ``(3d, d)``:
    ``W_q + s B_q A_q`` and ``W_v + s B_v A_v`` with ``s = alpha / rank``; ``B`` starts at 0.
    Built on the device and in the dtype of the weight it adapts."""

    def __init__(self, w: torch.Tensor, rank: int, alpha: float) -> None:
        super().__init__()
        d, dev, dt = w.shape[1], w.device, w.dtype
        self.a_q = nn.Parameter(torch.randn(rank, d, device=dev, dtype=dt) / d**0.5)
        self.b_q = nn.Parameter(torch.zeros(d, rank, device=dev, dtype=dt))
        self.a_v = nn.Parameter(torch.randn(rank, d, device=dev, dtype=dt) / d**0.5)
        self.b_v = nn.Parameter(torch.zeros(d, rank, device=dev, dtype=dt))
        self.scale = alpha / rank

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        d = w.shape[1]
        zero = torch.zeros(d, d, dtype=w.dtype, device=w.device)
        delta = torch.cat([self.b_q @ self.a_q, zero, self.b_v @ self.a_v]) * self.scale
        return w + delta


def lora_steps(
    model: PlanTransformer,
    examples: Sequence[tuple[Prompt, Sequence[int]]],
    *,
    steps: int,
    batch_size: int,
    lr: float,
    generator: torch.Generator,
    rank: int = 8,
    alpha: float = 16.0,
    weight_decay: float = 1e-3,
) -> list[float]:
    """``steps`` steps of :func:`train_steps` through a fresh LoRA, then merged into the weights.

    As the official fine-tuning (PEFT's ``LoraConfig(r=8, lora_alpha=16)`` on a Llama, whose
    default targets are the query and value projections): every weight is frozen but a
    rank-``rank`` update of each block's query and value projections; after training the update
    is merged (``merge_and_unload``), so the next call starts a new LoRA on the merged model.
    """
    from torch.nn.utils import parametrize

    rank = V.integer("rank", rank, low=1)
    frozen = [(p, p.requires_grad) for p in model.parameters()]
    for p, _ in frozen:
        p.requires_grad_(False)
    adapters: list[nn.Module] = []
    for blk in model.blocks:
        assert isinstance(blk, _Block)
        lora = _LoRAQV(blk.qkv.weight, rank, alpha)
        parametrize.register_parametrization(blk.qkv, "weight", lora)
        adapters.append(lora)
    params = [p for a in adapters for p in a.parameters()]
    try:
        opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
        return train_steps(
            model,
            examples,
            steps=steps,
            batch_size=batch_size,
            optimizer=opt,
            generator=generator,
        )
    finally:
        for blk in model.blocks:
            assert isinstance(blk, _Block)
            parametrize.remove_parametrizations(blk.qkv, "weight", leave_parametrized=True)
        for p, req in frozen:
            p.requires_grad_(req)


def train_steps(
    model: PlanTransformer,
    examples: Sequence[tuple[Prompt, Sequence[int]]],
    *,
    steps: int,
    batch_size: int,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
    weights: Sequence[float] | None = None,
) -> list[float]:
    """``steps`` optimiser steps of teacher-forced cross-entropy on the target tokens only
    (the prompt is masked out, as ``prompt_loss_weight=0`` in the official trainer). Batches
    are drawn uniformly with replacement, or in proportion to ``weights`` (one per example),
    on ``generator``'s device; the batches go to the model's device."""
    losses: list[float] = []
    if not examples or steps <= 0:
        return losses
    dev = module_device(model)
    w = None
    if weights is not None:
        w = torch.as_tensor(list(weights), dtype=torch.float64, device=generator.device)
        if w.shape != (len(examples),) or not bool((w >= 0).all()) or float(w.sum()) <= 0:
            raise ValueError(
                f"weights must be {len(examples)} non-negative numbers, not all 0, got "
                f"shape {tuple(w.shape)}"
            )
    model.train()
    for _ in range(steps):
        size = min(batch_size, len(examples))
        if w is None:
            pick = torch.randint(
                len(examples), (size,), generator=generator, device=generator.device
            )
        else:
            pick = torch.multinomial(w, size, replacement=True, generator=generator)
        batch = [examples[i] for i in pick.tolist()]
        tok, ids, room, valid, lmask = collate(
            [p for p, _ in batch], [t for _, t in batch], left=False, device=dev
        )
        logits = model(tok, ids, room, valid)
        # position j predicts token j + 1: loss where token j + 1 is a target token
        pred = logits[:, :-1][lmask[:, 1:]]
        gold = tok[:, 1:][lmask[:, 1:]]
        loss = F.cross_entropy(pred, gold)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses


class TransformerPlanner:
    """:class:`RefinementModel` around a :class:`PlanTransformer` (text in, text out)."""

    def __init__(self, model: PlanTransformer, *, max_new: int = 45) -> None:
        if not isinstance(model, PlanTransformer):
            raise TypeError(f"model must be a PlanTransformer, got {type(model).__name__}")
        self.model = model
        self.max_new = V.integer("max_new", max_new, low=1)

    def propose(
        self,
        tasks: Sequence[Task],
        feedbacks: Sequence[Sequence[str]],
        drafts: Sequence[str | None],
        *,
        top_k: int,
        generator: torch.Generator,
    ) -> list[str]:
        prompts = [build_prompt(t, f, d) for t, f, d in zip(tasks, feedbacks, drafts, strict=True)]
        toks = decode(self.model, prompts, top_k=top_k, generator=generator, max_new=self.max_new)
        return [tokens_to_plan(t) for t in toks]
