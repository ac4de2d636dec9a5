"""The shape of ``results.json`` checked field by field (:func:`check_results`): what the
reports, ``collect`` and ``publish`` index, with its type, so that a damaged or foreign file is
refused with the path, the place and what was found, never a deep ``KeyError``. The schema
itself is written out in :mod:`icml25.core.results`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from icml25.core.claims import KINDS, VERDICTS, Interval, Measurement

SCHEMA = 2
READABLE_SCHEMAS = (1, 2)


def check_results(results: Any, path: Path | str) -> None:
    """Raise ``ValueError`` (``<path>: <where>: <what>``) unless ``results`` has the shape the
    reports, ``collect`` and ``publish`` read (the schema in this module's docstring): every key
    they index, with its type, and every optional part (null arm, contrast, gate, sensitivity,
    published verdicts, sources) well formed where present. Keys added after schema 1 are
    optional (their renderers read them with defaults)."""
    known = " or ".join(map(str, READABLE_SCHEMAS))
    foreign = f"{path}: is not an icml25 results file (schema {known})"
    if not isinstance(results, dict):
        raise ValueError(f"{foreign}: it holds a JSON {_json_kind(results)}, not an object")
    for key in ("schema", "methods"):
        if key not in results:
            raise ValueError(f"{foreign}: it has no {key!r}")
    if results["schema"] not in READABLE_SCHEMAS:
        raise ValueError(f"{foreign}: its schema is {_short(results['schema'])}")
    try:
        _RESULTS(results, "")
    except _Bad as bad:
        raise ValueError(f"{path}: {bad}") from None


class _Bad(ValueError):
    """What is wrong where, inside a results file (:func:`check_results`)."""

    def __init__(self, label: str, what: str, value: Any = ...) -> None:
        got = "" if value is ... else f", got {_short(value)}"
        super().__init__(f"{label or 'the file'} {what}{got}")


_Check = Callable[[Any, str], None]


def _is(kinds: tuple[type, ...], what: str) -> _Check:
    def check(value: Any, label: str) -> None:
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise _Bad(label, f"must be {what}", value)

    return check


def _opt(check: _Check) -> _Check:
    return lambda value, label: None if value is None else check(value, label)


def _list(check: _Check, what: str, named: str | None = None) -> _Check:
    """A list whose items pass ``check``; an item is labelled with its ``named`` key."""

    def each(value: Any, label: str) -> None:
        _is((list,), f"a list of {what}")(value, label)
        for i, item in enumerate(value):
            name = item.get(named) if named and isinstance(item, dict) else None
            check(item, f"{label}[{i}]" + (f" ({name})" if isinstance(name, str) else ""))

    return each


def _obj(fields: dict[str, _Check]) -> _Check:
    """An object with ``fields`` (a key ending in ``?`` may be absent)."""

    def check(value: Any, label: str) -> None:
        _is((dict,), "an object")(value, label)
        for key, field_check in fields.items():
            name = key.rstrip("?")
            if name not in value:
                if key.endswith("?"):
                    continue
                raise _Bad(label, f"has no {name!r}")
            field_check(value[name], f"{label}.{name}" if label else name)

    return check


def _one_of(values: tuple[str, ...]) -> _Check:
    def check(value: Any, label: str) -> None:
        if value not in values:
            raise _Bad(label, f"must be one of {', '.join(values)}", value)

    return check


def _from_json(parse: Callable[[Any], Any], what: str) -> _Check:
    def check(value: Any, label: str) -> None:
        _is((dict,), "an object")(value, label)
        try:
            parse(value)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            why = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
            raise _Bad(label, f"is not {what} ({why})", value) from None

    return check


def _interval(data: Any) -> Interval:
    if not isinstance(data["method"], str):
        raise TypeError("its method must be a string")
    return Interval.from_json(data)


_STR, _NUM = _is((str,), "a string"), _is((int, float), "a number")
_BOOL, _INT = _is((bool,), "true or false"), _is((int,), "an integer")
_VERDICT = _one_of((*VERDICTS, "error"))
_MEASURED = _opt(_from_json(Measurement.from_json, "a measurement (values: a list of numbers)"))
_INTERVAL = _opt(_from_json(_interval, "an interval (low, high, level, method)"))
_ARM = _obj({"arm": _STR, "measured?": _MEASURED, "interval?": _INTERVAL, "verdict?": _opt(_STR)})


def _null(value: Any, label: str) -> None:
    if isinstance(value, dict) and "exempt" in value:
        _obj({"exempt": _STR})(value, label)
    else:
        _ARM(value, label)


_CLAIM = _obj(
    {
        "id": _STR,
        "kind?": _one_of(KINDS),
        "statement": _STR,
        "where": _STR,
        "metric": _STR,
        "paper_value": lambda _value, _label: None,  # a number, a text or null
        "measured": _MEASURED,
        "interval?": _INTERVAL,
        "rule": _STR,
        "rule_verdict?": _opt(_STR),
        "verdict": _VERDICT,
        "reason?": _opt(_STR),
        "null?": _opt(_null),
        "contrast?": _obj(
            {
                "mean": _is((int, float, str), "a number"),
                "values?": _list(_is((int, float, str), "a number"), "numbers"),
                "interval?": _INTERVAL,
                "verdict": _STR,
                "why?": _opt(_STR),
            }
        ),
        "sensitivity?": _ARM,
        "gate?": _obj(
            {
                "check": _STR,
                "rule?": _opt(_STR),
                "measured?": _MEASURED,
                "interval?": _INTERVAL,
                "passed?": _opt(_BOOL),
            }
        ),
        "published?": _obj(
            {
                "verdict": _VERDICT,
                "measured?": _MEASURED,
                "interval?": _INTERVAL,
                "disagrees?": _BOOL,
            }
        ),
    }
)


def _figure(value: Any, label: str) -> None:
    _STR(value, label)
    if Path(value).is_absolute() or ".." in Path(value).parts or not value:
        raise _Bad(label, "must be a path inside the run folder", value)


_METHOD = _obj(
    {
        "method": _STR,
        "paper": _obj({"title": _STR, "authors": _STR, "venue": _STR, "url": _STR}),
        "budget": _STR,
        "seeds": _list(_INT, "integers"),
        "requested_seeds?": _list(_INT, "integers"),
        "device?": _STR,
        "wall_s": _NUM,
        "cpu_s?": _NUM,
        "claims": _list(_CLAIM, "claims", named="id"),
        "figures?": _list(_figure, "paths"),
        "notes?": _list(_STR, "strings"),
        "error?": _opt(_STR),
    }
)
_RESULTS = _obj(
    {
        "created": _STR,
        "command": _STR,
        "environment": _obj(
            {
                "python": _STR,
                "platform": _STR,
                "cpu?": _STR,
                "cores?": _opt(_INT),
                "packages": _is((dict,), "an object"),
                "git_commit?": _opt(_STR),
                "device?": _STR,
            }
        ),
        "methods": _list(_METHOD, "method entries", named="method"),
        "sources?": _list(
            _obj(
                {
                    "method": _STR,
                    "source": _STR,
                    "command": _opt(_STR),
                    "commit": _opt(_STR),
                    "schema": _INT,
                    "texts_from_code?": _INT,
                }
            ),
            "sources",
            named="method",
        ),
        "published_from?": _obj({"source": _STR, "created?": _opt(_STR), "tally": _STR}),
        "published?": _obj(
            {
                "previous": _obj({"command": _STR, "created?": _opt(_STR), "tally": _STR}),
                "moved": _list(
                    _obj(
                        {
                            "method": _STR,
                            "id": _STR,
                            "kind": _STR,
                            "old": _STR,
                            "new": _STR,
                            "why": _STR,
                        }
                    ),
                    "moved verdicts",
                ),
            }
        ),
    }
)


def _json_kind(value: Any) -> str:
    kinds = ((list, "list"), (str, "string"), (bool, "boolean"), ((int, float), "number"))
    return next((name for t, name in kinds if isinstance(value, t)), "null")


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
