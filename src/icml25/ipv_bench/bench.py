"""The generated benchmark in the official task formats, and models answering it.

:func:`build_benchmark` turns a :class:`~icml25.ipv_bench.generator.ClipSet` into the three
IPV-Bench tasks with the official question strings and answer files: judgement on every clip
(``yes`` = impossible), one multiple-choice question per impossible clip (its violation's
description, three other violations as distractors, the plausible option at E or D; gold
letters balanced), and the open-ended question per impossible clip with the description as
primary answer. :meth:`GeneratedBenchmark.write` lays it out as the official release (task
JSON files, ``impossible_videos/`` and ``real_world_videos/`` with GIF clips), so
:func:`~icml25.ipv_bench.data.load_ipv_bench` reads it back.

A model that outputs class probabilities answers through :func:`replies_from_probs` (yes/no,
the letter of the most probable offered option, the most probable violation's description);
:func:`random_replies` is the paper's random baseline; :func:`evaluate` scores replies with the
released parsing and metrics and the deterministic :func:`category_judge`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from icml25.core import validate as V
from icml25.ipv_bench.data import IMPOSSIBLE_DIR, REAL_DIR, write_gif
from icml25.ipv_bench.generator import BY_NAME, CLASS_NAMES, PLAUSIBLE, VIOLATIONS, ClipSet
from icml25.ipv_bench.judge import CategoryJudge
from icml25.ipv_bench.tasks import (
    JUDGEMENT_QUESTION,
    LETTERS,
    MCQA_STEMS,
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
    parse_mcqa,
)
from icml25.ipv_bench.taxonomy import domain_key

_ALT_TEMPLATES = (
    "In the video, {d}",
    "What is impossible: {d}",
    "The clip is counterfactual because {d}",
)


@dataclass
class GeneratedBenchmark:
    """The three tasks on generated clips, in the official file formats."""

    video_names: list[str]
    classes: np.ndarray
    judgement_question: dict[str, dict[str, str]]
    judgement_answer: dict[str, dict[str, str]]
    mcqa_question: dict[str, dict[str, str]]
    mcqa_answer: dict[str, dict[str, str]]
    mcqa_option_classes: dict[str, list[int]]
    openqa_question: dict[str, str]
    openqa_answer: dict[str, dict[str, object]]
    labels: dict[str, VideoLabel]
    video_index: dict[str, int] = field(default_factory=dict)

    def write(self, folder: str | Path, clips: ClipSet | None = None, *, fps: float = 8.0) -> Path:
        """Write the official layout to ``folder``: the seven task JSON files and, with
        ``clips``, every clip as a GIF under ``impossible_videos/`` or ``real_world_videos/``."""
        root = Path(folder)
        root.mkdir(parents=True, exist_ok=True)
        files = {
            "judgement_question.json": self.judgement_question,
            "judgement_answer.json": self.judgement_answer,
            "mcqa_question.json": self.mcqa_question,
            "mcqa_answer.json": self.mcqa_answer,
            "openqa_question.json": self.openqa_question,
            "openqa_answer.json": self.openqa_answer,
            "video2taxonomy_label.json": {
                v: {
                    "taxonomy_label_list": list(lab.domains),
                    "spatial_temporal_label": lab.spatial_temporal,
                }
                for v, lab in self.labels.items()
            },
        }
        for name, obj in files.items():
            (root / name).write_text(json.dumps(obj, indent=1), encoding="utf-8")
        if clips is not None:
            if len(clips.labels) != len(self.video_names):
                raise ValueError(
                    f"clips must hold the benchmark's {len(self.video_names)} clips, "
                    f"got {len(clips.labels)}"
                )
            for sub in (IMPOSSIBLE_DIR, REAL_DIR):
                (root / sub).mkdir(exist_ok=True)
            for i, name in enumerate(self.video_names):
                sub = IMPOSSIBLE_DIR if self.classes[i] > 0 else REAL_DIR
                frames = clips.frames[i]
                if frames.dtype == np.uint8:
                    frames = frames.astype(np.float32) / 255.0
                write_gif(frames, root / sub / name, fps=fps)
        return root


def build_benchmark(clips: ClipSet, *, seed: int = 0) -> GeneratedBenchmark:
    """The three tasks on ``clips`` (see the module docstring); ``seed`` fixes the stems,
    distractors and the balanced gold letters."""
    if not isinstance(clips, ClipSet):
        raise TypeError(f"clips must be a ClipSet, got {type(clips).__name__}")
    seed = V.integer("seed", seed, low=0)
    rng = np.random.default_rng([seed, 33])
    classes = np.asarray(clips.labels, dtype=np.int64)
    # file names must not give the answer away
    names = [f"sim_{i:05d}_{int(rng.integers(16**8)):08x}.gif" for i in range(len(classes))]
    jq, ja = {}, {}
    for i, v in enumerate(names):
        jq[str(i)] = {"video_name": v, "question": JUDGEMENT_QUESTION}
        ja[str(i)] = {"video_name": v, "answer": "yes" if classes[i] > 0 else "no"}
    impossible = [i for i in range(len(classes)) if classes[i] > 0]
    letters = [LETTERS[k % 5] for k in range(len(impossible))]
    letters = [letters[k] for k in rng.permutation(len(letters))]
    mq: dict[str, dict[str, str]] = {}
    ma: dict[str, dict[str, str]] = {}
    mcls: dict[str, list[int]] = {}
    oq: dict[str, str] = {}
    oa: dict[str, dict[str, object]] = {}
    labels: dict[str, VideoLabel] = {}
    for qn, (i, gold) in enumerate(zip(impossible, letters, strict=False)):
        viol = BY_NAME[CLASS_NAMES[classes[i]]]
        others = [w for w in VIOLATIONS if w.name != viol.name]
        picks = [others[k] for k in rng.choice(len(others), size=3, replace=False)]
        options = arrange_options(
            correct=viol.description, distractors=[p.description for p in picks], answer=gold
        )
        by_text = {w.description: CLASS_NAMES.index(w.name) for w in VIOLATIONS}
        by_text[PLAUSIBLE_OPTION] = 0
        stem = MCQA_STEMS[int(rng.integers(len(MCQA_STEMS)))]
        v = names[i]
        mq[str(qn)] = {"video_name": v, "question": mcqa_prompt(stem=stem, options=options)}
        ma[str(qn)] = {"video_name": v, "answer": gold}
        mcls[str(qn)] = [by_text[t] for t in options]
        oq[v] = OPENQA_QUESTION
        d = viol.description
        low = d[0].lower() + d[1:]
        oa[v] = {
            "primary_answer": d,
            "alternative_answers": [t.format(d=low) for t in _ALT_TEMPLATES],
        }
        labels[v] = VideoLabel((domain_key(viol.label),), viol.spatial_temporal)
    return GeneratedBenchmark(
        video_names=names,
        classes=classes,
        judgement_question=jq,
        judgement_answer=ja,
        mcqa_question=mq,
        mcqa_answer=ma,
        mcqa_option_classes=mcls,
        openqa_question=oq,
        openqa_answer=oa,
        labels=labels,
        video_index={v: i for i, v in enumerate(names)},
    )


@dataclass
class Replies:
    """A model's raw replies to the three tasks, keyed as the task files."""

    judgement: dict[str, str]
    mcqa: dict[str, str]
    openqa: dict[str, str]


