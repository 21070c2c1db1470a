"""In-process implementations of every seam in :mod:`ragtrace_consumers.model`.

Same semantics as :mod:`ragtrace_consumers.stores.redis` (one behavioural test suite runs
against both), for unit tests and the single-process embedded evaluator. Every class is
thread-safe (one lock each). Time comes from ``clock`` (``time.time`` by default) wherever the
seam passes no ``now``: TTL expiry and the budget's sliding minute.

Every operation costs O(log n) in the number of traces or entries held (amortised), so a
process that runs for hours keeps its rate: due traces, leases, TTL expiries and "done"
tombstones each sit in a heap ordered by time, with lazy deletion (a heap item is acted on only
while it still matches the authoritative dict; the heap is rebuilt when stale items outnumber
live ones). Expired entries are purged as time passes, not only when they are next touched, so
memory is bounded by what arrives within a TTL.
"""

from __future__ import annotations

import heapq
import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace_consumers.model import (
    STORE_STATS,
    DeadTrace,
    LabelIndex,
    LabelStats,
    Lease,
    SessionTurn,
    SpanRecord,
    group_by_trace,
    recent_turns,
)
from ragtrace_consumers.stores.defaults import (
    BUDGET_WINDOW_S,
    DEFAULT_DEAD_TTL_S,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_TTL_S,
)
from ragtrace_consumers.stores.per_trace_batches import PerTraceBatches

__all__ = [
    "MemoryBatchStore",
    "MemoryIdempotencyStore",
    "MemoryJudgeBudget",
    "MemoryJudgeResultCache",
    "MemoryLabelStore",
    "MemorySessionEvidence",
    "MemoryTraceStore",
]

Clock = Callable[[], float]


def _check_positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")


