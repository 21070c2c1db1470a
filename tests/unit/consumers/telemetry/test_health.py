"""The health endpoints: /livez from the consume loop's heartbeat, /readyz from Redis and the
Kafka consumer's state, the consumer wrapper that feeds them, and the service wiring."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from ragtrace_consumers.config import ConfigError, ConsumerConfig, load_config
from ragtrace_consumers.telemetry.health import HealthServer, Heartbeat, KafkaProgress, redis_check
from tests.unit.consumers.service_fakes import FakeKafkaConsumer, build_with_fakes


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def server(clock: Clock) -> Iterator[HealthServer]:
    srv = HealthServer("127.0.0.1", 0, heartbeat=Heartbeat(clock), liveness_timeout_s=30)
    srv.start()
    yield srv
    srv.stop()


# --- heartbeat -------------------------------------------------------------------------------
def test_heartbeat_age_counts_from_the_last_beat(clock: Clock) -> None:
    hb = Heartbeat(clock)
    clock.now += 7
    assert hb.age() == 7.0 and hb.beats == 0
    hb.beat()
    clock.now += 2.5
    assert hb.age() == 2.5 and hb.beats == 1


# --- /livez ----------------------------------------------------------------------------------
def test_livez_ok_while_the_loop_makes_progress(server: HealthServer, clock: Clock) -> None:
    clock.now += 12
    assert get(server.url + "/livez") == (
        200,
        {"status": "ok", "checks": {"loop": "last progress 12.0s ago"}},
    )
    clock.now += 18  # exactly the timeout: still live
    assert get(server.url + "/livez")[0] == 200


def test_livez_fails_once_the_loop_is_stuck(server: HealthServer, clock: Clock) -> None:
    clock.now += 30.5
    assert get(server.url + "/livez") == (
        503,
        {"status": "failing", "checks": {"loop": "last progress 30.5s ago (more than 30s: stuck)"}},
    )
    server.heartbeat.beat()
    assert get(server.url + "/livez")[0] == 200


def test_a_draining_replica_is_live_but_not_ready(server: HealthServer, clock: Clock) -> None:
    server.draining = lambda: True
    clock.now += 500  # the loop no longer polls while it drains
    assert get(server.url + "/livez") == (200, {"status": "ok", "checks": {"loop": "draining"}})
    assert get(server.url + "/readyz") == (
        503,
        {"status": "failing", "checks": {"replica": "draining"}},
    )


# --- /readyz ---------------------------------------------------------------------------------
def test_readyz_reports_every_check(server: HealthServer) -> None:
    server.readiness = {"redis": lambda: (True, "ping ok"), "kafka": lambda: (True, "2 assigned")}
    assert get(server.url + "/readyz") == (
        200,
        {"status": "ok", "checks": {"redis": "ping ok", "kafka": "2 assigned"}},
    )
    server.readiness["kafka"] = lambda: (False, "no partitions assigned and no broker connection")
    assert get(server.url + "/readyz") == (
        503,
        {
            "status": "failing",
            "checks": {
                "redis": "ping ok",
                "kafka": "no partitions assigned and no broker connection",
            },
        },
    )


def test_a_raising_check_fails_readiness_with_its_error(server: HealthServer) -> None:
    client = mock.Mock()
    client.ping.side_effect = ConnectionError("Error 111 connecting to redis:6379")
    server.readiness = {"redis": redis_check(client)}
    assert get(server.url + "/readyz") == (
        503,
        {
            "status": "failing",
            "checks": {"redis": "ConnectionError('Error 111 connecting to redis:6379')"},
        },
    )
    client.ping.side_effect = None
    assert get(server.url + "/readyz") == (200, {"status": "ok", "checks": {"redis": "ping ok"}})


def test_unknown_paths_are_404(server: HealthServer) -> None:
    assert get(server.url + "/metrics") == (
        404,
        {"status": "not found", "paths": ["/livez", "/readyz"]},
    )
    assert get(server.url + "/livez?verbose=1")[0] == 200


def test_the_port_is_bound_at_construction(server: HealthServer, clock: Clock) -> None:
    with pytest.raises(OSError):
        HealthServer("127.0.0.1", server.port, heartbeat=Heartbeat(clock), liveness_timeout_s=1)


def test_stop_closes_the_port_and_is_idempotent(clock: Clock) -> None:
    srv = HealthServer("127.0.0.1", 0, heartbeat=Heartbeat(clock), liveness_timeout_s=1).start()
    port = srv.port
    srv.stop()
    srv.stop()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"liveness_timeout_s": 0}, "liveness_timeout_s must be > 0, got 0"),
        ({"liveness_timeout_s": 1, "port": 70000}, "port must be within 0..65535, got 70000"),
    ],
)
def test_bad_arguments_raise(clock: Clock, kwargs: dict[str, Any], message: str) -> None:
    args = {"port": 0, **kwargs}
    with pytest.raises(ValueError, match=message):
        HealthServer("127.0.0.1", args.pop("port"), heartbeat=Heartbeat(clock), **args)


# --- the consumer wrapper --------------------------------------------------------------------
def test_kafka_progress_beats_on_every_poll_and_observes_once_a_second(clock: Clock) -> None:
    fake = FakeKafkaConsumer()
    hb = Heartbeat(clock)
    progress = KafkaProgress(fake, hb, clock=clock)
    assert progress.check() == (False, "not polled yet")
    assert progress.poll(timeout_ms=0) == {}
    assert (hb.beats, fake.polls) == (1, 1)
    assert progress.check() == (False, "no partitions assigned and no broker connection")
    fake.metrics_value = {"consumer-metrics": {"connection-count": 2.0}}
    fake.assigned = {("otlp_spans", 0), ("otlp_spans", 1)}
    progress.poll(timeout_ms=0)  # within the second: not observed again
    assert progress.check() == (False, "no partitions assigned and no broker connection")
    clock.now += 1
    progress.poll(timeout_ms=0)
    assert progress.check() == (True, "partitions assigned: 2")
    assert hb.beats == 3
    fake.assigned = set()
    clock.now += 1
    progress.poll(timeout_ms=0)
    assert progress.check() == (True, "no partitions assigned; broker connections open: 2")


def test_kafka_progress_survives_a_failing_consumer_introspection(clock: Clock) -> None:
    fake = FakeKafkaConsumer()
    fake.metrics = mock.Mock(side_effect=RuntimeError("unstable"))  # type: ignore[method-assign]
    fake.assignment = mock.Mock(side_effect=RuntimeError("rebalancing"))  # type: ignore[method-assign]
    progress = KafkaProgress(fake, Heartbeat(clock), clock=clock)
    progress.poll(timeout_ms=0)
    assert (progress.assigned, progress.connections) == (None, None)
    assert progress.check() == (False, "not polled yet")


def test_kafka_progress_is_the_consumer_otherwise(clock: Clock) -> None:
    fake = FakeKafkaConsumer(group_id="g")
    progress = KafkaProgress(fake, Heartbeat(clock), clock=clock)
    assert progress.kwargs == {"group_id": "g"}
    assert progress.partitions_for_topic("otlp_spans") == {0}
    progress.subscribe(["t"])
    assert fake.subscribed == ["t"]


# --- configuration and wiring ----------------------------------------------------------------
def test_health_is_off_by_default_on_loopback_port_8086() -> None:
    h = ConsumerConfig.defaults().health
    assert (h.enabled, h.host, h.port, h.liveness_timeout_s) == (False, "127.0.0.1", 8086, 120.0)


def test_health_settings_from_the_environment() -> None:
    h = load_config(
        None,
        env={
            "RAGTRACE_HEALTH_ENABLED": "true",
            "RAGTRACE_HEALTH_HOST": "0.0.0.0",
            "RAGTRACE_HEALTH_PORT": "9000",
            "RAGTRACE_HEALTH_LIVENESS_TIMEOUT_S": "45",
        },
    ).health
    assert (h.enabled, h.host, h.port, h.liveness_timeout_s) == (True, "0.0.0.0", 9000, 45.0)


@pytest.mark.parametrize(
    "body, message",
    [
        ("port: 65536\n", "health.port: must be within 0..65535 (0: a free port), got 65536"),
        ("liveness_timeout_s: 0\n", "health.liveness_timeout_s: must be > 0, got 0.0"),
        ("enabled: sometimes\n", "health.enabled: expected boolean, got 'sometimes'"),
    ],
)
def test_bad_health_settings_name_the_key(tmp_path: Path, body: str, message: str) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("health:\n  " + body)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_config(f, env={})


def test_no_health_server_unless_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    built = build_with_fakes(monkeypatch, ConsumerConfig.defaults())
    try:
        assert built.service.health is None
    finally:
        built.service.meter_provider.shutdown()


def test_the_service_serves_health_fed_by_its_consumer(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = ConsumerConfig.defaults().replace(
        health={"enabled": True, "port": 0, "liveness_timeout_s": 60}
    )
    built = build_with_fakes(monkeypatch, cfg)
    health = built.service.health
    assert health is not None
    assert health.liveness_timeout_s == 60.0
    health.start()
    try:
        assert get(health.url + "/readyz") == (
            503,
            {
                "status": "failing",
                "checks": {
                    "redis": "ping ok",
                    "kafka": "not polled yet",
                    "dependencies": "none down",
                },
            },
        )
        built.consumer.assigned = {("otlp_spans", 0)}
        # The runner polls through the wrapper (the heartbeat beats, the assignment is seen).
        runner_consumer = built.service.runner._consumer
        assert isinstance(runner_consumer, KafkaProgress)
        before = health.heartbeat.beats
        runner_consumer.poll(timeout_ms=0, max_records=10)
        assert health.heartbeat.beats == before + 1 and built.consumer.polls == 1
        assert get(health.url + "/readyz") == (
            200,
            {
                "status": "ok",
                "checks": {
                    "redis": "ping ok",
                    "kafka": "partitions assigned: 1",
                    "dependencies": "none down",
                },
            },
        )
        built.redis.ping.side_effect = ConnectionError("down")
        assert get(health.url + "/readyz")[0] == 503
        assert get(health.url + "/livez")[0] == 200
    finally:
        built.service.shutdown()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", health.port), timeout=1):
        pass
