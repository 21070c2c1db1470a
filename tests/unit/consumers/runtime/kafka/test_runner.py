"""The Kafka runner against an in-process stand-in for KafkaConsumer/KafkaProducer: offsets
only after durable ingest, the dead-letter topic, backpressure, draining on stop."""

from __future__ import annotations

import threading
from collections import namedtuple
from typing import Any

import pytest

from ragtrace_consumers.errors import DLQ_HEADER_DETAIL, DLQ_HEADER_REASON
from ragtrace_consumers.runtime.kafka import (
    DLQ_HEADER_OFFSET,
    DLQ_HEADER_PARTITION,
    DLQ_HEADER_TOPIC,
    KafkaRunner,
)
from ragtrace_consumers.scoring.pipeline import PipelineSettings
from ragtrace_consumers.scoring.workers import ScoringWorkers
from tests.otlp_requests import records_request
from tests.unit.consumers.runtime.kafka.kafka_fakes import TP, FakeConsumer, FakeProducer, Msg
from tests.unit.consumers.scoring_helpers import T0, Rig, ScriptedJudge, grounded, rag_spans, rig


def _runner(
    r: Rig,
    consumer: FakeConsumer,
    producer: FakeProducer,
    workers: int = 2,
    *,
    budgeted: bool = True,
) -> tuple[KafkaRunner, ScoringWorkers]:
    # In flight = judge threads (or whole claim batches for a judge without a time budget).
    w = ScoringWorkers(r.pipeline, workers, depth=1, budgeted=budgeted)
    runner = KafkaRunner(
        consumer,
        producer,
        r.pipeline,
        w,
        r.metrics,
        dlq_topic="spans.dlq",
        commit_interval_s=1.0,
        drain_timeout_s=5.0,
        clock=r.clock,
    )
    return runner, w


def test_offsets_are_committed_after_ingest_and_throttled() -> None:
    r = rig()
    p0, p1 = TP("spans", 0), TP("spans", 1)
    consumer = FakeConsumer(
        [
            {p0: [Msg("spans", 0, 5, b"k", records_request(rag_spans(1)))]},
            {p1: [Msg("spans", 1, 9, b"k", records_request(rag_spans(2)))]},
        ]
    )
    runner, workers = _runner(r, consumer, FakeProducer())
    r.clock.now = T0 + 10
    runner.step()  # first step commits (interval elapsed since 0)
    assert consumer.commits == [{p0: 6}]
    runner.step()  # same second: no commit yet
    assert consumer.commits == [{p0: 6}]
    r.clock.now += 1.0
    runner.step()
    assert consumer.commits == [{p0: 6}, {p1: 10}]
    r.clock.now += 1.0
    runner.step()  # nothing new: no empty commit
    assert len(consumer.commits) == 2
    # Measured at the first step: p0 committed at 6 (10 - 6), p1 never committed, counted from
    # its beginning (10 - 2); measured again 5 s later, from the runner's own commits.
    assert runner._lag == 4 + 8
    r.clock.now += 5.0
    runner.step()
    assert runner._lag == 4 + 0
    assert [(x.partition, x.lag) for x in runner._lag_tracker.last or ()] == [(0, 4), (1, 0)]
    runner.close()
    assert consumer.closed
    assert workers.completed == 2 and len(r.spans()) == 2


def test_malformed_message_goes_to_the_dead_letter_topic_with_reason_headers() -> None:
    r = rig()
    p0 = TP("spans", 0)
    good = records_request(rag_spans(3))
    consumer = FakeConsumer(
        [{p0: [Msg("spans", 0, 0, b"k1", b"\xff\x00garbage"), Msg("spans", 0, 1, b"k2", good)]}]
    )
    producer = FakeProducer()
    runner, _ = _runner(r, consumer, producer)
    r.clock.now = T0 + 10
    runner.step()
    ((topic, value, key, headers),) = producer.sent
    assert (topic, value, key) == ("spans.dlq", b"\xff\x00garbage", b"k1")
    h = dict(headers)
    assert h[DLQ_HEADER_REASON] == b"protobuf_parse_error"
    assert h[DLQ_HEADER_DETAIL]
    assert (h[DLQ_HEADER_TOPIC], h[DLQ_HEADER_PARTITION], h[DLQ_HEADER_OFFSET]) == (
        b"spans",
        b"0",
        b"0",
    )
    # The dead letter is flushed before the offset past it is committed.
    assert producer.flushed == 1 and consumer.commits == [{p0: 2}]
    assert r.points("ragtrace.dlq.messages")[(("reason", "protobuf_parse_error"),)] == 1
    runner.close()
    assert len(r.spans()) == 1


