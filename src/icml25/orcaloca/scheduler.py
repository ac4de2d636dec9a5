"""OrcaLoca's action queue: a min-heap of ``(-priority, insertion counter, action)``.

Priorities (official ``search.cfg``): 1 for actions the LLM proposes, 2 for actions from
decomposition and for the related-file action. Each step the queue is re-sorted with
``priority = max(current priority, history count)``, where the history count is 1 for the first
insertion from any source plus 1 for each later re-proposal by the LLM, so repeatedly suggested
actions rise; ties stay first in, first out. With redundancy control an action already in the
history (queued or done) is never queued again. With ``priority=False`` every action gets
priority 1 and nothing is re-sorted: a FIFO queue.
"""

from __future__ import annotations

import heapq
from typing import Any

from icml25.orcaloca.actions import SearchAction

PRIORITY_BASIC = 1
PRIORITY_DECOMPOSITION = 2
PRIORITY_RELATED_FILE = 2


class SearchQueue:
    """Priority queue of search actions with history counts and redundancy control.

    Parameters
    ----------
    priority
        ``False`` turns the queue into FIFO (every priority 1, no re-sort).
    redundancy_control
        ``True`` (official default): an action seen before is never queued again.
    """

    def __init__(self, *, priority: bool = True, redundancy_control: bool = True) -> None:
        for name, v in (("priority", priority), ("redundancy_control", redundancy_control)):
            if not isinstance(v, bool):
                raise TypeError(f"{name} must be a bool, got {type(v).__name__}")
        self.priority, self.redundancy_control = priority, redundancy_control
        self._heap: list[tuple[int, int, SearchAction]] = []
        self._counter = 0
        self.history: dict[Any, int] = {}

    def push(
        self, action: SearchAction, priority: int = PRIORITY_BASIC, *, llm: bool = False
    ) -> bool:
        """Queue ``action`` (``llm``: proposed by the LLM, so a re-proposal bumps its count).
        Returns whether it entered the queue."""
        if not isinstance(action, SearchAction):
            raise TypeError(f"action must be a SearchAction, got {type(action).__name__}")
        if isinstance(priority, bool) or not isinstance(priority, int) or priority < 1:
            raise ValueError(f"priority must be an integer >= 1, got {priority!r}")
        key = action.key
        if key in self.history:
            if llm:
                self.history[key] += 1
            if self.redundancy_control:
                return False
        else:
            self.history[key] = 1
        p = priority if self.priority else PRIORITY_BASIC
        heapq.heappush(self._heap, (-p, self._counter, action))
        self._counter += 1
        return True

    def resort(self) -> None:
        """``priority = max(priority, history count)`` for every queued action (no-op in FIFO)."""
        if not self.priority:
            return
        self._heap = [(-max(-p, self.history.get(a.key, 1)), c, a) for p, c, a in self._heap]
        heapq.heapify(self._heap)

    def pop(self) -> SearchAction:
        """The action of highest priority (earliest inserted among equals)."""
        if not self._heap:
            raise IndexError("pop from an empty SearchQueue")
        return heapq.heappop(self._heap)[2]

    def items(self) -> list[tuple[int, SearchAction]]:
        """``(priority, action)`` in pop order (without popping)."""
        return [(-p, a) for p, _c, a in sorted(self._heap)]

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)
