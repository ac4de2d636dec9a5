"""Text domains for the reproduction: ten kinds of text that ship offline and differ a lot.

- ``python``: Python standard-library source (top-level functions and classes as written,
  comments kept, docstrings removed), from the running interpreter's ``stdlib`` folder;
- ``docstrings``: the docstrings of the same modules;
- ``fortunes``: English fortune cookies (Debian ``fortunes``, 15 categories pooled);
- ``foldoc``: the Free On-line Dictionary of Computing (Debian ``dict-foldoc``);
- ``manpages``: section-3 manual pages in their groff source (Debian ``manpages-dev``);
- ``german``, ``spanish``, ``italian``, ``polish``, ``russian``: fortune cookies in those
  languages (Debian ``fortunes-de``, ``-es``, ``-it``, ``-pl``, ``-ru``; UTF-8).

Each domain is cut into entries (a fortune, a dictionary entry, a manual-page section, a
function's source of at most ~1.5 kB) and split once, with a fixed seed independent of the
run's seed, into **train**, **validation** and **test** entries. Training streams read only
train entries; learning rates are chosen on validation windows; claims read test windows.

Where a Debian part is missing (and in the tests, ``ICML25_DATA=fallback``) the fallback is
eight domains from the standard library alone: the code and the docstrings of four packages.
"""

from __future__ import annotations

import ast
import gzip
import os
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml25.core.data import DATA_ENV, load_fortunes
from icml25.core.data.loaders import FORTUNES_DIR

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
"""English fortunes categories pooled into the ``fortunes`` domain."""

LANGUAGES = {
    "german": "de",
    "spanish": "es",
    "italian": "it",
    "polish": "pl",
    "russian": "ru",
}
"""Domain name -> sub-folder of the fortunes directory (Debian ``fortunes-<code>``)."""

DOMAINS = (
    "python",
    "docstrings",
    "fortunes",
    "foldoc",
    "manpages",
    *LANGUAGES,
)

FOLDOC = Path("/usr/share/dictd/foldoc.dict.dz")
"""Debian's ``dict-foldoc`` (the Free On-line Dictionary of Computing, dictzip = gzip)."""

MAN3 = Path("/usr/share/man/man3")
"""Section 3 of the manual (C library functions), Debian ``manpages-dev``."""

FALLBACK_PACKAGES = ("email", "asyncio", "xml", "logging")
"""Stdlib packages whose code and docstrings make the fallback's eight domains."""

DOMAIN_BYTES = 700_000
"""At most this many bytes of entries are kept per domain (before the split)."""
CHUNK = 1500
"""Longer entries (code, manual sections) are cut at line ends into pieces of about this
many bytes."""


@dataclass(frozen=True)
class Domains:
    """Named domains, each a tuple of train, validation and test entries."""

    names: tuple[str, ...]
    train: tuple[tuple[str, ...], ...]
    val: tuple[tuple[str, ...], ...]
    test: tuple[tuple[str, ...], ...]
    source: str


def _chunks(text: str, size: int = CHUNK) -> list[str]:
    """``text`` cut at line ends into pieces of at most about ``size`` bytes."""
    out: list[str] = []
    cur: list[str] = []
    n = 0
    for line in text.splitlines():
        if cur and n + len(line) > size:
            out.append("\n".join(cur))
            cur, n = [], 0
        cur.append(line)
        n += len(line) + 1
    if cur:
        out.append("\n".join(cur))
    return [c for c in out if c.strip()]


def _cap(entries: list[str], limit: int = DOMAIN_BYTES) -> list[str]:
    """The first entries (in a fixed shuffled order) whose total size stays under ``limit``."""
    entries = list(dict.fromkeys(e for e in entries if e.strip()))  # no duplicates to leak
    order = np.random.default_rng(12345).permutation(len(entries))
    kept, total = [], 0
    for i in order:
        size = len(entries[i].encode("utf-8"))
        if total + size > limit:
            break
        kept.append(entries[i])
        total += size
    return kept


