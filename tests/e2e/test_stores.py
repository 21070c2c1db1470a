"""The behavioural contract of every consumer store, run against BOTH implementations: the
in-memory ones and the Redis ones on the real Redis of the ``redis_url`` fixture and on the real
Redis Cluster of the ``redis_cluster`` fixture (three primaries: traces spread over their slots).

``kit.advance(s)`` moves time forward: a fake clock for the memory stores, a real sleep for Redis
(whose TTLs and budget window run on the server's clock). tests/unit/consumers/scoring/test_assembly.py
imports these tests and runs them on the memory stores alone.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from ragtrace import semconv
from ragtrace.evaluation.labels import LabelledQuestion, label_set_version
from ragtrace_consumers.model import STORE_STATS, Chunk, DeadTrace, LabelStats, RagTrace, SpanRecord
from ragtrace_consumers.scoring.label_match import match_label
from ragtrace_consumers.stores.memory import (
    MemoryIdempotencyStore,
    MemoryJudgeBudget,
    MemoryJudgeResultCache,
    MemoryLabelStore,
    MemoryTraceStore,
)
from ragtrace_consumers.stores.redis import RedisTraceStore, connect
from ragtrace_consumers.stores.redis_state import (
    RedisIdempotencyStore,
    RedisJudgeBudget,
    RedisJudgeResultCache,
    RedisLabelStore,
)
from tests.store_appends import append_read

T1, T2, T3 = "a" * 32, "b" * 32, "c" * 32
RETRIEVER = {semconv.OPENINFERENCE_SPAN_KIND: "RETRIEVER"}


def span(
    trace_id: str,
    span_id: str,
    *,
    parent: str | None = "f" * 16,
    attributes: dict[str, Any] | None = None,
    scope: str = "ragtrace",
) -> SpanRecord:
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name="retrieve",
        scope=scope,
        service="svc",
        start_ns=1,
        end_ns=2,
        attributes=RETRIEVER if attributes is None else attributes,
    )


class FakeClock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


@dataclass
class Kit:
    """Factories for one backend's stores, plus its notion of time."""

    name: str
    trace_store: Callable[..., Any]
    label_store: Callable[[], Any]
    cache: Callable[..., Any]
    idempotency: Callable[..., Any]
    budget: Callable[..., Any]
    now: Callable[[], float]
    advance: Callable[[float], None]
    concurrent: bool


def memory_kit() -> Kit:
    clock = FakeClock()

    def advance(s: float) -> None:
        clock.t += s

    return Kit(
        name="memory",
        trace_store=lambda **kw: MemoryTraceStore(clock=clock, **kw),
        label_store=lambda: MemoryLabelStore(clock=clock),
        cache=lambda **kw: MemoryJudgeResultCache(clock=clock, **kw),
        idempotency=lambda **kw: MemoryIdempotencyStore(clock=clock, **kw),
        budget=lambda calls, tokens, **kw: MemoryJudgeBudget(calls, tokens, clock=clock, **kw),
        now=clock,
        advance=advance,
        concurrent=False,
    )


def redis_kit(url: str) -> Kit:
    prefix = f"test-{uuid.uuid4().hex[:10]}"

    def client() -> Any:
        return connect(url)

    return Kit(
        name="redis",
        trace_store=lambda **kw: RedisTraceStore(client(), prefix=prefix, **kw),
        label_store=lambda: RedisLabelStore(client(), prefix=prefix),
        cache=lambda **kw: RedisJudgeResultCache(client(), prefix=prefix, **kw),
        # A small table (the default's 4 M marks take 58.7 MB of the test server's memory).
        idempotency=lambda **kw: RedisIdempotencyStore(
            client(), prefix=prefix, capacity=4096, **kw
        ),
        budget=lambda calls, tokens, **kw: RedisJudgeBudget(
            client(), calls, tokens, prefix=prefix, **kw
        ),
        now=time.time,
        advance=time.sleep,
        concurrent=True,
    )


