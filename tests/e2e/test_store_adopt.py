"""The adoption contract of the trace stores that score a trace straight from its batch
(:class:`~ragtrace_consumers.model.AdoptingTraceStore`: the in-memory and Redis ones; the
embedded evaluator's SQLite store does not adopt), on both backends like tests/e2e/test_stores.py
(tests/unit/consumers/test_assemble.py runs these on the memory store alone)."""

from __future__ import annotations

from tests.e2e.test_stores import T1, T2, T3, Kit, _stats, span
from tests.e2e.test_stores import kit as kit  # the parametrized fixture (memory, Redis)


def test_adopt_leases_only_a_trace_the_store_knows_nothing_of(kit: Kit) -> None:
    store = kit.trace_store()
    now = kit.now()
    store.append([span(T2, "2" * 16)], {T2: now + 60})  # assembling
    store.append([span(T3, "3" * 16)], {T3: now})
    assert store.claim_due(now, 10, 30.0) == [T3]
    store.release(T3)  # done
    fresh, assembling, done = store.adopt([T1, T2, T3], now, 30.0)
    assert fresh is not None and fresh.trace_id == T1 and fresh.token
    assert assembling is None and done is None
    assert store.adopt([T1], now, 30.0) == [None]  # leased now
    assert store.load(T1) == [] and store.claim(now + 29, 10, 30.0) == []
    _stats(store, spans_appended=2, traces_created=2, released=1)


def test_an_adopted_trace_released_counts_later_spans_late(kit: Kit) -> None:
    store = kit.trace_store()
    now = kit.now()
    (lease,) = store.adopt([T1], now, 30.0)
    assert lease is not None
    assert store.release_many([(T1, "not-the-token"), (T1, lease.token)]) == [False, True]
    store.append([span(T1, "1" * 16)], {T1: now})
    assert store.load(T1) == [] and store.claim(now + 100, 10, 30.0) == []
    assert store.adopt([T1], now, 30.0) == [None]
    _stats(store, released=1, late_spans=1, lease_lost=1)


def test_an_adopted_trace_stored_during_its_lease_is_parked_or_due_when_it_runs_out(
    kit: Kit,
) -> None:
    store = kit.trace_store()
    now = kit.now()
    lease, gone = store.adopt([T1, T2], now, 30.0)
    assert lease is not None and gone is not None
    # The caller could not finish T1: it stores the spans (kept, not scheduled: leased) ...
    store.append([span(T1, "1" * 16, parent=None)], {})
    assert store.claim(now + 1, 10, 30.0) == []
    # ... and either parks it, or lets the lease run out: the trace is due again either way.
    assert store.park(T1, now + 5, "writeback_failed", lease.token)
    assert [c.trace_id for c in store.claim(now + 5, 10, 30.0)] == [T1]
    assert [s.span_id for s in store.load(T1)] == ["1" * 16]
    # T2's lease ran out with nothing stored: the trace is let go.
    assert store.claim(now + 31, 10, 30.0) == []
    _stats(
        store,
        spans_appended=1,
        traces_created=1,
        late_spans=1,
        parked=1,
        lease_expired=1,
        expired=1,
    )
