"""IPV-Bench: taxonomy, official formats and parsers, metrics against hand counts and
scikit-learn, the loader on a folder in the official layout, the generator's labels against a
physics check, and the models' views of time."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, f1_score

from icml25.ipv_bench import (
    CLASS_NAMES,
    JUDGEMENT_QUESTION,
    PLAUSIBLE_OPTION,
    TAXONOMY,
    VIOLATIONS,
    CategoryJudge,
    FrameAverageModel,
    IPVDataError,
    LLMJudge,
    SingleFrameModel,
    TemporalModel,
    VideoLabel,
    arrange_options,
    build_benchmark,
    evaluate,
    generate_clip,
    generate_clips,
    ipv_score,
    judge_prompt,
    judgement_scores,
    load_ipv_bench,
    load_prompt_suite,
    mcqa_prompt,
    mcqa_scores,
    openqa_scores,
    parse_judge_reply,
    parse_judgement,
    parse_label,
    parse_mcqa,
    physics_check,
    predict_proba,
    random_replies,
    read_video,
    replies_from_probs,
    taxonomy_labels,
    train_video_model,
    write_gif,
)
from icml25.ipv_bench.generator import FLOOR, PLAUSIBLE, render
from icml25.ipv_bench.taxonomy import categories, prompt_counts_by_domain


# ----------------------------------------------------------------------------- taxonomy
def test_taxonomy_has_4_domains_14_categories_and_260_prompts() -> None:
    assert list(TAXONOMY) == [
        "Physical Laws",
        "Biological Laws",
        "Geographical Laws",
        "Social Laws",
    ]
    assert sum(len(c) for c in categories().values()) == 14
    labels = taxonomy_labels()
    assert sum(labels.values()) == 260 and len(labels) == 31
    assert prompt_counts_by_domain() == {
        "Physical Laws": 163,
        "Biological Laws": 51,
        "Geographical Laws": 21,
        "Social Laws": 25,
    }
    assert labels["Physical Laws - Material Properties - Object Interaction - Solid-Solid"] == 9


def test_parse_label() -> None:
    assert parse_label("Physical Laws - Mechanics - Kinematics - Spontaneous Motion") == (
        "Physical Laws",
        "Mechanics",
        ("Kinematics", "Spontaneous Motion"),
    )
    assert parse_label("Social Laws - Historical")[1] == "Historical"
    with pytest.raises(ValueError, match="unknown category"):
        parse_label("Physical Laws - Fluid Mechanics")  # the paper's name; the suite says Dynamics


# ----------------------------------------------------------------------------- parsers
@pytest.mark.parametrize(
    ("reply", "want"),
    [
        ("yes", "yes"),
        ("Yes.", "yes"),
        ("YES, it is generated", "yes"),
        ("(No)", "no"),
        ("No, it is real.", "no"),  # 'no,' -> commas deleted -> 'no'
        ("  no  ", "no"),
        ("y.e.s", "yes"),  # dots are deleted before cutting
        ("Nope", None),  # 'nop'
        ("Noo", None),
        ("The answer is yes", None),
        ("", None),
        (None, None),
        ("ye", None),
    ],
)
def test_parse_judgement_released_rule(reply: object, want: str | None) -> None:
    assert parse_judgement(reply) == want


@pytest.mark.parametrize(
    ("reply", "want"),
    [
        ("A", "A"),
        ("(B)", "B"),
        ("c.", "C"),
        (" D) The ball ...", "D"),
        ("e", "E"),
        (".A", "A"),
        ("The best answer is A", None),  # first character 't'
        ("F", None),
        ("", None),
    ],
)
def test_parse_mcqa_released_rule(reply: str, want: str | None) -> None:
    assert parse_mcqa(reply) == want


def test_mcqa_prompt_matches_the_official_layout() -> None:
    opts = ["one.", "two.", "three.", "four.", PLAUSIBLE_OPTION]
    got = mcqa_prompt(stem="What is impossible in the video?", options=opts)
    want = (
        "\nSelect the best answer to the following multiple-choice question based on the video. "
        "Respond with only the letter (A, B, C, D, or E) of the correct option.\n"
        "What is impossible in the video?\nA. one.\nB. two.\nC. three.\nD. four.\n"
        "E. The video is plausible without any counterfactual content.\nThe best answer is:\n    "
    )
    assert got == want


@given(st.sampled_from("ABCDE"), st.permutations(["w", "x", "y", "z"]))
def test_arrange_options_places_plausible_at_e_or_d(answer: str, texts: list[str]) -> None:
    opts = arrange_options(correct=texts[0], distractors=texts[1:], answer=answer)
    assert opts["ABCDE".index(answer)] == texts[0]
    assert opts.index(PLAUSIBLE_OPTION) == (3 if answer == "E" else 4)
    assert sorted(opts) == sorted([*texts, PLAUSIBLE_OPTION])


# ----------------------------------------------------------------------------- metrics
def test_judgement_scores_by_hand_and_against_sklearn() -> None:
    answers = {"0": "yes", "1": "yes", "2": "no", "3": "no", "4": "yes", "5": "no"}
    preds = {"0": "Yes.", "1": "no", "2": "No", "3": "yes", "4": "Nope", "5": "maybe"}
    s = judgement_scores(preds, answers)
    assert s.n == 6 and s.n_unparsed == 2
    assert s.accuracy == pytest.approx(100 * 2 / 6)  # items 0 and 2
    assert s.accuracy_impossible == pytest.approx(100 / 3)
    assert s.accuracy_real == pytest.approx(100 / 3)
    y_true, y_pred = [1, 1, 0, 0], [1, 0, 0, 1]
    assert s.accuracy_parsed == pytest.approx(100 * accuracy_score(y_true, y_pred))
    assert s.f1 == pytest.approx(100 * f1_score(y_true, y_pred))
    assert s.yes_rate == pytest.approx(50.0)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.sampled_from(["yes", "no", "Yes.", "nah", "No,"])),
        min_size=1,
        max_size=40,
    )
)
def test_judgement_parsed_metrics_equal_sklearn(rows: list[tuple[bool, str]]) -> None:
    answers = {str(i): "yes" if g else "no" for i, (g, _) in enumerate(rows)}
    preds = {str(i): p for i, (_, p) in enumerate(rows)}
    s = judgement_scores(preds, answers)
    pairs = [(g, parse_judgement(p)) for g, p in rows if parse_judgement(p) is not None]
    if pairs:
        yt = [int(g) for g, _ in pairs]
        yp = [int(p == "yes") for _, p in pairs]
        assert s.accuracy_parsed == pytest.approx(100 * accuracy_score(yt, yp))
        assert s.f1 == pytest.approx(100 * f1_score(yt, yp, zero_division=0.0))


def test_mcqa_scores_count_two_domain_videos_in_both() -> None:
    labels = {
        "0": VideoLabel(("physical laws",), "temporal"),
        "1": VideoLabel(("physical laws", "social laws"), "spatial"),
        "2": VideoLabel(("biological laws",), "temporal"),
        "3": VideoLabel(("others",), "spatial"),
    }
    answers = {"0": "A", "1": "E", "2": "C", "3": "B"}
    preds = {"0": "A", "1": "E.", "2": "E", "3": "x"}
    s = mcqa_scores(preds, answers, labels)
    assert s.accuracy == 50.0 and s.n_unparsed == 1
    assert s.by_domain["physical laws"] == 100.0
    assert s.by_domain["social laws"] == 100.0
    assert s.by_domain["biological laws"] == 0.0
    assert math.isnan(s.by_domain["geographical laws"])
    assert s.by_spatial_temporal == {"spatial": 50.0, "temporal": 50.0}
    assert s.plausible_choice_rate == 25.0  # item 2 chose E, the plausible slot for gold C


def test_openqa_undecoded_replies_count_as_zero() -> None:
    labels = [VideoLabel(("physical laws",), "temporal"), VideoLabel(("social laws",), "spatial")]
    s = openqa_scores({"a": 0.9, "b": None}, labels)
    assert s.score == pytest.approx(45.0) and s.n_undecoded == 1
    assert s.by_domain["physical laws"] == pytest.approx(90.0)
    assert s.by_spatial_temporal["spatial"] == 0.0


@pytest.mark.parametrize(
    ("reply", "want"),
    [
        ('{"justification": "ok", "semantic_alignment_score": 0.8}', 0.8),
        ('```json\n{"justification": "ok", "semantic_alignment_score": "1.0"}\n```', 1.0),
        ('{"justification": "x", "semantic_alignment_score": "0.5-0.7"}', 0.6),
        ('{"justification": "x", "semantic_alignment_score": "0.85"}', 0.85),
        ("Score: 0.9", None),
        ('{"justification": "x"}', None),
    ],
)
def test_parse_judge_reply_released_rule(reply: str, want: float | None) -> None:
    got = parse_judge_reply(reply)
    assert got == (pytest.approx(want) if want is not None else None)


def test_judge_prompt_variants() -> None:
    alts = ("alt one", "alt two", "alt three")
    released = judge_prompt(primary="P", prediction="Q", alternatives=alts)
    assert "[alternative_answer_1]" in released and "alt one" not in released
    assert "Primary Answer: P" in released and "Model's Prediction: Q" in released
    full = judge_prompt(primary="P", prediction="Q", alternatives=alts, variant="all_answers")
    assert "alt three" in full and "[alternative_answer_3]" not in full


class _FakeLM:
    def __init__(self, replies: list[str]) -> None:
        self.replies, self.prompts = replies, []

    def generate(
        self, prompts: list[str], max_new_tokens: int = 32, *, chat: bool = True
    ) -> list[str]:
        self.prompts.extend(prompts)
        return self.replies[: len(prompts)]


def test_llm_judge_parses_and_clips() -> None:
    lm = _FakeLM(['{"semantic_alignment_score": 1.3}', "garbage"])
    refs = {v: {"primary_answer": "p", "alternative_answers": ["a", "b", "c"]} for v in "xy"}
    scores = LLMJudge(lm).score({"x": "pred", "y": "pred"}, refs)
    assert scores == {"x": 1.0, "y": None}
    assert "[alternative_answer_2]" in lm.prompts[0]


class _TokenLM:
    """Greedy replies of a fixed text per prompt, cut at the token budget (one token = one
    word here)."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts, self.budgets = texts, []

    def generate(
        self, prompts: list[str], max_new_tokens: int = 32, *, chat: bool = True
    ) -> list[str]:
        self.budgets.append((len(prompts), max_new_tokens))
        out = []
        for p in prompts:
            words = next(t for k, t in self.texts.items() if f"Prediction: {k}" in p).split(" ")
            out.append(" ".join(words[:max_new_tokens]))
        return out