def test_failed_ingest_commits_nothing_and_rereads(monkeypatch: pytest.MonkeyPatch) -> None:
    r = rig()
    p0 = TP("spans", 0)
    consumer = FakeConsumer(
        [
            {
                p0: [
                    Msg("spans", 0, 4, None, records_request(rag_spans(4))),
                    Msg("spans", 0, 5, None, records_request(rag_spans(5))),
                ]
            }
        ]
    )

    def down(*_: object) -> None:
        raise ConnectionError("redis down")

    monkeypatch.setattr(r.traces, "append", down)
    runner, _ = _runner(r, consumer, FakeProducer())
    import ragtrace_consumers.runtime.kafka.ingest as kr

    kr_sleep = kr._RETRY_INGEST_S
    kr._RETRY_INGEST_S = 0.0
    try:
        runner.step()
    finally:
        kr._RETRY_INGEST_S = kr_sleep
    assert consumer.seeks == [(p0, 4)]
    assert consumer.commits == []
    runner.close()
    assert consumer.commits == []


def test_backpressure_pauses_partitions_while_every_worker_is_busy() -> None:
    gate = threading.Event()
    r = rig(judge=ScriptedJudge(gate=gate, default=lambda a, c: grounded(1, 1)))
    p0 = TP("spans", 0)
    consumer = FakeConsumer(
        [
            {
                p0: [
                    Msg("spans", 0, i, None, records_request(rag_spans(50 + i, answer=f"a{i}")))
                    for i in range(3)
                ]
            },
            {p0: [Msg("spans", 0, 3, None, records_request(rag_spans(60)))]},
        ]
    )
    runner, workers = _runner(r, consumer, FakeProducer(), workers=2)
    try:
        runner.step()  # ingests three traces, starts two (both block on the judge)
        assert workers.full
        runner.step()  # full: pauses, waits on the workers, polls nothing
        assert consumer.paused == consumer.assigned
        assert len(consumer.batches) == 1  # the second batch was not read
        gate.set()
        assert workers.drain(5.0)
        runner.step()  # a worker is free again: resumes and reads
        assert consumer.paused == set() and consumer.batches == []
    finally:
        gate.set()
        runner.close()
    assert len(r.spans()) == 4


def test_a_backlog_of_due_traces_is_claimed_back_to_back_without_waiting_in_poll() -> None:
    r = rig(settings=PipelineSettings(quiet_s=5.0, lease_s=60.0, claim_batch=2))
    p0 = TP("spans", 0)
    consumer = FakeConsumer(
        [{p0: [Msg("spans", 0, i, None, records_request(rag_spans(70 + i))) for i in range(5)]}]
    )
    runner, w = _runner(r, consumer, FakeProducer(), 1, budgeted=False)  # room for all five
    try:
        r.clock.now = T0
        runner.step()  # reads the five, claims two of them
        consumer.timeouts.clear()
        runner.step()  # two more due: the poll does not wait for new messages
        runner.step()  # the last one
        assert consumer.timeouts == [0, 0]
        assert w.drain(5.0) and r.traces.pending() == 0  # all five claimed in three steps
        runner.step()  # the claim found nothing: polls wait again
        assert consumer.timeouts[-1] > 0
    finally:
        runner.close()
    assert len(r.spans()) == 5


def test_stop_drains_in_flight_scoring_then_commits_and_leaves() -> None:
    gate = threading.Event()
    r = rig(judge=ScriptedJudge(gate=gate, default=lambda a, c: grounded(1, 1)))
    p0 = TP("spans", 0)
    consumer = FakeConsumer([{p0: [Msg("spans", 0, 0, None, records_request(rag_spans(70)))]}])
    runner, workers = _runner(r, consumer, FakeProducer())
    r.clock.now = T0  # no commit interval elapsed after the first step
    runner._last_commit = T0
    runner.step()
    assert workers.in_flight == 1 and consumer.commits == []
    stop = threading.Event()
    stop.set()
    threading.Timer(0.2, gate.set).start()
    runner.run(stop)  # returns after draining
    assert len(r.spans()) == 1
    assert consumer.commits == [{p0: 1}] and consumer.closed


def test_revoked_partitions_are_committed_first() -> None:
    r = rig()
    p0, p1 = TP("spans", 0), TP("spans", 1)
    consumer = FakeConsumer(
        [
            {
                p0: [Msg("spans", 0, 0, None, records_request(rag_spans(80)))],
                p1: [Msg("spans", 1, 3, None, records_request(rag_spans(81)))],
            }
        ]
    )
    runner, _ = _runner(r, consumer, FakeProducer())
    runner._last_commit = r.clock.now
    runner.step()
    runner.on_partitions_revoked([p1])
    assert consumer.commits == [{p1: 4}]
    runner.close()
    assert consumer.commits == [{p1: 4}, {p0: 1}]


