"""The reproducer's real call trace, recorded with :func:`sys.settrace`.

OrcaLoca runs the issue's reproducer under viztracer and keeps the calls into repository files;
here :func:`trace_calls` does the same with the standard library's tracer: every call into one of
the given files becomes a :class:`TraceCall` (file, outermost ``def``'s qualified name, depth
among repository frames, call index, index of the calling repository frame, and whether it is a
frame of the traceback the reproducer ended with: OrcaLoca parses the reproducer's log as a
traceback and takes its frames' names as keywords). It also caps the number of executed lines in
those files, so a mutant caught in an endless loop stops with :class:`LineBudgetExceeded`
(deterministically, unlike a wall-clock timeout).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import FrameType
from typing import Any


class LineBudgetExceeded(BaseException):
    """Raised inside the traced code when it ran more lines than allowed (a ``BaseException``,
    so the code's own ``except Exception`` does not swallow it)."""


@dataclass(frozen=True)
class TraceCall:
    """One call into a repository function: ``qualname`` is the outermost ``def`` (``"f"`` or
    ``"Class.method"``); ``parent`` the index of the calling repository call, -1 at the top;
    ``raised``: the exception the traced function ended with passed out of this call (it is a
    frame of the final traceback)."""

    file: str
    qualname: str
    depth: int
    index: int
    parent: int
    raised: bool = False


def outer_qualname(co_qualname: str) -> str:
    """``"C.m.<locals>.g"`` -> ``"C.m"``; ``"f.<locals>.<listcomp>"`` -> ``"f"``; ``""`` for
    module-level code."""
    parts: list[str] = []
    for p in co_qualname.split("."):
        if p.startswith("<"):
            break
        parts.append(p)
    return ".".join(parts[:2])


def trace_calls(
    fn: Callable[[], Any],
    *,
    files: Mapping[str, str],
    max_lines: int = 200_000,
) -> tuple[Any, BaseException | None, tuple[TraceCall, ...]]:
    """Run ``fn()`` and record the calls into ``files`` (``{code filename: repository path}``).

    Returns ``(value, exception, calls)``: ``exception`` is what ``fn`` raised (``None`` when it
    returned), including :class:`LineBudgetExceeded` past ``max_lines`` executed lines in the
    traced files; the calls whose frames are in its traceback have ``raised=True``."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    calls: list[TraceCall] = []
    stack: list[tuple[FrameType, int, str]] = []  # frame, call index, outer name
    budget = [int(max_lines)]
    # id(frame) -> call index, for the frames of the final traceback: a frame the traceback
    # holds is alive, so no later frame can take its id and the entry is its own
    where: dict[int, int] = {}

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            budget[0] -= 1
            if budget[0] < 0:
                raise LineBudgetExceeded(f"more than {max_lines} lines executed")
        elif event == "return":
            if stack and stack[-1][0] is frame:
                stack.pop()
        return local

    def glob(frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call":
            return None
        rel = files.get(frame.f_code.co_filename)
        if rel is None:
            return None
        name = outer_qualname(frame.f_code.co_qualname)
        if not name:
            where[id(frame)] = -1  # module-level code: no call of its own
            return local
        parent_name = stack[-1][2] if stack else None
        parent_idx = stack[-1][1] if stack else -1
        if parent_name == f"{rel}::{name}":
            idx = parent_idx  # a nested def or comprehension of the same function
        else:
            idx = len(calls)
            depth = calls[parent_idx].depth + 1 if parent_idx >= 0 else 0
            calls.append(TraceCall(rel, name, depth, idx, parent_idx))
        stack.append((frame, idx, f"{rel}::{name}"))
        where[id(frame)] = idx
        return local

    old = sys.gettrace()
    sys.settrace(glob)
    try:
        value, exc = fn(), None
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        value, exc = None, e
    finally:
        sys.settrace(old)
    if exc is not None:
        tb = exc.__traceback__
        hit: set[int] = set()
        while tb is not None:
            if tb.tb_frame.f_code.co_filename in files and where.get(id(tb.tb_frame), -1) >= 0:
                hit.add(where[id(tb.tb_frame)])
            tb = tb.tb_next
        calls = [replace(c, raised=True) if c.index in hit else c for c in calls]
    return value, exc, tuple(calls)
