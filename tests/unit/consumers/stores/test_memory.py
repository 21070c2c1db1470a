"""The in-process stores stay bounded and keep their order over long runs: tombstones, expired
traces, lapsed leases and stale heap items are purged as time passes (the soak benchmark in
bench/bench_soak.py measures the rate; these pin the bookkeeping it relies on)."""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragtrace.evaluation.judges import make_judge
from ragtrace_consumers.scoring.judging import GroundednessScorer, is_paid
from ragtrace_consumers.stores.memory import (
    MemoryIdempotencyStore,
    MemoryJudgeBudget,
    MemoryJudgeResultCache,
    MemoryTraceStore,
)
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics
from tests.store_appends import append_read
from tests.unit.consumers.scoring_helpers import rag_spans, tid


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_done_tombstones_expire_as_time_passes() -> None:
    clock = Clock()
    store = MemoryTraceStore(ttl_s=100, done_ttl_s=10, clock=clock)
    for n in range(1, 501):
        append_read(store, rag_spans(n), {tid(n): clock.t})
        (lease,) = store.claim(clock.t, 1, 30)
        assert store.release(lease.trace_id, lease.token)
        clock.t += 0.1  # 100 releases per 10 s tombstone lifetime
    assert 95 <= len(store._done) <= 101
    assert len(store._done_heap) <= 2 * len(store._done) + 64
    # A late span of a trace released a moment ago is still recognised as late.
    append_read(store, rag_spans(500), {tid(500): clock.t})
    assert store.stats()["late_spans"] == 3


def test_due_traces_come_out_in_due_order_and_rescheduling_leaves_no_duplicates() -> None:
    clock = Clock()
    store = MemoryTraceStore(clock=clock)
    for n in range(1, 41):
        append_read(store, rag_spans(n), {tid(n): 2000.0 - n})  # later traces are due earlier
    for n in range(1, 41):
        append_read(store, rag_spans(n, root=False), {tid(n): 1500.0 - n})  # an earlier due wins
        append_read(store, rag_spans(n, root=False), {tid(n): 1900.0})  # a later one does not
    got = [lease.trace_id for lease in store.claim(1600.0, 100, 30)]
    assert got == [tid(n) for n in range(40, 0, -1)]
    assert store.claim(1620.0, 100, 30) == []  # leased, and no stale item comes out
    assert store.pending() == 40


def test_lapsed_leases_make_traces_due_again_once() -> None:
    clock = Clock()
    store = MemoryTraceStore(clock=clock)
    for n in range(1, 11):
        append_read(store, rag_spans(n), {tid(n): clock.t})
    first = store.claim(clock.t, 10, 5)
    assert len(first) == 10
    again = store.claim(clock.t + 6, 10, 5)
    assert sorted(lease.trace_id for lease in again) == sorted(t.trace_id for t in first)
    assert store.stats()["lease_expired"] == 10
    assert not store.release(first[0].trace_id, first[0].token)  # the old token lost it


def test_abandoned_traces_are_purged_without_being_touched() -> None:
    clock = Clock()
    store = MemoryTraceStore(ttl_s=60, clock=clock)
    for n in range(1, 201):
        append_read(store, rag_spans(n), {})  # never due
    assert len(store._entries) == 200
    clock.t += 61
    append_read(store, rag_spans(999), {})
    assert set(store._entries) == {tid(999)}
    assert len(store._expiry_heap) <= 2 * len(store._expiry) + 64


def test_cache_and_idempotency_marks_are_purged_after_their_ttl() -> None:
    clock = Clock()
    cache = MemoryJudgeResultCache(ttl_s=10, clock=clock)
    marks = MemoryIdempotencyStore(ttl_s=10, clock=clock)
    for n in range(1000):
        cache.put(f"k{n}", b"v")
        marks.mark_written(tid(n), "recall")
        clock.t += 0.1
    assert 95 <= len(cache) <= 101 and 95 <= len(marks) <= 101
    assert cache.get("k999") == b"v" and cache.get("k0") is None
    assert marks.written(tid(999), "recall") and not marks.written(tid(0), "recall")


def test_the_budget_limits_paid_judges_only() -> None:
    lexical = make_judge("lexical")
    assert not is_paid(lexical)
    metrics = ConsumerMetrics(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    scorer = GroundednessScorer(lexical, MemoryJudgeResultCache(), MemoryJudgeBudget(0, 0), metrics)
    for n in range(5):  # a spent (zero) budget never skips the free judge
        out = scorer.judge_trace(
            tid(n), "svc", f"Logs are kept {n} days.", [f"Logs are kept {n} days."]
        )
        assert out.skipped is None and out.result is not None and out.result.score == 1.0
