"""``ragtrace consume`` on a real Redis Cluster (three primaries, three replicas), given only one
node's plain ``redis://`` URL: under steady traffic through the real collector and Kafka, every
accepted trace is scored exactly once — and still when a primary hands over to its replica and
is then killed. The soak's history checker (tests/soak/history.py) decides. The cluster, the
collector and the topic are private to this module (a failover must not disturb other tests).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragtrace import semconv
from ragtrace_consumers.stores.redis import RedisTraceStore, connect
from scripts.services import (
    Collector,
    NotProvisioned,
    OtlpSink,
    RedisClusterNodes,
    create_topic,
    start_collector,
    start_redis_cluster,
)
from tests.e2e import online_app
from tests.e2e.chaos import Sender
from tests.e2e.online import (
    ASSIGNED,
    DLQ_TOPIC,
    ConsumerProcess,
    consumer_env,
    evaluation_spans,
    group_at_end,
    load_labels,
    run_app,
    start_consumer,
    verbatim_responder,
)
from tests.fakes.anthropic_server import FakeAnthropic
from tests.soak.history import History, check

pytestmark = pytest.mark.e2e

TOPIC = "cluster_spans"


@dataclass
class Stack:
    tmp: Path
    cluster: RedisClusterNodes
    kafka_bootstrap: str
    collector: Collector
    backend: OtlpSink
    judge: FakeAnthropic

    @property
    def app_url(self) -> str:
        return self.collector.endpoints.app_otlp_http + "/v1/traces"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, kafka_bootstrap: str) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("cluster")
    try:
        cluster = start_redis_cluster(tmp / "redis")
    except NotProvisioned as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        create_topic(kafka_bootstrap, TOPIC, 3)
        create_topic(kafka_bootstrap, DLQ_TOPIC, 1)
        with OtlpSink() as backend, FakeAnthropic(verbatim_responder(delay_s=0.05)) as judge:
            collector = start_collector(
                tmp / "collector", kafka_bootstrap, backend.endpoint, topic=TOPIC
            )
            try:
                yield Stack(tmp, cluster, kafka_bootstrap, collector, backend, judge)
            finally:
                collector.stop()
    finally:
        cluster.stop()


def _consumer(stack: Stack, name: str, prefix: str | None = None) -> tuple[ConsumerProcess, str]:
    group, prefix = f"cluster-{name}-{uuid.uuid4().hex[:6]}", prefix or f"c-{uuid.uuid4().hex[:6]}"
    group_at_end(stack.kafka_bootstrap, TOPIC, group)
    env = consumer_env(
        collector=stack.collector.endpoints,
        redis_url=stack.cluster.url,  # one node's plain URL: the consumer finds the cluster
        prefix=prefix,
        group=group,
        judge_url=stack.judge.base_url,
        extra={
            "RAGTRACE_ASSEMBLY_LEASE_S": "10",
            "RAGTRACE_JUDGE_BUDGET_S": "1",
            "RAGTRACE_ASSEMBLY_QUIET_S": "0.5",
            "RAGTRACE_JUDGE_PARK_BACKOFF_S": "1",
            "RAGTRACE_JUDGE_PARK_BACKOFF_MAX_S": "5",
            "RAGTRACE_JUDGE_CALLS_PER_MINUTE": "100000",
            "RAGTRACE_JUDGE_CONCURRENCY": "4",
        },
    )
    consumer = start_consumer(env, stack.tmp / f"{name}.log")
    consumer.wait_for_log(ASSIGNED)
    return consumer, prefix


def _traffic_around(stack: Stack, fault: Callable[[], None], salt: int) -> Sender:
    sender = Sender(stack.app_url, per_request=2, pause_s=0.1, salt=salt)
    sender.start()
    try:
        time.sleep(2.0)
        fault()
        time.sleep(3.0)
    finally:
        sender.stop()
    return sender


def _verdict_holds(stack: Stack, accepted: set[str], prefix: str) -> int:
    """Wait for every accepted trace's results, then check the history; the traces scored."""
    stack.backend.wait_for_spans(
        lambda s: s.trace_id in accepted and s.name.endswith(".groundedness"),
        count=len(accepted),
        timeout=120,
    )
    time.sleep(1.0)  # the collector's batch timeout: a late duplicate would show
    dead = RedisTraceStore(connect(stack.cluster.url), prefix=prefix).dead()
    verdict = check(
        History(
            accepted=dict.fromkeys(accepted, 0.0),
            writebacks=[(0.0, s) for s in stack.backend.spans(lambda s: s.trace_id in accepted)],
            given_up={d.trace_id: d.reason for d in dead},
        )
    )
    assert not verdict.violations, verdict.violations
    assert not verdict.given_up
    return verdict.scored


