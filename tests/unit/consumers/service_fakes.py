"""``build_service`` with every network client replaced by an in-process stand-in, so a unit test
can see exactly what the service hands to kafka-python, Redis and the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragtrace.evaluation.judges import make_judge
from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.runtime import kafka_service as service
from ragtrace_consumers.writeback import otlp_sink


class FakeKafkaConsumer:
    """Records the keyword arguments kafka-python would get; no broker involved."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.subscribed: list[str] = []
        self.assigned: set[Any] = set()
        self.polls = 0
        self.metrics_value: dict[str, dict[str, float]] | None = {
            "consumer-metrics": {"connection-count": 0.0}
        }

    def partitions_for_topic(self, topic: str) -> set[int]:
        return {0}

    def topics(self) -> set[str]:
        return {"otlp_spans"}

    def subscribe(self, topics: list[str], listener: Any = None) -> None:
        self.subscribed = list(topics)

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[Any, Any]:
        self.polls += 1
        return {}

    def assignment(self) -> set[Any]:
        return set(self.assigned)

    def metrics(self) -> dict[str, dict[str, float]] | None:
        return self.metrics_value

    def close(self, autocommit: bool = True) -> None:
        pass


class FakeKafkaProducer:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs

    def flush(self) -> None:
        pass


@dataclass
class Built:
    service: service.ConsumerService
    consumer: FakeKafkaConsumer
    producer: FakeKafkaProducer
    redis: mock.MagicMock
    stores: dict[str, dict[str, Any]] = field(default_factory=dict)
    reader: InMemoryMetricReader = field(default_factory=InMemoryMetricReader)
    meter_options: dict[str, Any] = field(default_factory=dict)
    """The keyword arguments ``make_meter_provider`` was called with (endpoint, readers, ...)."""


def build_with_fakes(monkeypatch: pytest.MonkeyPatch, cfg: ConsumerConfig) -> Built:
    """``service.build_service(cfg)`` against fakes; the lexical judge."""
    import kafka

    from ragtrace_consumers.stores import redis as redis_stores

    made: dict[str, Any] = {}

    def consumer(**kwargs: Any) -> FakeKafkaConsumer:
        made["consumer"] = built = FakeKafkaConsumer(**kwargs)
        return built

    def producer(**kwargs: Any) -> FakeKafkaProducer:
        made["producer"] = built = FakeKafkaProducer(**kwargs)
        return built

    redis_client = mock.MagicMock(name="redis")
    stores: dict[str, dict[str, Any]] = {}

    def recording(cls: type) -> Any:
        def make(*args: Any, **kwargs: Any) -> Any:
            stores[cls.__name__] = kwargs
            return cls(*args, **kwargs)

        return make

    reader = InMemoryMetricReader()
    monkeypatch.setattr(kafka, "KafkaConsumer", consumer)
    monkeypatch.setattr(kafka, "KafkaProducer", producer)
    monkeypatch.setattr(redis_stores, "connect", lambda url: redis_client)
    monkeypatch.setattr(redis_stores, "RedisTraceStore", recording(redis_stores.RedisTraceStore))
    meter_options: dict[str, Any] = {}

    def meter_provider(*a: Any, **k: Any) -> MeterProvider:
        meter_options.update(k)
        return MeterProvider(metric_readers=[reader, *k.get("readers", ())])

    monkeypatch.setattr(service, "make_meter_provider", meter_provider)
    monkeypatch.setattr(
        otlp_sink.OtlpScoreSink,
        "to_collector",
        classmethod(lambda cls, *a, **k: mock.MagicMock(name="sink")),
    )
    built = service.build_service(cfg, judge=make_judge("lexical"))
    return Built(
        built, made["consumer"], made["producer"], redis_client, stores, reader, meter_options
    )