@pytest.fixture(params=["memory", "redis", "redis-cluster"])
def kit(request: pytest.FixtureRequest) -> Kit:
    if request.param == "memory":
        return memory_kit()
    if request.param == "redis-cluster":
        return redis_kit(request.getfixturevalue("redis_cluster").url)
    return redis_kit(request.getfixturevalue("redis_url"))


def _stats(store: Any, **nonzero: int) -> None:
    assert store.stats() == {**dict.fromkeys(STORE_STATS, 0), **nonzero}


# --- TraceStore ----------------------------------------------------------------------------------


def test_append_then_claim_at_the_due_time_and_load_round_trips(kit: Kit) -> None:
    store = kit.trace_store()
    now = kit.now()
    rich = span(
        T1,
        "1" * 16,
        parent=None,
        attributes={
            **RETRIEVER,
            "s": "é ✓",
            "i": 3,
            "f": 0.25,
            "b": False,
            "ss": ("x", "y"),
            "ii": (1, 2),
            "ff": (0.5,),
            "bb": (True, False),
        },
    )
    other = span(T1, "2" * 16)
    append_read(store, [rich, other, span(T2, "3" * 16)], {T1: now + 10, T2: now + 20})
    assert store.claim_due(now + 9.9, 10, 60.0) == []
    assert store.claim_due(now + 10, 10, 60.0) == [T1]
    assert store.load(T1) == [rich, other]
    assert store.load("d" * 32) == []
    assert store.pending() == 2
    _stats(store, spans_appended=3, traces_created=2)


def test_the_earliest_due_time_wins(kit: Kit) -> None:
    store = kit.trace_store()
    now = kit.now()
    append_read(store, [span(T1, "1" * 16)], {T1: now + 50})
    append_read(store, [span(T1, "2" * 16)], {T1: now + 10})
    append_read(store, [span(T1, "3" * 16)], {T1: now + 30})
    append_read(store, [span(T1, "4" * 16)], {})  # no due time: keeps the schedule
    assert store.claim_due(now + 9, 10, 60.0) == []
    assert store.claim_due(now + 10, 10, 60.0) == [T1]
    assert [s.span_id for s in store.load(T1)] == ["1" * 16, "2" * 16, "3" * 16, "4" * 16]


def test_a_non_rag_root_only_updates_a_known_trace(kit: Kit) -> None:
    store = kit.trace_store()
    now = kit.now()
    http_root = span(T2, "9" * 16, parent=None, attributes={}, scope="fastapi")
    append_read(store, [http_root], {T2: now})
    assert store.claim_due(now, 10, 60.0) == []
    assert store.load(T2) == []
    append_read(store, [span(T2, "1" * 16)], {T2: now + 100})
    append_read(store, [http_root], {T2: now})  # the root arrives later: completion signal
    assert store.claim_due(now, 10, 60.0) == [T2]
    assert [s.span_id for s in store.load(T2)] == ["1" * 16, "9" * 16]
    _stats(store, spans_appended=2, traces_created=1)


def test_claims_come_in_due_order_up_to_the_limit_and_only_once(kit: Kit) -> None:
    store = kit.trace_store()
    now = kit.now()
    append_read(
        store,
        [span(T3, "1" * 16), span(T1, "2" * 16), span(T2, "3" * 16)],
        {T1: now + 3, T2: now + 1, T3: now + 2},
    )
    assert store.claim_due(now + 5, 2, 60.0) == [T2, T3]
    assert store.claim_due(now + 5, 2, 60.0) == [T1]
    assert store.claim_due(now + 5, 2, 60.0) == []
    assert store.claim_due(now + 5, 0, 60.0) == []


