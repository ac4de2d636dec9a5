from __future__ import annotations

from pathlib import Path

import pytest

SHAPES = """import math
from pkg.util import helper

LIMIT = 10


def area(w, h):
    return _mul(w, h)


def _mul(a, b):
    return helper(a) * b


class Box:
    def __init__(self, w, h):
        self.w, self.h = w, h

    def volume(self, d):
        return area(self.w, self.h) * d

    def label(self):
        return str(self.volume(1)) + self._suffix()

    def _suffix(self):
        return "!"


async def fetch():
    return area(1, 2)
"""

UTIL = """def helper(x):
    return abs(x)


def _mul(a, b):
    return a * b
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "shapes.py").write_text(SHAPES)
    (tmp_path / "pkg" / "util.py").write_text(UTIL)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test_a():\n    pass\n")
    return tmp_path


@pytest.fixture
def FixedScore():
    """The retrieval policy with fixed scores by node name (the rest 0)."""
    from icml25.orcaloca import RetrievalPolicy

    class FixedScore(RetrievalPolicy):
        def __init__(self, scores):
            super().__init__()
            self.fixed = scores

        def score(self, node_id, code):
            return self.fixed.get(node_id.split("::")[-1], 0)

    return FixedScore
