"""Pilot for MAPLE's reproduction (issue 50): which prompt format and which label names make
SmolLM2-135M-Instruct learn the fortunes-topic task in context.

Run once, on pilot seed 1000, before the claims' runs (the published full run's first seed is
also 1000, so that seed is not independent of this choice: docs/confirmatory.md); its output
chose the reproduction's configuration and is quoted in maple/NOTES.md. For every
prompt format x label set it measures zero-shot and few-shot accuracy (8 labeled demos drawn
uniformly from a class-balanced pool, 64 class-balanced queries), and the margin few - zero,
which is the claims' gate:

* formats: ``chat`` (the whole prompt as one user turn, the package's old format), ``plain``
  (no chat template: completion after ``Category:``), ``turns`` (a multi-turn chat: the
  instruction as the system turn, each demo a user turn answered by an assistant turn);
* label sets: the topic names (``computers, politics, food, love``: guessable zero-shot), and
  two sets the model cannot guess zero-shot: colour words and nonsense words, mapped to the
  topics in a fixed arbitrary order.

``--probe`` asks a narrower question on the same seed: with 16 class-balanced demos, does the
model answer a query that *is* one of its demos with that demo's label (renamed labels; the
query copied verbatim, or only its second half)? It reports raw accuracy and accuracy after
subtracting each label's mean log-probability over the queries (a label-bias correction).

Run: ``ICML25_CACHE=... python benchmarks/maple_pilot.py [--probe]`` (about 5-10
CPU-minutes; the probe about 1).
"""

from __future__ import annotations

import time

import numpy as np

from icml25.core.data import load_fortunes
from icml25.core.llm import HFLanguageModel, load_causal_lm
from icml25.maple import LabelScorer, MultiTurnLM, Template

PILOT_SEED = 1000
TOPICS = ("computers", "politics", "food", "love")
LABEL_SETS = {
    "names": TOPICS,
    "colours": ("green", "red", "blue", "yellow"),
    "nonsense": ("dax", "wug", "fep", "lorp"),
}
N_LABELED, TEST_PER_CLASS, POOL_PER_CLASS, MAX_WORDS = 8, 16, 24, 16


def data() -> tuple[list[str], np.ndarray]:
    texts, y = load_fortunes(TOPICS)
    clean = [" ".join(t.split()) for t in texts]
    keep = [i for i, t in enumerate(clean) if 3 <= len(t.split()) <= MAX_WORDS]
    return [clean[i] for i in keep], y[keep]


def main() -> None:
    texts, y = data()
    rng = np.random.default_rng(PILOT_SEED)
    test, pool = [], []
    for c in range(len(TOPICS)):
        idx = rng.permutation(np.flatnonzero(y == c))
        test += list(idx[:TEST_PER_CLASS])
        pool += list(idx[TEST_PER_CLASS : TEST_PER_CLASS + POOL_PER_CLASS])
    test = list(rng.permutation(test))
    pool = list(rng.permutation(pool))
    lab = [pool[i] for i in rng.choice(len(pool), N_LABELED, replace=False)]
    model, tok = load_causal_lm(quiet=True)
    lms = {
        "chat": (HFLanguageModel(model, tok), True),
        "plain": (HFLanguageModel(model, tok), False),
        "turns": (MultiTurnLM(model, tok), True),
    }
    tpl = Template()
    print(
        f"pilot seed {PILOT_SEED}: {len(test)} queries, {N_LABELED} labeled demos "
        f"(classes {np.bincount(y[lab], minlength=4).tolist()})"
    )
    print("| format | labels | zero-shot | few-shot | few - zero | s/prompt |")
    print("|---|---|---|---|---|---|")
    for fmt, (lm, chat) in lms.items():
        for name, labels in LABEL_SETS.items():
            try:
                scorer = LabelScorer(lm, labels, chat=chat, batch_size=8)
            except ValueError as exc:
                print(f"| {fmt} | {name} | skipped: {exc} |")
                continue
            gold = np.array([labels[y[i]] for i in test])
            demos = [(texts[i], labels[y[i]]) for i in lab]
            acc = {}
            t0 = time.process_time()
            for k, shots in (("zero", []), ("few", demos)):
                prompts = [tpl.prompt(shots, texts[i], labels) for i in test]
                acc[k] = float(np.mean(np.array(scorer(prompts)) == gold))
            per = (time.process_time() - t0) / (2 * len(test))
            print(
                f"| {fmt} | {name} | {acc['zero']:.3f} | {acc['few']:.3f} | "
                f"{acc['few'] - acc['zero']:+.3f} | {per:.3f} |",
                flush=True,
            )


def probe() -> None:
    texts, y = data()
    rng = np.random.default_rng(PILOT_SEED)
    demo: list[int] = []
    for c in range(len(TOPICS)):
        demo += list(rng.permutation(np.flatnonzero(y == c))[:4])
    demo = list(rng.permutation(demo))
    labels = LABEL_SETS["colours"]
    gold = np.array([y[i] for i in demo])
    demos = [(texts[i], labels[y[i]]) for i in demo]
    queries = {
        "verbatim": [texts[i] for i in demo],
        "second half": [" ".join(texts[i].split()[len(texts[i].split()) // 2 :]) for i in demo],
    }
    model, tok = load_causal_lm(quiet=True)
    tpl = Template()
    print(f"probe, seed {PILOT_SEED}: 16 balanced demos, colour labels, queries = the demos")
    print("| format | query | accuracy | bias-corrected accuracy | answers per label |")
    print("|---|---|---|---|---|")
    for fmt, lm, chat in (
        ("turns", MultiTurnLM(model, tok), True),
        ("plain", HFLanguageModel(model, tok), False),
    ):
        scorer = LabelScorer(lm, labels, chat=chat, batch_size=8)
        for name, qs in queries.items():
            lp = scorer.log_probs([tpl.prompt(demos, q, labels) for q in qs])
            raw = float(np.mean(lp.argmax(1) == gold))
            cen = float(np.mean((lp - lp.mean(0)).argmax(1) == gold))
            counts = np.bincount(lp.argmax(1), minlength=len(labels)).tolist()
            print(f"| {fmt} | {name} | {raw:.3f} | {cen:.3f} | {counts} |", flush=True)


if __name__ == "__main__":
    import sys

    probe() if "--probe" in sys.argv[1:] else main()