def test_an_expired_lease_makes_the_trace_due_again(kit: Kit) -> None:
    store = kit.trace_store()
    now = kit.now()
    append_read(store, [span(T1, "1" * 16)], {T1: now})
    assert store.claim_due(now, 10, 30.0) == [T1]
    assert store.claim_due(now + 29, 10, 30.0) == []
    assert store.claim_due(now + 30, 10, 30.0) == [T1]
    assert store.load(T1) != []
    _stats(store, spans_appended=1, traces_created=1, lease_expired=1)


def test_spans_arriving_during_a_lease_are_kept_and_counted_late(kit: Kit) -> None:
    store = kit.trace_store()
    now = kit.now()
    append_read(store, [span(T1, "1" * 16)], {T1: now})
    assert store.claim_due(now, 10, 30.0) == [T1]
    append_read(store, [span(T1, "2" * 16)], {T1: now})
    assert store.claim_due(now + 1, 10, 30.0) == []  # still leased: not handed out twice
    assert [s.span_id for s in store.load(T1)] == ["1" * 16, "2" * 16]
    _stats(store, spans_appended=2, traces_created=1, late_spans=1)


def test_release_deletes_and_later_spans_are_counted_late(kit: Kit) -> None:
    store = kit.trace_store()
    now = kit.now()
    append_read(store, [span(T1, "1" * 16)], {T1: now})
    assert store.claim_due(now, 10, 30.0) == [T1]
    store.release(T1)
    assert store.load(T1) == []
    assert store.claim_due(now + 100, 10, 30.0) == []
    append_read(store, [span(T1, "2" * 16), span(T1, "3" * 16)], {T1: now})
    assert store.load(T1) == []
    assert store.claim_due(now + 100, 10, 30.0) == []
    assert store.pending() == 0
    _stats(store, spans_appended=1, traces_created=1, released=1, late_spans=2)


def test_park_reschedules_and_gives_up_into_the_dead_set(kit: Kit) -> None:
    store = kit.trace_store(max_attempts=3)
    now = kit.now()
    first = span(T1, "1" * 16)
    append_read(store, [first], {T1: now})
    assert store.claim_due(now, 10, 30.0) == [T1]
    store.park(T1, now + 100, "judge_unavailable")
    assert store.attempts(T1) == 1
    assert store.claim_due(now + 99, 10, 30.0) == []
    assert store.claim_due(now + 100, 10, 30.0) == [T1]
    store.park(T1, now + 200, "judge_unavailable")
    assert store.claim_due(now + 200, 10, 30.0) == [T1]
    store.park(T1, now + 300, "judge_failed")  # third attempt: given up
    assert store.claim_due(now + 10_000, 10, 30.0) == []
    assert store.dead() == [DeadTrace(T1, 3, "judge_failed", now + 300)]
    assert store.load(T1) == [first]  # kept for inspection
    append_read(store, [span(T1, "2" * 16)], {T1: now})
    assert store.load(T1) == [first]
    assert store.pending() == 0
    _stats(store, spans_appended=1, traces_created=1, parked=2, dead=1, late_spans=1)
    store.release(T1)
    assert store.dead() == []


def test_parking_an_expired_trace_counts_it_expired(kit: Kit) -> None:
    store = kit.trace_store()
    store.park(T2, kit.now() + 5, "judge_unavailable")
    assert store.claim_due(kit.now() + 10, 10, 30.0) == []
    _stats(store, expired=1)


def test_abandoned_traces_expire_and_the_claim_counts_them(kit: Kit) -> None:
    store = kit.trace_store(ttl_s=2.0)
    now = kit.now()
    append_read(store, [span(T1, "1" * 16)], {T1: now + 2.5})
    append_read(store, [span(T2, "2" * 16)], {T2: now + 2.5})
    append_read(store, [span(T2, "3" * 16)], {T2: now + 2.5})
    kit.advance(1.2)
    append_read(store, [span(T2, "4" * 16)], {})  # refreshes T2's TTL only
    kit.advance(1.3)
    assert store.load(T1) == []
    assert store.claim_due(kit.now(), 10, 30.0) == [T2]
    _stats(store, spans_appended=4, traces_created=2, expired=1)


