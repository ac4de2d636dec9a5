"""Load the official IPV-Bench data from a folder the user gives, and read/write video clips.

The folder has the layout of the Hugging Face dataset ``showlab/ImpossibleVideos`` (and of the
repository showlab/Impossible-Videos for the JSON files):

``judgement_question.json`` / ``judgement_answer.json``, ``mcqa_question.json`` /
``mcqa_answer.json``
    dicts keyed by string question ids holding ``{video_name, question}`` / ``{video_name,
    answer}``;
``openqa_question.json`` / ``openqa_answer.json``
    ``video_name -> question`` and ``video_name -> {primary_answer, alternative_answers}``;
``video2taxonomy_label.json``
    ``video_name -> {taxonomy_label_list, spatial_temporal_label}``;
``ipv_txt_prompt_suite.json`` (optional)
    the text-to-video prompt suite, nested domain -> category -> [subcategory ->] prompts;
``impossible_videos/``, ``real_world_videos/`` (optional)
    the clips; a judgement item's gold answer is *yes* iff its file is in ``impossible_videos/``.

Nothing is downloaded or vendored. Video files: GIF is read with Pillow; other containers
(MP4) need PyAV (``pip install av``), imported only when such a file is read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from icml25.core import validate as V
from icml25.ipv_bench.tasks import VideoLabel
from icml25.ipv_bench.taxonomy import parse_label

TASK_FILES: tuple[str, ...] = (
    "judgement_question.json",
    "judgement_answer.json",
    "mcqa_question.json",
    "mcqa_answer.json",
    "openqa_question.json",
    "openqa_answer.json",
    "video2taxonomy_label.json",
)
PROMPT_SUITE_FILE = "ipv_txt_prompt_suite.json"
IMPOSSIBLE_DIR = "impossible_videos"
REAL_DIR = "real_world_videos"


class IPVDataError(ValueError):
    """The folder is not laid out as the official IPV-Bench release (the message says where)."""


@dataclass(frozen=True)
class QuestionItem:
    """One judgement or multiple-choice question with its gold answer."""

    video_name: str
    question: str
    answer: str


@dataclass(frozen=True)
class OpenItem:
    """One open-ended question with its references."""

    video_name: str
    question: str
    primary_answer: str
    alternative_answers: tuple[str, ...]


@dataclass(frozen=True)
class Prompt:
    """One text-to-video prompt of the suite."""

    prompt_id: int
    label: str
    text: str


@dataclass
class IPVBench:
    """The official benchmark as loaded by :func:`load_ipv_bench`."""

    root: Path
    judgement: dict[str, QuestionItem]
    mcqa: dict[str, QuestionItem]
    openqa: dict[str, OpenItem]
    labels: dict[str, VideoLabel]
    prompts: list[Prompt] = field(default_factory=list)

    def video_path(self, video_name: str) -> Path:
        """The clip's file: in ``impossible_videos/``, else ``real_world_videos/``."""
        return video_path(self.root, video_name)

    def is_impossible(self, video_name: str) -> bool:
        """Whether the clip lies in ``impossible_videos/`` (the released judgement rule)."""
        return (self.root / IMPOSSIBLE_DIR / video_name).exists()


def _read_json(root: Path, name: str) -> Any:
    path = root / name
    if not path.is_file():
        raise IPVDataError(
            f"{path} is missing: the folder must hold the official task files {list(TASK_FILES)} "
            "(from the Hugging Face dataset showlab/ImpossibleVideos)"
        )
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise IPVDataError(f"{path} is not valid JSON: {exc}") from exc