def test_llm_judge_asks_again_for_cut_replies_and_counts_them() -> None:
    from icml25.ipv_bench import looks_cut

    long = '{"justification": "' + "word " * 300 + '", "semantic_alignment_score": 0.7}'
    huge = '{"justification": "' + "word " * 3000 + '", "semantic_alignment_score": 0.9}'
    lm = _TokenLM({"short": '{"justification": "ok", "semantic_alignment_score": 1.0}',
                   "long": long, "huge": huge, "prose": "I cannot judge this."})  # fmt: skip
    refs = {v: {"primary_answer": "p"} for v in ("a", "b", "c", "d")}
    preds = {"a": "short", "b": "long", "c": "huge", "d": "prose"}
    judge = LLMJudge(lm, max_new_tokens=256, max_retries=2)
    scores = judge.score(preds, refs)
    # 256 words cut "long" and "huge"; 512 completes "long"; 1,024 still cuts "huge"
    assert scores == {"a": 1.0, "b": 0.7, "c": None, "d": None}
    assert judge.truncated_ == ["b", "c"] and judge.cut_off_ == ["c"]
    assert lm.budgets == [(4, 256), (2, 512), (1, 1024)]
    assert looks_cut(long[:100]) and not looks_cut("I cannot judge this.")
    assert not looks_cut(long)
    # the default budget (1,024) reads the 300-word reply at once
    default = LLMJudge(_TokenLM({"long": long}))
    assert default.score({"b": "long"}, refs) == {"b": 0.7} and default.truncated_ == []


