"""The evaluator every dialect test exports to: ``ragtrace serve``'s engine in this process,
on a free loopback port, with the corpus labels, k=3 and the offline lexical judge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace_consumers.runtime.embedded import EmbeddedEvaluator
from tests.dialects.kit import make_evaluator


@pytest.fixture()
def evaluator(tmp_path: Path) -> Iterator[EmbeddedEvaluator]:
    with make_evaluator(tmp_path) as ev:
        yield ev