def _dict_of(obj: Any, name: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise IPVDataError(f"{name} must hold a JSON object, got {type(obj).__name__}")
    return obj


def _questions(root: Path, task: str, answer_key: str = "answer") -> dict[str, QuestionItem]:
    q = _dict_of(_read_json(root, f"{task}_question.json"), f"{task}_question.json")
    a = _dict_of(_read_json(root, f"{task}_answer.json"), f"{task}_answer.json")
    if set(q) != set(a):
        raise IPVDataError(
            f"{task}_question.json and {task}_answer.json must have the same question ids; "
            f"{len(set(q) - set(a))} questions lack an answer, {len(set(a) - set(q))} answers "
            "lack a question"
        )
    out = {}
    for qid, item in q.items():
        ans = a[qid]
        try:
            video, question, gold = item["video_name"], item["question"], ans[answer_key]
        except (KeyError, TypeError) as exc:
            raise IPVDataError(
                f"{task} question {qid!r} must hold video_name/question and its answer "
                f"{answer_key}, got {item!r} / {ans!r}"
            ) from exc
        if ans.get("video_name", video) != video:
            raise IPVDataError(f"{task} question {qid!r}: question and answer name other videos")
        out[str(qid)] = QuestionItem(str(video), str(question), str(gold))
    return out


def _labels(root: Path) -> dict[str, VideoLabel]:
    raw = _dict_of(_read_json(root, "video2taxonomy_label.json"), "video2taxonomy_label.json")
    out = {}
    for video, lab in raw.items():
        try:
            doms = tuple(str(d).lower().strip() for d in lab["taxonomy_label_list"])
            out[video] = VideoLabel(doms, str(lab["spatial_temporal_label"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise IPVDataError(
                f"video2taxonomy_label.json: bad entry for {video!r}: {exc}"
            ) from exc
    return out


def load_prompt_suite(path: str | Path) -> list[Prompt]:
    """The text-to-video prompts of ``ipv_txt_prompt_suite.json`` (a file or its folder),
    flattened in file order; each label is checked against the taxonomy."""
    p = Path(path)
    if p.is_dir():
        p = p / PROMPT_SUITE_FILE
    if not p.is_file():
        raise IPVDataError(f"{p} is missing: the prompt suite is {PROMPT_SUITE_FILE}")
    try:
        tree = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise IPVDataError(f"{p} is not valid JSON: {exc}") from exc
    out: list[Prompt] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, list):
            for item in node:
                try:
                    label = str(item["prompt_taxonomy_label"])
                    parse_label(label)
                    out.append(Prompt(int(item["prompt_id"]), label, str(item["prompt_text"])))
                except (KeyError, TypeError, ValueError) as exc:
                    raise IPVDataError(f"{p}: bad prompt under {where!r}: {exc}") from exc
        elif isinstance(node, dict):
            for key, child in node.items():
                walk(child, f"{where} - {key}" if where else key)
        else:
            raise IPVDataError(f"{p}: expected objects and lists under {where!r}")

    walk(tree, "")
    ids = [q.prompt_id for q in out]
    if len(set(ids)) != len(ids):
        raise IPVDataError(f"{p}: prompt ids are not unique")
    return out


def load_ipv_bench(root: str | Path, *, check_videos: bool = False) -> IPVBench:
    """Load the official task files from ``root`` and check them against each other.

    Parameters
    ----------
    root
        The folder with the official layout (see the module docstring).
    check_videos
        Also require every referenced clip to exist (judgement clips in either video folder,
        MCQA and open-ended clips in ``impossible_videos/``), as ``example_read_mmu_task.py``.

    Raises
    ------
    IPVDataError
        Missing folder or file, malformed JSON, ids that do not match, a video without labels,
        a gold answer that is not ``yes``/``no`` or a letter A-E.
    """
    if not isinstance(root, (str, Path)):
        raise TypeError(f"root must be a path, got {type(root).__name__}")
    base = Path(root).expanduser()
    if not base.is_dir():
        raise IPVDataError(
            f"root must be an existing folder with the IPV-Bench files, got {str(root)!r} "
            "(download the Hugging Face dataset showlab/ImpossibleVideos)"
        )
    judgement = _questions(base, "judgement")
    mcqa = _questions(base, "mcqa")
    for qid, it in judgement.items():
        if it.answer.lower().strip() not in ("yes", "no"):
            raise IPVDataError(f"judgement answer {qid!r} must be yes or no, got {it.answer!r}")
    for qid, it in mcqa.items():
        if it.answer.strip().upper() not in ("A", "B", "C", "D", "E"):
            raise IPVDataError(f"mcqa answer {qid!r} must be a letter A-E, got {it.answer!r}")
    oq = _dict_of(_read_json(base, "openqa_question.json"), "openqa_question.json")
    oa = _dict_of(_read_json(base, "openqa_answer.json"), "openqa_answer.json")
    if set(oq) != set(oa):
        raise IPVDataError("openqa_question.json and openqa_answer.json must name the same videos")
    openqa = {}
    for video, question in oq.items():
        ref = oa[video]
        if not isinstance(ref, dict) or "primary_answer" not in ref:
            raise IPVDataError(f"openqa answer for {video!r} must hold primary_answer")
        alts = tuple(str(x) for x in ref.get("alternative_answers", ()))
        openqa[video] = OpenItem(video, str(question), str(ref["primary_answer"]), alts)
    labels = _labels(base)
    for video in [*(i.video_name for i in mcqa.values()), *openqa]:
        if video not in labels:
            raise IPVDataError(f"video {video!r} has no entry in video2taxonomy_label.json")
    prompts = load_prompt_suite(base) if (base / PROMPT_SUITE_FILE).is_file() else []
    bench = IPVBench(base, judgement, mcqa, openqa, labels, prompts)
    if check_videos:
        for it in judgement.values():
            if not bench.video_path(it.video_name).is_file():
                raise IPVDataError(f"judgement video {it.video_name!r} is in neither video folder")
        for video in [*(i.video_name for i in mcqa.values()), *openqa]:
            if not (base / IMPOSSIBLE_DIR / video).is_file():
                raise IPVDataError(f"video {video!r} is missing from {IMPOSSIBLE_DIR}/")
    return bench


def video_path(root: str | Path, video_name: str) -> Path:
    """``root/impossible_videos/<name>`` if it exists, else ``root/real_world_videos/<name>``."""
    base = Path(root)
    cand = base / IMPOSSIBLE_DIR / video_name
    return cand if cand.exists() else base / REAL_DIR / video_name


# ----------------------------------------------------------------------------- video files
def write_gif(clip: Any, path: str | Path, *, fps: float = 8.0) -> Path:
    """Write a clip ``(T, H, W, 3)`` or ``(T, 3, H, W)`` with values in [0, 1] as an animated
    GIF (Pillow). Returns the path."""
    from PIL import Image

    arr = _as_thwc(clip)
    fps = V.positive("fps", fps)
    frames = [Image.fromarray(f) for f in (np.clip(arr, 0, 1) * 255).round().astype(np.uint8)]
    out = Path(path)
    frames[0].save(
        out,
        save_all=True,
        append_images=frames[1:],
        duration=max(1, round(1000 / fps)),
        loop=0,
        optimize=False,
    )
    return out


def read_video(path: str | Path) -> np.ndarray:
    """Frames of a video file as ``(T, H, W, 3)`` float32 in [0, 1].

    GIF through Pillow; any other container through PyAV (``pip install av``).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path must be an existing video file, got {str(path)!r}")
    if p.suffix.lower() == ".gif":
        from PIL import Image, ImageSequence

        with Image.open(p) as im:
            frames = [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(im)]
    else:
        try:
            import av
        except ImportError as exc:
            raise ImportError(
                f"reading {p.suffix} video needs PyAV: pip install av (GIF needs only Pillow)"
            ) from exc
        with av.open(str(p)) as container:
            frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    if not frames:
        raise ValueError(f"{p} holds no frames")
    return np.stack(frames).astype(np.float32) / 255.0


def _as_thwc(clip: Any) -> np.ndarray:
    arr = V.finite_array("clip", clip, ndim=4)
    if arr.shape[-1] != 3 and arr.shape[1] == 3:
        arr = arr.transpose(0, 2, 3, 1)
    if arr.shape[-1] != 3:
        raise ValueError(f"clip must be (T, H, W, 3) or (T, 3, H, W), got shape {arr.shape}")
    return arr