GroupMetadata = namedtuple("GroupMetadata", "state")


class GroupConsumer(FakeConsumer):
    """FakeConsumer with the group-membership calls the runner makes (kafka-python's names)."""

    def __init__(self, partitions: set[int]) -> None:
        super().__init__([])
        self.assigned = set()
        self.partitions = partitions
        self.state = "<unjoined>"
        self.calls: list[str] = []
        self.listener: Any = None
        self.async_commits: list[dict[Any, int]] = []

    def subscribe(self, topics: list[str], listener: Any = None) -> None:
        self.calls.append(f"subscribe {','.join(topics)}")
        self.listener = listener

    def unsubscribe(self) -> None:
        self.calls.append("unsubscribe")
        self.assigned = set()
        self.state = "<unjoined>"

    def topics(self) -> set[str]:
        self.calls.append("topics")
        return {"spans"}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(self.partitions)

    def group_metadata(self) -> GroupMetadata:
        return GroupMetadata(self.state)

    def commit_async(self, offsets: dict[Any, Any]) -> None:
        self.async_commits.append({tp: om.offset for tp, om in offsets.items()})


def _group_runner(
    r: Rig,
    consumer: GroupConsumer,
    stall_s: float = 30.0,
) -> KafkaRunner:
    return KafkaRunner(
        consumer,
        FakeProducer(),
        r.pipeline,
        ScoringWorkers(r.pipeline, 1),
        r.metrics,
        dlq_topic="spans.dlq",
        stall_timeout_s=stall_s,
        clock=r.clock,
    )


def test_subscribe_loads_topic_metadata_after_subscribing_before_any_poll() -> None:
    r = rig()
    consumer = GroupConsumer({0, 1, 2})
    runner = _group_runner(r, consumer)
    assert runner.subscribe("spans") == {0, 1, 2}
    # The metadata fetch comes after subscribe (the coordinator must see it while subscribed)
    # and before the first poll (the first join).
    assert consumer.calls == ["subscribe spans", "topics"]
    from kafka import ConsumerRebalanceListener

    assert isinstance(consumer.listener, ConsumerRebalanceListener)
    runner.close()


def test_listener_revocation_commits_without_blocking_the_io_thread() -> None:
    r = rig()
    p0 = TP("spans", 0)
    consumer = GroupConsumer({0})
    consumer.batches = [{p0: [Msg("spans", 0, 4, None, records_request(rag_spans(90)))]}]
    runner = _group_runner(r, consumer)
    runner.subscribe("spans")
    runner._last_commit = r.clock.now
    runner.step()
    consumer.listener.on_partitions_revoked({p0})
    assert consumer.async_commits == [{p0: 5}] and consumer.commits == []
    runner.close()


def test_membership_unsettled_past_the_stall_timeout_leaves_and_rejoins() -> None:
    r = rig()
    p0 = TP("spans", 0)
    consumer = GroupConsumer({0, 1})
    runner = _group_runner(r, consumer, stall_s=10.0)
    runner.subscribe("spans")
    consumer.calls.clear()
    consumer.state, consumer.assigned = "<stable>", {p0}
    for _ in range(30):  # stable for 30 s: nothing happens
        r.clock.now += 1.0
        runner.step()
    consumer.state = "<rebalancing>"  # a join that never completes
    for _ in range(10):
        r.clock.now += 1.0
        runner.step()
    assert runner.forced_rejoins == 0 and consumer.calls == []
    r.clock.now += 1.0
    runner.step()  # unsettled for 10 s: leave, subscribe again, reload the metadata
    assert runner.forced_rejoins == 1
    assert consumer.calls == ["unsubscribe", "subscribe spans", "topics"]
    # Still stuck: the next forced re-join waits twice as long (then 4x, capped at 8x).
    for _ in range(19):
        r.clock.now += 1.0
        runner.step()
    assert runner.forced_rejoins == 1
    r.clock.now += 1.0
    runner.step()
    assert runner.forced_rejoins == 2
    consumer.state = "<stable>"  # settled: the backoff starts over
    r.clock.now += 1.0
    runner.step()
    consumer.state = "<rebalancing>"
    for _ in range(11):
        r.clock.now += 1.0
        runner.step()
    assert runner.forced_rejoins == 3
    runner.close()


def test_no_forced_rejoin_while_the_topic_has_no_partitions() -> None:
    r = rig()
    consumer = GroupConsumer(set())
    runner = _group_runner(r, consumer, stall_s=5.0)
    runner.subscribe("spans")
    for _ in range(60):  # a topic not created yet: joining cannot give partitions
        r.clock.now += 1.0
        runner.step()
    assert runner.forced_rejoins == 0
    runner.close()