def replies_from_probs(
    bench: GeneratedBenchmark, probs: np.ndarray, *, plausible_prior: float = 0.5
) -> Replies:
    """Replies of a classifier with class probabilities ``probs`` ``(N, len(CLASS_NAMES))``,
    one row per clip: *yes* if the plausible class is less likely than under the model's
    training prior (``P(plausible) < plausible_prior``: the Bayes decision for a test set with
    as many plausible as impossible clips, for a model trained with that share of plausible
    clips); the letter of the offered option whose class is most probable; the description of
    the most probable class (or a plausible sentence)."""
    prior = V.probability("plausible_prior", plausible_prior, open_low=True, open_high=True)
    p = V.finite_array("probs", probs, ndim=2)
    if p.shape != (len(bench.video_names), len(CLASS_NAMES)):
        raise ValueError(
            f"probs must have shape ({len(bench.video_names)}, {len(CLASS_NAMES)}), got {p.shape}"
        )
    judg = {
        q: "yes" if p[bench.video_index[it["video_name"]], 0] < prior else "no"
        for q, it in bench.judgement_question.items()
    }
    mcqa = {}
    for q, it in bench.mcqa_question.items():
        row = p[bench.video_index[it["video_name"]]]
        scores = [row[c] for c in bench.mcqa_option_classes[q]]
        mcqa[q] = LETTERS[int(np.argmax(scores))]
    openqa = {}
    for v in bench.openqa_question:
        k = int(np.argmax(p[bench.video_index[v]]))
        name = CLASS_NAMES[k]
        openqa[v] = (
            "Nothing: the video looks plausible."
            if name == PLAUSIBLE
            else (BY_NAME[name].description)
        )
    return Replies(judg, mcqa, openqa)


def clip_frames(clips: ClipSet, index: int) -> np.ndarray:
    """Clip ``index`` of ``clips`` as ``(T, H, W, 3)`` float32 in [0, 1]: the layout
    :func:`~icml25.ipv_bench.data.read_video` returns for a video file, whatever the
    ``ClipSet`` stores (``(T, 3, H, W)``, float or uint8)."""
    if not isinstance(clips, ClipSet):
        raise TypeError(f"clips must be a ClipSet, got {type(clips).__name__}")
    i = V.integer("index", index, low=0)
    if i >= len(clips.frames):
        raise ValueError(f"index must be below the {len(clips.frames)} clips, got {i}")
    frames = clips.frames[i]
    out = frames.astype(np.float32) / 255.0 if frames.dtype == np.uint8 else frames
    return np.ascontiguousarray(out.transpose(0, 2, 3, 1), dtype=np.float32)