class _TimeHeap:
    """A min-heap of ``(time, key)`` with lazy deletion: callers pop an item and check it
    against their own dict. ``compact(live)`` rebuilds it from the live items once stale ones
    dominate, keeping its size O(live)."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: list[tuple[float, str]] = []

    def push(self, at: float, key: str) -> None:
        heapq.heappush(self._items, (at, key))

    def peek(self) -> tuple[float, str] | None:
        return self._items[0] if self._items else None

    def pop(self) -> tuple[float, str]:
        return heapq.heappop(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def compact(self, live: Mapping[str, float]) -> None:
        if len(self._items) > 2 * len(live) + 64:
            self._items = [(at, key) for key, at in live.items()]
            heapq.heapify(self._items)


def _expire(
    heap: _TimeHeap, live: dict[str, float], now: float, also: dict[Any, Any] | None = None
) -> int:
    """Drop every key of ``live`` (key -> expiry) whose expiry is <= ``now``, and the same key
    of ``also``; returns how many."""
    dropped = 0
    while True:
        top = heap.peek()
        if top is None or top[0] > now:
            break
        at, key = heap.pop()
        if live.get(key) == at:
            del live[key]
            if also is not None:
                also.pop(key, None)
            dropped += 1
    heap.compact(live)
    return dropped


@dataclass
class _Entry:
    spans: list[SpanRecord] = field(default_factory=list)
    expires_at: float = 0.0
    attempts: int = 0


class MemoryTraceStore(PerTraceBatches):
    """:class:`~ragtrace_consumers.model.TraceStore` in process memory.

    Lifecycle of a trace: ``append`` creates it (only when ``creates`` names it) and keeps its
    earliest due time; ``claim`` leases it to one caller for ``lease_s`` under a fresh token; then
    ``release`` deletes it (later spans are counted as ``late_spans`` and dropped for
    ``done_ttl_s``), or ``park`` reschedules it (after ``max_attempts`` parks it goes to the dead
    set instead). A lease that runs out makes the trace due again; a release or park with a token
    that is no longer the current lease's does nothing and counts ``lease_lost``. Spans not
    appended to for ``ttl_s`` expire, and the claim that finds them gone counts ``expired``.
    """

    def __init__(
        self,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        done_ttl_s: float | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        dead_ttl_s: float = DEFAULT_DEAD_TTL_S,
        clock: Clock = time.time,
    ) -> None:
        _check_positive("ttl_s", ttl_s)
        _check_positive("dead_ttl_s", dead_ttl_s)
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        self._ttl_s = ttl_s
        self._done_ttl_s = ttl_s if done_ttl_s is None else done_ttl_s
        _check_positive("done_ttl_s", self._done_ttl_s)
        self._max_attempts = max_attempts
        self._dead_ttl_s = dead_ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._expiry: dict[str, float] = {}  # trace -> expires_at of its entry
        self._expiry_heap = _TimeHeap()
        self._due: dict[str, float] = {}
        self._due_heap = _TimeHeap()
        self._leases: dict[str, tuple[float, str]] = {}  # trace -> (lease expiry, token)
        self._lease_until: dict[str, float] = {}
        self._lease_heap = _TimeHeap()
        self._done: dict[str, float] = {}
        self._done_heap = _TimeHeap()
        self._dead: dict[str, DeadTrace] = {}
        self._stats = dict.fromkeys(STORE_STATS, 0)

    # --- heap bookkeeping (callers hold the lock) ---------------------------------------------
    def _set_due(self, trace_id: str, at: float) -> None:
        self._due[trace_id] = at
        self._due_heap.push(at, trace_id)

    def _set_expiry(self, trace_id: str, entry: _Entry, at: float) -> None:
        entry.expires_at = at
        if self._expiry.get(trace_id) != at:
            self._expiry[trace_id] = at
            self._expiry_heap.push(at, trace_id)

    def _drop_entry(self, trace_id: str) -> None:
        self._entries.pop(trace_id, None)
        self._expiry.pop(trace_id, None)

    def _set_lease(self, trace_id: str, until: float, token: str) -> None:
        self._leases[trace_id] = (until, token)
        self._lease_until[trace_id] = until
        self._lease_heap.push(until, trace_id)

    def _drop_lease(self, trace_id: str) -> None:
        self._leases.pop(trace_id, None)
        self._lease_until.pop(trace_id, None)

    def _sweep(self, now: float) -> None:
        """Purge tombstones and entries whose time has passed (amortised O(log n) each)."""
        _expire(self._done_heap, self._done, now)
        while True:
            top = self._expiry_heap.peek()
            if top is None or top[0] > now:
                break
            at, trace_id = self._expiry_heap.pop()
            if self._expiry.get(trace_id) == at:
                # Its due item (if any) stays: the claim that reaches it counts "expired".
                del self._expiry[trace_id]
                self._entries.pop(trace_id, None)
        self._expiry_heap.compact(self._expiry)

    def append(
        self,
        spans: Sequence[SpanRecord],
        due_at: Mapping[str, float],
        creates: Collection[str],
    ) -> None:
        now = self._clock()
        with self._lock:
            self._sweep(now)
            for trace_id, group in group_by_trace(spans).items():
                if self._done.get(trace_id, -1.0) > now or trace_id in self._dead:
                    self._stats["late_spans"] += len(group)
                    continue
                entry = self._live(trace_id, now)
                if entry is None:
                    if trace_id not in creates:
                        continue
                    entry = self._entries[trace_id] = _Entry()
                    self._stats["traces_created"] += 1
                entry.spans.extend(group)
                self._set_expiry(trace_id, entry, max(entry.expires_at, now + self._ttl_s))
                self._stats["spans_appended"] += len(group)
                if trace_id in self._leases:
                    self._stats["late_spans"] += len(group)
                elif trace_id in due_at:
                    at = float(due_at[trace_id])
                    if at < self._due.get(trace_id, math.inf):
                        self._set_due(trace_id, at)

    def _live(self, trace_id: str, now: float) -> _Entry | None:
        entry = self._entries.get(trace_id)
        if entry is not None and entry.expires_at <= now:
            self._drop_entry(trace_id)
            return None
        return entry

    def claim(self, now: float, limit: int, lease_s: float) -> list[Lease]:
        if limit < 1:
            return []
        _check_positive("lease_s", lease_s)
        clock_now = self._clock()
        batch = uuid.uuid4().hex
        with self._lock:
            self._sweep(clock_now)
            while True:
                top = self._lease_heap.peek()
                if top is None or top[0] > now:
                    break
                until, trace_id = self._lease_heap.pop()
                if self._lease_until.get(trace_id) != until:
                    continue  # stale: released, parked or leased again since
                self._drop_lease(trace_id)
                if until < self._due.get(trace_id, math.inf):
                    self._set_due(trace_id, until)
                self._stats["lease_expired"] += 1
            self._lease_heap.compact(self._lease_until)
            claimed: list[Lease] = []
            while len(claimed) < limit:
                top = self._due_heap.peek()
                if top is None or top[0] > now:
                    break
                at, trace_id = self._due_heap.pop()
                if self._due.get(trace_id) != at:
                    continue  # stale: rescheduled or removed since
                del self._due[trace_id]
                if self._live(trace_id, clock_now) is None:
                    self._stats["expired"] += 1
                    continue
                lease = Lease(trace_id, f"{batch}:{len(claimed)}")
                self._set_lease(trace_id, now + lease_s, lease.token)
                claimed.append(lease)
            self._due_heap.compact(self._due)
            return claimed

    def claim_due(self, now: float, limit: int, lease_s: float) -> list[str]:
        """:meth:`claim` without the tokens (release/park them with ``token=None``)."""
        return [lease.trace_id for lease in self.claim(now, limit, lease_s)]

    def _holds(self, trace_id: str, token: str | None) -> bool:
        """Whether ``token`` is the trace's current lease (None: always); counts a lost one."""
        if token is None:
            return True
        lease = self._leases.get(trace_id)
        if lease is not None and lease[1] == token:
            return True
        self._stats["lease_lost"] += 1
        return False

    def load(self, trace_id: str) -> list[SpanRecord]:
        with self._lock:
            entry = self._live(trace_id, self._clock())
            return list(entry.spans) if entry is not None else []

    def release(self, trace_id: str, token: str | None = None) -> bool:
        now = self._clock()
        with self._lock:
            if not self._holds(trace_id, token):
                return False
            self._drop_entry(trace_id)
            self._due.pop(trace_id, None)
            self._drop_lease(trace_id)
            self._dead.pop(trace_id, None)
            until = now + self._done_ttl_s
            self._done[trace_id] = until
            self._done_heap.push(until, trace_id)
            self._stats["released"] += 1
            self._sweep(now)
            return True

    def park(self, trace_id: str, retry_at: float, reason: str, token: str | None = None) -> bool:
        now = self._clock()
        with self._lock:
            if not self._holds(trace_id, token):
                return False
            self._drop_lease(trace_id)
            entry = self._live(trace_id, now)
            if entry is None:
                self._due.pop(trace_id, None)
                self._stats["expired"] += 1
                return True
            entry.attempts += 1
            if entry.attempts >= self._max_attempts:
                self._due.pop(trace_id, None)
                self._dead[trace_id] = DeadTrace(trace_id, entry.attempts, reason, retry_at)
                self._set_expiry(trace_id, entry, now + self._dead_ttl_s)
                self._stats["dead"] += 1
                return True
            self._set_due(trace_id, retry_at)
            self._set_expiry(trace_id, entry, max(entry.expires_at, retry_at + self._ttl_s))
            self._stats["parked"] += 1
            return True

    def attempts(self, trace_id: str) -> int:
        """Parks so far of a trace still stored (0 for an unknown trace)."""
        with self._lock:
            entry = self._entries.get(trace_id)
            return entry.attempts if entry is not None else 0

    def dead(self, limit: int = 100) -> list[DeadTrace]:
        """Dead traces, oldest first."""
        with self._lock:
            return sorted(self._dead.values(), key=lambda d: (d.at, d.trace_id))[:limit]

    def pending(self) -> int:
        """Traces due, leased or parked (not dead)."""
        with self._lock:
            return len(self._due) + len(self._leases)

    def stats(self) -> dict[str, int]:
        """Cumulative counters, keys :data:`~ragtrace_consumers.model.STORE_STATS`."""
        with self._lock:
            return dict(self._stats)


