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
``[ACTION] name id [name id]`` per line; feedback text is tokenised by its line prefixes
(the plan echo is dropped: it repeats a draft the model already sees).
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
_FB_PREFIX = {
    "Format warning": "fb:format",
    "Invalid command": "fb:invalid",
    "Execution error": "fb:error",
    "You have not completed": "fb:incomplete",
    "State not satisfied": "fb:state",
    "Wrong position": "fb:pos",
}


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
        self.plan_tokens = torch.tensor([self.index[w] for w in plan])

    def __len__(self) -> int:
        return len(self.words)

    def get(self, w: str) -> int:
        return self.index.get(w, self.unk)


VOCAB = Vocab()
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


def feedback_to_tokens(text: str, *, max_len: int = 24) -> list[int]:
    """Tokens of one feedback string: its line kinds and the ids/names/states they mention."""
    if text.strip() == SUCCESS:
        return [VOCAB.index["fb:success"]]
    body = text.split("Feedback:", 1)[-1]
    out: list[int] = []
    for ln in body.splitlines():
        for prefix, key in _FB_PREFIX.items():
            if ln.strip().startswith(prefix):
                out.append(VOCAB.index[key])
                rest = ln.split(":", 1)[1] if ":" in ln else ""
                if key in ("fb:state", "fb:pos"):
                    out += [VOCAB.get(w) for w in re.findall(r"\w+", rest)]
                break
    return out[:max_len]


def tokens_to_feedback(tokens: Sequence[int]) -> str:
    """Feedback text from tokens (the world model's output), with the known prefixes only."""
    inv = {v: k for k, v in _FB_PREFIX.items()}
    words = [VOCAB.words[int(t)] for t in tokens]
    if words[:1] == ["fb:success"]:
        return SUCCESS
    lines: list[str] = []
    k = 0
    while k < len(words):
        w = words[k]
        if w in ("fb:state", "fb:pos"):
            n = 3 if w == "fb:state" else 2
            args = words[k + 1 : k + 1 + n]
            lines.append(f"{inv[w]}: ({', '.join(args)})")
            k += 1 + n
            continue
        if w in inv:
            lines.append(
                "You have not completed this task." if w == "fb:incomplete" else f"{inv[w]}: -"
            )
        k += 1
    seen: list[str] = []
    for ln in lines:  # deduplicated, as the official world-model parser does
        if ln not in seen:
            seen.append(ln)
    return "Feedback: " + "\n".join(seen)


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
        self.blocks = nn.ModuleList(_Block(d_model, n_heads, dropout) for _ in range(n_layers))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n, bias=False)
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
        ``last_only``); ``valid`` marks non-padding positions (padding may be on either side;
        positions count valid tokens only). With ``past`` (a list that :meth:`forward` fills
        with each layer's keys and values when empty), ``tok`` holds only the new positions
        while ``valid`` covers the cached ones too."""
        total, n = valid.shape[1], tok.shape[1]
        if total > self.max_len:
            raise ValueError(f"sequence length must be <= max_len={self.max_len}, got {total}")
        pos = (valid.long().cumsum(1) - 1).clamp(min=0)[:, total - n :]
        x = self.tok(tok) + self.ids(ids) + self.room(room) + self.pos(pos)
        # query i sits at absolute position total - n + i
        q_at = torch.arange(total - n, total)[:, None]
        k_at = torch.arange(total)[None, :]
        causal, eye = k_at <= q_at, k_at == q_at  # rows of the last n positions only
        mask = (causal & valid[:, None, None, :]) | eye  # (b, 1, n, total)
        cached = past is not None and len(past) == len(self.blocks)
        for k, blk in enumerate(self.blocks):
            x, kv = blk(x, mask, past[k] if cached and past is not None else None)
            if past is not None:
                if cached:
                    past[k] = kv
                else:
                    past.append(kv)
        if last_only:
            x = x[:, -1]
        return self.head(self.ln(x))


def collate(
    prompts: Sequence[Prompt], targets: Sequence[Sequence[int]] | None = None, *, left: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pad prompts (+ targets) to one length. Returns tok, ids, room, valid, loss mask."""
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
    out = torch.zeros(4, len(rows), n, dtype=torch.long)
    valid = torch.zeros(len(rows), n, dtype=torch.bool)
    for k, r in enumerate(rows):
        m = len(r[0])
        sl = slice(n - m, n) if left else slice(0, m)
        for c in range(4):
            out[c, k, sl] = torch.tensor(r[c])
        valid[k, sl] = True
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

    ``restrict`` limits the output to a set of token ids (default: plan tokens)."""
    allowed = VOCAB.plan_tokens if restrict is None else restrict
    stop = VOCAB.end if restrict is None else int(allowed[-1])
    tok, ids, room, valid, _ = collate(prompts, left=True)
    b = len(prompts)
    out: list[list[int]] = [[] for _ in range(b)]
    done = torch.zeros(b, dtype=torch.bool)
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
                choice = idx.gather(1, torch.multinomial(probs, 1, generator=generator)).squeeze(1)
            nxt = allowed[choice]
            for k, (t, d) in enumerate(zip(nxt.tolist(), done.tolist(), strict=True)):
                if not d:
                    out[k].append(t)
            done |= nxt == stop
            if bool(done.all()):
                break
            zeros = torch.zeros(b, 1, dtype=torch.long)
            new = (nxt[:, None], zeros, zeros)
            valid = torch.cat([valid, torch.ones(b, 1, dtype=torch.bool)], 1)
    model.train(was_training)
    return out


def train_steps(
    model: PlanTransformer,
    examples: Sequence[tuple[Prompt, Sequence[int]]],
    *,
    steps: int,
    batch_size: int,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
) -> list[float]:
    """``steps`` optimiser steps of teacher-forced cross-entropy on the target tokens only
    (the prompt is masked out, as ``prompt_loss_weight=0`` in the official trainer)."""
    losses: list[float] = []
    if not examples or steps <= 0:
        return losses
    model.train()
    for _ in range(steps):
        pick = torch.randint(len(examples), (min(batch_size, len(examples)),), generator=generator)
        batch = [examples[int(i)] for i in pick]
        tok, ids, room, valid, lmask = collate(
            [p for p, _ in batch], [t for _, t in batch], left=False
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
