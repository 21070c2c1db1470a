"""The consumer's one retry owner (retry.py), its start-up wait (startup.py) and how the Kafka
runner rides out an outage: claim and ingest wait for Redis, dead letters the broker did not take
are re-sent before any commit, a failed commit marks Kafka down."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ragtrace_consumers.config import ConsumerConfig
from ragtrace_consumers.errors import DependencyUnavailable
from ragtrace_consumers.runtime.kafka import KafkaRunner
from ragtrace_consumers.runtime.retry import Backoff, Dependencies, Retrier, Retrying
from ragtrace_consumers.runtime.startup import wait_for
from ragtrace_consumers.scoring.workers import ScoringWorkers
from tests.otlp_requests import records_request
from tests.unit.consumers.runtime.kafka.kafka_fakes import (
    TP,
    FakeConsumer,
    FakeProducer,
    LossyProducer,
    Msg,
)
from tests.unit.consumers.scoring_helpers import T0, Rig, rag_spans, rig
from tests.unit.consumers.service_fakes import build_with_fakes


class Flaky:
    """Fails ``failures`` times with ``error``, then answers."""

    def __init__(self, failures: int, error: BaseException) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return ("ok", args, kwargs)


def _retrier(
    deps: Dependencies,
    stop: threading.Event | None = None,
    sleeps: list[float] | None = None,
    waits: list[int] | None = None,
) -> Retrier:
    return Retrier(
        "redis",
        (ConnectionError,),
        dependencies=deps,
        stop=stop,
        backoff=Backoff(0.1, 0.4),
        sleep=(sleeps if sleeps is not None else []).append,
        on_wait=(lambda: waits.append(1)) if waits is not None else None,
    )


def test_backoff_doubles_up_to_its_cap() -> None:
    b = Backoff(0.1, 1.0)
    assert [b.delay(n) for n in range(1, 7)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    with pytest.raises(ValueError):
        Backoff(0.0, 1.0)
    with pytest.raises(ValueError):
        Backoff(2.0, 1.0)


def test_transient_errors_are_retried_counted_and_reported_until_recovery() -> None:
    errors: list[str] = []
    deps = Dependencies(on_error=errors.append)
    seen_down: list[dict[str, str]] = []
    sleeps: list[float] = []
    waits: list[int] = []
    retry = _retrier(deps, sleeps=sleeps, waits=waits)
    flaky = Flaky(4, ConnectionError("refused"))

    def call(*args: Any, **kwargs: Any) -> Any:
        seen_down.append(deps.down())
        return flaky(*args, **kwargs)

    assert retry.call(call, 1, k=2) == ("ok", (1,), {"k": 2})
    assert flaky.calls == 5 and errors == ["redis"] * 4
    assert sleeps == [0.1, 0.2, 0.4, 0.4] and len(waits) == 4
    assert seen_down[0] == {} and set(seen_down[-1]) == {"redis"}
    assert "ConnectionError('refused')" in seen_down[-1]["redis"]
    assert deps.down() == {} and deps.check_all() == (True, "none down")


def test_other_errors_are_raised_at_once() -> None:
    deps = Dependencies()
    flaky = Flaky(1, KeyError("bug"))
    with pytest.raises(KeyError):
        _retrier(deps).call(flaky)
    assert flaky.calls == 1 and deps.down() == {}


def test_a_stop_ends_the_retries_with_the_last_error() -> None:
    deps = Dependencies()
    stop = threading.Event()
    sleeps: list[float] = []

    def sleep(s: float) -> None:
        sleeps.append(s)
        stop.set()  # SIGTERM arrives while waiting out the outage

    retry = Retrier("redis", (ConnectionError,), dependencies=deps, stop=stop, sleep=sleep)
    with pytest.raises(ConnectionError):
        retry.call(Flaky(100, ConnectionError("down")))
    assert len(sleeps) == 1
    ok, detail = deps.check_all()
    assert not ok and detail.startswith("redis down for")
    assert deps.check("redis")()[0] is False and deps.check("kafka")() == (True, "ok")


def test_retrying_wraps_every_public_method_and_passes_attributes() -> None:
    class Store:
        size = 3

        def __init__(self) -> None:
            self.get = Flaky(2, ConnectionError("x"))

    deps = Dependencies()
    wrapped = Retrying(Store(), _retrier(deps))
    assert wrapped.size == 3
    assert wrapped.get("k") == ("ok", ("k",), {})
    assert getattr(wrapped, "missing", None) is None


def test_wait_for_gives_up_after_the_wait_with_one_line_naming_the_dependency() -> None:
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    attempts = Flaky(10_000, ConnectionError("Error 111 connecting to 127.0.0.1:1.\nRefused."))
    with pytest.raises(DependencyUnavailable) as info:
        wait_for("Redis", "redis://127.0.0.1:1/0", attempts, 5.0, clock=lambda: now[0], sleep=sleep)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(
        "Redis at redis://127.0.0.1:1/0 unavailable after 5 s: ConnectionError: Error 111"
    )
    assert 3 < attempts.calls < 20  # backed off, not a busy loop
    assert wait_for("Kafka", "b:9092", Flaky(2, OSError("x")), 5.0, sleep=lambda s: None)[0] == "ok"


def test_service_start_waits_then_names_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    import redis

    from ragtrace_consumers.stores import redis as redis_stores

    client = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    monkeypatch.setattr(redis_stores, "connect", lambda url: client)
    cfg = ConsumerConfig.defaults().replace(
        health={"startup_wait_s": 0.5}, redis={"url": "redis://user:pw@127.0.0.1:1/0"}
    )
    from ragtrace_consumers.runtime.kafka_service import build_service

    with pytest.raises(
        DependencyUnavailable,
        match=r"^Redis at redis://user:\*\*\*@127.0.0.1:1/0"
        r" unavailable after \d s",
    ):
        build_service(cfg)


def test_consume_started_without_redis_exits_3_with_one_line(tmp_path: Path) -> None:
    env = {
        "RAGTRACE_REDIS_URL": "redis://127.0.0.1:1/0",
        "RAGTRACE_HEALTH_STARTUP_WAIT_S": "1",
        "RAGTRACE_JUDGE_NAME": "lexical",
        "PATH": "/usr/bin:/bin",
    }
    ragtrace = str(Path(sys.executable).with_name("ragtrace"))
    out = subprocess.run(
        [ragtrace, "consume", "--log-level", "ERROR"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 3, out.stderr  # a dependency unreachable (docs/cli.md)
    assert out.stderr.strip().splitlines() == [out.stderr.strip()], (
        out.stderr
    )  # one line, no traceback
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith(
        "ragtrace consume: error: Redis at redis://127.0.0.1:1/0 unavailable "
        "after 1 s: ConnectionError"
    )


def test_the_service_retries_store_calls_and_reports_redis_down(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = ConsumerConfig.defaults().replace(health={"enabled": True, "port": 0})
    built = build_with_fakes(monkeypatch, cfg)
    try:
        traces = built.service.pipeline.traces
        assert isinstance(traces, Retrying)
        health = built.service.health
        assert health is not None and "dependencies" in health.readiness
    finally:
        built.service.shutdown()


# --- the runner ----------------------------------------------------------------------------------


class FlakyStore:
    """A MemoryTraceStore whose claim and append fail ``n`` times each (Redis restarting)."""

    def __init__(self, inner: Any, n: int) -> None:
        self.inner = inner
        self.fail = {"claim": n, "append": n}

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if name not in self.fail:
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.fail[name] > 0:
                self.fail[name] -= 1
                raise ConnectionError(f"{name}: connection refused")
            return value(*args, **kwargs)

        return call


def _runner(
    r: Rig,
    consumer: FakeConsumer,
    deps: Dependencies,
    producer: FakeProducer | None = None,
    workers: ScoringWorkers | None = None,
    **options: Any,
) -> KafkaRunner:
    """A runner over ``r``'s pipeline reporting to ``deps`` (one scoring worker by default)."""
    return KafkaRunner(
        consumer,
        producer or FakeProducer(),
        r.pipeline,
        workers or ScoringWorkers(r.pipeline, 1),
        r.metrics,
        dlq_topic="spans.dlq",
        clock=r.clock,
        dependencies=deps,
        **options,
    )