class MemoryLabelStore:
    """:class:`~ragtrace_consumers.model.LabelStore` in process memory; ``load`` swaps atomically."""

    def __init__(self, questions: Sequence[LabelledQuestion] = (), *, clock: Clock = time.time):
        self._lock = threading.Lock()
        self._clock = clock
        self._index: LabelIndex | None = None
        self._stats = LabelStats(version=None)
        if questions:
            self.load(questions)

    def load(self, questions: Sequence[LabelledQuestion], *, source: str | None = None) -> str:
        """Replace the label set; returns its version."""
        index = LabelIndex.build(questions)
        stats = index.stats(loaded_at=self._clock(), source=source)
        with self._lock:
            self._index, self._stats = index, stats
        return str(index.version)

    def by_id(self, qid: str) -> LabelledQuestion | None:
        index = self._index
        return index.by_id.get(qid) if index is not None else None

    def by_question_sha256(self, digest: str) -> LabelledQuestion | None:
        index = self._index
        if index is None or digest not in index.by_sha256:
            return None
        found: LabelledQuestion = index.by_id[index.by_sha256[digest]]
        return found

    def version(self) -> str:
        """The loaded set's version, ``""`` when none is loaded."""
        index = self._index
        return str(index.version) if index is not None else ""

    def questions(self) -> list[LabelledQuestion]:
        """Every labelled question, by qid."""
        index = self._index
        return sorted(index.by_id.values(), key=lambda q: q.qid) if index is not None else []

    def stats(self) -> LabelStats:
        return self._stats

    def clear(self) -> None:
        with self._lock:
            self._index, self._stats = None, LabelStats(version=None)


