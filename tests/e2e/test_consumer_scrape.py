"""A consumer scraped directly by the real Prometheus, as the Helm chart's PodMonitor does: its
lag is the group's committed-vs-end lag per partition, and when it is gone "no consumer alive"
(``absent(...)``) turns true.

The consumer runs with an hour-long commit interval, so after its first commit it reads every
new message but commits none: a lag from the fetch position would say 0, the committed lag says
how many messages a restart would re-read. Both are compared with Kafka's own offsets.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from scripts.services import CollectorEndpoints
from scripts.services.process import free_port
from scripts.services.prometheus import CONSUMERS_JOB, PrometheusServer
from tests.e2e.online import (
    ASSIGNED,
    DLQ_TOPIC,
    committed_offsets,
    consumer_env,
    end_offsets,
    group_at_end,
    produce_raw,
    start_consumer,
)

pytestmark = pytest.mark.e2e

PARTITIONS = 3
MESSAGES = 30


def _value_by_partition(prom: PrometheusServer, promql: str) -> dict[int, float]:
    return {int(s["metric"]["partition"]): float(s["value"][1]) for s in prom.query(promql)}


def _wait(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


def test_scraped_lag_is_committed_vs_end_per_partition(
    tmp_path: Path,
    kafka_bootstrap: str,
    kafka_topic: Callable[..., str],
    collector: CollectorEndpoints,
    redis_url: str,
    prometheus: PrometheusServer,
) -> None:
    topic = kafka_topic(f"scrape-{uuid.uuid4().hex[:8]}", PARTITIONS)
    kafka_topic(DLQ_TOPIC, 1)
    group = f"scrape-{uuid.uuid4().hex[:8]}"
    group_at_end(kafka_bootstrap, topic, group)
    port = free_port()
    env = consumer_env(
        collector=collector,
        redis_url=redis_url,
        prefix=group,
        group=group,
        judge_url="http://127.0.0.1:9",
        extra={
            "RAGTRACE_KAFKA_TOPIC": topic,
            "RAGTRACE_KAFKA_COMMIT_INTERVAL_S": "3600",
            "RAGTRACE_JUDGE_NAME": "lexical",
            "RAGTRACE_HEALTH_ENABLED": "true",
            "RAGTRACE_HEALTH_PORT": str(port),
            "RAGTRACE_EXPORT_METRICS_OTLP": "false",
        },
    )
    consumer = start_consumer(env, tmp_path / "consumer.log")
    selector = f'{{job="{CONSUMERS_JOB}", topic="{topic}"}}'
    try:
        consumer.wait_for_log(ASSIGNED)
        prometheus.set_consumer_targets([f"127.0.0.1:{port}"])
        prometheus.wait_for_series(
            f"ragtrace_consumer_lag{selector}", timeout=60, min_series=PARTITIONS
        )
        assert (
            prometheus.query(f'sum(ragtrace_consumer_partitions{{job="{CONSUMERS_JOB}"}})')[0][
                "value"
            ][1]
            == "3"
        )
        # Undecodable messages: each is dead-lettered (read and done), never committed here.
        for i in range(MESSAGES):
            produce_raw(kafka_bootstrap, topic, f"key-{i}".encode(), b"\x00not otlp")
        _wait(
            lambda: (
                f"{MESSAGES} dead-lettered" in consumer.text() or _dlq_count(prometheus) >= MESSAGES
            ),
            "the consumer to read every message",
        )
        ends = end_offsets(kafka_bootstrap, topic)
        committed = committed_offsets(kafka_bootstrap, topic, group)
        expected = {p: float(ends[p] - (committed[p] or 0)) for p in ends}
        assert sum(expected.values()) == MESSAGES
        _wait(
            lambda: _value_by_partition(prometheus, f"ragtrace_consumer_lag{selector}") == expected,
            f"Prometheus to show the committed lag {expected}",
        )
        assert (
            float(prometheus.query(f"sum(ragtrace_consumer_lag{selector})")[0]["value"][1])
            == MESSAGES
        )
        # No consumer alive: the alert's absent() turns true once the pod's target is gone.
        absent = f'absent(ragtrace_consumer_partitions{{job="{CONSUMERS_JOB}"}})'
        assert prometheus.query(absent) == []
    finally:
        code = consumer.terminate()
        consumer.kill()
    assert code == 0, consumer.tail()
    # It committed on SIGTERM: the lag Kafka reports is now 0.
    committed = committed_offsets(kafka_bootstrap, topic, group)
    assert committed == end_offsets(kafka_bootstrap, topic)
    prometheus.set_consumer_targets([])
    _wait(lambda: prometheus.query(absent) != [], "absent() to fire", timeout=30)


def _dlq_count(prometheus: PrometheusServer) -> float:
    got = prometheus.query(f'sum(ragtrace_dlq_messages_total{{job="{CONSUMERS_JOB}"}})')
    return float(got[0]["value"][1]) if got else 0.0
