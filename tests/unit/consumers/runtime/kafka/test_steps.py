"""The Kafka runner's steps on their own: each does its one job against the in-process
stand-ins for KafkaConsumer/KafkaProducer (the composed behaviour is in
test_runner.py)."""

from __future__ import annotations

from typing import Any

from ragtrace_consumers.errors import DLQ_HEADER_REASON
from ragtrace_consumers.intake.kafka_poll import KafkaIntake
from ragtrace_consumers.runtime.kafka import (
    DeadLetters,
    Ingest,
    LagProbe,
    Membership,
    Offsets,
)
from ragtrace_consumers.runtime.kafka.calls import kafka_call
from tests.otlp_requests import records_request
from tests.unit.consumers.runtime.kafka.kafka_fakes import (
    TP,
    FakeConsumer,
    FakeProducer,
    LossyProducer,
    Msg,
)
from tests.unit.consumers.scoring_helpers import T0, rag_spans, rig


def _offsets(r: Any, consumer: FakeConsumer) -> Offsets:
    dead = DeadLetters(FakeProducer(), "spans.dlq", r.metrics, kafka_call(None))
    return Offsets(consumer, dead, interval_s=1.0, clock=r.clock)


def test_intake_decodes_a_poll_and_dead_letters_what_it_cannot_decode() -> None:
    r = rig()
    p0 = TP("spans", 0)
    consumer = FakeConsumer(
        [
            {
                p0: [
                    Msg("spans", 0, 4, None, records_request(rag_spans(1))),
                    Msg("spans", 0, 5, b"k", b"\xff\x00garbage"),
                ]
            }
        ]
    )
    producer = FakeProducer()
    dead = DeadLetters(producer, "spans.dlq", r.metrics, kafka_call(None))
    intake = KafkaIntake(consumer, dead, kafka_call(None), max_poll_records=10)
    decoded = intake.poll(0)
    assert decoded is not None and decoded.spans and intake.messages == 2
    assert decoded.first == {p0: 4} and decoded.last == {p0: 5}
    assert dead.sent == 1 and producer.sent[0][0] == "spans.dlq"
    assert dict(producer.sent[0][3])[DLQ_HEADER_REASON]
    assert intake.poll(0) is None  # nothing more to read


def test_dead_letters_are_acknowledged_only_once_the_broker_took_every_one() -> None:
    r = rig()
    producer = LossyProducer()
    dead = DeadLetters(producer, "spans.dlq", r.metrics, kafka_call(None))
    assert dead.acknowledged()  # nothing sent
    dead.send(Msg("spans", 0, 0, None, b"x"), "decode_error", "bad")
    assert not dead.acknowledged() and len(producer.sent) == 2  # the lost one is sent again
    assert dead.acknowledged()


def test_offsets_advance_only_after_ingest_and_commit_when_due() -> None:
    r = rig()
    p0 = TP("spans", 0)
    consumer = FakeConsumer([])
    offsets = _offsets(r, consumer)
    ingest = Ingest(consumer, r.pipeline, offsets, r.clock)
    dead = DeadLetters(FakeProducer(), "spans.dlq", r.metrics, kafka_call(None))
    intake = KafkaIntake(consumer, dead, kafka_call(None), max_poll_records=10)
    ingest.submit(intake.decode({p0: [Msg("spans", 0, 7, None, records_request(rag_spans(2)))]}))
    assert ingest.spans > 0
    r.clock.now = T0
    assert offsets.due(r.clock.now)
    offsets.commit()
    assert consumer.commits == [{p0: 8}] and offsets.committed == {p0: 8}
    assert not offsets.due(r.clock.now + 0.5) and offsets.due(r.clock.now + 1.0)
    offsets.commit()  # nothing new: no commit call
    assert consumer.commits == [{p0: 8}]
    offsets.forget([p0])
    assert offsets.committed == {}


def test_offsets_tick_commits_when_due_and_join_commits_what_is_left() -> None:
    r = rig()
    p0 = TP("spans", 0)
    consumer = FakeConsumer([])
    offsets = _offsets(r, consumer)
    r.clock.now = T0
    offsets.advance({p0: 1})
    offsets.tick(T0)
    assert consumer.commits == [{p0: 2}]
    offsets.advance({p0: 2})
    offsets.tick(T0 + 0.5)  # not due
    assert consumer.commits == [{p0: 2}]
    offsets.join()  # shutdown: due or not
    assert consumer.commits == [{p0: 2}, {p0: 3}]


def test_membership_pauses_new_partitions_while_paused_and_commits_revoked_ones() -> None:
    r = rig()
    p0, p1 = TP("spans", 0), TP("spans", 1)
    consumer = FakeConsumer([])
    offsets = _offsets(r, consumer)
    lag = LagProbe(consumer, r.metrics, r.clock, lambda: offsets.committed)
    membership = Membership(consumer, offsets, lag, kafka_call(None), stall_timeout_s=10.0)
    membership.pause()
    assert consumer.paused == {p0, p1}
    membership.on_partitions_assigned([TP("spans", 2)])
    assert TP("spans", 2) in consumer.paused
    membership.resume()
    assert consumer.paused == {TP("spans", 2)}  # resumes what it holds
    offsets.advance({p0: 3})
    membership.on_partitions_revoked([p0])
    assert consumer.commits == [{p0: 4}] and offsets.committed == {}


def test_lag_is_measured_at_most_once_a_second() -> None:
    r = rig()
    consumer = FakeConsumer([])
    committed: dict[Any, int] = {}
    lag = LagProbe(consumer, r.metrics, r.clock, lambda: committed)
    assert lag.total is None
    r.clock.now = T0
    lag.tick(T0)
    assert lag.total == 2 * (10 - 2)  # two partitions, nothing committed: end - beginning
    committed.update({TP("spans", 0): 10, TP("spans", 1): 10})  # caught up
    r.clock.now = T0 + 5  # the tracker's own interval has passed
    lag.tick(T0 + 0.5)
    assert lag.total == 16  # the probe's second has not: not measured again
    lag.tick(T0 + 5)
    assert lag.total == 0