def test_the_rubric_has_the_four_worked_examples() -> None:
    from icml25.ipv_bench.judge import JUDGE_RUBRIC

    scores = [parse_judge_reply(line) for line in JUDGE_RUBRIC.splitlines() if '"semantic' in line]
    assert scores[-4:] == [1.0, 0.9, 0.7, 0.5]


def test_category_judge_and_ipv_score() -> None:
    judge = CategoryJudge({"a": ["apple"], "b": ["banana"]})
    got = judge.score(
        {"1": "An apple.", "2": "apple and banana", "3": "cherry"}, {"1": "a", "2": "a", "3": "b"}
    )
    assert got == {"1": 1.0, "2": 0.5, "3": 0.0}
    assert (
        ipv_score(
            high_quality=[True, True, False, True], prompt_following=[True, False, True, True]
        )
        == 50.0
    )


# ----------------------------------------------------------------------------- loader
def _official_folder(root, *, videos: bool = True) -> None:
    root.mkdir(parents=True, exist_ok=True)
    imp, real = "hunyuan_0003_aa.mp4", "real_0001.mp4"
    files = {
        "judgement_question.json": {
            "0": {"video_name": imp, "question": JUDGEMENT_QUESTION},
            "2": {"video_name": real, "question": JUDGEMENT_QUESTION},
        },
        "judgement_answer.json": {
            "0": {"video_name": imp, "answer": "yes"},
            "2": {"video_name": real, "answer": "no"},
        },
        "mcqa_question.json": {"5": {"video_name": imp, "question": "\nq"}},
        "mcqa_answer.json": {"5": {"video_name": imp, "answer": "D"}},
        "openqa_question.json": {imp: "what?"},
        "openqa_answer.json": {
            imp: {"primary_answer": "It floats.", "alternative_answers": ["a", "b", "c"]}
        },
        "video2taxonomy_label.json": {
            imp: {
                "taxonomy_label_list": ["physical laws", "social laws"],
                "spatial_temporal_label": "temporal",
            }
        },
        "ipv_txt_prompt_suite.json": {
            "Physical Laws": {
                "Mechanics": {
                    "Kinematics": {
                        "Spontaneous Motion": [
                            {
                                "prompt_taxonomy_label": "Physical Laws - Mechanics - "
                                "Kinematics - Spontaneous Motion",
                                "prompt_id": 7,
                                "prompt_text": "A cookie moves by itself.",
                            }
                        ]
                    }
                }
            }
        },
    }
    for name, obj in files.items():
        (root / name).write_text(json.dumps(obj))
    if videos:
        (root / "impossible_videos").mkdir(exist_ok=True)
        (root / "real_world_videos").mkdir(exist_ok=True)
        (root / "impossible_videos" / imp).write_bytes(b"")
        (root / "real_world_videos" / real).write_bytes(b"")


