"""The evaluator every dialect test exports to: ``ragtrace serve``'s engine in this process,
on a free loopback port, with the corpus labels, k=3 and the offline lexical judge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace.consumers.config import ConsumerConfig
from ragtrace.consumers.embedded import EmbeddedEvaluator, EmbeddedSettings
from ragtrace.evaluation.judges import LexicalJudge
from tests.dialects.apps import corpus


@pytest.fixture()
def evaluator(tmp_path: Path) -> Iterator[EmbeddedEvaluator]:
    labels = corpus.write_labels(tmp_path / "labels.jsonl")
    config = ConsumerConfig.defaults().replace(scoring={"k": 3}, assembly={"quiet_s": 0.2},
                                               export={"metrics_interval_s": 3600})
    with EmbeddedEvaluator(EmbeddedSettings(port=0, state_path=tmp_path / "state.db",
                                            labels_path=labels, metrics_port=None),
                           config=config, judge=LexicalJudge()) as ev:
        yield ev


