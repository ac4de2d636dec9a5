"""Text domains for the reproduction: Debian's fortunes categories and the FOLDOC dictionary,
or, where they are not installed (and in the tests), docstrings of standard-library packages,
one package per domain."""

from __future__ import annotations

import gzip
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml25.core.data import DATA_ENV, load_fortunes, load_stdlib_docstrings

FORTUNE_DOMAINS = (
    "art",
    "computers",
    "cookie",
    "definitions",
    "knghtbrd",
    "law",
    "linux",
    "literature",
    "men-women",
    "people",
    "politics",
    "science",
    "songs-poems",
    "wisdom",
    "work",
)
"""The fortunes categories of at least 50 kB (smaller ones are too short to hold out a test
part and train a specialist without it memorising the domain)."""

FOLDOC = Path("/usr/share/dictd/foldoc.dict.dz")
"""Debian's ``dict-foldoc`` (the Free On-line Dictionary of Computing, dictzip = gzip)."""

FALLBACK_PACKAGES = (
    "email",
    "asyncio",
    "xml",
    "http",
    "logging",
    "importlib",
    "urllib",
    "multiprocessing",
)


@dataclass(frozen=True)
class Domains:
    """Named domains, each a list of train entries and a list of held-out entries."""

    names: tuple[str, ...]
    train: tuple[tuple[str, ...], ...]
    test: tuple[tuple[str, ...], ...]
    source: str


def _foldoc_entries(limit: int) -> list[str]:
    if os.environ.get(DATA_ENV, "auto") == "fallback" or not FOLDOC.exists():
        return []
    text = gzip.open(FOLDOC).read().decode("utf-8", errors="replace")
    entries = []
    for block in re.split(r"\n(?=\S)", text):
        lines = [ln.strip() for ln in block.strip().splitlines() if ln.strip()]
        if len(lines) >= 2 and not lines[0].startswith("00database"):
            entries.append(lines[0] + "\n" + " ".join(lines[1:]))
    rng = np.random.default_rng(12345)
    keep = rng.permutation(len(entries))[:limit]
    return [entries[i] for i in sorted(keep)]


def load_domains(max_domains: int | None = None, test_fraction: float = 0.15) -> Domains:
    """The reproduction's domains, split once (fixed seed, independent of the run's seed) into
    train and held-out entries."""
    try:
        texts, labels = load_fortunes(FORTUNE_DOMAINS)
        names = list(FORTUNE_DOMAINS)
        per = [[t for t, lab in zip(texts, labels, strict=True) if lab == i] for i in range(15)]
        foldoc = _foldoc_entries(1500)
        if foldoc:
            names.append("foldoc")
            per.append(foldoc)
        source = f"Debian fortunes ({len(FORTUNE_DOMAINS)} categories)" + (
            " + FOLDOC dictionary (1,500 entries)" if foldoc else ""
        )
    except FileNotFoundError:
        texts, labels = load_stdlib_docstrings(FALLBACK_PACKAGES)
        names = list(FALLBACK_PACKAGES)
        per = [[t for t, lab in zip(texts, labels, strict=True) if lab == i] for i in range(8)]
        source = "stdlib docstrings, one package per domain (fortunes not installed)"
    if max_domains is not None:
        names, per = names[:max_domains], per[:max_domains]
    rng = np.random.default_rng(2025)
    train, test = [], []
    for raw in per:
        entries = list(dict.fromkeys(raw))  # duplicates would leak into the held-out part
        order = rng.permutation(len(entries))
        n_test = max(2, round(test_fraction * len(entries)))
        test.append(tuple(entries[i] for i in order[:n_test]))
        train.append(tuple(entries[i] for i in order[n_test:]))
    return Domains(tuple(names), tuple(train), tuple(test), source)
