"""Your own model on the generated benchmark (issue 56 item 5): one entry point, one frame
layout. An oracle that recognises each clip by its frames and answers from the answer files
scores 100%, so the frames and questions reach the model matched and in the layout of
read_video."""

import numpy as np
import pytest

from icml25.ipv_bench import (
    build_benchmark,
    clip_frames,
    evaluate,
    generate_clips,
    read_video,
    replies_from_model,
    write_gif,
)


@pytest.fixture(scope="module")
def bench_and_clips():
    clips = generate_clips(12, seed=0, as_uint8=True)
    return build_benchmark(clips, seed=0), clips


def test_an_oracle_through_the_entry_point_scores_everything(bench_and_clips):
    bench, clips = bench_and_clips
    by_frames = {clip_frames(clips, i).tobytes(): v for i, v in enumerate(bench.video_names)}
    judgement = {
        (it["video_name"], it["question"]): bench.judgement_answer[q]["answer"]
        for q, it in bench.judgement_question.items()
    }
    mcqa = {
        (it["video_name"], it["question"]): bench.mcqa_answer[q]["answer"]
        for q, it in bench.mcqa_question.items()
    }
    seen = []

    def oracle(frames, question):
        assert frames.dtype == np.float32 and frames.ndim == 4 and frames.shape[-1] == 3
        assert 0.0 <= frames.min() and frames.max() <= 1.0
        video = by_frames[frames.tobytes()]
        seen.append(video)
        if (video, question) in judgement:
            return judgement[(video, question)]
        if (video, question) in mcqa:
            return mcqa[(video, question)]
        return "open"

    scores = evaluate(bench, replies_from_model(bench, clips, oracle))
    assert scores.judgement.accuracy == pytest.approx(100.0)
    assert scores.mcqa.accuracy == pytest.approx(100.0)
    assert len(seen) == (
        len(bench.judgement_question) + len(bench.mcqa_question) + len(bench.openqa_question)
    )


def test_clip_frames_is_read_videos_layout(bench_and_clips, tmp_path):
    _, clips = bench_and_clips
    frames = clip_frames(clips, 3)
    write_gif(frames, tmp_path / "c.gif")
    back = read_video(tmp_path / "c.gif")
    assert back.shape == frames.shape and back.dtype == frames.dtype


def test_bad_answers_are_named(bench_and_clips):
    bench, clips = bench_and_clips
    with pytest.raises(TypeError, match="answer must be a function"):
        replies_from_model(bench, clips, "yes")
    with pytest.raises(TypeError, match="judgement question '0'"):
        replies_from_model(bench, clips, lambda f, q: 1)
    with pytest.raises(ValueError, match="index must be below"):
        clip_frames(clips, 99)