def test_claims_carry_a_fresh_lease_token_each_time(kit: Kit) -> None:
    store = kit.trace_store()
    now = kit.now()
    append_read(store, [span(T1, "1" * 16), span(T2, "2" * 16)], {T1: now, T2: now + 1})
    first = store.claim(now + 1, 10, 30.0)
    assert [lease.trace_id for lease in first] == [T1, T2]
    (again,) = store.claim(now + 31, 1, 30.0)  # T1's lease ran out: claimed anew
    tokens = [lease.token for lease in first] + [again.token]
    assert again.trace_id == T1
    assert all(isinstance(t, str) and t for t in tokens) and len(set(tokens)) == 3


def test_a_release_or_park_after_the_lease_was_taken_over_changes_nothing(kit: Kit) -> None:
    store = kit.trace_store()
    now = kit.now()
    append_read(store, [span(T1, "1" * 16)], {T1: now})
    (old,) = store.claim(now, 10, 30.0)
    (new,) = store.claim(now + 30, 10, 30.0)  # the first claimant was too slow
    assert new.trace_id == T1 and new.token != old.token
    assert store.release(T1, old.token) is False
    assert store.park(T1, now + 100, "judge_unavailable", old.token) is False
    assert store.load(T1) != [] and store.attempts(T1) == 0
    assert store.claim(now + 31, 10, 30.0) == []  # still the new claimant's
    assert store.pending() == 1
    assert store.park(T1, now + 100, "judge_unavailable", new.token) is True
    assert store.release(T1, new.token) is False  # parking ended that lease too
    (third,) = store.claim(now + 100, 10, 30.0)
    assert store.release(T1, third.token) is True
    assert store.load(T1) == [] and store.pending() == 0
    _stats(
        store,
        spans_appended=1,
        traces_created=1,
        lease_expired=1,
        lease_lost=3,
        parked=1,
        released=1,
    )


def test_a_release_without_a_token_acts_whoever_holds_the_lease(kit: Kit) -> None:
    store = kit.trace_store()
    now = kit.now()
    append_read(store, [span(T1, "1" * 16)], {T1: now})
    assert store.claim_due(now, 10, 30.0) == [T1]
    assert store.release(T1) is True
    assert store.load(T1) == []
    _stats(store, spans_appended=1, traces_created=1, released=1)


def test_batched_load_and_release_match_the_single_calls(kit: Kit) -> None:
    store = kit.trace_store()
    now = kit.now()
    a, b = span(T1, "1" * 16), span(T2, "2" * 16)
    append_read(store, [a, span(T1, "3" * 16), b], {T1: now, T2: now})
    assert store.load_many([T2, "d" * 32, T1]) == [[b], [], [a, span(T1, "3" * 16)]]
    assert store.load_many([]) == []
    first, second = store.claim(now, 10, 30.0)
    assert store.release_many(
        [(first.trace_id, first.token), (second.trace_id, "stale"), (T3, None)]
    ) == [True, False, True]
    assert store.load(first.trace_id) == [] and store.load(second.trace_id) != []
    assert store.release_many([]) == []
    _stats(store, spans_appended=3, traces_created=2, released=2, lease_lost=1)


def test_trace_claims_are_exclusive_between_concurrent_replicas(kit: Kit) -> None:
    ids = [f"{i:032x}" for i in range(1, 121)]
    setup = kit.trace_store()
    now = kit.now()
    append_read(setup, [span(t, "1" * 16) for t in ids], dict.fromkeys(ids, now))
    replicas = [kit.trace_store() for _ in range(3)] if kit.concurrent else [setup] * 3
    claimed: list[list[str]] = [[] for _ in replicas]

    def run(i: int) -> None:
        while got := replicas[i].claim_due(now, 5, 60.0):
            claimed[i].extend(got)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(replicas))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [t for c in claimed for t in c]
    assert sorted(every) == ids  # each trace exactly once


