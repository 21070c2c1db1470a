"""Chaos on the real stack: ``ragtrace consume`` with its own Kafka broker, Redis (append-only
file, fsync always) and collector, under steady traffic (tests/e2e/chaos.py) sent to the
collector's application receiver, while one thing at a time fails:

* the consumer is killed (SIGKILL) and another replica takes over;
* Redis restarts; Redis is down for 10 s while the consumer is idle;
* the Kafka broker restarts; the collector restarts; the collector is killed (SIGKILL) during a
  broker outage.

Each asserts that every trace the collector accepted is scored, each (trace, metric) written back
under one span ID (``assert_scored_once``), and that the consumer process survived the outage by
itself (no restart) — only the SIGKILL scenario replaces it. The services are private to this
module, so restarting them never disturbs another test.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from scripts.services import (
    Collector,
    KafkaBroker,
    NotProvisioned,
    OtlpSink,
    RedisServer,
    create_topic,
    free_port,
    start_collector,
    start_kafka,
    start_redis,
)
from tests.e2e.chaos import Sender, assert_scored_once
from tests.e2e.online import (
    ASSIGNED,
    DLQ_TOPIC,
    ConsumerProcess,
    consumer_env,
    group_at_end,
    start_consumer,
    verbatim_responder,
)
from tests.fakes.anthropic_server import FakeAnthropic

pytestmark = pytest.mark.e2e

TOPIC = "chaos_spans"


@dataclass
class Stack:
    """The module's private services; ``restart_*`` replace them in place."""

    tmp: Path
    redis: RedisServer
    kafka: KafkaBroker
    collector: Collector
    backend: OtlpSink
    judge: FakeAnthropic

    @property
    def app_url(self) -> str:
        return self.collector.endpoints.app_otlp_http + "/v1/traces"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("chaos")
    started: list[object] = []
    try:
        redis = start_redis(tmp / "redis", persistent=True)
        started.append(redis)
        kafka = start_kafka(tmp / "kafka")
        started.append(kafka)
        create_topic(kafka.bootstrap, TOPIC, 3)
        create_topic(kafka.bootstrap, DLQ_TOPIC, 1)
        with OtlpSink() as backend, FakeAnthropic(verbatim_responder(delay_s=0.05)) as judge:
            collector = start_collector(
                tmp / "collector", kafka.bootstrap, backend.endpoint, topic=TOPIC
            )
            stack = Stack(tmp, redis, kafka, collector, backend, judge)
            try:
                yield stack
            finally:
                stack.collector.stop()
                stack.kafka.stop()
                stack.redis.stop()
    except NotProvisioned as exc:
        pytest.fail(str(exc), pytrace=False)
    finally:
        for service in started:
            service.stop()  # type: ignore[attr-defined]


def _consumer(
    stack: Stack, name: str, group: str, prefix: str, health_port: int | None = None
) -> ConsumerProcess:
    extra = {
        # 4 judgements of at most 1 s (+ 1 s margin) fit in the lease (checked at start-up)
        "RAGTRACE_ASSEMBLY_LEASE_S": "10",
        "RAGTRACE_JUDGE_BUDGET_S": "1",
        "RAGTRACE_ASSEMBLY_QUIET_S": "0.5",
        "RAGTRACE_JUDGE_PARK_BACKOFF_S": "1",
        "RAGTRACE_JUDGE_PARK_BACKOFF_MAX_S": "5",
        "RAGTRACE_JUDGE_CALLS_PER_MINUTE": "100000",
        "RAGTRACE_JUDGE_CONCURRENCY": "4",
    }
    if health_port is not None:
        extra |= {"RAGTRACE_HEALTH_ENABLED": "true", "RAGTRACE_HEALTH_PORT": str(health_port)}
    env = consumer_env(
        collector=stack.collector.endpoints,
        redis_url=stack.redis.url,
        prefix=prefix,
        group=group,
        judge_url=stack.judge.base_url,
        extra=extra,
    )
    consumer = start_consumer(env, stack.tmp / f"{name}.log")
    consumer.wait_for_log(ASSIGNED)
    return consumer


