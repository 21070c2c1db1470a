"""The one wiring root: the thresholds reach the pipeline and the sink from one value, the
settings sections reach their steps, and an intake without a batch store refuses batch mode."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragtrace import semconv
from ragtrace.evaluation.attribution import Thresholds
from ragtrace.evaluation.calibration import (
    ENV_CALIBRATION_FILE,
    CalibrationItem,
    CalibrationReport,
    save_stamp,
)
from ragtrace.evaluation.judges import Judge, make_judge
from ragtrace_consumers.config import ConfigError, ConsumerConfig, load_config
from ragtrace_consumers.errors import WriteBackError
from ragtrace_consumers.model import TraceScores
from ragtrace_consumers.runtime.wiring import Scoring, Stores, build_scoring
from ragtrace_consumers.scoring.workers import DEFAULT_DEPTH, UNBUDGETED_CAPACITY
from ragtrace_consumers.stores.memory import (
    MemoryIdempotencyStore,
    MemoryJudgeBudget,
    MemoryJudgeResultCache,
    MemoryLabelStore,
    MemoryTraceStore,
)
from tests.metric_points import metrics


class _Sink:
    def __init__(self, thresholds: Thresholds) -> None:
        self.thresholds = thresholds

    def write(self, scores: Any) -> None:
        pass

    def write_many(self, batch: Sequence[TraceScores]) -> list[WriteBackError | None]:
        return [None] * len(batch)

    def shutdown(self) -> None:
        pass


def _stores() -> Stores:
    return Stores(
        traces=MemoryTraceStore(),
        labels=MemoryLabelStore(),
        cache=MemoryJudgeResultCache(),
        idempotency=MemoryIdempotencyStore(),
        budget=MemoryJudgeBudget(10, 1000),
    )


def _scoring(cfg: ConsumerConfig, judge: Judge | None = None, **options: Any) -> Scoring[_Sink]:
    return build_scoring(
        cfg,
        _stores(),
        _Sink,
        judge or make_judge("lexical"),
        cfg.mapping.readers(),
        meter_provider=MeterProvider(),
        **options,
    )


def test_settings_are_read_once_and_the_thresholds_go_to_pipeline_and_sink_alike() -> None:
    cfg = load_config(
        None,
        env={
            "RAGTRACE_SCORING_RECALL_THRESHOLD": "0.25",
            "RAGTRACE_SCORING_GROUNDEDNESS_THRESHOLD": "0.75",
            "RAGTRACE_JUDGE_CONCURRENCY": "3",
            "RAGTRACE_ASSEMBLY_QUIET_S": "2",
        },
    )
    scoring = _scoring(cfg)
    try:
        expected = Thresholds(recall=0.25, groundedness=0.75)
        assert scoring.sink.thresholds == expected
        assert scoring.pipeline.settings.thresholds == expected
        assert scoring.pipeline.sink is scoring.sink
        assert scoring.pipeline.settings.quiet_s == 2.0
        assert scoring.workers.size == 3
        assert scoring.pipeline.metrics is scoring.metrics
        assert scoring.judge_batch is None
    finally:
        scoring.workers.shutdown()


def test_the_workers_override_and_batch_mode_without_a_batch_store() -> None:
    cfg = load_config(None, env={})
    scoring = _scoring(cfg, workers=5)
    assert scoring.workers.size == 5
    scoring.workers.shutdown()
    batch = load_config(None, env={"RAGTRACE_JUDGE_MODE": "batch"})
    with pytest.raises(ConfigError, match="judge.mode"):
        _scoring(batch)


def test_in_flight_traces_are_bounded_by_the_lease_only_for_a_judge_with_a_time_budget() -> None:
    """A judge with a time budget (the Anthropic judge) keeps ``concurrency x depth`` traces in
    flight, which the lease check covers; one without (the lexical judge answers at once) keeps
    whole claim batches in flight instead."""
    cfg = load_config(None, env={"RAGTRACE_JUDGE_CONCURRENCY": "3"})
    lexical = _scoring(cfg)
    anthropic = _scoring(cfg, make_judge("anthropic", api_key="test", budget_s=5.0))
    try:
        assert anthropic.workers.capacity == 3 * DEFAULT_DEPTH
        assert lexical.workers.capacity == UNBUDGETED_CAPACITY
        assert 2 * cfg.assembly.claim_batch <= UNBUDGETED_CAPACITY
    finally:
        lexical.workers.shutdown()
        anthropic.workers.shutdown()


@pytest.mark.parametrize(("prompt_matches", "exported"), [(True, True), (False, False)])
def test_the_judge_s_calibration_is_exported_only_when_its_stamp_matches(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, prompt_matches: bool, exported: bool
) -> None:
    judge = make_judge("lexical")
    stamped = judge.info if prompt_matches else replace(judge.info, prompt_sha256="0" * 64)
    report = CalibrationReport(
        stamped,
        (CalibrationItem("a", "c", True, True), CalibrationItem("b", "d", False, False)),
    )
    save_stamp(report, tmp_path / "calibration.json")
    monkeypatch.setenv(ENV_CALIBRATION_FILE, str(tmp_path / "calibration.json"))
    reader = InMemoryMetricReader()
    cfg = load_config(None, env={})
    scoring = build_scoring(
        cfg,
        _stores(),
        _Sink,
        judge,
        cfg.mapping.readers(),
        meter_provider=MeterProvider(metric_readers=[reader]),
    )
    try:
        names = {m.name: m for _, m in metrics(reader)}
        assert (semconv.METRIC_JUDGE_CALIBRATION in names) is exported
        if exported:
            points: Any = names[semconv.METRIC_JUDGE_CALIBRATION].data.data_points
            assert sorted((p.attributes["human"], p.value) for p in points) == [
                ("supported", 0),
                ("supported", 1),
                ("unsupported", 0),
                ("unsupported", 1),
            ]
    finally:
        scoring.workers.shutdown()