# --- LabelStore ----------------------------------------------------------------------------------

Q1 = LabelledQuestion("q1", "How long are audit logs kept?", frozenset({"c1", "c2"}))
Q2 = LabelledQuestion("q2", "Where are logs stored?", frozenset({"c3"}))
Q3 = LabelledQuestion("q3", "What is the refund policy?", frozenset())


def _trace(question_id: str | None = None, query: str | None = None) -> RagTrace:
    from ragtrace.normalize import question_sha256

    return RagTrace(
        trace_id=T1,
        service="svc",
        target_span_id="1" * 16,
        query=query,
        query_sha256=question_sha256(query) if query is not None else None,
        question_id=question_id,
        retrieved=(Chunk("c1"),),
        has_retrieval=True,
    )


def test_label_store_load_lookup_stats_and_clear(kit: Kit) -> None:
    store = kit.label_store()
    assert store.version() == ""
    assert store.stats() == LabelStats(version=None)
    assert store.by_id("q1") is None
    version = store.load([Q1, Q2, Q3], source="labels.jsonl")
    assert version == label_set_version([Q1, Q2, Q3]) == store.version()
    assert store.by_id("q2") == Q2
    assert store.by_id("nope") is None
    assert store.by_question_sha256(Q1.question_sha256) == Q1
    assert store.questions() == [Q1, Q2, Q3]
    stats = store.stats()
    assert stats == LabelStats(
        version=version,
        questions=3,
        answerable=2,
        ambiguous=0,
        loaded_at=stats.loaded_at,
        source="labels.jsonl",
    )
    assert abs(stats.loaded_at - kit.now()) < 5
    assert match_label(_trace("q2"), store) == (Q2, "question_id")
    assert match_label(_trace(query="  how LONG are audit-logs kept"), store) is not None
    assert match_label(_trace(query="HOW long are audit logs kept ?!"), store) == (Q1, "query_text")
    assert match_label(_trace("unknown", query="Where are logs stored"), store) == (
        Q2,
        "query_text",
    )
    assert match_label(_trace("unknown", query="something else"), store) == (None, None)
    assert match_label(_trace(query="???"), store) == (None, None)
    store.clear()
    assert store.version() == ""
    assert store.by_id("q1") is None
    assert store.by_question_sha256(Q1.question_sha256) is None
    assert store.questions() == []


def test_label_reload_replaces_the_whole_set(kit: Kit) -> None:
    store = kit.label_store()
    store.load([Q1, Q2])
    new_q1 = LabelledQuestion("q1", Q1.question, frozenset({"c9"}))
    version = store.load([new_q1, Q3])
    assert store.version() == version == label_set_version([new_q1, Q3])
    assert store.by_id("q1") == new_q1
    assert store.by_id("q2") is None
    assert store.by_question_sha256(Q2.question_sha256) is None
    assert store.questions() == [new_q1, Q3]
    if kit.concurrent:  # another replica, its own connection, sees the same set
        other_reader = kit.label_store()
        assert (other_reader.version(), other_reader.by_id("q3")) == (version, Q3)


def test_ambiguous_questions_match_by_id_only(kit: Kit) -> None:
    store = kit.label_store()
    twin = LabelledQuestion("q1b", "how long are AUDIT logs kept", frozenset({"c7"}))
    store.load([Q1, twin, Q2])
    assert store.by_question_sha256(Q1.question_sha256) is None
    assert store.by_id("q1b") == twin
    assert store.stats().ambiguous == 2
    assert match_label(_trace(query=Q1.question), store) == (None, None)
    assert match_label(_trace("q1", query=Q1.question), store) == (Q1, "question_id")


