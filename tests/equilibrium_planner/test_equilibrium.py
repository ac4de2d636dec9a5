"""Planner side: tokens, cached decoding, the fixed-point solver, training data, closed loop."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import icml25.equilibrium_planner.equilibrium as eqm
from icml25.equilibrium_planner.env import SUCCESS, Task, make_tasks, score
from icml25.equilibrium_planner.equilibrium import (
    WorldModel,
    closed_loop,
    solve_fixed_point,
    train_equilibrium,
    train_supervised,
)
from icml25.equilibrium_planner.model import (
    VOCAB,
    PlanTransformer,
    TransformerPlanner,
    build_prompt,
    collate,
    decode,
    feedback_to_tokens,
    plan_to_tokens,
    tokens_to_feedback,
    tokens_to_plan,
)

SPLITS = make_tasks(seed=0)
TRAIN = SPLITS["train"]


def test_plan_tokens_round_trip_on_every_gold_plan():
    for items in SPLITS.values():
        for t in items:
            assert tokens_to_plan(plan_to_tokens(t.gold)) == t.gold


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from([int(x) for x in VOCAB.plan_tokens]), max_size=30))
def test_token_plans_are_stable(tokens):
    # any decoded token string re-tokenises to a plan that decodes to itself
    text = tokens_to_plan(tokens)
    assert tokens_to_plan(plan_to_tokens(text)) == text


def test_feedback_tokens_round_trip():
    t = next(x for x in TRAIN if x.name.startswith("Heat"))
    partial = "\n".join([*t.gold.splitlines()[:-2], "[END]"])
    from icml25.equilibrium_planner.env import feedback

    fb = feedback(t.scene, t.goal, partial)
    body = tokens_to_feedback(feedback_to_tokens(fb))
    assert body.split("Feedback:\n", 1)[1] == fb.split("Feedback:\n", 1)[1]
    assert tokens_to_feedback(feedback_to_tokens(SUCCESS)) == SUCCESS


def test_cached_decoding_equals_full_recompute():
    torch.manual_seed(0)
    m = PlanTransformer(d_model=32, n_layers=2)
    prompts = [build_prompt(t, [], None) for t in TRAIN[:6]]
    out = decode(m, prompts, top_k=1, generator=torch.Generator(), max_new=12)
    tok, ids, room, valid, _ = collate(prompts, left=True)
    for k in range(len(prompts)):
        seq, i, r, v = tok[k : k + 1], ids[k : k + 1], room[k : k + 1], valid[k : k + 1]
        for want in out[k]:
            logits = m(seq, i, r, v, last_only=True)[:, VOCAB.plan_tokens]
            got = int(VOCAB.plan_tokens[logits.argmax(-1)])
            assert got == want
            z = torch.zeros(1, 1, dtype=torch.long)
            seq = torch.cat([seq, torch.tensor([[got]])], 1)
            i, r = torch.cat([i, z], 1), torch.cat([r, z], 1)
            v = torch.cat([v, torch.ones(1, 1, dtype=torch.bool)], 1)


class Scripted:
    """A RefinementModel with a fixed map draft -> next draft (per task name)."""

    def __init__(self, step):
        self.step = step
        self.calls = []

    def propose(self, tasks, feedbacks, drafts, *, top_k, generator):
        self.calls.append((top_k, list(drafts), [list(f) for f in feedbacks]))
        return [self.step(t, f, d) for t, f, d in zip(tasks, feedbacks, drafts, strict=False)]


def _count(d):
    return 0 if d is None else int(d)


def test_fixed_point_detection_and_cap():
    # counts up to 3 and stays: x1 = 1, x2 = 2, x3 = 3, x4 = 3 -> converged after 4 calls
    m = Scripted(lambda t, f, d: str(min(_count(d) + 1, 3)))
    sol = solve_fixed_point(m, TRAIN[:2], max_iters=10)
    assert sol.plans == ["3", "3"] and sol.converged == [True, True]
    assert sol.iterations == [4, 4] and sol.trajectories[0] == ["1", "2", "3", "3"]
    assert [c[0] for c in m.calls] == [10, 1, 1, 1]  # sampled first step, then greedy
    # never converges: the cap returns the previous iterate
    m = Scripted(lambda t, f, d: str(_count(d) + 1))
    sol = solve_fixed_point(m, TRAIN[:1], max_iters=5)
    assert sol.converged == [False] and sol.iterations == [6] and sol.plans == ["5"]
    assert sol.trajectories[0][-1] == "6"


def test_training_drafts_come_from_the_current_model(monkeypatch):
    """Fails if the gold plan (or anything but the model's own fixed point) is the draft."""
    tasks = TRAIN[:10]
    solved: list[tuple[str, str]] = []
    real_solve = eqm.solve_fixed_point

    def spy(model, tasks_, **kw):
        sol = real_solve(model, tasks_, **kw)
        solved.extend((t.name, p) for t, p in zip(tasks_, sol.plans, strict=True))
        return sol

    seen: list[tuple] = []

    def fake_train(model, examples, **kw):
        seen.extend(examples)
        return [0.0]

    monkeypatch.setattr(eqm, "solve_fixed_point", spy)
    monkeypatch.setattr(eqm, "train_steps", fake_train)
    torch.manual_seed(0)
    train_equilibrium(
        PlanTransformer(d_model=16, n_layers=1), tasks, steps=4, rounds=2, max_iters=2
    )
    model_outputs = {plan_to_tokens(p) and tuple(plan_to_tokens(p)) for _, p in solved}
    null = VOCAB.index["<null>"]
    draft_at = VOCAB.index["<draft>"]
    ans_at = VOCAB.index["<ans>"]
    n_checked = 0
    for prompt, target in seen:
        tok = list(prompt.tok)
        draft = tuple(tok[tok.index(draft_at) + 1 : tok.index(ans_at)])
        assert draft != (null,), "the equilibrium loop never trains on a Null draft"
        assert draft in model_outputs, "every draft is a fixed point the model produced"
        gold = tuple(target)
        assert draft != gold  # an untrained model never writes the gold plan
        n_checked += 1
    assert n_checked >= len(tasks)


def test_supervised_examples_have_null_draft(monkeypatch):
    seen: list[tuple] = []
    monkeypatch.setattr(eqm, "train_steps", lambda m, ex, **kw: seen.extend(ex) or [0.0])
    train_supervised(PlanTransformer(d_model=32, n_layers=1), TRAIN[:5], steps=1)
    for prompt, _target in seen:
        tok = list(prompt.tok)
        assert tok[tok.index(VOCAB.index["<draft>"]) + 1] == VOCAB.index["<null>"]


def test_training_lowers_the_loss():
    torch.manual_seed(0)
    log = train_supervised(PlanTransformer(d_model=32, n_layers=1), TRAIN[:20], steps=60, lr=3e-3)
    assert sum(log.losses[-10:]) < 0.5 * sum(log.losses[:10])


def _oracle_after_feedback(t: Task, f, d):
    # writes a wrong plan until it has seen feedback, then the gold plan
    return t.gold if f else "[END]"


def test_closed_loop_uses_environment_feedback():
    tasks = TRAIN[:5]
    m = Scripted(_oracle_after_feedback)
    eps = closed_loop(m, tasks, mode="none")
    assert not any(e.success for e in eps) and all(e.rounds == 0 for e in eps)
    eps = closed_loop(Scripted(_oracle_after_feedback), tasks, mode="environment")
    # one failed round, one correction, one round that confirms success
    assert all(e.success for e in eps) and all(e.rounds == 2 for e in eps)
    assert all(e.history[0].startswith("Action sequence:") for e in eps)
    # a planner that ignores feedback stops at the outer fixed point (its second plan, checked,
    # equals its first), not at max_depth
    eps = closed_loop(Scripted(lambda t, f, d: "[END]"), tasks, mode="environment", max_depth=4)
    assert all(e.rounds == 2 and not e.success for e in eps)


def test_closed_loop_max_depth_and_history():
    tasks = TRAIN[:3]
    seen = []

    def never(t, f, d):
        seen.append(len(f))
        return f"[END]\n{len(f)}"  # changes every round: no outer fixed point

    m = Scripted(never)
    eps = closed_loop(m, tasks, mode="environment", max_depth=3, history=2, max_iters=0)
    assert all(e.rounds == 3 and len(e.history) == 3 for e in eps)
    assert max(seen) == 2  # at most `history` feedback strings in the prompt
    # the official loop: max_depth solves, every one of them checked, the last one scored
    assert len(m.calls) == 3
    assert eps[0].plan == "[END]\n2" and "[END]\n2" in eps[0].history[-1]


def test_closed_loop_makes_four_checked_solves_by_default():
    calls = Scripted(lambda t, f, d: f"[END]\n{len(f)}")
    eps = closed_loop(calls, TRAIN[:2], mode="environment", max_iters=0)
    assert len(calls.calls) == 4 and all(e.rounds == 4 for e in eps)
    # each checked plan is in the feedback history, the scored plan included
    for e in eps:
        assert [h.split("\n")[2] for h in e.history] == ["0", "1", "2", "3"]
        assert e.plan == "[END]\n3"


def test_self_refine_samples_from_null_then_refines_greedily():
    m = Scripted(lambda t, f, d: f"[END]\n{len(f)}")
    closed_loop(m, TRAIN[:2], mode="environment", self_refine=True)
    assert [c[0] for c in m.calls] == [10, 1, 1, 1]  # top-k per round: sampled, then greedy
    assert m.calls[0][1] == [None, None] and m.calls[1][1] == ["[END]\n0"] * 2
    # the equilibrium loop samples the first step of every inner solve (official)
    m = Scripted(lambda t, f, d: f"[END]\n{len(f)}")
    closed_loop(m, TRAIN[:2], mode="environment", max_iters=1)
    assert [c[0] for c in m.calls] == [10, 1] * 4


def test_mixed_mode_alternates_world_model_and_environment_rounds():
    class CountingWM:
        def __init__(self):
            self.calls = 0

        def feedback(self, tasks, plans, *, generator):
            self.calls += 1
            return [SUCCESS] * len(plans)  # a world-model success never stops mixed mode

    wm = CountingWM()
    m = Scripted(lambda t, f, d: f"[END]\n{len(f)}")
    eps = closed_loop(m, TRAIN[:2], mode="mixed", world_model=wm, max_iters=0, max_depth=3)
    assert len(m.calls) == 6 and wm.calls == 3  # solve + wm, solve + env, ... 3 env rounds
    assert all(e.rounds == 3 and len(e.history) == 3 for e in eps)
    # world-model feedback is shown to the next solve only: prompts hold env + that one
    assert [len(c[2][0]) for c in m.calls] == [0, 1, 1, 2, 2, 3]


def test_content_free_feedback_keeps_only_the_success_bit():
    from icml25.equilibrium_planner.env import content_free, feedback

    t = next(x for x in TRAIN if x.name.startswith("Heat"))
    fb = feedback(t.scene, t.goal, "[END]")
    assert feedback_to_tokens(content_free(fb)) == [VOCAB.index["fb:incomplete"]]
    assert content_free(SUCCESS) == SUCCESS
    eps = closed_loop(
        Scripted(_oracle_after_feedback),
        TRAIN[:3],
        mode="environment",
        env_feedback=lambda task, plan: content_free(feedback(task.scene, task.goal, plan)),
    )
    assert all(e.success for e in eps)  # this planner reacts to any feedback at all
    assert all(
        h.endswith("You have not completed this task.\n") for e in eps for h in e.history[:-1]
    )


def test_world_model_and_mixed_mode_run():
    torch.manual_seed(0)
    wm = WorldModel(PlanTransformer(d_model=32, n_layers=1))
    pairs = [(t, t.gold, SUCCESS) for t in TRAIN[:8]]
    wm.fit(pairs, steps=3)
    fbs = wm.feedback(TRAIN[:4], [t.gold for t in TRAIN[:4]], generator=torch.Generator())
    assert all(f == SUCCESS or "Feedback:" in f for f in fbs)
    m = Scripted(_oracle_after_feedback)
    eps = closed_loop(m, TRAIN[:4], mode="mixed", world_model=wm)
    # the environment round always gives feedback on a failed plan, so all end in success
    assert all(e.success for e in eps)
    eps = closed_loop(
        Scripted(_oracle_after_feedback), TRAIN[:4], mode="world_model", world_model=wm
    )
    assert len(eps) == 4


def test_training_files_follow_the_official_feedback_depths(monkeypatch):
    """Depth 0: every item once; depth d: a random subset of the previous depth's failing
    items, at most ratio_d of that depth's size, re-solved from Null with its last 3 feedback
    strings; one example per item and file; replay samples every file of older rounds."""
    tasks = TRAIN[:40]
    solves: list[tuple[int, list[int]]] = []

    def always_wrong(model, tasks_, *, feedbacks=None, drafts=None, **kw):
        fbs = feedbacks if feedbacks is not None else [[] for _ in tasks_]
        assert drafts is None  # every training solve starts from a Null draft
        solves.append((len(tasks_), [len(f) for f in fbs]))
        plans = [f"[END]\n{len(f)}" for f in fbs]
        return eqm.Solve(plans, [True] * len(plans), [2] * len(plans), [[p] for p in plans])

    data: list[list] = []
    monkeypatch.setattr(eqm, "solve_fixed_point", always_wrong)
    monkeypatch.setattr(eqm, "train_steps", lambda m, ex, **kw: data.append(list(ex)) or [0.0])
    train_equilibrium(PlanTransformer(d_model=16, n_layers=1), tasks, steps=4, rounds=2)
    sizes = [40, 12, 4, 2]  # int(0.3 * 40), int(0.4 * 12), int(0.5 * 4)
    assert [n for n, _ in solves] == sizes * 2
    assert [max(f) for _, f in solves] == [0, 1, 2, 3] * 2  # the history cap is 3
    sep = VOCAB.index["<sep>"]
    counts = [sum(t == sep for t in p.tok) for p, _ in data[0]]
    # one example per item and depth file, with every feedback string so far (up to 4)
    assert sorted(counts) == sorted([1] * 40 + [2] * 12 + [3] * 4 + [4] * 2)
    # round 2: its own 58 examples plus half of each of round 1's four files
    assert len(data[1]) == 58 + 20 + 6 + 2 + 1


def test_same_seed_same_training():
    def run():
        torch.manual_seed(0)
        m = PlanTransformer(d_model=32, n_layers=1)
        log = train_equilibrium(
            m, TRAIN[:10], steps=4, rounds=2, generator=torch.Generator().manual_seed(3)
        )
        return log.losses, log.round_success

    assert run() == run()


def test_transformer_planner_outputs_plan_text():
    torch.manual_seed(0)
    p = TransformerPlanner(PlanTransformer(d_model=32, n_layers=1), max_new=10)
    out = p.propose(
        TRAIN[:3], [[], [], []], [None, TRAIN[0].gold, None], top_k=1, generator=torch.Generator()
    )
    assert len(out) == 3 and all(isinstance(x, str) for x in out)
    for t, x in zip(TRAIN[:3], out, strict=False):
        score(t.scene, t.goal, x)  # any output can be scored


def test_memo_changes_no_number_of_the_tiny_run():
    # the evaluation memo (whole propose calls, generator state restored on a hit) is exact:
    # every episode of every arm, the curves and the fixed-point share are identical without it
    from icml25.equilibrium_planner.experiments import BUDGETS, run_seed

    cfg = BUDGETS["tiny"]
    with_memo = run_seed(cfg, 0, memo=True)
    without = run_seed(cfg, 0, memo=False)
    assert with_memo["episodes"] == without["episodes"]
    assert with_memo["curves"] == without["curves"]
    for key in ("fixed_point", "fixed_point_null", "wm_agreement", "wm_agreement_null"):
        assert np.array_equal(with_memo[key], without[key])


def test_memo_hits_and_restores_the_generator():
    from icml25.equilibrium_planner.experiments import _Memo

    torch.manual_seed(0)
    memo = _Memo(TransformerPlanner(PlanTransformer(d_model=16, n_layers=1)))
    items, fbs, drafts = TRAIN[:3], [[], [], []], [None, None, None]
    g = torch.Generator().manual_seed(5)
    first = memo.propose(items, fbs, drafts, top_k=10, generator=g)
    after = g.get_state()
    g.manual_seed(5)
    again = memo.propose(items, fbs, drafts, top_k=10, generator=g)
    assert again == first and memo.hits == 1
    assert torch.equal(g.get_state(), after)
    # another generator state is another call
    memo.propose(items, fbs, drafts, top_k=10, generator=g)
    assert memo.hits == 1


def test_lora_steps_change_only_query_and_value_and_merge():
    from torch.nn.utils import parametrize

    from icml25.equilibrium_planner.model import lora_steps

    torch.manual_seed(0)
    m = PlanTransformer(d_model=16, n_layers=2)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    examples = [(build_prompt(t, [], None), plan_to_tokens(t.gold)) for t in TRAIN[:8]]
    losses = lora_steps(
        m, examples, steps=30, batch_size=8, lr=1e-2, generator=torch.Generator().manual_seed(1)
    )
    assert losses[-1] < losses[0]
    after = m.state_dict()
    assert set(after) == set(before)  # merged: no parametrization or adapter is left
    assert not any(parametrize.is_parametrized(b.qkv) for b in m.blocks)
    assert all(p.requires_grad for p in m.parameters())
    for k, v in after.items():
        if k.endswith("qkv.weight"):
            d = v.shape[1]
            assert not torch.equal(v[:d], before[k][:d])  # query rows
            assert torch.equal(v[d : 2 * d], before[k][d : 2 * d])  # key rows untouched
            assert not torch.equal(v[2 * d :], before[k][2 * d :])  # value rows
            delta = (v - before[k])[:d]
            assert torch.linalg.matrix_rank(delta) <= 8  # a rank-8 update
        else:
            assert torch.equal(v, before[k]), k
