"""The consumer metrics (contract G): names, units, kinds, buckets, attributes, eager series."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    Gauge,
    Histogram,
    InMemoryMetricReader,
    Sum,
)

from ragtrace import semconv
from ragtrace.evaluation.agreement import agreement
from ragtrace.evaluation.calibration import Confusion
from ragtrace_consumers.telemetry.lag import PartitionLag
from ragtrace_consumers.telemetry.metrics import (
    CELLS,
    DLQ_REASONS,
    JUDGE_OUTCOMES,
    PARK_REASONS,
    SCORE_BUCKETS,
    SKIP_REASONS,
    ConsumerMetrics,
)
from tests.metric_points import metrics


def _collect(reader: InMemoryMetricReader) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for scope, m in metrics(reader):
        assert scope == semconv.EVALUATION_SCOPE
        out[m.name] = m
    return out


def _points(metric: Any) -> dict[tuple[tuple[str, Any], ...], Any]:
    return {tuple(sorted(p.attributes.items())): p for p in metric.data.data_points}


@pytest.fixture()
def rig() -> tuple[ConsumerMetrics, InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    return ConsumerMetrics(MeterProvider(metric_readers=[reader])), reader


def test_every_contract_metric_with_its_unit_and_kind(
    rig: tuple[ConsumerMetrics, InMemoryMetricReader],
) -> None:
    m, reader = rig
    m.trace_seen("svc", "p")
    m.trace_sampled("svc", "p")
    m.trace_scored("svc", "p", "fine", generator_model="gpt-x", k=3, judge_model="model-a")
    m.trace_skipped("svc", None, "sampled_out")
    m.groundedness(0.75, "svc", "p", "model-a", generator_model="gpt-x", failed=True)
    m.set_calibration(Confusion(190, 20, 10, 80), "model-a")
    audited = [Confusion(1, 0, 0, 0)]
    m.set_audit(lambda: audited[-1], "model-a")
    m.retrieval(0.5, 1.0, 1 / 3, "svc", "p", k=3, data_source="docs-index")
    m.judge_call("model-a", "ok")
    m.judge_error("model-a", "invalid_output")
    m.judge_usage("model-a", 100, 20, 5, 1, 0.003, 1.5)
    m.budget_exhausted("svc")
    m.injection_suspected("svc")
    m.dead_lettered("protobuf_parse_error")
    m.scoring_delay(7.0, "svc")
    m.parked("judge_unavailable")
    m.dependency_error("redis")
    m.set_lag_source(lambda: (PartitionLag("spans", 0, 50, 8), PartitionLag("spans", 3, 5, 5)))
    got = _collect(reader)
    expected = {
        semconv.METRIC_GROUNDEDNESS: (Histogram, "1"),
        semconv.METRIC_RECALL: (Histogram, "1"),
        semconv.METRIC_HIT_RATE: (Histogram, "1"),
        semconv.METRIC_RECIPROCAL_RANK: (Histogram, "1"),
        semconv.METRIC_TRACES_SEEN: (Sum, "{trace}"),
        semconv.METRIC_TRACES_SAMPLED: (Sum, "{trace}"),
        semconv.METRIC_TRACES_SCORED: (Sum, "{trace}"),
        semconv.METRIC_TRACES_SKIPPED: (Sum, "{trace}"),
        semconv.METRIC_CELL: (Sum, "{trace}"),
        semconv.METRIC_GROUNDEDNESS_FAILED: (Sum, "{trace}"),
        semconv.METRIC_JUDGE_CALIBRATION: (Gauge, "{claim}"),
        semconv.METRIC_JUDGE_AUDIT: (Gauge, "{unit}"),
        semconv.METRIC_JUDGE_CALIBRATION_KAPPA: (Gauge, "{kappa}"),
        semconv.METRIC_JUDGE_CALLS: (Sum, "{call}"),
        semconv.METRIC_JUDGE_ERRORS: (Sum, "{call}"),
        semconv.METRIC_JUDGE_TOKENS: (Sum, "{token}"),
        semconv.METRIC_JUDGE_COST: (Sum, "{USD}"),
        semconv.METRIC_GEN_AI_CLIENT_TOKEN_USAGE: (Histogram, "{token}"),
        semconv.METRIC_GEN_AI_CLIENT_OPERATION_DURATION: (Histogram, "s"),
        semconv.METRIC_JUDGE_LATENCY: (Histogram, "s"),
        semconv.METRIC_JUDGE_BUDGET_EXHAUSTED: (Sum, "{trace}"),
        semconv.METRIC_INJECTION_SUSPECTED: (Sum, "{trace}"),
        semconv.METRIC_DLQ_MESSAGES: (Sum, "{message}"),
        semconv.METRIC_SCORING_DELAY: (Histogram, "s"),
        semconv.METRIC_CONSUMER_LAG: (Gauge, "{message}"),
        semconv.METRIC_CONSUMER_PARTITIONS: (Gauge, "{partition}"),
        semconv.METRIC_PARKED: (Sum, "{trace}"),
        semconv.METRIC_DEPENDENCY_ERRORS: (Sum, "{error}"),
    }
    assert set(got) == set(expected)
    for name, (kind, unit) in expected.items():
        assert isinstance(got[name].data, kind), name
        assert got[name].unit == unit, name
        if kind is Sum:
            assert got[name].data.is_monotonic, name

    g = _points(got[semconv.METRIC_GROUNDEDNESS])
    (point,) = g.values()
    assert list(g) == [
        (("judge_model", "model-a"), ("model", "gpt-x"), ("pipeline", "p"), ("service", "svc"))
    ]
    assert (
        tuple(point.explicit_bounds)
        == SCORE_BUCKETS
        == (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    )
    assert point.count == 1 and point.sum == 0.75
    # not grounded: counted under the groundedness histogram's own attributes
    assert _points(got[semconv.METRIC_GROUNDEDNESS_FAILED])[next(iter(g))].value == 1
    calibration = {k: p.value for k, p in _points(got[semconv.METRIC_JUDGE_CALIBRATION]).items()}
    assert calibration == {
        (("human", h), ("judge_model", "model-a"), ("verdict", v)): n
        for h, v, n in (
            ("supported", "supported", 190),
            ("unsupported", "supported", 20),
            ("supported", "unsupported", 10),
            ("unsupported", "unsupported", 80),
        )
    }
    kappa = {k: p.value for k, p in _points(got[semconv.METRIC_JUDGE_CALIBRATION_KAPPA]).items()}
    expected_kappa = agreement(Confusion(190, 20, 10, 80))
    assert kappa == pytest.approx(
        {
            (("bound", b), ("judge_model", "model-a")): v
            for b, v in (
                ("estimate", expected_kappa.kappa),
                ("low", expected_kappa.low),
                ("high", expected_kappa.high),
            )
        }
    )
    # The audit's counts are read at each collection: an audit saved since is exported.
    audited.append(Confusion(30, 4, 2, 9))
    audit = {k: p.value for k, p in _points(_collect(reader)[semconv.METRIC_JUDGE_AUDIT]).items()}
    assert audit == {
        (("human", h), ("judge_model", "model-a"), ("verdict", v)): n
        for h, v, n in (
            ("supported", "supported", 30),
            ("unsupported", "supported", 4),
            ("supported", "unsupported", 2),
            ("unsupported", "unsupported", 9),
        )
    }
    for name in (semconv.METRIC_RECALL, semconv.METRIC_HIT_RATE, semconv.METRIC_RECIPROCAL_RANK):
        (p,) = _points(got[name]).values()
        assert tuple(p.explicit_bounds) == SCORE_BUCKETS
        assert list(_points(got[name])) == [
            (("data_source", "docs-index"), ("k", "3"), ("pipeline", "p"), ("service", "svc"))
        ]
    assert (
        _points(got[semconv.METRIC_CELL])[
            (
                ("cell", "fine"),
                ("judge_model", "model-a"),
                ("k", "3"),
                ("model", "gpt-x"),
                ("pipeline", "p"),
                ("service", "svc"),
            )
        ].value
        == 1
    )
    skipped = _points(got[semconv.METRIC_TRACES_SKIPPED])
    assert (
        skipped[(("pipeline", "default"), ("reason", "sampled_out"), ("service", "svc"))].value == 1
    )
    tokens = {k: p.value for k, p in _points(got[semconv.METRIC_JUDGE_TOKENS]).items()}
    assert tokens == {
        (("judge_model", "model-a"), ("token_type", "input")): 100,
        (("judge_model", "model-a"), ("token_type", "output")): 20,
        (("judge_model", "model-a"), ("token_type", "cache_read")): 5,
        (("judge_model", "model-a"), ("token_type", "cache_write")): 1,
    }
    assert _points(got[semconv.METRIC_JUDGE_COST])[(("judge_model", "model-a"),)].value == 0.003
    (lat,) = _points(got[semconv.METRIC_JUDGE_LATENCY]).values()
    assert lat.sum == 1.5
    genai = (
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", "anthropic"),
        ("gen_ai.request.model", "model-a"),
    )
    usage = {
        k: (p.count, p.sum)
        for k, p in _points(got[semconv.METRIC_GEN_AI_CLIENT_TOKEN_USAGE]).items()
    }
    assert usage == {
        (*genai, ("gen_ai.token.type", "input")): (1, 106),
        (*genai, ("gen_ai.token.type", "output")): (1, 20),
    }
    (duration,) = _points(got[semconv.METRIC_GEN_AI_CLIENT_OPERATION_DURATION]).values()
    assert (duration.count, duration.sum) == (1, 1.5)
    assert tuple(duration.explicit_bounds)[:3] == (0.01, 0.02, 0.04)
    (delay,) = _points(got[semconv.METRIC_SCORING_DELAY]).values()
    assert delay.sum == 7.0 and delay.attributes == {"service": "svc"}
    lags = {k: p.value for k, p in _points(got[semconv.METRIC_CONSUMER_LAG]).items()}
    assert lags == {
        (("partition", "0"), ("topic", "spans")): 42,
        (("partition", "3"), ("topic", "spans")): 0,
    }
    (held,) = _points(got[semconv.METRIC_CONSUMER_PARTITIONS]).values()
    assert held.value == 2 and held.attributes == {}


def test_series_exist_before_anything_happens(
    rig: tuple[ConsumerMetrics, InMemoryMetricReader],
) -> None:
    m, reader = rig
    m.ensure_judge("model-a")
    m.trace_seen("svc", None)
    got = _collect(reader)
    dlq = {k: p.value for k, p in _points(got[semconv.METRIC_DLQ_MESSAGES]).items()}
    assert dlq == {(("reason", r),): 0 for r in DLQ_REASONS}
    assert "protobuf_parse_error" in DLQ_REASONS and "unexpected_error" in DLQ_REASONS
    parked = {k: p.value for k, p in _points(got[semconv.METRIC_PARKED]).items()}
    assert parked == {(("reason", r),): 0 for r in PARK_REASONS}
    calls = {k: p.value for k, p in _points(got[semconv.METRIC_JUDGE_CALLS]).items()}
    assert calls == {(("judge_model", "model-a"), ("outcome", o)): 0 for o in JUDGE_OUTCOMES}
    skipped = {k: p.value for k, p in _points(got[semconv.METRIC_TRACES_SKIPPED]).items()}
    assert skipped == {
        (("pipeline", "default"), ("reason", r), ("service", "svc")): 0 for r in SKIP_REASONS
    }
    assert _points(got[semconv.METRIC_JUDGE_BUDGET_EXHAUSTED])[(("service", "svc"),)].value == 0
    # Every cell's series, before the first such answer: an alert on answers not grounded
    # without a label, or on unanswerable questions answered, sees it from the first export.
    cells = {k: p.value for k, p in _points(got[semconv.METRIC_CELL]).items()}
    assert cells == {(("cell", c), ("pipeline", "default"), ("service", "svc")): 0 for c in CELLS}
    assert {"unlabelled_not_grounded", "unanswerable_answered", "unanswerable_declined"} <= set(
        CELLS
    )
    assert (
        _points(got[semconv.METRIC_TRACES_SEEN])[
            (("pipeline", "default"), ("service", "svc"))
        ].value
        == 1
    )
    assert (
        _points(got[semconv.METRIC_TRACES_SCORED])[
            (("pipeline", "default"), ("service", "svc"))
        ].value
        == 0
    )
    # No lag measured yet: the gauges report nothing rather than a made-up 0.
    assert semconv.METRIC_CONSUMER_LAG not in got
    assert semconv.METRIC_CONSUMER_PARTITIONS not in got


def test_skip_reasons_include_the_samplers_and_ours() -> None:
    from ragtrace_consumers.model import SKIP_REASONS as SAMPLER

    assert set(SAMPLER) <= set(SKIP_REASONS)
    assert {"not_rag", "unlabelled", "already_scored", "budget_exhausted", "judge_gave_up"} <= set(
        SKIP_REASONS
    )
    assert len(SKIP_REASONS) == len(set(SKIP_REASONS))


def test_a_failing_lag_source_reports_nothing(
    rig: tuple[ConsumerMetrics, InMemoryMetricReader],
) -> None:
    m, reader = rig

    def broken() -> tuple[PartitionLag, ...]:
        raise RuntimeError("rebalancing")

    m.set_lag_source(broken)
    m.trace_seen("svc", None)
    got = _collect(reader)
    assert semconv.METRIC_CONSUMER_LAG not in got
    assert semconv.METRIC_CONSUMER_PARTITIONS not in got


def test_a_revoked_partition_leaves_the_lag_gauge(
    rig: tuple[ConsumerMetrics, InMemoryMetricReader],
) -> None:
    """Only the holder reports a partition: after a rebalance the old holder's series end."""
    m, reader = rig
    held = [PartitionLag("spans", 0, 9, 1), PartitionLag("spans", 1, 9, 1)]
    m.set_lag_source(lambda: tuple(held))
    assert len(_points(_collect(reader)[semconv.METRIC_CONSUMER_LAG])) == 2
    held.pop(0)
    assert list(_points(_collect(reader)[semconv.METRIC_CONSUMER_LAG])) == [
        (("partition", "1"), ("topic", "spans"))
    ]
    held.clear()
    got = _collect(reader)
    assert semconv.METRIC_CONSUMER_LAG not in got
    (idle,) = _points(got[semconv.METRIC_CONSUMER_PARTITIONS]).values()
    assert idle.value == 0