def _fresh(stack: Stack, name: str) -> tuple[str, str]:
    group = f"chaos-{name}-{uuid.uuid4().hex[:6]}"
    group_at_end(stack.kafka.bootstrap, TOPIC, group)
    return group, f"chaos-{name}-{uuid.uuid4().hex[:6]}"


def _ready(port: int) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as resp:
            return int(resp.status), json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _alive(consumer: ConsumerProcess) -> None:
    assert consumer.proc.poll() is None, f"the consumer exited:\n{consumer.tail(60)}"


def _traffic_around(
    stack: Stack, fault: Callable[[], None], salt: int, before_s: float = 2.0, after_s: float = 3.0
) -> Sender:
    """Steady traffic for ``before_s``, then ``fault()`` (traffic continues), then ``after_s``
    more; the stopped sender (``accepted``: the trace IDs the collector took)."""
    sender = Sender(stack.app_url, per_request=2, pause_s=0.1, salt=salt)
    sender.start()
    try:
        time.sleep(before_s)
        fault()
        time.sleep(after_s)
    finally:
        sender.stop()
    return sender


def test_sigkill_of_the_consumer_under_traffic(stack: Stack) -> None:
    group, prefix = _fresh(stack, "kill")
    first = _consumer(stack, "kill-first", group, prefix)
    replicas = [first]
    try:

        def kill_and_replace() -> None:
            first.kill()
            replicas.append(_consumer(stack, "kill-second", group, prefix))

        sent = _traffic_around(stack, kill_and_replace, salt=1)
        assert_scored_once(stack.backend, sent.accepted)
        _alive(replicas[-1])
    finally:
        for c in replicas:
            c.kill()


def test_redis_restart_under_traffic(stack: Stack) -> None:
    group, prefix = _fresh(stack, "redis")
    port = free_port()
    consumer = _consumer(stack, "redis-restart", group, prefix, health_port=port)
    try:

        def restart() -> None:
            stack.redis.stop()
            time.sleep(1.0)  # a few consume-loop iterations and store calls fail meanwhile
            status, body = _ready(port)
            assert status == 503, body
            assert stack.redis.workdir is not None
            stack.redis = start_redis(stack.redis.workdir, stack.redis.port, persistent=True)

        sent = _traffic_around(stack, restart, salt=2)
        assert_scored_once(stack.backend, sent.accepted)
        _alive(consumer)
        assert "redis is unavailable" in consumer.text()
        assert _ready(port)[0] == 200
    finally:
        consumer.kill()


def test_redis_down_10s_while_idle(stack: Stack) -> None:
    group, prefix = _fresh(stack, "idle")
    port = free_port()
    consumer = _consumer(stack, "redis-idle", group, prefix, health_port=port)
    try:
        stack.redis.stop()
        deadline = time.monotonic() + 10.0
        seen_down = False
        while time.monotonic() < deadline:
            _alive(consumer)
            status, body = _ready(port)
            if status == 503 and "redis" in json.dumps(body):
                seen_down = True
            time.sleep(0.5)
        assert seen_down
        assert stack.redis.workdir is not None
        stack.redis = start_redis(stack.redis.workdir, stack.redis.port, persistent=True)
        sent = _traffic_around(stack, lambda: None, salt=3, before_s=1.0, after_s=1.0)
        assert_scored_once(stack.backend, sent.accepted)
        _alive(consumer)
        assert re.search(r"redis is available again after \d+\.\d s", consumer.text()), (
            consumer.tail()
        )
    finally:
        consumer.kill()


def test_broker_restart_under_traffic(stack: Stack) -> None:
    group, prefix = _fresh(stack, "broker")
    consumer = _consumer(stack, "broker-restart", group, prefix)
    try:

        def restart() -> None:
            stack.kafka = stack.kafka.restart(down_s=2.0)

        sent = _traffic_around(stack, restart, salt=4, after_s=4.0)
        assert_scored_once(stack.backend, sent.accepted, timeout=180)
        _alive(consumer)
    finally:
        consumer.kill()


def test_collector_restart_under_traffic(stack: Stack) -> None:
    group, prefix = _fresh(stack, "collector")
    consumer = _consumer(stack, "collector-restart", group, prefix)
    try:

        def restart() -> None:
            stack.collector = stack.collector.restart(down_s=1.0)

        sent = _traffic_around(stack, restart, salt=5)
        assert sent.refused > 0  # the app's requests were refused while it was down
        assert_scored_once(stack.backend, sent.accepted)
        _alive(consumer)
    finally:
        consumer.kill()