def _docstring_lines(tree: ast.AST) -> set[int]:
    """Line numbers (1-based) of every docstring in ``tree``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                lines.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return lines


def _python_files(packages: tuple[str, ...] | None) -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    if packages is None:
        return sorted(p for p in root.glob("*.py") if not p.name.startswith("_"))
    files: list[Path] = []
    for pkg in packages:
        files += sorted(p for p in (root / pkg).rglob("*.py") if "test" not in p.parts)
    return files


def python_code_and_docstrings(
    packages: tuple[str, ...] | None = None, limit: int = DOMAIN_BYTES
) -> tuple[list[str], list[str]]:
    """Code (top-level definitions without docstrings) and docstrings of standard-library
    modules: the top-level modules, or the given packages."""
    code: list[str] = []
    docs: list[str] = []
    code_bytes = doc_bytes = 0
    for path in _python_files(packages):
        if code_bytes > 2 * limit and doc_bytes > 2 * limit:
            break
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc.split()) >= 3:
                    docs.append(doc)
                    doc_bytes += len(doc)
        skip = _docstring_lines(tree)
        lines = source.splitlines()
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                span = range(first, (node.end_lineno or node.lineno) + 1)
                text = "\n".join(lines[i - 1] for i in span if i not in skip)
                for piece in _chunks(text):
                    code.append(piece)
                    code_bytes += len(piece)
    return code, docs


def _foldoc_entries() -> list[str]:
    text = gzip.open(FOLDOC).read().decode("utf-8", errors="replace")
    entries = []
    for block in re.split(r"\n(?=\S)", text):
        lines = [ln.strip() for ln in block.strip().splitlines() if ln.strip()]
        if len(lines) >= 2 and not lines[0].startswith("00database"):
            entries.append(lines[0] + "\n" + " ".join(lines[1:]))
    return entries


def _man_entries(limit: int = DOMAIN_BYTES) -> list[str]:
    folder = MAN3
    files = sorted(folder.glob("*.3*.gz"))
    if not files:
        raise FileNotFoundError(f"no manual pages in {folder} (apt-get install manpages-dev)")
    rng = np.random.default_rng(54321)
    entries: list[str] = []
    total = 0
    for i in rng.permutation(len(files)):
        raw = gzip.open(files[i]).read().decode("utf-8", errors="replace")
        if raw.startswith(".so "):  # a link to another page
            continue
        lines = [ln for ln in raw.splitlines() if not ln.startswith(('.\\"', "'\\\""))]
        for section in re.split(r"\n(?=\.SH )", "\n".join(lines)):
            for piece in _chunks(section):
                entries.append(piece)
                total += len(piece)
        if total > 2 * limit:
            break
    return entries


def _language_entries(root: Path, code: str) -> list[str]:
    folder = root / code
    if not folder.is_dir():
        raise FileNotFoundError(
            f"fortunes in {code!r} not found in {folder} (apt-get install fortunes-{code})"
        )
    entries: list[str] = []
    for path in sorted(folder.iterdir()):
        if not path.is_file() or path.suffix in (".dat", ".u8"):
            continue
        raw = path.read_text(encoding="utf-8", errors="replace")
        entries += [e.strip() for e in raw.split("\n%\n") if e.strip().strip("%").strip()]
    return entries


def _debian_domains() -> tuple[list[str], list[list[str]], str]:
    if os.environ.get(DATA_ENV, "auto") == "fallback":
        raise FileNotFoundError(f"hidden by {DATA_ENV}=fallback")
    root = Path(os.environ.get("ICML25_FORTUNES_DIR") or FORTUNES_DIR)
    code, docs = python_code_and_docstrings()
    texts, _ = load_fortunes(FORTUNE_DOMAINS)
    if not FOLDOC.exists():
        raise FileNotFoundError(f"{FOLDOC} not found (apt-get install dict-foldoc)")
    per = [code, docs, texts, _foldoc_entries(), _man_entries()]
    per += [_language_entries(root, c) for c in LANGUAGES.values()]
    source = (
        "Python stdlib code and docstrings, Debian fortunes (English, 15 categories), FOLDOC, "
        "section-3 manual pages (groff), fortunes in German, Spanish, Italian, Polish, Russian"
    )
    return list(DOMAINS), per, source


def _fallback_domains() -> tuple[list[str], list[list[str]], str]:
    names: list[str] = []
    per: list[list[str]] = []
    for pkg in FALLBACK_PACKAGES:
        code, docs = python_code_and_docstrings((pkg,), limit=DOMAIN_BYTES // 4)
        names += [f"{pkg}-code", f"{pkg}-docstrings"]
        per += [code, docs]
    source = "stdlib code and docstrings of 4 packages (Debian text not installed)"
    return names, per, source


def load_domains(
    max_domains: int | None = None, *, val_fraction: float = 0.1, test_fraction: float = 0.1
) -> Domains:
    """The reproduction's domains, each split once (fixed seed, independent of the run's seed)
    into train, validation and test entries."""
    try:
        names, per, source = _debian_domains()
    except FileNotFoundError:
        names, per, source = _fallback_domains()
    if max_domains is not None:
        names, per = names[:max_domains], per[:max_domains]
    rng = np.random.default_rng(2025)
    train, val, test = [], [], []
    for raw in per:
        entries = _cap(raw)
        order = rng.permutation(len(entries))
        n_test = max(2, round(test_fraction * len(entries)))
        n_val = max(2, round(val_fraction * len(entries)))
        test.append(tuple(entries[i] for i in order[:n_test]))
        val.append(tuple(entries[i] for i in order[n_test : n_test + n_val]))
        train.append(tuple(entries[i] for i in order[n_test + n_val :]))
    return Domains(tuple(names), tuple(train), tuple(val), tuple(test), source)