def test_label_load_rejects_duplicate_qids(kit: Kit) -> None:
    store = kit.label_store()
    with pytest.raises(ValueError, match="duplicate qid 'q1' in the label set"):
        store.load([Q1, Q1])
    assert store.version() == ""


# --- JudgeResultCache / IdempotencyStore / JudgeBudget -------------------------------------------


def test_judge_cache_round_trip_and_ttl(kit: Kit) -> None:
    cache = kit.cache(ttl_s=1.0)
    assert cache.get("k") is None
    cache.put("k", b"\x00value\xff")
    assert cache.get("k") == b"\x00value\xff"
    cache.put("k", b"v2")
    assert cache.get("k") == b"v2"
    kit.advance(1.2)
    assert cache.get("k") is None


def test_judge_cache_keeps_any_bytes_and_long_entries(kit: Kit) -> None:
    cache = kit.cache()
    entry = json.dumps(
        {"result": {"claims": [{"claim": f"c{i}", "entailed": True} for i in range(40)]}}
    )
    values = [b"\x01raw", b"\x02raw", b"\x01", b"", entry.encode(), b"\x01" + entry.encode()]
    cache.put_many([(f"k{i}", v) for i, v in enumerate(values)])
    assert cache.get_many([f"k{i}" for i in range(len(values))]) == values


def test_idempotency_marks_and_ttl(kit: Kit) -> None:
    marks = kit.idempotency(ttl_s=1.0)
    assert not marks.written(T1, "recall")
    marks.mark_written(T1, "recall")
    assert marks.written(T1, "recall")
    assert not marks.written(T1, "groundedness")
    assert not marks.written(T2, "recall")
    kit.advance(1.2)
    assert not marks.written(T1, "recall")


def test_batched_cache_and_marks_match_the_single_calls(kit: Kit) -> None:
    cache, marks = kit.cache(), kit.idempotency()
    cache.put_many([("k1", b"one"), ("k2", b"\x00two")])
    assert cache.get_many(["k2", "nope", "k1"]) == [b"\x00two", None, b"one"]
    assert cache.get("k1") == b"one" and cache.get_many([]) == []
    marks.mark_written_many([(T1, "recall"), (T2, "groundedness")])
    assert marks.written_many([(T1, "recall"), (T1, "groundedness"), (T2, "groundedness")]) == [
        True,
        False,
        True,
    ]
    assert marks.written(T2, "groundedness") and marks.written_many([]) == []


def test_budget_never_exceeds_either_limit_in_the_window(kit: Kit) -> None:
    budget = kit.budget(3, 1000, window_s=1.0)
    assert [budget.try_acquire(1, 100) for _ in range(4)] == [True, True, True, False]
    kit.advance(1.1)
    assert budget.try_acquire(1, 900) is True
    assert budget.try_acquire(1, 101) is False  # tokens: 900 + 101 > 1000, nothing charged
    assert budget.try_acquire(1, 100) is True
    assert budget.try_acquire(0, 1) is False
    assert budget.try_acquire(1, 0) is True  # third call in this window
    assert budget.try_acquire(1, 0) is False
    with pytest.raises(ValueError, match="calls and tokens must be >= 0"):
        budget.try_acquire(-1, 0)


def test_a_request_larger_than_the_window_limit_never_succeeds(kit: Kit) -> None:
    budget = kit.budget(5, 10, window_s=1.0)
    assert budget.try_acquire(1, 11) is False
    assert budget.try_acquire(6, 0) is False
    assert budget.try_acquire(5, 10) is True


def test_budget_is_shared_between_concurrent_clients(kit: Kit) -> None:
    budgets = [kit.budget(10, 10_000, window_s=30.0) for _ in range(4)]
    granted = [0] * len(budgets)

    def run(i: int) -> None:
        for _ in range(10):
            if budgets[i].try_acquire(1, 10):
                granted[i] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(budgets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Memory budgets are per instance (one process); Redis budgets share one window.
    assert sum(granted) == (10 if kit.concurrent else 40)