def test_the_runner_waits_out_a_redis_outage_and_loses_nothing() -> None:
    r = rig()
    deps = Dependencies()
    retry = _retrier(deps)
    r.pipeline.traces = Retrying(FlakyStore(r.traces, 3), retry)
    p0 = TP("spans", 0)
    consumer = FakeConsumer([{p0: [Msg("spans", 0, 7, None, records_request(rag_spans(1)))]}])
    workers = ScoringWorkers(r.pipeline, 2, depth=1)
    runner = _runner(r, consumer, deps, workers=workers)
    r.clock.now = T0 + 10
    runner.step()  # claim fails 3 times (retried), then ingest fails 3 times (retried)
    assert consumer.seeks == [] and consumer.commits == [{p0: 8}]
    runner.close()
    assert workers.completed == 1 and len(r.spans()) == 1


def test_a_dead_letter_the_broker_did_not_take_is_resent_before_the_commit() -> None:
    r = rig()
    deps = Dependencies()
    p0 = TP("spans", 0)
    consumer = FakeConsumer([{p0: [Msg("spans", 0, 0, b"k", b"\xff\x00garbage")]}])
    producer = LossyProducer()
    runner = _runner(r, consumer, deps, producer)
    r.clock.now = T0 + 10
    runner.step()
    assert consumer.commits == [] and len(producer.sent) == 2  # re-sent, not committed
    assert "kafka" in deps.down()
    r.clock.now += 1.0
    runner.step()
    assert consumer.commits == [{p0: 1}] and deps.down() == {}
    runner.close()