def test_loader_reads_the_official_layout(tmp_path) -> None:
    _official_folder(tmp_path / "ipv")
    bench = load_ipv_bench(tmp_path / "ipv", check_videos=True)
    assert set(bench.judgement) == {"0", "2"} and bench.mcqa["5"].answer == "D"
    assert bench.is_impossible("hunyuan_0003_aa.mp4") and not bench.is_impossible("real_0001.mp4")
    assert bench.labels["hunyuan_0003_aa.mp4"].domains == ("physical laws", "social laws")
    assert bench.openqa["hunyuan_0003_aa.mp4"].alternative_answers == ("a", "b", "c")
    assert [p.prompt_id for p in bench.prompts] == [7]
    assert load_prompt_suite(tmp_path / "ipv")[0].label.endswith("Spontaneous Motion")


def test_loader_errors(tmp_path) -> None:
    with pytest.raises(IPVDataError, match="existing folder"):
        load_ipv_bench(tmp_path / "nowhere")
    _official_folder(tmp_path / "a", videos=False)
    with pytest.raises(IPVDataError, match="neither video folder"):
        load_ipv_bench(tmp_path / "a", check_videos=True)
    (tmp_path / "a" / "mcqa_answer.json").unlink()
    with pytest.raises(IPVDataError, match=r"mcqa_answer\.json is missing"):
        load_ipv_bench(tmp_path / "a")
    _official_folder(tmp_path / "b")
    (tmp_path / "b" / "judgement_answer.json").write_text(
        json.dumps({"0": {"video_name": "x", "answer": "yes"}})
    )
    with pytest.raises(IPVDataError, match="same question ids"):
        load_ipv_bench(tmp_path / "b")
    _official_folder(tmp_path / "c")
    (tmp_path / "c" / "mcqa_answer.json").write_text(
        json.dumps({"5": {"video_name": "hunyuan_0003_aa.mp4", "answer": "F"}})
    )
    with pytest.raises(IPVDataError, match="letter A-E"):
        load_ipv_bench(tmp_path / "c")


