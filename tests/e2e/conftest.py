"""Session fixtures that start the real services on free loopback ports (contract E).

Each fixture starts its service once per test session with its data and log in a pytest temp
directory and stops it (its whole process group) at the end. A service that is not installed
makes the fixture FAIL with "run `make provision`" — never skip: a skipped end-to-end test would
hide a missing service in CI. When an e2e test fails, the tail of every service's log is added to
its report.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:  # `scripts` is imported from the repository root
    sys.path.insert(0, str(_ROOT))

from scripts.services import (
    CollectorEndpoints,
    NotProvisioned,
    OtlpSink,
    PrometheusServer,
    RedisClusterNodes,
    ServiceError,
    ServiceProcess,
    create_topic,
    start_collector,
    start_kafka,
    start_prometheus,
    start_redis,
    start_redis_cluster,
)

# `online_run`: the whole online pipeline run once (tests/e2e/online.py), for its own tests and
# for every test that needs real consumer metrics in Prometheus.
from tests.e2e.online import online_run  # noqa: F401

#: The Kafka topic the session collector writes application spans to (3 partitions).
SPANS_TOPIC = "otlp_spans"
SPANS_TOPIC_PARTITIONS = 3

T = TypeVar("T")
_PORT_CLASH = re.compile(r"address already in use|bind: address|BindException", re.IGNORECASE)
_started: list[ServiceProcess] = []


def _start(what: str, starter: Callable[[], T], attempts: int = 3) -> T:
    """Run a starter; turn a missing binary or a failed start into a test failure, never a skip.

    A free port can be taken by another process between choosing and binding it (several test
    sessions share the machine): a start that failed on a port clash is retried, and each
    starter picks new ports and a new temp directory."""
    for attempt in range(1, attempts + 1):
        try:
            return starter()
        except NotProvisioned as exc:
            message = str(exc)
            break
        except ServiceError as exc:
            message = f"{what} did not start:\n{exc}"
            if attempt == attempts or not _PORT_CLASH.search(str(exc)):
                break
    pytest.fail(message, pytrace=False)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/e2e is an e2e test, marked or not."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and _started and item.get_closest_marker("e2e"):
        for proc in _started:
            report.sections.append(
                (f"service log: {proc.name} ({proc.log_path})", proc.log_tail(30))
            )
    return report


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``redis://127.0.0.1:PORT/0`` of a private redis-server (no persistence)."""
    server = _start("Redis", lambda: start_redis(tmp_path_factory.mktemp("redis")))
    _started.append(server.process)
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterNodes]:
    """A private Redis Cluster: three primaries, three replicas (``.url`` is its first node's
    plain ``redis://`` URL; ``.failover(port)`` promotes a replica)."""
    cluster = _start(
        "Redis Cluster", lambda: start_redis_cluster(tmp_path_factory.mktemp("redis-cluster"))
    )
    _started.extend(node.process for node in cluster.nodes)
    yield cluster
    cluster.stop()


@pytest.fixture(params=["redis", "redis-cluster"])
def any_redis_url(request: pytest.FixtureRequest) -> str:
    """The URL of the session Redis server, then of the session Redis Cluster (any node's plain
    URL: the client finds out it is a cluster)."""
    if request.param == "redis":
        return str(request.getfixturevalue("redis_url"))
    return str(request.getfixturevalue("redis_cluster").url)


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``127.0.0.1:PORT`` of a private single-node Kafka broker (KRaft)."""
    broker = _start("Kafka", lambda: start_kafka(tmp_path_factory.mktemp("kafka")))
    _started.append(broker.process)
    yield broker.bootstrap
    broker.stop()


@pytest.fixture(scope="session")
def kafka_topic(kafka_bootstrap: str) -> Callable[..., str]:
    """``kafka_topic(name, partitions=3, config=None) -> name``: create a topic (idempotent)
    on the session broker and wait until every partition has a leader."""

    def create(name: str, partitions: int = 3, config: dict[str, str] | None = None) -> str:
        return create_topic(kafka_bootstrap, name, partitions, config=config)

    return create


@pytest.fixture(scope="session")
def trace_backend() -> Iterator[OtlpSink]:
    """An OTLP/HTTP receiver recording every span the collector sends to "the user's trace
    backend"; ``wait_for_spans(predicate, count, timeout)`` blocks until they arrived."""
    with OtlpSink() as sink:
        yield sink


@pytest.fixture(scope="session")
def collector(
    tmp_path_factory: pytest.TempPathFactory, kafka_bootstrap: str, trace_backend: OtlpSink
) -> Iterator[CollectorEndpoints]:
    """The built collector running the real collector/config.yaml: application spans to the
    Kafka topic ``.topic`` (created with 3 partitions) and to ``trace_backend``; evaluation spans
    and metrics (``.eval_otlp_http``) to ``trace_backend`` and the Prometheus exporter."""
    _start(
        "Kafka topic", lambda: create_topic(kafka_bootstrap, SPANS_TOPIC, SPANS_TOPIC_PARTITIONS)
    )
    running = _start(
        "The collector",
        lambda: start_collector(
            tmp_path_factory.mktemp("collector"),
            kafka_bootstrap,
            trace_backend.endpoint,
            topic=SPANS_TOPIC,
        ),
    )
    _started.append(running.process)
    yield running.endpoints
    running.stop()


@pytest.fixture(scope="session")
def prometheus(
    tmp_path_factory: pytest.TempPathFactory, collector: CollectorEndpoints
) -> Iterator[PrometheusServer]:
    """Prometheus scraping the collector's exporter (job "ragtrace", honor_labels) and the
    collector's own metrics (job "otelcol") every second. ``.query(promql)`` and
    ``.wait_for_series(promql, timeout)`` run instant queries."""
    server = _start(
        "Prometheus",
        lambda: start_prometheus(
            tmp_path_factory.mktemp("prometheus"),
            [collector.prometheus_exporter],
            [collector.telemetry_metrics],
        ),
    )
    _started.append(server.process)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def prometheus_url(prometheus: PrometheusServer) -> str:
    """``http://127.0.0.1:PORT`` of the session Prometheus (see the ``prometheus`` fixture for
    the query helpers; ``scripts.services.prometheus.query``/``wait_for_series`` take the URL)."""
    return prometheus.url