def test_the_pipeline_on_a_cluster_scores_every_trace_once(stack: Stack) -> None:
    consumer, prefix = _consumer(stack, "steady")
    try:
        sent = _traffic_around(stack, lambda: None, salt=31)
        accepted = set(sent.accepted)
        assert len(accepted) >= 10
        assert _verdict_holds(stack, accepted, prefix) == len(accepted)
        assert consumer.proc.poll() is None, consumer.tail(60)
        # The traces' keys were spread over the primaries (done marks live with their trace).
        holding = [
            port
            for port in stack.cluster.primaries()
            if connect(f"redis://127.0.0.1:{port}/0").dbsize() > 0
        ]
        assert len(holding) == 3, holding
    finally:
        consumer.kill()


def test_the_instrumented_app_on_a_cluster_is_scored_once_with_its_labels(stack: Stack) -> None:
    """Labels loaded with `ragtrace labels load` on the cluster, the instrumented app's traces:
    each scored once, recall against those labels, groundedness as on one server."""
    prefix = f"c-{uuid.uuid4().hex[:6]}"
    labels = stack.tmp / f"{prefix}.jsonl"
    labels.write_text("".join(json.dumps(q) + "\n" for q in online_app.LABELS))
    assert "loaded" in load_labels(stack.cluster.url, prefix, labels)
    consumer, _ = _consumer(stack, "app", prefix)
    try:
        requests = run_app(stack.collector.endpoints.app_otlp_http)
        ids = {r["trace_id"] for r in requests}
        stack.backend.wait_for_spans(
            lambda s: s.name == semconv.SPAN_EVALUATION and s.trace_id in ids,
            count=len(ids),
            timeout=120,
        )
        time.sleep(1.0)  # the collector's batch timeout: a late duplicate would show
        summaries = evaluation_spans(stack.backend, ids)
        assert sorted(s.trace_id for s in summaries) == sorted(ids)  # each once
        key_of = {r["trace_id"]: r["key"] for r in requests}
        for span in summaries:
            recall, _, _, _, groundedness, cell = online_app.EXPECTED[key_of[span.trace_id]]
            assert span.attributes.get(semconv.EVAL_RECALL) == recall, key_of[span.trace_id]
            assert span.attributes[semconv.EVAL_GROUNDEDNESS] == groundedness
            assert span.attributes[semconv.EVAL_CELL] == cell
    finally:
        consumer.kill()


def test_a_primary_failover_under_load_loses_and_duplicates_nothing(stack: Stack) -> None:
    consumer, prefix = _consumer(stack, "failover")
    try:
        primary = stack.cluster.primaries()[0]
        replica = stack.cluster.replica_of(primary)
        old = next(n for n in stack.cluster.nodes if n.port == primary)

        def failover_then_kill() -> None:
            stack.cluster.failover(replica)  # promoted once caught up: no write lost
            old.process.kill()  # and the old primary, now a replica, dies under the clients

        sent = _traffic_around(stack, failover_then_kill, salt=32)
        accepted = set(sent.accepted)
        assert len(accepted) >= 10
        assert _verdict_holds(stack, accepted, prefix) == len(accepted)
        assert consumer.proc.poll() is None, consumer.tail(60)
        assert stack.cluster.role(replica) == "master"
    finally:
        consumer.kill()