def test_judge_duration_carries_the_served_model_and_the_error_type(
    rig: tuple[ConsumerMetrics, InMemoryMetricReader],
) -> None:
    m, reader = rig
    m.judge_usage("model-a", 10, 2, 0, 0, 0.001, 0.5, response_model="model-a-2026-01-01")
    m.judge_usage("model-a", 10, 0, 0, 0, 0.001, 0.25, error_type="malformed_output")
    m.judge_call_failed("model-a", 30.0, "rate_limit", "openai")
    durations = {
        k: (p.count, p.sum)
        for k, p in _points(
            _collect(reader)[semconv.METRIC_GEN_AI_CLIENT_OPERATION_DURATION]
        ).items()
    }
    chat = (("gen_ai.operation.name", "chat"),)
    assert durations == {
        (
            *chat,
            ("gen_ai.provider.name", "anthropic"),
            ("gen_ai.request.model", "model-a"),
            ("gen_ai.response.model", "model-a-2026-01-01"),
        ): (1, 0.5),
        (
            ("error.type", "malformed_output"),
            *chat,
            ("gen_ai.provider.name", "anthropic"),
            ("gen_ai.request.model", "model-a"),
        ): (1, 0.25),
        (
            ("error.type", "rate_limit"),
            *chat,
            ("gen_ai.provider.name", "openai"),
            ("gen_ai.request.model", "model-a"),
        ): (1, 30.0),
    }


def test_a_grounded_trace_still_creates_its_failed_series_at_zero(
    rig: tuple[ConsumerMetrics, InMemoryMetricReader],
) -> None:
    m, reader = rig
    m.groundedness(0.95, "svc", "p", "model-a")
    got = _collect(reader)
    (point,) = _points(got[semconv.METRIC_GROUNDEDNESS_FAILED]).values()
    assert point.value == 0
    assert semconv.METRIC_JUDGE_CALIBRATION not in got  # no matching calibration: no series
    assert semconv.METRIC_JUDGE_CALIBRATION_KAPPA not in got
    assert semconv.METRIC_JUDGE_AUDIT not in got  # no audit store (the Kafka consumer): none
