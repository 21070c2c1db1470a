"""The service fixtures themselves: each service is really up and usable."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis
from kafka import KafkaConsumer, KafkaProducer
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from scripts.services import OtlpSink, validate_config

pytestmark = pytest.mark.e2e


def test_redis_url_serves_a_private_redis(redis_url: str) -> None:
    assert redis_url.startswith("redis://127.0.0.1:") and redis_url.endswith("/0")
    client = redis.Redis.from_url(redis_url)
    client.set("ragtrace:fixture-check", "ok")
    assert client.get("ragtrace:fixture-check") == b"ok"
    assert client.config_get("save") == {"save": ""}
    client.delete("ragtrace:fixture-check")


def test_kafka_bootstrap_serves_a_broker_that_round_trips_keyed_messages(
    kafka_bootstrap: str, kafka_topic: Callable[..., str]
) -> None:
    topic = kafka_topic("fixture-check", partitions=3)
    assert kafka_topic("fixture-check", partitions=3) == topic  # idempotent
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap)
    sent = [
        producer.send(topic, key=f"k{i % 2}".encode(), value=f"v{i}".encode()) for i in range(6)
    ]
    partition_of = {f.get(10).partition for f in sent}
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=kafka_bootstrap,
        group_id="fixture-check",
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
    )
    received = {(m.key, m.value): m.partition for m in consumer}
    consumer.close()
    assert sorted(v for _, v in received) == [f"v{i}".encode() for i in range(6)]
    for key in (b"k0", b"k1"):  # one key, one partition
        assert len({p for (k, _), p in received.items() if k == key}) == 1
    assert partition_of <= {0, 1, 2}


def test_the_deployed_collector_config_is_valid_for_the_built_collector() -> None:
    validate_config()  # `otelcol-ragtrace validate`: raises with the collector's own message


def test_trace_backend_sink_records_spans_sent_by_the_sdk(trace_backend: OtlpSink) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "sink-check"}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{trace_backend.endpoint}/v1/traces"))
    )
    with provider.get_tracer("sink-check").start_as_current_span(
        "outer", attributes={"n": 1, "tags": ("a", "b"), "ok": True}
    ) as outer:
        outer.add_event("hello", {"x": 1.5})
    provider.shutdown()
    trace_id = f"{outer.get_span_context().trace_id:032x}"
    [span] = trace_backend.wait_for_spans(lambda s: s.trace_id == trace_id, timeout=10)
    assert (span.name, span.scope, span.parent_span_id) == ("outer", "sink-check", "")
    assert dict(span.attributes) == {"n": 1, "tags": ("a", "b"), "ok": True}
    assert span.events == (("hello", {"x": 1.5}),)
    assert span.resource["service.name"] == "sink-check"
    assert trace_backend.trace(trace_id) == [span]
    with pytest.raises(TimeoutError, match="0 of 1 expected spans"):
        trace_backend.wait_for_spans(lambda s: s.trace_id == "0" * 32, timeout=0.2)
