"""collector/config.yaml routes what users send where the architecture says.

Spans go in through the real OpenTelemetry SDK exporters and come out of the real Kafka broker,
the OTLP sink standing in for the trace backend, and the real Prometheus.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any, cast

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from scripts.services import CollectorEndpoints, OtlpSink, PrometheusServer, spans_of_request

pytestmark = pytest.mark.e2e

HEX32 = re.compile(r"^[0-9a-f]{32}$")


def _tracer_provider(url: str, service: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    # Exports only on force_flush, so each flush is exactly one OTLP request.
    provider.add_span_processor(
        BatchSpanProcessor(
            OTLPSpanExporter(endpoint=url), schedule_delay_millis=600_000, max_export_batch_size=512
        )
    )
    return provider


def _hex(span: Any) -> tuple[str, str]:
    ctx = span.get_span_context()
    return f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"


def _kafka_records(
    bootstrap: str,
    topic: str,
    until: Callable[[list[ConsumerRecord]], bool],
    timeout: float = 20.0,
    settle: float = 1.0,
) -> list[ConsumerRecord]:
    """Every record in ``topic`` from the beginning, read until ``until(records)`` holds, then
    for ``settle`` more seconds (so an unexpected extra message would be seen too)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    try:
        partitions = [
            TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))
        ]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        records: list[ConsumerRecord] = []
        deadline = time.monotonic() + timeout
        settle_until: float | None = None
        while True:
            for batch in consumer.poll(timeout_ms=200).values():
                records.extend(batch)
            now = time.monotonic()
            if settle_until is None and until(records):
                settle_until = now + settle
            if settle_until is not None and now >= settle_until:
                return records
            if now > deadline:
                raise AssertionError(
                    f"Kafka topic {topic!r}: condition not met after {timeout} s; "
                    f"{len(records)} records, keys {sorted({r.key for r in records})}"
                )
    finally:
        consumer.close()


def _keyed(records: Iterable[ConsumerRecord], trace_ids: set[str]) -> list[ConsumerRecord]:
    return [r for r in records if r.key is not None and r.key.decode() in trace_ids]


def test_app_spans_go_to_kafka_one_message_per_trace_and_to_the_backend(
    collector: CollectorEndpoints, trace_backend: OtlpSink, kafka_bootstrap: str
) -> None:
    run = uuid.uuid4().hex
    provider = _tracer_provider(collector.app_traces_url, "routing-app")
    tracer = provider.get_tracer("routing-test")
    expected: dict[str, dict[str, tuple[str, str]]] = {}  # trace -> span id -> (name, parent)
    for i in range(12):
        with tracer.start_as_current_span("pipeline", attributes={"test.run": run, "i": i}) as root:
            trace_id, root_id = _hex(root)
            tree = {root_id: ("pipeline", "")}
            for name in ("retrieve", "generate"):
                with tracer.start_as_current_span(name) as child:
                    tree[_hex(child)[1]] = (name, root_id)
            expected[trace_id] = tree
    assert provider.force_flush(10_000)  # one OTLP request holding all 36 spans
    provider.shutdown()
    trace_ids = set(expected)

    records = _kafka_records(
        kafka_bootstrap,
        collector.topic,
        lambda rs: {r.key.decode() for r in _keyed(rs, trace_ids)} == trace_ids,
    )
    mine = _keyed(records, trace_ids)
    assert len(mine) == 12  # one message per trace, none split, none duplicated
    for record in mine:
        key = record.key.decode()
        assert HEX32.match(key)
        spans = spans_of_request(record.value)
        assert {s.trace_id for s in spans} == {key}
        assert {s.span_id: (s.name, s.parent_span_id) for s in spans} == expected[key]
        assert {s.resource["service.name"] for s in spans} == {"routing-app"}
        assert {s.scope for s in spans} == {"routing-test"}
    # Keys spread over the topic's 3 partitions (12 random keys all on one: p ~ 6e-6).
    assert len({r.partition for r in mine}) > 1

    received = trace_backend.wait_for_spans(lambda s: s.trace_id in trace_ids, count=36)
    assert len(received) == 36
    by_trace: dict[str, dict[str, tuple[str, str]]] = {}
    for s in received:
        by_trace.setdefault(s.trace_id, {})[s.span_id] = (s.name, s.parent_span_id)
    assert by_trace == expected
    roots = sorted(
        (s for s in received if s.name == "pipeline"), key=lambda s: cast(int, s.attributes["i"])
    )
    assert [dict(s.attributes) for s in roots] == [{"test.run": run, "i": i} for i in range(12)]


def test_spans_of_one_trace_sent_apart_share_its_key_and_partition(
    collector: CollectorEndpoints, kafka_bootstrap: str
) -> None:
    provider = _tracer_provider(collector.app_traces_url, "routing-app")
    tracer = provider.get_tracer("routing-test")
    with tracer.start_as_current_span("pipeline") as root:
        trace_id, root_id = _hex(root)
        with tracer.start_as_current_span("retrieve") as child:
            child_id = _hex(child)[1]
        assert provider.force_flush(10_000)  # the child travels alone ...
        time.sleep(0.6)  # ... in an earlier collector batch (batch timeout 200 ms)
    assert provider.force_flush(10_000)
    provider.shutdown()

    records = _kafka_records(
        kafka_bootstrap, collector.topic, lambda rs: len(_keyed(rs, {trace_id})) >= 2
    )
    mine = sorted(_keyed(records, {trace_id}), key=lambda r: r.offset)
    assert len(mine) == 2
    assert mine[0].partition == mine[1].partition
    assert [[s.span_id for s in spans_of_request(r.value)] for r in mine] == [[child_id], [root_id]]