def test_collector_killed_during_a_broker_outage_loses_nothing_it_acknowledged(
    stack: Stack,
) -> None:
    """The collector answers 2xx while the broker is down (its queue is on disk), is killed
    with SIGKILL before the broker returns, and the next collector process delivers what the
    dead one had acknowledged. With an in-memory queue every trace accepted during the outage
    was lost."""
    group, prefix = _fresh(stack, "collector-kill")
    consumer = _consumer(stack, "collector-kill", group, prefix)
    sender = Sender(stack.app_url, per_request=2, pause_s=0.1, salt=7)
    try:
        sender.start()
        try:
            time.sleep(2.0)
            stack.kafka.stop()
            accepted_before = len(sender.accepted)
            time.sleep(3.0)  # the apps keep sending; the collector keeps answering 2xx
            during = sender.accepted[accepted_before:]
            stack.collector.kill()
            kafka = stack.kafka
            stack.kafka = start_kafka(kafka.workdir, kafka.port, kafka.controller_port)
            stack.collector = stack.collector.restart()
            time.sleep(3.0)
        finally:
            sender.stop()
        assert len(during) >= 10, "the collector refused spans during the broker outage"
        assert_scored_once(stack.backend, sender.accepted, timeout=180)
        _alive(consumer)
    finally:
        consumer.kill()


def _big_trace(salt: int, extra_spans: int, span_bytes: int) -> tuple[bytes, str]:
    """A complete RAG trace plus ``extra_spans`` child spans of ``span_bytes`` of text each."""
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    from opentelemetry.proto.common.v1 import common_pb2
    from opentelemetry.proto.trace.v1 import trace_pb2

    from tests.e2e.chaos import trace_request

    body, (trace_id,) = trace_request(1, 1, salt)
    req = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
    spans = req.resource_spans[0].scope_spans[0].spans
    root = spans[0]
    for i in range(extra_spans):
        spans.append(
            trace_pb2.Span(
                trace_id=root.trace_id,
                span_id=(1000 + i).to_bytes(8, "big"),
                parent_span_id=root.span_id,
                name="tool",
                start_time_unix_nano=1,
                end_time_unix_nano=2,
                attributes=[
                    common_pb2.KeyValue(
                        key="tool.output", value=common_pb2.AnyValue(string_value="x" * span_bytes)
                    )
                ],
            )
        )
    return req.SerializeToString(), trace_id


def _post(url: str, body: bytes) -> int:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/x-protobuf"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return int(resp.status)


def _failed_spans(stack: Stack) -> float:
    url = f"http://{stack.collector.endpoints.telemetry_metrics}/metrics"
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("otelcol_exporter_send_failed_spans{") and 'exporter="kafka"' in line
    )


def test_a_trace_at_the_sdk_caps_fits_and_an_oversized_one_is_counted(stack: Stack) -> None:
    """24 spans of 60 KB (each under the SDK's 64 KiB cap: a 1.4 MB Kafka message, over Kafka's
    default 1 MiB) reach the consumer and are scored; a 9 MB span (no SDK would send it) is
    dropped by the collector's Kafka exporter and counted in its send-failed metric."""
    group, prefix = _fresh(stack, "size")
    consumer = _consumer(stack, "size", group, prefix)
    try:
        before = _failed_spans(stack)
        body, fits = _big_trace(6, 24, 60_000)
        assert len(body) > 1_400_000
        assert _post(stack.app_url, body) == 200
        assert_scored_once(stack.backend, {fits}, timeout=60)
        huge, _ = _big_trace(7, 1, 9 * 1024 * 1024)
        assert _post(stack.app_url, huge) == 200  # the app cannot tell
        deadline = time.monotonic() + 30
        while _failed_spans(stack) <= before:
            assert time.monotonic() < deadline, "the drop was not counted"
            time.sleep(0.5)
        assert "MESSAGE_TOO_LARGE" in stack.collector.process.log_path.read_text(errors="replace")
        _alive(consumer)
    finally:
        consumer.kill()