def test_generated_benchmark_round_trips_through_the_official_layout(tmp_path) -> None:
    clips = generate_clips(12, seed=3, as_uint8=True)
    bench = build_benchmark(clips, seed=1)
    bench.write(tmp_path / "gen", clips)
    loaded = load_ipv_bench(tmp_path / "gen", check_videos=True)
    assert len(loaded.judgement) == 12 and len(loaded.mcqa) == int((clips.labels > 0).sum())
    for it in loaded.judgement.values():
        assert loaded.is_impossible(it.video_name) == (it.answer == "yes")
    for q, it in loaded.mcqa.items():
        assert it.question == bench.mcqa_question[q]["question"]
    v = loaded.judgement["0"].video_name
    frames = read_video(loaded.video_path(v))
    want = clips.frames[0].transpose(0, 2, 3, 1).astype(np.float32) / 255
    assert frames.shape == want.shape
    assert np.abs(frames - want).mean() < 0.03  # GIF palette quantisation only


def test_write_and_read_gif(tmp_path) -> None:
    clip = generate_clip("vanish", seed=1).frames
    path = write_gif(clip, tmp_path / "c.gif")
    back = read_video(path)
    assert back.shape == (16, 32, 32, 3)
    with pytest.raises(ImportError, match="PyAV"):
        (tmp_path / "x.mp4").write_bytes(b"0")
        try:
            import av  # noqa: F401
        except ImportError:
            read_video(tmp_path / "x.mp4")
        else:
            raise ImportError("PyAV installed; skip")


# ----------------------------------------------------------------------------- generator
@pytest.mark.parametrize("name", CLASS_NAMES)
def test_physics_check_confirms_every_label(name: str) -> None:
    """Each impossible clip breaks exactly its law; each plausible clip breaks none."""
    want = set() if name == PLAUSIBLE else {name}
    for seed in range(40):
        assert physics_check(generate_clip(name, seed=seed).track) == want, seed


def test_physics_check_sees_a_tampered_track() -> None:
    tr = generate_clip("plausible", seed=2).track
    tr.x[9:] += 12.0 * np.sign(tr.wall_x - tr.x[8])  # jump (across or towards the wall)
    assert physics_check(tr) & {"teleport", "through_wall"}
    tr = generate_clip("plausible", seed=3).track
    tr.colour[-1] = (tr.colour[-1] + 1) % 4
    assert physics_check(tr) == {"colour_change"}


def test_generator_is_deterministic_and_seeds_differ() -> None:
    a, b = generate_clip("teleport", seed=5), generate_clip("teleport", seed=5)
    assert np.array_equal(a.frames, b.frames)
    assert not np.array_equal(a.frames, generate_clip("teleport", seed=6).frames)
    s1, s2 = generate_clips(20, seed=4), generate_clips(20, seed=4)
    assert np.array_equal(s1.frames, s2.frames) and np.array_equal(s1.labels, s2.labels)
    assert (s1.labels > 0).sum() == 10


def test_rendered_ball_sits_at_the_tracked_position() -> None:
    """The pixels the ball changes are centred on the tracked state (away from the screen
    and the wall): the physics check reads the same states the frames show."""
    yy, xx = np.mgrid[0:32, 0:32] + 0.5
    checked = 0
    for seed in range(12):
        tr = generate_clip("plausible", seed=seed).track
        on = render(tr, rng=np.random.default_rng(0), noise=0.0)
        tr.exists[:] = False
        off = render(tr, rng=np.random.default_rng(0), noise=0.0)
        tr.exists[:] = True
        diff = np.abs(on - off).sum(1)  # (T, H, W)
        x0, y0, x1, y1 = tr.occluder
        for t in range(16):
            hidden = (x0 - 2.5 < tr.x[t] < x1 + 2.5) and (y0 - 2.5 < tr.y[t] < y1 + 2.5)
            if hidden or abs(tr.x[t] - tr.wall_x) < 3.5:
                continue
            w = diff[t] * (yy < FLOOR)
            cx, cy = (w * xx).sum() / w.sum(), (w * yy).sum() / w.sum()
            assert abs(cx - tr.x[t]) < 0.6 and abs(cy - tr.y[t]) < 0.8, (seed, t)
            checked += 1
    assert checked >= 20


