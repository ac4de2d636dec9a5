"""IPV-Bench: impossible-video understanding, with procedurally rendered physics clips
(Bai, Ci & Shou, "Impossible Videos", ICML 2025).

Library: the taxonomy (:mod:`~icml25.ipv_bench.taxonomy`), the three understanding tasks
with the official prompt formats, answer parsers and metrics (:mod:`~icml25.ipv_bench.tasks`),
the open-ended judges and the text-to-video IPV Score (:mod:`~icml25.ipv_bench.judge`), a
loader for the official data from a user-given folder and GIF/MP4 clip I/O
(:mod:`~icml25.ipv_bench.data`), a procedural generator of plausible and impossible clips with
a physics check (:mod:`~icml25.ipv_bench.generator`), the generated benchmark in the official
formats (:mod:`~icml25.ipv_bench.bench`) and small video models
(:mod:`~icml25.ipv_bench.models`). Reproduction: ``icml25 reproduce ipv_bench``.
"""

from icml25.core.registry import register
from icml25.ipv_bench.bench import (
    BenchScores,
    GeneratedBenchmark,
    Replies,
    build_benchmark,
    category_judge,
    clip_frames,
    evaluate,
    random_replies,
    replies_from_model,
    replies_from_probs,
)
from icml25.ipv_bench.data import (
    IPVBench,
    IPVDataError,
    load_ipv_bench,
    load_prompt_suite,
    read_video,
    write_gif,
)
from icml25.ipv_bench.generator import (
    CLASS_NAMES,
    VIOLATIONS,
    Clip,
    ClipSet,
    Track,
    generate_clip,
    generate_clips,
    physics_check,
)
from icml25.ipv_bench.judge import (
    CategoryJudge,
    LLMJudge,
    ipv_score,
    judge_prompt,
    looks_cut,
    parse_judge_reply,
)
from icml25.ipv_bench.models import (
    FrameAverageModel,
    SingleFrameModel,
    TemporalModel,
    predict_proba,
    train_video_model,
)
from icml25.ipv_bench.tasks import (
    JUDGEMENT_QUESTION,
    OPENQA_QUESTION,
    PLAUSIBLE_OPTION,
    JudgementScores,
    MCQAScores,
    OpenQAScores,
    VideoLabel,
    arrange_options,
    judgement_scores,
    mcqa_prompt,
    mcqa_scores,
    openqa_scores,
    parse_judgement,
    parse_mcqa,
)
from icml25.ipv_bench.taxonomy import TAXONOMY, parse_label, taxonomy_labels

__all__ = [
    "CLASS_NAMES",
    "JUDGEMENT_QUESTION",
    "OPENQA_QUESTION",
    "PLAUSIBLE_OPTION",
    "TAXONOMY",
    "VIOLATIONS",
    "BenchScores",
    "CategoryJudge",
    "Clip",
    "ClipSet",
    "FrameAverageModel",
    "GeneratedBenchmark",
    "IPVBench",
    "IPVDataError",
    "JudgementScores",
    "LLMJudge",
    "MCQAScores",
    "OpenQAScores",
    "Replies",
    "SingleFrameModel",
    "TemporalModel",
    "Track",
    "VideoLabel",
    "arrange_options",
    "build_benchmark",
    "category_judge",
    "clip_frames",
    "evaluate",
    "generate_clip",
    "generate_clips",
    "ipv_score",
    "judge_prompt",
    "judgement_scores",
    "load_ipv_bench",
    "load_prompt_suite",
    "looks_cut",
    "mcqa_prompt",
    "mcqa_scores",
    "openqa_scores",
    "parse_judge_reply",
    "parse_judgement",
    "parse_label",
    "parse_mcqa",
    "physics_check",
    "predict_proba",
    "random_replies",
    "read_video",
    "replies_from_model",
    "replies_from_probs",
    "taxonomy_labels",
    "train_video_model",
    "write_gif",
]

register(
    slug="ipv_bench",
    title="Impossible Videos",
    authors="Zechen Bai, Hai Ci, Mike Zheng Shou",
    venue="ICML 2025 (arXiv:2503.14378)",
    url="https://arxiv.org/abs/2503.14378",
    summary="A benchmark of impossible (counterfactual) videos for video understanding and "
    "generation: taxonomy, judgement / multiple-choice / open-ended tasks, here run on "
    "procedurally rendered physics clips with small video models trained on the spot.",
    quick_seconds=35,
    module="icml25.ipv_bench.reproduce",
)
