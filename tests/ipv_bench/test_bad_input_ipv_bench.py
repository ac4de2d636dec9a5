"""Bad input at every public entry point of ipv_bench: a clear error naming the argument."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from icml25.ipv_bench import (
    CategoryJudge,
    FrameAverageModel,
    IPVDataError,
    LLMJudge,
    SingleFrameModel,
    TemporalModel,
    VideoLabel,
    arrange_options,
    build_benchmark,
    category_judge,
    clip_frames,
    evaluate,
    generate_clip,
    generate_clips,
    ipv_score,
    judge_prompt,
    judgement_scores,
    load_ipv_bench,
    load_prompt_suite,
    looks_cut,
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
    replies_from_model,
    replies_from_probs,
    taxonomy_labels,
    train_video_model,
    write_gif,
)

# not entry points: CLASS_NAMES, JUDGEMENT_QUESTION, OPENQA_QUESTION, PLAUSIBLE_OPTION, TAXONOMY
# not entry points: VIOLATIONS, BenchScores, Clip, ClipSet, GeneratedBenchmark, IPVBench
# not entry points: IPVDataError, JudgementScores, MCQAScores, OpenQAScores, Replies, Track

LABEL = VideoLabel(("physical laws",), "temporal")


def test_taxonomy_bad_labels() -> None:
    with pytest.raises(ValueError, match="unknown category 'Gravity'"):
        parse_label("Physical Laws - Gravity")
    with pytest.raises(ValueError, match="Domain - Category"):
        parse_label("Physical Laws")
    with pytest.raises(TypeError, match="label must be a str"):
        parse_label(3)
    assert len(taxonomy_labels()) == 31  # no arguments to get wrong


def test_parsers_never_raise_on_malformed_answers() -> None:
    for bad in (None, 3, "", "¿qué?", "ye s", ["yes"]):
        assert parse_judgement(bad) is None
        assert parse_mcqa(bad) is None
    assert parse_judge_reply("{not json") is None
    assert parse_judge_reply('{"semantic_alignment_score": "nan"}') is None


def test_prompt_builders() -> None:
    with pytest.raises(ValueError, match="options must be 5"):
        mcqa_prompt(stem="What?", options=["a", "b"])
    with pytest.raises(ValueError, match="stem must be"):
        mcqa_prompt(stem=" ", options=list("abcde"))
    with pytest.raises(ValueError, match=r"options\[1\] must be a one-line"):
        mcqa_prompt(stem="What?", options=["a", "b\nc", "d", "e", "f"])
    with pytest.raises(ValueError, match="answer must be one of"):
        arrange_options(correct="a", distractors=["b", "c", "d"], answer="F")
    with pytest.raises(ValueError, match="4 distinct texts"):
        arrange_options(correct="a", distractors=["a", "c", "d"], answer="A")
    with pytest.raises(ValueError, match="variant must be one of"):
        judge_prompt(primary="p", prediction="q", variant="gpt4")
    with pytest.raises(ValueError, match="alternatives must be 3"):
        judge_prompt(primary="p", prediction="q", alternatives=["x"], variant="all_answers")


def test_metrics_bad_input() -> None:
    with pytest.raises(ValueError, match="exactly the answers' ids"):
        judgement_scores({"0": "yes"}, {"0": "yes", "1": "no"})
    with pytest.raises(ValueError, match="must be 'yes' or 'no'"):
        judgement_scores({"0": "yes"}, {"0": "maybe"})
    with pytest.raises(ValueError, match="answers must not be empty"):
        judgement_scores({}, {})
    with pytest.raises(ValueError, match="must be a letter A-E"):
        mcqa_scores({"0": "A"}, {"0": "G"}, {"0": LABEL})
    with pytest.raises(ValueError, match="labels has no entry"):
        mcqa_scores({"0": "A"}, {"0": "A"}, {"1": LABEL})
    with pytest.raises(ValueError, match="labels must have 1 entries"):
        mcqa_scores({"0": "A"}, {"0": "A"}, [LABEL, LABEL])
    with pytest.raises(ValueError, match=r"scores\['a'\] must be a finite number"):
        openqa_scores({"a": 1.5}, [LABEL])
    with pytest.raises(ValueError, match="scores must be a non-empty"):
        openqa_scores({}, [])
    with pytest.raises(ValueError, match="spatial_temporal must be one of"):
        VideoLabel(("physical laws",), "both")
    with pytest.raises(ValueError, match="domains must be among"):
        VideoLabel(("chemical laws",), "spatial")
    with pytest.raises(ValueError, match="equal length"):
        ipv_score(high_quality=[True], prompt_following=[])
    with pytest.raises(TypeError, match="must hold booleans"):
        ipv_score(high_quality=[1], prompt_following=[True])


class _LM:
    def generate(self, prompts: list[str], max_new_tokens: int = 32, *, chat: bool = True):
        return ["{}"] * len(prompts)


def test_judges_bad_input() -> None:
    assert category_judge().types_in("It passes through the wall.") == {"through_wall"}
    with pytest.raises(TypeError, match="lm must have a generate"):
        LLMJudge(object())
    with pytest.raises(ValueError, match="max_new_tokens must be an integer >= 1"):
        LLMJudge(_LM(), max_new_tokens=0)
    with pytest.raises(ValueError, match="keywords must be a non-empty mapping"):
        CategoryJudge({})
    judge = CategoryJudge({"a": ["x"]})
    with pytest.raises(ValueError, match="must be one of"):
        judge.score({"v": "x"}, {"v": "zzz"})


def test_loader_bad_input(tmp_path) -> None:
    with pytest.raises(IPVDataError, match="root must be an existing folder"):
        load_ipv_bench(tmp_path / "missing")
    with pytest.raises(TypeError, match="root must be a path"):
        load_ipv_bench(3)
    (tmp_path / "d").mkdir()
    with pytest.raises(IPVDataError, match=r"judgement_question\.json is missing"):
        load_ipv_bench(tmp_path / "d")
    with pytest.raises(IPVDataError, match=r"ipv_txt_prompt_suite\.json"):
        load_prompt_suite(tmp_path / "d")
    (tmp_path / "d" / "ipv_txt_prompt_suite.json").write_text(
        json.dumps(
            {
                "Physical Laws": {
                    "Nonsense": [
                        {
                            "prompt_id": 1,
                            "prompt_text": "t",
                            "prompt_taxonomy_label": "Physical Laws - Nonsense",
                        }
                    ]
                }
            }
        )
    )
    with pytest.raises(IPVDataError, match="unknown category 'Nonsense'"):
        load_prompt_suite(tmp_path / "d")
    with pytest.raises(FileNotFoundError, match="path must be an existing video file"):
        read_video(tmp_path / "none.gif")
    with pytest.raises(ValueError, match=r"clip must be \(T, H, W, 3\)"):
        write_gif(np.zeros((4, 5, 6, 7)), tmp_path / "x.gif")
    with pytest.raises(ValueError, match="fps must be a finite number > 0"):
        write_gif(np.zeros((2, 8, 8, 3)), tmp_path / "x.gif", fps=0)


def test_generator_bad_input() -> None:
    with pytest.raises(ValueError, match="violation must be one of"):
        generate_clip("levitation")
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        generate_clip("plausible", seed=-1)
    with pytest.raises(ValueError, match="noise must be a finite number"):
        generate_clip("plausible", noise=float("nan"))
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        generate_clips(0)
    with pytest.raises(ValueError, match="impossible_fraction must be a finite number"):
        generate_clips(4, impossible_fraction=1.5)
    with pytest.raises(ValueError, match="violations must be one of"):
        generate_clips(4, violations=("levitation",))
    with pytest.raises(AttributeError):
        physics_check(None)


def test_models_and_harness_bad_input() -> None:
    with pytest.raises(ValueError, match="n_classes must be an integer >= 2"):
        SingleFrameModel(n_classes=1)
    with pytest.raises(ValueError, match="n_classes must be an integer >= 2"):
        FrameAverageModel(n_classes=0)
    with pytest.raises(ValueError, match="width must be an integer >= 1"):
        TemporalModel(n_classes=3, width=0)
    model = SingleFrameModel(n_classes=11)
    with pytest.raises(ValueError, match=r"clips must have shape \(B, T, 3, H, W\)"):
        model(torch.zeros(2, 3, 32, 32))
    with pytest.raises(ValueError, match="labels must have 2 labels"):
        train_video_model(model, np.zeros((2, 16, 3, 32, 32), np.float32), [0])
    with pytest.raises(ValueError, match="epochs must be an integer >= 1"):
        train_video_model(model, np.zeros((2, 16, 3, 32, 32), np.float32), [0, 1], epochs=0)
    with pytest.raises(TypeError, match=r"model must be a torch\.nn\.Module"):
        predict_proba("model", np.zeros((1, 16, 3, 32, 32), np.float32))
    clips = generate_clips(4, seed=0)
    bench = build_benchmark(clips)
    with pytest.raises(ValueError, match=r"probs must have shape \(4, 11\)"):
        replies_from_probs(bench, np.zeros((3, 11)))
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        random_replies(bench, seed=-2)
    with pytest.raises(TypeError, match="replies must be Replies"):
        evaluate(bench, {"judgement": {}})
    with pytest.raises(TypeError, match="clips must be a ClipSet"):
        build_benchmark(np.zeros(3))


def test_replies_prior_must_be_open_probability() -> None:
    bench = build_benchmark(generate_clips(4, seed=0))
    with pytest.raises(ValueError, match="plausible_prior must be a finite number"):
        replies_from_probs(bench, np.full((4, 11), 1 / 11), plausible_prior=1.0)


def test_your_model_entry_point_and_the_cut_reply_check() -> None:
    clips = generate_clips(4, seed=0)
    bench = build_benchmark(clips)
    with pytest.raises(TypeError, match="answer must be a function"):
        replies_from_model(bench, clips, "yes")
    with pytest.raises(ValueError, match="index must be below the 4 clips"):
        clip_frames(clips, 4)
    with pytest.raises(TypeError, match="clips must be a ClipSet"):
        clip_frames(np.zeros(3), 0)
    assert looks_cut(3) is False and looks_cut('{"a": 1') is True  # a predicate: never raises