def replies_from_model(
    bench: GeneratedBenchmark,
    clips: ClipSet,
    answer: Callable[[np.ndarray, str], str],
    *,
    progress: Callable[[str], None] | None = None,
) -> Replies:
    """Your model on the generated benchmark: ``answer(frames, question) -> reply text`` is
    called once per question of the three tasks, with the clip as ``(T, H, W, 3)`` float32 in
    [0, 1] (:func:`clip_frames`, the layout of ``read_video``) and the question's text (which
    already says how to answer: yes/no, a letter, or free text). Score the result with
    :func:`evaluate`. Replies that are not strings are refused with the question's id."""
    if not callable(answer):
        raise TypeError(f"answer must be a function (frames, question) -> str, got {answer!r}")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable or None, got {progress!r}")
    if len(clips.frames) != len(bench.video_names):
        raise ValueError(
            f"clips must hold the benchmark's {len(bench.video_names)} clips, got "
            f"{len(clips.frames)}"
        )
    total = len(bench.judgement_question) + len(bench.mcqa_question) + len(bench.openqa_question)
    done = 0

    def ask(task: str, key: str, video: str, question: str) -> str:
        nonlocal done
        reply = answer(clip_frames(clips, bench.video_index[video]), question)
        if not isinstance(reply, str):
            raise TypeError(
                f"answer must return the reply text (str); for {task} question {key!r} "
                f"it returned {type(reply).__name__}"
            )
        done += 1
        if progress is not None and done % 50 == 0:
            progress(f"IPV-Bench: {done}/{total} questions answered")
        return reply

    judg = {
        q: ask("judgement", q, it["video_name"], it["question"])
        for q, it in bench.judgement_question.items()
    }
    mcqa = {
        q: ask("mcqa", q, it["video_name"], it["question"]) for q, it in bench.mcqa_question.items()
    }
    openqa = {v: ask("openqa", v, v, question) for v, question in bench.openqa_question.items()}
    return Replies(judg, mcqa, openqa)


def random_replies(bench: GeneratedBenchmark, *, seed: int = 0) -> Replies:
    """The released scripts' random test: a random yes/no, a random letter A-E, and a fixed
    plausible sentence for the open-ended task."""
    seed = V.integer("seed", seed, low=0)
    rng = np.random.default_rng([seed, 99])
    judg = {q: ("yes", "no")[int(rng.integers(2))] for q in bench.judgement_question}
    mcqa = {q: LETTERS[int(rng.integers(5))] for q in bench.mcqa_question}
    openqa = {
        v: "The video is plausible without any impossible events." for v in bench.openqa_question
    }
    return Replies(judg, mcqa, openqa)


def category_judge() -> CategoryJudge:
    """The deterministic open-ended judge for generated clips (keywords per violation)."""
    return CategoryJudge({v.name: v.keywords for v in VIOLATIONS})


@dataclass(frozen=True)
class BenchScores:
    """Scores of one model on the three tasks."""

    judgement: JudgementScores
    mcqa: MCQAScores
    openqa: OpenQAScores
    mcqa_by_violation: dict[str, float]


def evaluate(bench: GeneratedBenchmark, replies: Replies) -> BenchScores:
    """Score ``replies`` with the released parsers and metrics (open-ended: category judge)."""
    if not isinstance(replies, Replies):
        raise TypeError(f"replies must be Replies, got {type(replies).__name__}")
    j = judgement_scores(
        replies.judgement, {q: a["answer"] for q, a in bench.judgement_answer.items()}
    )
    answers = {q: a["answer"] for q, a in bench.mcqa_answer.items()}
    item_labels = {q: bench.labels[a["video_name"]] for q, a in bench.mcqa_answer.items()}
    m = mcqa_scores(replies.mcqa, answers, item_labels)
    ref_types = {v: CLASS_NAMES[bench.classes[bench.video_index[v]]] for v in bench.openqa_question}
    o = openqa_scores(category_judge().score(replies.openqa, ref_types), bench.labels)
    per: dict[str, list[float]] = {v.name: [] for v in VIOLATIONS}
    for q, a in bench.mcqa_answer.items():
        name = CLASS_NAMES[bench.classes[bench.video_index[a["video_name"]]]]
        per[name].append(float(parse_mcqa(replies.mcqa[q]) == a["answer"]))
    by_v = {k: 100.0 * float(np.mean(v)) if v else float("nan") for k, v in per.items()}
    return BenchScores(j, m, o, by_v)
