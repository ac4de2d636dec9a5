"""Open-ended answer judges and the text-to-video IPV Score.

The released open-ended scorer asks GPT-4o, once per video, to compare a prediction with the
reference answer and return JSON ``{"justification": ..., "semantic_alignment_score": ...}``
on a rubric (1.0 perfect; 0.8-0.9 good; 0.5-0.7 partial; 0.1-0.4 weak; 0 none; length
normalised). :func:`parse_judge_reply` reads a reply by the released rule: the word ``json``
and code fences are deleted, the rest is JSON-decoded; a score string longer than four
characters containing ``-`` is a range and becomes its midpoint; a reply that does not decode
gives ``None`` (scored 0 by :func:`~icml25.ipv_bench.tasks.openqa_scores`).

The released script fills in only the primary answer and the prediction; the three alternative
answers stay as literal placeholders. :func:`judge_prompt` reproduces that (``variant=
"released"``) or fills them in (``variant="all_answers"``, a different judge). The rubric text
here is our own wording of the released rubric (the repository has no licence), with the same
score bands, output format and four worked examples (the same four cases, scored 1.0, 0.9, 0.7
and 0.5, in our words); pass ``template=`` to use another text.

The released script calls GPT-4o without a token limit, so a reply is never cut. A cut reply
does not decode and scores 0. :class:`LLMJudge` therefore asks for up to 1,024 new tokens and
asks again, with twice the budget, for every reply that is cut (an unclosed JSON object), up to
``max_retries`` times; it counts the replies that were cut (``truncated_``) and those still cut
at the last budget (``cut_off_``).

Judges: :class:`LLMJudge` (any :class:`icml25.core.llm.LanguageModel`, e.g. a served GPT-4o
through ``OpenAICompatibleLM`` or the embedded SmolLM2) and :class:`CategoryJudge`, a
deterministic judge for benchmarks whose references name a known violation type.

References
----------
Bai, Ci & Shou, "Impossible Videos", ICML 2025, arXiv:2503.14378.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from icml25.core import validate as V

JUDGE_RUBRIC = """You judge how well a model's answer about a video matches the reference \
answer, by meaning rather than wording.

Input: the reference answers (a primary answer and alternative answers) and the model's \
prediction.

Ask: does the prediction capture the core impossible or counterintuitive phenomenon? Is it \
consistent in meaning with the references, accurate and relevant? Do not reward or penalise \
length: judge only whether the core meaning is captured.

Justify the score briefly (key matches and mismatches, irrelevant or wrong content), then give \
a semantic alignment score between 0 and 1:
- 1.0: perfect alignment;
- 0.8-0.9: good alignment, main idea captured with minor differences;
- 0.5-0.7: partial alignment, some aspects captured, important details missing or unrelated \
content added;
- 0.1-0.4: weak alignment, somewhat relevant but largely incorrect or incomplete;
- 0.0: no alignment.

First write the justification, then the score. Answer only with JSON:
{"justification": "...", "semantic_alignment_score": "a score between 0 and 1"}

Worked examples:

1. Reference: a car drives off a cliff and rises upward instead of falling, against gravity \
(alternatives say the same in other words). Prediction: "Instead of dropping, the car goes up \
into the air, which breaks gravity."
{"justification": "Same core phenomenon (the car rises instead of falling); accurate and \
natural.", "semantic_alignment_score": 1.0}

2. Reference: a rock rolls up a slope instead of down, against gravity. Prediction: "The rock \
goes up the slope, breaking gravity."
{"justification": "Main idea captured; it leaves out the contrast with rolling down.", \
"semantic_alignment_score": 0.9}

3. Reference: a ball bounces higher after every bounce, against the laws of physics (it should \
lose energy). Prediction: "The ball keeps bouncing higher, which is odd."
{"justification": "Part of the phenomenon (higher bounces); it does not say that this gains \
height each time or breaks physics.", "semantic_alignment_score": 0.7}

4. Reference: the sun sets in the east and rises in the west, the reverse of the natural \
order. Prediction: "The sun comes up in the west."
{"justification": "Half of the phenomenon (rising in the west); the reversed setting is \
missing.", "semantic_alignment_score": 0.5}

Output the JSON only, with no other words.

Input:
"""

_INPUT = """Primary Answer: {primary}
- Alternative Answers:
     - {alt1}
     - {alt2}
     - {alt3}