class MemoryJudgeResultCache:
    """:class:`~ragtrace_consumers.model.JudgeResultCache` with a TTL per entry."""

    def __init__(self, *, ttl_s: float = 7 * 86400.0, clock: Clock = time.time) -> None:
        _check_positive("ttl_s", ttl_s)
        self._ttl_s, self._clock = ttl_s, clock
        self._lock = threading.Lock()
        self._items: dict[str, tuple[float, bytes]] = {}
        self._until: dict[str, float] = {}
        self._heap = _TimeHeap()

    def get(self, key: str) -> bytes | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            if item[0] <= self._clock():
                del self._items[key]
                self._until.pop(key, None)
                return None
            return item[1]

    def put(self, key: str, value: bytes) -> None:
        now = self._clock()
        with self._lock:
            until = now + self._ttl_s
            self._items[key] = (until, bytes(value))
            self._until[key] = until
            self._heap.push(until, key)
            _expire(self._heap, self._until, now, self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return [self.get(k) for k in keys]

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        for key, value in items:
            self.put(key, value)


class MemoryIdempotencyStore:
    """:class:`~ragtrace_consumers.model.IdempotencyStore`; marks expire after ``ttl_s``."""

    def __init__(self, *, ttl_s: float = 7 * 86400.0, clock: Clock = time.time) -> None:
        _check_positive("ttl_s", ttl_s)
        self._ttl_s, self._clock = ttl_s, clock
        self._lock = threading.Lock()
        self._marks: dict[str, float] = {}  # "trace\0metric" -> expiry
        self._heap = _TimeHeap()

    def written(self, trace_id: str, metric: str) -> bool:
        with self._lock:
            until = self._marks.get(f"{trace_id}\0{metric}")
            return until is not None and until > self._clock()

    def mark_written(self, trace_id: str, metric: str) -> None:
        now = self._clock()
        with self._lock:
            key, until = f"{trace_id}\0{metric}", now + self._ttl_s
            self._marks[key] = until
            self._heap.push(until, key)
            _expire(self._heap, self._marks, now)

    def __len__(self) -> int:
        with self._lock:
            return len(self._marks)

    def written_many(self, keys: Sequence[tuple[str, str]]) -> list[bool]:
        return [self.written(t, m) for t, m in keys]

    def mark_written_many(self, keys: Sequence[tuple[str, str]]) -> None:
        for trace_id, metric in keys:
            self.mark_written(trace_id, metric)


class MemoryJudgeBudget:
    """:class:`~ragtrace_consumers.model.JudgeBudget`: a sliding window (``window_s``, 60 s).

    ``try_acquire(calls, tokens)`` succeeds, and counts, only when the calls and tokens granted
    in the last ``window_s`` plus these stay within both limits; otherwise nothing is counted. A
    request larger than a whole window's limit never succeeds.
    """

    def __init__(
        self,
        calls_per_minute: int,
        tokens_per_minute: int,
        *,
        window_s: float = BUDGET_WINDOW_S,
        clock: Clock = time.time,
    ) -> None:
        if calls_per_minute < 0 or tokens_per_minute < 0:
            raise ValueError("budget limits must be >= 0")
        _check_positive("window_s", window_s)
        self._window_s = window_s
        self._calls_limit, self._tokens_limit = calls_per_minute, tokens_per_minute
        self._clock = clock
        self._lock = threading.Lock()
        self._grants: deque[tuple[float, int, int]] = deque()
        self._calls = 0
        self._tokens = 0

    def try_acquire(self, calls: int, tokens: int) -> bool:
        if calls < 0 or tokens < 0:
            raise ValueError(f"calls and tokens must be >= 0, got {calls}, {tokens}")
        now = self._clock()
        with self._lock:
            while self._grants and self._grants[0][0] <= now - self._window_s:
                _, c, t = self._grants.popleft()
                self._calls -= c
                self._tokens -= t
            if (
                self._calls + calls > self._calls_limit
                or self._tokens + tokens > self._tokens_limit
            ):
                return False
            self._grants.append((now, calls, tokens))
            self._calls += calls
            self._tokens += tokens
            return True


class MemoryBatchStore:
    """:class:`BatchStore` in process memory (the embedded evaluator, tests)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._batches: dict[str, dict[str, bytes]] = {}
        self._submitted: dict[str, str] = {}

    def add_batch(self, batch_id: str, items: Mapping[str, bytes]) -> None:
        with self._lock:
            self._batches[batch_id] = dict(items)
            self._submitted.update(dict.fromkeys(items, batch_id))

    def pending_batches(self) -> list[str]:
        with self._lock:
            return list(self._batches)

    def batch_items(self, batch_id: str) -> dict[str, bytes]:
        with self._lock:
            return dict(self._batches.get(batch_id, {}))

    def submitted(self, custom_ids: Sequence[str]) -> list[bool]:
        with self._lock:
            return [c in self._submitted for c in custom_ids]

    def finish_batch(self, batch_id: str) -> None:
        with self._lock:
            for cid in self._batches.pop(batch_id, {}):
                if self._submitted.get(cid) == batch_id:
                    del self._submitted[cid]


class MemorySessionEvidence:
    """:class:`~ragtrace_consumers.model.SessionEvidence` in process: the newest ``max_turns``
    turns of each session, a session forgotten ``ttl_s`` after its last turn was recorded."""

    def __init__(self, *, max_turns: int = 3, ttl_s: float = 1800.0, clock: Clock = time.time):
        _check_positive("max_turns", max_turns)
        _check_positive("ttl_s", ttl_s)
        self._max_turns, self._ttl_s, self._clock = max_turns, ttl_s, clock
        self._lock = threading.Lock()
        self._turns: dict[str, list[SessionTurn]] = {}
        self._until: dict[str, float] = {}
        self._heap = _TimeHeap()

    def record_many(self, turns: Sequence[tuple[str, SessionTurn]]) -> None:
        now = self._clock()
        with self._lock:
            for session_id, turn in turns:
                kept = [t for t in self._turns.get(session_id, []) if t.trace_id != turn.trace_id]
                kept.append(turn)
                kept.sort(key=lambda t: t.ended_ns, reverse=True)
                del kept[self._max_turns :]
                self._turns[session_id] = kept
                until = now + self._ttl_s
                self._until[session_id] = until
                self._heap.push(until, session_id)
            _expire(self._heap, self._until, now, self._turns)
            self._heap.compact(self._until)

    def recent_many(
        self, queries: Sequence[tuple[str, int]], max_turns: int, max_age_s: float
    ) -> list[list[SessionTurn]]:
        with self._lock:
            return [
                recent_turns(self._turns.get(s, ()), before, max_turns, max_age_s)
                for s, before in queries
            ]

    def __len__(self) -> int:
        with self._lock:
            return len(self._turns)