def test_evaluation_spans_reach_the_backend_and_never_kafka(
    collector: CollectorEndpoints, trace_backend: OtlpSink, kafka_bootstrap: str
) -> None:
    app = _tracer_provider(collector.app_traces_url, "routing-app")
    with app.get_tracer("routing-test").start_as_current_span("pipeline") as root:
        trace_id, root_id = _hex(root)
    assert app.force_flush(10_000)

    # The consumer writes its evaluation span into the SAME trace, as a child of the app's root.
    evaluator = _tracer_provider(collector.eval_traces_url, "ragtrace-consumer")
    parent = trace.set_span_in_context(
        NonRecordingSpan(
            SpanContext(
                int(trace_id, 16),
                int(root_id, 16),
                is_remote=True,
                trace_flags=TraceFlags(TraceFlags.SAMPLED),
            )
        )
    )
    with evaluator.get_tracer("ragtrace.evaluation").start_as_current_span(
        "ragtrace.evaluation", context=parent, attributes={"ragtrace.eval.recall": 0.5}
    ) as evaluation:
        eval_id = _hex(evaluation)[1]
    assert evaluator.force_flush(10_000)
    evaluator.shutdown()

    [received] = trace_backend.wait_for_spans(lambda s: s.span_id == eval_id)
    assert (received.trace_id, received.parent_span_id) == (trace_id, root_id)
    assert received.resource["service.name"] == "ragtrace-consumer"
    assert dict(received.attributes) == {"ragtrace.eval.recall": 0.5}

    # A sentinel app trace sent after the evaluation span reached the backend: once it is in
    # Kafka, anything the evaluation pipeline had (wrongly) produced would be there too.
    with app.get_tracer("routing-test").start_as_current_span("sentinel") as sentinel:
        sentinel_trace = _hex(sentinel)[0]
    assert app.force_flush(10_000)
    app.shutdown()
    records = _kafka_records(
        kafka_bootstrap,
        collector.topic,
        lambda rs: bool(_keyed(rs, {sentinel_trace})) and bool(_keyed(rs, {trace_id})),
    )
    all_span_ids = {s.span_id for r in records for s in spans_of_request(r.value)}
    assert eval_id not in all_span_ids
    assert [
        [s.span_id for s in spans_of_request(r.value)] for r in _keyed(records, {trace_id})
    ] == [[root_id]]


def _value(series: list[dict[str, Any]]) -> float:
    [one] = series
    return float(one["value"][1])


def test_evaluation_metrics_are_queryable_in_prometheus_under_documented_names(
    collector: CollectorEndpoints, prometheus: PrometheusServer
) -> None:
    run = uuid.uuid4().hex
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=collector.eval_metrics_url), export_interval_millis=600_000
    )
    provider = MeterProvider(
        metric_readers=[reader],
        resource=Resource.create(
            {
                "service.name": "ragtrace-consumer",
                "service.instance.id": run,
                "deployment.environment.name": "e2e",
            }
        ),
    )
    meter = provider.get_meter("ragtrace.evaluation")
    groundedness = meter.create_histogram(
        "ragtrace.groundedness",
        unit="1",
        description="Groundedness per judged trace",
        explicit_bucket_boundaries_advisory=[0.25, 0.5, 0.75, 1.0],
    )
    seen = meter.create_counter("ragtrace.traces.seen", unit="{trace}", description="Traces")
    cost = meter.create_counter("ragtrace.judge.cost", unit="USD", description="Judge cost")
    latency = meter.create_histogram("ragtrace.judge.latency", unit="s", description="Latency")
    attrs = {"pipeline": run}
    groundedness.record(0.25, attrs)
    groundedness.record(1.0, attrs)
    seen.add(3, attrs)
    cost.add(0.5, attrs)
    latency.record(1.5, attrs)
    assert provider.force_flush(10_000)
    provider.shutdown()

    sel = f'{{pipeline="{run}"}}'
    series = prometheus.wait_for_series(f"ragtrace_traces_seen_total{sel}")
    labels = series[0]["metric"]
    assert (labels["job"], labels["instance"]) == ("ragtrace-consumer", run)  # honor_labels
    assert labels["deployment_environment_name"] == "e2e"  # resource_constant_labels
    assert _value(series) == 3
    assert _value(prometheus.wait_for_series(f"ragtrace_groundedness_count{sel}")) == 2
    assert _value(prometheus.query(f"ragtrace_groundedness_sum{sel}")) == 1.25
    buckets = {
        s["metric"]["le"]: float(s["value"][1])
        for s in prometheus.query(f"ragtrace_groundedness_bucket{sel}")
    }
    assert buckets == {"0.25": 1, "0.5": 1, "0.75": 1, "1": 2, "+Inf": 2}
    median = prometheus.query(
        f"histogram_quantile(0.5, sum by (le) (ragtrace_groundedness_bucket{sel}))"
    )
    assert 0 < _value(median) <= 0.25
    assert _value(prometheus.wait_for_series(f"ragtrace_judge_cost_USD_total{sel}")) == 0.5
    assert _value(prometheus.wait_for_series(f"ragtrace_judge_latency_seconds_count{sel}")) == 1
    # The collector's own metrics are scraped too (job "otelcol"; no _total suffix in this
    # collector's telemetry): drops would be counted there.
    accepted = prometheus.wait_for_series(
        'otelcol_receiver_accepted_metric_points{job="otelcol",receiver="otlp/eval"}'
    )
    assert _value(accepted) >= 5