Model's Prediction: {prediction}
"""
_PLACEHOLDERS = ("[alternative_answer_1]", "[alternative_answer_2]", "[alternative_answer_3]")
VARIANTS: tuple[str, ...] = ("released", "all_answers")


def judge_prompt(
    *,
    primary: str,
    prediction: str,
    alternatives: Sequence[str] = (),
    variant: str = "released",
    template: str = JUDGE_RUBRIC,
) -> str:
    """The judge's prompt for one video.

    ``variant="released"`` leaves the alternative-answer slots as literal placeholders (what
    the released script sends); ``"all_answers"`` fills in the three ``alternatives``.
    """
    V.choice("variant", variant, VARIANTS)
    for name, text in (("primary", primary), ("prediction", prediction)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    if not isinstance(template, str):
        raise TypeError(f"template must be a str, got {type(template).__name__}")
    if variant == "all_answers":
        if isinstance(alternatives, str) or len(alternatives) != 3:
            raise ValueError(
                f"alternatives must be 3 strings for variant='all_answers', got {alternatives!r}"
            )
        alts = tuple(str(a) for a in alternatives)
    else:
        alts = _PLACEHOLDERS
    body = _INPUT.format(
        primary=primary, alt1=alts[0], alt2=alts[1], alt3=alts[2], prediction=prediction
    )
    return template + body


def parse_judge_reply(reply: object) -> float | None:
    """The score in a judge reply, by the released rule (``None`` if it does not decode).

    ``"0.5-0.7"`` (a range, more than four characters with ``-``) gives the midpoint 0.6.
    """
    text = str(reply).replace("json", "").replace("```", "")
    try:
        data = json.loads(text)
        raw = str(data["semantic_alignment_score"]).strip()
        if len(raw) > 4 and "-" in raw:
            lo, hi = raw.split("-")[:2]
            score = (float(lo) + float(hi)) / 2.0
        else:
            score = float(raw)
    except (ValueError, TypeError, KeyError, IndexError):
        return None
    if not math.isfinite(score):
        return None
    return score


def looks_cut(reply: object) -> bool:
    """Whether a judge reply that does not decode was cut short: a JSON object is opened and
    not closed (after deleting ``json`` and code fences, as the released scorer does)."""
    if parse_judge_reply(reply) is not None:
        return False
    text = str(reply).replace("json", "").replace("```", "")
    return text.count("{") > text.count("}")


class LLMJudge:
    """Scores open-ended answers with a language model (one prompt per video).

    Parameters
    ----------
    lm
        Anything with ``generate(prompts, max_new_tokens, chat=True) -> list[str]``
        (:class:`icml25.core.llm.HFLanguageModel`, :class:`~icml25.core.llm.OpenAICompatibleLM`).
    variant
        ``"released"`` (primary answer only) or ``"all_answers"``.
    max_new_tokens
        First budget for each reply (1,024, the released inference scripts' budget; the
        released judge sets none).
    max_retries
        How many times a cut reply (:func:`looks_cut`) is asked for again, each time with
        twice the budget (greedy decoding continues the same reply).

    Attributes
    ----------
    truncated_ : list of str
        Videos whose reply was cut at the first budget (in the last :meth:`replies` call).
    cut_off_ : list of str
        Videos whose reply was still cut at the last budget (they score 0, as an undecodable
        reply does in the released scorer).
    """

    def __init__(
        self,
        lm: Any,
        *,
        variant: str = "released",
        max_new_tokens: int = 1024,
        max_retries: int = 2,
    ) -> None:
        if not callable(getattr(lm, "generate", None)):
            raise TypeError(
                f"lm must have a generate(prompts, ...) method, got {type(lm).__name__}"
            )
        self.lm = lm
        self.variant = V.choice("variant", variant, VARIANTS)
        self.max_new_tokens = V.integer("max_new_tokens", max_new_tokens, low=1)
        self.max_retries = V.integer("max_retries", max_retries, low=0)
        self.truncated_: list[str] = []
        self.cut_off_: list[str] = []

    def replies(
        self, predictions: Mapping[str, str], references: Mapping[str, Mapping[str, Any]]
    ) -> dict[str, str]:
        """Raw judge replies by video (``references[v]`` holds ``primary_answer`` and
        ``alternative_answers``, as in ``openqa_answer.json``)."""
        keys = _check_refs(predictions, references)
        prompts = [
            judge_prompt(
                primary=str(references[k]["primary_answer"]),
                alternatives=tuple(references[k].get("alternative_answers", ())),
                prediction=str(predictions[k]),
                variant=self.variant,
            )
            for k in keys
        ]
        out = list(self.lm.generate(prompts, self.max_new_tokens, chat=True))
        if len(out) != len(prompts):
            raise ValueError(f"lm.generate returned {len(out)} replies for {len(prompts)} prompts")
        cut = [i for i, reply in enumerate(out) if looks_cut(reply)]
        self.truncated_ = [keys[i] for i in cut]
        budget = self.max_new_tokens
        for _ in range(self.max_retries):
            if not cut:
                break
            budget *= 2
            again = self.lm.generate([prompts[i] for i in cut], budget, chat=True)
            for i, reply in zip(cut, again, strict=True):
                out[i] = reply
            cut = [i for i in cut if looks_cut(out[i])]
        self.cut_off_ = [keys[i] for i in cut]
        return dict(zip(keys, out, strict=True))

    def score(
        self, predictions: Mapping[str, str], references: Mapping[str, Mapping[str, Any]]
    ) -> dict[str, float | None]:
        """Scores in [0, 1] by video (``None`` for an undecodable reply; clipped to [0, 1])."""
        out: dict[str, float | None] = {}
        for k, reply in self.replies(predictions, references).items():
            s = parse_judge_reply(reply)
            out[k] = None if s is None else min(1.0, max(0.0, s))
        return out


def _check_refs(
    predictions: Mapping[str, str], references: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    if not isinstance(predictions, Mapping) or not isinstance(references, Mapping):
        raise TypeError("predictions and references must be mappings keyed by video name")
    missing = [k for k in predictions if k not in references]
    if missing:
        raise ValueError(f"references has no entry for {len(missing)} videos, e.g. {missing[0]!r}")
    for k in predictions:
        if "primary_answer" not in references[k]:
            raise ValueError(f"references[{k!r}] must hold 'primary_answer'")
    return list(predictions)


class CategoryJudge:
    """A deterministic judge for references that name one violation type of a known set.

    ``keywords`` maps each violation type to phrases that identify it. A prediction scores
    1.0 if it mentions phrases of the reference's type only, 0.5 if it mentions the reference's
    type and others, and 0.0 otherwise (the rubric's perfect / partial / none).
    """

    def __init__(self, keywords: Mapping[str, Sequence[str]]) -> None:
        if not isinstance(keywords, Mapping) or not keywords:
            raise ValueError("keywords must be a non-empty mapping type -> phrases")
        self.keywords: dict[str, tuple[str, ...]] = {}
        for t, phrases in keywords.items():
            if isinstance(phrases, str) or not phrases:
                raise ValueError(f"keywords[{t!r}] must be a non-empty list of phrases")
            self.keywords[t] = tuple(str(p).lower() for p in phrases)

    def types_in(self, text: str) -> set[str]:
        """The violation types whose phrases occur in ``text``."""
        low = str(text).lower()
        return {t for t, ps in self.keywords.items() if any(p in low for p in ps)}

    def score(
        self, predictions: Mapping[str, str], reference_types: Mapping[str, str]
    ) -> dict[str, float]:
        """Scores in {0, 0.5, 1} by video; ``reference_types[v]`` is a key of ``keywords``."""
        if not isinstance(predictions, Mapping) or not isinstance(reference_types, Mapping):
            raise TypeError("predictions and reference_types must be mappings keyed by video")
        out = {}
        for k, pred in predictions.items():
            if k not in reference_types:
                raise ValueError(f"reference_types has no entry for {k!r}")
            ref = reference_types[k]
            if ref not in self.keywords:
                raise ValueError(
                    f"reference_types[{k!r}] must be one of {sorted(self.keywords)}, got {ref!r}"
                )
            found = self.types_in(pred)
            out[k] = 1.0 if found == {ref} else (0.5 if ref in found else 0.0)
        return out


def ipv_score(*, high_quality: Sequence[bool], prompt_following: Sequence[bool]) -> float:
    """The text-to-video IPV Score: percent of generated videos that are both of high visual
    quality and follow the (impossible) prompt, from per-video human annotations."""
    q, f = list(high_quality), list(prompt_following)
    if not q or len(q) != len(f):
        raise ValueError(
            "high_quality and prompt_following must be non-empty and of equal length, "
            f"got {len(q)} and {len(f)}"
        )
    for name, xs in (("high_quality", q), ("prompt_following", f)):
        if not all(isinstance(x, bool) for x in xs):
            raise TypeError(f"{name} must hold booleans")
    return 100.0 * sum(a and b for a, b in zip(q, f, strict=False)) / len(q)
