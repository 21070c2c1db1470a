"""The SQLite trace store (``ragtrace serve``'s durable store): the shared TraceStore contract
(tests/e2e/test_stores.py, run here against it), its memory bound, durability across a reopen,
recovery of a dead process's leases, and claims served from the due index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragtrace_consumers.errors import Held, StoreFull
from ragtrace_consumers.stores.sqlite_traces import SqliteTraceStore
from tests.e2e.test_stores import *  # noqa: F403 - the shared store contract
from tests.e2e.test_stores import T1, T2, T3, FakeClock, Kit, memory_kit, span
from tests.store_appends import append_read


@pytest.fixture(name="kit")
def sqlite_kit() -> Kit:  # the shared suite's fixture: the SQLite trace store, memory for the rest
    base = memory_kit()
    clock = base.now

    def trace_store(**kw: Any) -> SqliteTraceStore:
        return SqliteTraceStore(":memory:", clock=clock, **kw)

    base.name = "sqlite"
    base.trace_store = trace_store
    return base


def test_spans_and_schedule_survive_a_reopen(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "state.sqlite3"
    store = SqliteTraceStore(path, clock=clock)
    a, b = span(T1, "1" * 16), span(T2, "2" * 16)
    append_read(store, [a, b], {T1: clock.t + 5, T2: clock.t + 1})
    (lease,) = store.claim(clock.t + 1, 10, 300.0)  # T2 leased by this process
    store.close()  # (a SIGKILL leaves the same file: every append was committed)

    again = SqliteTraceStore(path, clock=clock)
    assert again.held() == Held(2, store_bytes(again))
    assert again.load(T1) == [a] and again.load(T2) == [b]
    assert again.claim(clock.t + 1, 10, 300.0) == []  # T2 still leased by the dead process
    assert again.recover(clock.t + 1) == 1
    assert again.claim_due(clock.t + 5, 10, 300.0) == [T2, T1]
    assert again.stats()["lease_expired"] == 1 and again.stats()["spans_appended"] == 2
    assert lease.trace_id == T2


def store_bytes(store: SqliteTraceStore) -> int:
    return store.held().bytes


def test_an_append_over_the_bound_is_refused_whole() -> None:
    clock = FakeClock()
    store = SqliteTraceStore(":memory:", clock=clock, max_traces=3)
    append_read(store, [span(T1, "1" * 16), span(T2, "2" * 16)], {T1: clock.t, T2: clock.t})
    with pytest.raises(StoreFull, match="holding 2 traces"):
        append_read(store, [span(T3, "3" * 16), span("d" * 32, "4" * 16)], {})
    assert store.load(T3) == [] and store.held().traces == 2
    append_read(store, [span(T3, "3" * 16)], {T3: clock.t})  # fits exactly
    assert store.held().traces == 3
    store.release(T1)
    assert store.held().traces == 2
    by_bytes = SqliteTraceStore(":memory:", clock=clock, max_bytes=400)
    with pytest.raises(StoreFull):
        append_read(by_bytes, [span(T1, f"{i:016x}") for i in range(10)], {})
    assert by_bytes.held() == Held(0, 0)


def test_claims_use_the_due_index() -> None:
    store = SqliteTraceStore(":memory:")
    plan = " ".join(
        str(r)
        for r in store._db.execute(
            "EXPLAIN QUERY PLAN SELECT trace_id, expires_at, bytes FROM traces WHERE due_at IS NOT "
            "NULL AND due_at <= ? ORDER BY due_at, trace_id LIMIT ?",
            (1.0, 5),
        ).fetchall()
    )
    assert "traces_due" in plan and "SCAN traces" not in plan.replace("USING", "")
    lease_plan = " ".join(
        str(r)
        for r in store._db.execute(
            "EXPLAIN QUERY PLAN SELECT trace_id FROM traces WHERE lease_until IS NOT NULL AND "
            "lease_until <= ?",
            (1.0,),
        ).fetchall()
    )
    assert "traces_lease" in lease_plan