def test_classes_have_matched_low_level_statistics() -> None:
    clips = generate_clips(300, seed=8)
    mean = clips.frames.mean(axis=(1, 2, 3, 4))
    imp = clips.labels > 0
    gap = abs(mean[imp].mean() - mean[~imp].mean())
    se = math.sqrt(mean[imp].var() / imp.sum() + mean[~imp].var() / (~imp).sum())
    assert gap < 4 * se + 1e-3


# ----------------------------------------------------------------------------- models + harness
def test_model_views_of_time() -> None:
    torch.manual_seed(0)
    clips = torch.rand(2, 16, 3, 32, 32)
    perm = torch.randperm(16)
    perm = perm[perm != 8]
    shuffled = clips.clone()
    idx = torch.arange(16)
    idx[idx != 8] = perm
    shuffled = clips[:, idx]
    fa, sf, tm = (
        FrameAverageModel(n_classes=11).eval(),
        SingleFrameModel(n_classes=11).eval(),
        TemporalModel(n_classes=11).eval(),
    )
    with torch.no_grad():
        assert torch.allclose(fa(clips), fa(shuffled), atol=1e-5)  # order-blind
        assert torch.allclose(sf(clips), sf(shuffled), atol=1e-6)  # middle frame kept
        assert not torch.allclose(tm(clips), tm(shuffled), atol=1e-4)


def test_training_fits_a_small_set() -> None:
    clips = generate_clips(40, seed=2, violations=("floating_tank",), as_uint8=True)
    model = train_video_model(
        SingleFrameModel(n_classes=11), clips.frames, clips.labels, epochs=12, batch_size=8, seed=0
    )
    p = predict_proba(model, clips.frames)
    assert p.shape == (40, 11) and np.allclose(p.sum(1), 1)
    assert (p.argmax(1) == clips.labels).mean() >= 0.9


def test_oracle_and_random_replies() -> None:
    clips = generate_clips(60, seed=9, as_uint8=True)
    bench = build_benchmark(clips, seed=0)
    oracle = np.eye(len(CLASS_NAMES))[clips.labels]
    s = evaluate(bench, replies_from_probs(bench, oracle))
    assert s.judgement.accuracy == 100.0 and s.mcqa.accuracy == 100.0 and s.openqa.score == 100.0
    assert s.mcqa.plausible_choice_rate == 0.0
    always_plausible = np.zeros_like(oracle)
    always_plausible[:, 0] = 1
    s = evaluate(bench, replies_from_probs(bench, always_plausible))
    assert s.mcqa.accuracy == 0.0 and s.mcqa.plausible_choice_rate == 100.0
    assert s.judgement.yes_rate == 0.0 and s.openqa.score == 0.0
    golds = [a["answer"] for a in bench.mcqa_answer.values()]
    assert max(golds.count(L) for L in "ABCDE") - min(golds.count(L) for L in "ABCDE") <= 1
    r = evaluate(bench, random_replies(bench, seed=0))
    assert r.openqa.score == 0.0 and r.judgement.n_unparsed == 0


def test_violations_map_to_taxonomy_categories() -> None:
    for v in VIOLATIONS:
        parse_label(v.label)
    kinds = [v.spatial_temporal for v in VIOLATIONS]
    assert kinds.count("temporal") == 7 and kinds.count("spatial") == 3


def test_judgement_threshold_is_the_training_prior() -> None:
    clips = generate_clips(10, seed=1)
    bench = build_benchmark(clips)
    probs = np.full((10, 11), 0.9 / 10)
    probs[:, 0] = 0.1  # the uniform-prior model's "no idea"
    yes = lambda r: sum(v == "yes" for v in r.judgement.values())  # noqa: E731
    assert yes(replies_from_probs(bench, probs)) == 10
    assert yes(replies_from_probs(bench, probs, plausible_prior=0.05)) == 0