def test_a_failed_commit_marks_kafka_down_until_one_succeeds() -> None:
    r = rig()
    deps = Dependencies()
    p0 = TP("spans", 0)

    class Flappy(FakeConsumer):
        fail = True

        def commit(self, offsets: dict[Any, Any]) -> None:
            if self.fail:
                raise TimeoutError("coordinator unavailable")
            super().commit(offsets)

    consumer = Flappy([{p0: [Msg("spans", 0, 3, None, records_request(rag_spans(2)))]}])
    runner = _runner(r, consumer, deps)
    r.clock.now = T0 + 10
    runner.step()
    assert consumer.commits == [] and "kafka" in deps.down()
    consumer.fail = False
    r.clock.now += 1.0
    runner.step()
    assert consumer.commits == [{p0: 4}] and deps.down() == {}
    runner.close()


def test_write_back_failures_mark_it_down_until_a_delivery_succeeds() -> None:
    from ragtrace_consumers.errors import WriteBackError
    from ragtrace_consumers.runtime.retry import WatchedSink

    class Sink:
        def __init__(self) -> None:
            self.up = False
            self.closed = False

        def write_many(self, batch: Sequence[Any]) -> list[WriteBackError | None]:
            return [None if self.up else WriteBackError(f"{b} not delivered") for b in batch]

        def write(self, scores: Any) -> None:
            raise AssertionError("WatchedSink delivers through write_many")

        def shutdown(self) -> None:
            self.closed = True

    names: list[Any] = ["t1", "t2", "t3", "t4"]  # stand-ins for scores: the sink only names them
    errors: list[str] = []
    deps = Dependencies(on_error=errors.append)
    inner = Sink()
    sink = WatchedSink(inner, deps)
    assert [str(e) for e in sink.write_many(names[:2])] == [
        "t1 not delivered",
        "t2 not delivered",
    ]
    assert set(deps.down()) == {"writeback"} and errors == ["writeback"]
    with pytest.raises(WriteBackError):
        sink.write(names[2])
    inner.up = True
    assert sink.write_many(names[3:]) == [None]
    assert deps.down() == {} and errors == ["writeback", "writeback"]
    sink.shutdown()
    assert inner.closed


def test_service_start_waits_then_names_kafka(monkeypatch: pytest.MonkeyPatch) -> None:
    from unittest import mock

    from ragtrace_consumers.runtime.kafka_service import build_service
    from ragtrace_consumers.stores import redis as redis_stores

    monkeypatch.setattr(redis_stores, "connect", lambda url: mock.MagicMock(name="redis"))
    cfg = ConsumerConfig.defaults().replace(
        health={"startup_wait_s": 0.5},
        kafka={"bootstrap_servers": "127.0.0.1:1"},
        judge={"name": "lexical"},
    )
    with pytest.raises(
        DependencyUnavailable,
        match=r"^Kafka at 127\.0\.0\.1:1 unavailable after "
        r"\d s: KafkaTimeoutError: Unable to "
        r"bootstrap",
    ):
        build_service(cfg)


def test_a_poll_that_fails_on_a_broker_outage_is_retried() -> None:
    r = rig()
    deps = Dependencies()
    p0 = TP("spans", 0)

    class Outage(FakeConsumer):
        failures = 2

        def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> Any:
            if self.failures:
                self.failures -= 1
                raise TimeoutError("broker unavailable")
            return super().poll(timeout_ms, max_records)

    consumer = Outage([{p0: [Msg("spans", 0, 0, None, records_request(rag_spans(3)))]}])
    kafka_retry = Retrier("kafka", (TimeoutError,), dependencies=deps, sleep=lambda s: None)
    runner = _runner(r, consumer, deps, kafka_retry=kafka_retry)
    r.clock.now = T0 + 10
    runner.step()
    assert consumer.failures == 0 and consumer.commits == [{p0: 1}] and deps.down() == {}
    runner.close()
