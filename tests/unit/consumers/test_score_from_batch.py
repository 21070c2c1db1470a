"""Traces complete in their batch are scored straight from it (adopted: leased, never stored),
with every guarantee of the store path: offsets committed only once each such trace is
settled (and in batch order), its spans stored whenever it cannot be released, a lost one
re-read, write-back once per (trace, family), late spans counted late."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from ragtrace_consumers.kafka_runner import KafkaRunner
from ragtrace_consumers.kafka_runner.dead_letters import DeadLetters
from ragtrace_consumers.kafka_runner.ingest import Offsets
from ragtrace_consumers.pipeline import Outcome
from ragtrace_consumers.workers import ScoringWorkers
from tests.unit.consumers.scoring_helpers import (
    T0,
    FailingExporter,
    Rig,
    ScriptedJudge,
    grounded,
    rag_spans,
    rig,
    tid,
)
from tests.unit.consumers.test_pipeline_kafka_runner import (
    TP,
    FakeConsumer,
    FakeProducer,
    Msg,
    encode,
)

P0, P1 = TP("spans", 0), TP("spans", 1)


# --- Pipeline.admit and the adopted path ---------------------------------------------------------
def test_admit_adopts_complete_traces_up_to_the_room_and_stores_the_rest() -> None:
    r = rig()
    spans = [*rag_spans(1), *rag_spans(2), *rag_spans(3, root=False)]
    adopted = r.pipeline.admit(spans, T0, room=1)
    assert [(lease.trace_id, len(held)) for lease, held in adopted] == [(tid(1), 3)]
    assert r.traces.load(tid(1)) == []  # never stored
    assert len(r.traces.load(tid(2))) == 3  # complete, but no room: stored, due at once
    assert len(r.traces.load(tid(3))) == 2  # incomplete: stored, waits for its root
    assert [lease.trace_id for lease in r.traces.claim(T0, 10, 60.0)] == [tid(2)]
    assert r.pipeline.admit(rag_spans(4), T0, room=0) == []
    assert len(r.traces.load(tid(4))) == 3


def test_a_trace_the_store_already_holds_is_appended_not_adopted() -> None:
    r = rig()
    r.pipeline.ingest(rag_spans(1, root=False), T0)  # an earlier message brought part of it
    assert r.pipeline.admit(rag_spans(1)[-1:], T0, room=8) == []  # the root arrives alone
    assert len(r.traces.load(tid(1))) == 3
    (lease,) = r.traces.claim(T0, 10, 60.0)
    assert lease.trace_id == tid(1)


def _score(r: Rig, adopted: list[Any]) -> list[Outcome | None]:
    works = r.pipeline.prepare([lease for lease, _ in adopted], [held for _, held in adopted])
    for work in works:
        r.pipeline.judge(work)
    return r.pipeline.finish(works)


def test_an_adopted_trace_is_scored_written_back_marked_and_released() -> None:
    r = rig()
    adopted = r.pipeline.admit(rag_spans(1), T0, room=8)
    assert _score(r, adopted) == [Outcome.SCORED]
    assert len(r.spans()) == 1
    assert r.idempotency.written(tid(1), "groundedness")
    # Released: a late span of it is counted late, never stored nor scored again.
    assert r.pipeline.admit(rag_spans(1), T0 + 1, room=8) == []
    assert r.traces.load(tid(1)) == [] and r.traces.claim(T0 + 100, 10, 60.0) == []
    stats = r.traces.stats()
    assert stats["released"] == 1 and stats["late_spans"] == 3 and stats["spans_appended"] == 0


def test_an_adopted_trace_replayed_after_a_crash_is_not_written_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    r = rig()
    adopted = r.pipeline.admit(rag_spans(1), T0, room=8)

    def crash(leases: Any) -> Any:
        raise ConnectionError("the replica died after marking, before releasing")

    with monkeypatch.context() as m:
        m.setattr(r.traces, "release_many", crash)
        with pytest.raises(ConnectionError):
            _score(r, adopted)
    assert len(r.spans()) == 1 and r.idempotency.written(tid(1), "groundedness")
    # Its batch was never acknowledged: re-read, the trace is still leased, so it is stored
    # (not adopted again) and scored when the lease runs out: the marks skip the write-back.
    assert r.pipeline.admit(rag_spans(1), T0 + 1, room=8) == []
    assert r.traces.claim(T0 + 59, 10, 60.0) == []
    leases = r.traces.claim(T0 + 60, 10, 60.0)
    works = r.pipeline.prepare(leases)
    assert r.pipeline.finish(works) == [Outcome.SKIPPED]
    assert len(r.spans()) == 1


def test_a_failed_write_back_stores_the_spans_and_parks_the_trace() -> None:
    r = rig(exporter=FailingExporter())
    adopted = r.pipeline.admit(rag_spans(1), T0, room=8)
    assert _score(r, adopted) == [Outcome.PARKED]
    assert len(r.traces.load(tid(1))) == 3  # durable before it was parked
    assert r.traces.attempts(tid(1)) == 1
    (lease,) = r.traces.claim(T0 + 10_000, 10, 60.0)  # due again after its back-off
    assert lease.trace_id == tid(1)


def test_a_trace_whose_own_step_fails_is_stored_and_due_when_its_lease_runs_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    r = rig()
    adopted = r.pipeline.admit(rag_spans(1), T0, room=8)

    def broken(*args: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(r.pipeline, "_recognise", broken)
    assert _score(r, adopted) == [None]
    assert len(r.traces.load(tid(1))) == 3
    assert r.traces.claim(T0 + 59, 10, 60.0) == []  # still leased
    (lease,) = r.traces.claim(T0 + 60, 10, 60.0)
    assert lease.trace_id == tid(1)


# --- Offsets: held batches ---------------------------------------------------------------------
def _offsets(consumer: FakeConsumer) -> Offsets:
    dead = DeadLetters(FakeProducer(), "spans.dlq", rig().metrics, lambda f, *a, **k: f(*a, **k))
    return Offsets(consumer, dead, interval_s=1.0, clock=lambda: T0)


def test_held_batches_become_committable_in_order() -> None:
    consumer = FakeConsumer([])
    offsets = _offsets(consumer)
    first = offsets.hold({P0: 0}, {P0: 4}, 2)
    offsets.advance({P1: 7}, {P1: 5})  # stored at once, but behind the held batch
    second = offsets.hold({P0: 5}, {P0: 9}, 1)
    offsets.settled(second, True)
    offsets.settled(first, True)
    assert offsets.settle() == {}
    offsets.commit()
    assert consumer.commits == []  # the first batch still waits for one trace
    offsets.settled(first, True)
    assert offsets.settle() == {}
    offsets.commit()
    assert consumer.commits == [{P0: 10, P1: 8}] and offsets.holding == 0


def test_a_lost_trace_rewinds_to_its_batch_and_drops_the_batches_behind_it() -> None:
    consumer = FakeConsumer([])
    offsets = _offsets(consumer)
    done = offsets.hold({P0: 0}, {P0: 1}, 1)
    lost = offsets.hold({P0: 2, P1: 3}, {P0: 4, P1: 3}, 1)
    offsets.advance({P1: 6}, {P1: 4})
    offsets.settled(done, True)
    offsets.settled(lost, False)
    assert offsets.settle() == {P0: 2, P1: 3}
    assert offsets.holding == 0
    offsets.commit()
    assert consumer.commits == [{P0: 2}]  # up to the lost batch, never past it


def test_revoked_partitions_leave_the_held_batches() -> None:
    consumer = FakeConsumer([])
    offsets = _offsets(consumer)
    held = offsets.hold({P0: 0, P1: 0}, {P0: 1, P1: 2}, 1)
    offsets.forget([P1])
    offsets.settled(held, True)
    offsets.commit()
    assert consumer.commits == [{P0: 2}]


# --- the Kafka runner ------------------------------------------------------------------------------
def _runner(r: Rig, consumer: FakeConsumer, workers: int = 2) -> tuple[KafkaRunner, Any]:
    w = ScoringWorkers(r.pipeline, workers, depth=1)
    runner = KafkaRunner(
        consumer,
        FakeProducer(),
        r.pipeline,
        w,
        r.metrics,
        dlq_topic="spans.dlq",
        commit_interval_s=0.0,
        drain_timeout_s=5.0,
        clock=r.clock,
    )
    return runner, w


def test_the_runner_commits_a_batch_only_once_its_adopted_traces_are_scored() -> None:
    gate = threading.Event()
    r = rig(judge=ScriptedJudge(gate=gate, default=lambda a, c: grounded(1, 1)))
    consumer = FakeConsumer(
        [
            {P0: [Msg("spans", 0, 3, None, encode(rag_spans(1)))]},
            {P0: [Msg("spans", 0, 4, None, encode(rag_spans(2, root=False)))]},
        ]
    )
    runner, workers = _runner(r, consumer)
    try:
        runner.step()  # trace 1 adopted: its judge call blocks
        runner.step()  # trace 2 stored (incomplete): committable only after trace 1
        assert runner.ingest.adopted == 1 and r.traces.load(tid(1)) == []
        assert len(r.traces.load(tid(2))) == 2
        assert consumer.commits == []
        gate.set()
        assert workers.drain(5.0)
        runner.step()
        assert consumer.commits == [{P0: 5}]
    finally:
        gate.set()
        runner.close()
    assert [s.context.trace_id for s in r.spans()] == [int(tid(1), 16)]
    assert consumer.seeks == []


def test_the_runner_rereads_a_batch_whose_adopted_trace_was_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    r = rig()
    consumer = FakeConsumer([{P0: [Msg("spans", 0, 3, None, encode(rag_spans(1)))]}])
    runner, workers = _runner(r, consumer)
    original = r.traces.release_many

    def outage(leases: Any) -> Any:
        raise ConnectionError("redis down")

    monkeypatch.setattr(r.traces, "release_many", outage)
    monkeypatch.setattr("ragtrace_consumers.kafka_runner.ingest._RETRY_INGEST_S", 0.0)
    try:
        runner.step()
        assert workers.drain(5.0)
        runner.step()
        assert consumer.seeks == [(P0, 3)] and consumer.commits == []
    finally:
        monkeypatch.setattr(r.traces, "release_many", original)
        runner.close()


def test_without_room_the_runner_stores_complete_traces_as_before() -> None:
    gate = threading.Event()
    r = rig(judge=ScriptedJudge(gate=gate, default=lambda a, c: grounded(1, 1)))
    consumer = FakeConsumer(
        [{P0: [Msg("spans", 0, i, None, encode(rag_spans(10 + i))) for i in range(3)]}]
    )
    runner, workers = _runner(r, consumer, workers=1)  # room for one trace
    try:
        runner.step()
        assert runner.ingest.adopted == 1
        assert sum(1 for i in range(3) if r.traces.load(tid(10 + i))) == 2
        gate.set()
        for _ in range(20):
            workers.drain(5.0)
            runner.step()  # claims the stored ones as workers free up
            if workers.completed == 3:
                break
        assert workers.drain(5.0)
        runner.step()
    finally:
        gate.set()
        runner.close()
    assert len(r.spans()) == 3 and consumer.commits[-1] == {P0: 3}
