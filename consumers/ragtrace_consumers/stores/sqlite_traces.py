"""A durable :class:`~ragtrace_consumers.model.TraceStore` in a SQLite file, for ``ragtrace
serve``: the traces it has answered 2xx for survive SIGKILL and SIGTERM.

Same semantics as the in-memory and Redis stores (the shared behavioural suite in
tests/e2e/test_stores.py runs against it too). Contracts of its own:

* :meth:`SqliteTraceStore.append` is one transaction (all spans of one request commit together,
  or none do), WAL journal with ``synchronous=FULL``: durable when it returns, even against a
  power loss. It is also the memory bound: with ``max_traces`` / ``max_bytes`` set, an append
  that would make the store hold more traces (counting each trace of the request as new) or
  more span bytes raises :class:`StoreFull` before anything is written.
* Due and lease lookups go through indexes (``due_at``, ``lease_until``, ``expires_at``):
  a claim costs O(log n + claimed), never a scan of every trace.
* :meth:`recover` (called by the single process that owns the file, at start) makes every trace
  leased by a previous process due at once: nothing waits for a dead process's lease.

Its own connection (and lock) on the state file, apart from the other embedded stores, so the
FULL fsync is paid once per request, not by every cache write.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragtrace_consumers.errors import Held, StoreFull
from ragtrace_consumers.model import STORE_STATS, DeadTrace, Lease, SpanRecord, group_by_trace
from ragtrace_consumers.stores.defaults import (
    DEFAULT_DEAD_TTL_S,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_TTL_S,
)
from ragtrace_consumers.stores.private_files import private_state_file
from ragtrace_consumers.stores.span_encoding import decode_span, encode_span

__all__ = ["SqliteTraceStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY,
    due_at REAL,
    lease_until REAL,
    token TEXT,
    expires_at REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    dead_reason TEXT,
    dead_at REAL,
    bytes INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS traces_due ON traces(due_at, trace_id) WHERE due_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS traces_lease ON traces(lease_until) WHERE lease_until IS NOT NULL;
CREATE INDEX IF NOT EXISTS traces_expiry ON traces(expires_at);
CREATE TABLE IF NOT EXISTS trace_spans (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    trace_id TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS trace_spans_trace ON trace_spans(trace_id, seq);
CREATE TABLE IF NOT EXISTS traces_done (trace_id TEXT PRIMARY KEY, until REAL NOT NULL);
CREATE INDEX IF NOT EXISTS traces_done_until ON traces_done(until);
CREATE TABLE IF NOT EXISTS trace_stats (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""
_SWEEP = 100  # expired, unscheduled traces deleted per claim


class SqliteTraceStore:
    """:class:`~ragtrace_consumers.model.TraceStore` in a SQLite file (module doc). Thread-safe;
    ``path`` ``":memory:"`` for tests. ``max_traces``/``max_bytes`` None: unbounded."""

    def __init__(
        self,
        path: str | Path,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        done_ttl_s: float | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        dead_ttl_s: float = DEFAULT_DEAD_TTL_S,
        max_traces: int | None = None,
        max_bytes: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        for name, value in (("ttl_s", ttl_s), ("dead_ttl_s", dead_ttl_s)):
            if not value > 0:
                raise ValueError(f"{name} must be > 0, got {value!r}")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        if (max_traces is not None and max_traces < 1) or (max_bytes is not None and max_bytes < 1):
            raise ValueError(
                f"max_traces and max_bytes must be >= 1, got {max_traces}, {max_bytes}"
            )
        self._ttl_s = ttl_s
        self._done_ttl_s = ttl_s if done_ttl_s is None else done_ttl_s
        if not self._done_ttl_s > 0:
            raise ValueError(f"done_ttl_s must be > 0, got {done_ttl_s!r}")
        self._max_attempts = max_attempts
        self._dead_ttl_s = dead_ttl_s
        self.max_traces = max_traces
        self.max_bytes = max_bytes
        self._clock = clock
        self.path = str(path)
        private_state_file(self.path)  # it holds trace content: 0600 in a 0700 directory
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=30.0
        )
        with self._lock:
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            row = self._db.execute(
                "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM traces"
            ).fetchone()
            self._held_traces, self._held_bytes = int(row[0]), int(row[1])

    # --- helpers (called with the lock held, inside a transaction) ---------------------------
    def _stat(self, name: str, n: int = 1) -> None:
        if n:
            self._db.execute(
                "INSERT INTO trace_stats (name, value) VALUES (?, ?) ON CONFLICT(name)"
                " DO UPDATE SET value = value + excluded.value",
                (name, n),
            )

    def _row(self, trace_id: str) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self._db.execute(
            "SELECT due_at, lease_until, token, expires_at, attempts, dead_reason, bytes "
            "FROM traces WHERE trace_id = ?",
            (trace_id,),
        ).fetchone()
        return row

    def _delete(self, trace_id: str, size: int) -> None:
        self._db.execute("DELETE FROM traces WHERE trace_id = ?", (trace_id,))
        self._db.execute("DELETE FROM trace_spans WHERE trace_id = ?", (trace_id,))
        self._held_traces -= 1
        self._held_bytes -= size

    def _live(self, trace_id: str, now: float) -> tuple[Any, ...] | None:
        """The trace's row, or None (an expired one is deleted)."""
        row = self._row(trace_id)
        if row is not None and row[3] <= now:
            self._delete(trace_id, int(row[6]))
            return None
        return row

    def _holds(self, trace_id: str, token: str | None) -> bool:
        if token is None:
            return True
        row = self._db.execute(
            "SELECT token FROM traces WHERE trace_id = ? AND lease_until IS NOT NULL", (trace_id,)
        ).fetchone()
        if row is not None and row[0] == token:
            return True
        self._stat("lease_lost")
        return False

    def _tx(self, fn: Callable[[], Any]) -> Any:
        with self._lock:
            traces, size = self._held_traces, self._held_bytes
            self._db.execute("BEGIN IMMEDIATE")
            try:
                result = fn()
            except BaseException:
                self._db.execute("ROLLBACK")
                self._held_traces, self._held_bytes = traces, size
                raise
            self._db.execute("COMMIT")
            return result

    # --- the TraceStore seam -----------------------------------------------------------------
    def held(self) -> Held:
        """Traces and span bytes held now (what the bound counts)."""
        with self._lock:
            return Held(self._held_traces, self._held_bytes)

    def append(
        self,
        spans: Sequence[SpanRecord],
        due_at: Mapping[str, float],
        creates: Collection[str],
    ) -> None:
        groups = {t: [encode_span(s) for s in g] for t, g in group_by_trace(spans).items()}
        created = set(creates)
        adding = Held(len(groups), sum(len(b) for g in groups.values() for b in g))
        now = self._clock()

        def run() -> None:
            self._check_bound(adding)
            for trace_id, bodies in groups.items():
                done = self._db.execute(
                    "SELECT until FROM traces_done WHERE trace_id = ?", (trace_id,)
                ).fetchone()
                row = self._live(trace_id, now)
                if (done is not None and done[0] > now) or (row is not None and row[5]):
                    self._stat("late_spans", len(bodies))
                    continue
                size = sum(len(b) for b in bodies)
                if row is None:
                    if trace_id not in created:
                        continue
                    self._db.execute(
                        "INSERT INTO traces (trace_id, expires_at) VALUES (?, ?)",
                        (trace_id, now + self._ttl_s),
                    )
                    self._held_traces += 1
                    self._stat("traces_created")
                    row = self._row(trace_id)
                    assert row is not None
                self._db.executemany(
                    "INSERT INTO trace_spans (trace_id, body) VALUES (?, ?)",
                    [(trace_id, b) for b in bodies],
                )
                self._held_bytes += size
                self._stat("spans_appended", len(bodies))
                due = row[0]
                if row[1] is not None:
                    self._stat("late_spans", len(bodies))
                elif trace_id in due_at:
                    at = float(due_at[trace_id])
                    due = at if due is None else min(due, at)
                self._db.execute(
                    "UPDATE traces SET expires_at = MAX(expires_at, ?), due_at = ?, "
                    "bytes = bytes + ? WHERE trace_id = ?",
                    (now + self._ttl_s, due, size, trace_id),
                )

        self._tx(run)

    def _check_bound(self, adding: Held) -> None:
        held = Held(self._held_traces, self._held_bytes)
        over_traces = self.max_traces is not None and held.traces + adding.traces > self.max_traces
        over_bytes = self.max_bytes is not None and held.bytes + adding.bytes > self.max_bytes
        if over_traces or over_bytes:
            raise StoreFull(held, adding, Held(self.max_traces or 0, self.max_bytes or 0))

    def claim(self, now: float, limit: int, lease_s: float) -> list[Lease]:
        if limit < 1:
            return []
        if not lease_s > 0:
            raise ValueError(f"lease_s must be > 0, got {lease_s!r}")
        clock_now = self._clock()
        batch = uuid.uuid4().hex

        def run() -> list[Lease]:
            ran_out = self._db.execute(
                "SELECT trace_id, lease_until, due_at FROM traces WHERE lease_until IS NOT NULL "
                "AND lease_until <= ?",
                (now,),
            ).fetchall()
            for trace_id, until, due in ran_out:
                self._db.execute(
                    "UPDATE traces SET lease_until = NULL, token = NULL, due_at = ? "
                    "WHERE trace_id = ?",
                    (until if due is None else min(due, until), trace_id),
                )
            self._stat("lease_expired", len(ran_out))
            claimed: list[Lease] = []
            while len(claimed) < limit:
                rows = self._db.execute(
                    "SELECT trace_id, expires_at, bytes FROM traces WHERE due_at IS NOT NULL AND "
                    "due_at <= ? ORDER BY due_at, trace_id LIMIT ?",
                    (now, limit - len(claimed)),
                ).fetchall()
                if not rows:
                    break
                for trace_id, expires_at, size in rows:  # each leaves the due index
                    if expires_at <= clock_now:
                        self._delete(trace_id, int(size))
                        self._stat("expired")
                        continue
                    lease = Lease(trace_id, f"{batch}:{len(claimed)}")
                    self._db.execute(
                        "UPDATE traces SET due_at = NULL, lease_until = ?, "
                        "token = ? WHERE trace_id = ?",
                        (now + lease_s, lease.token, trace_id),
                    )
                    claimed.append(lease)
            self._sweep(clock_now)
            return claimed

        result: list[Lease] = self._tx(run)
        return result

    def _sweep(self, now: float) -> None:
        """Delete a few expired traces nobody will claim (dead past their TTL, abandoned)."""
        stale = self._db.execute(
            "SELECT trace_id, bytes FROM traces WHERE expires_at <= ? AND due_at IS NULL AND "
            "lease_until IS NULL LIMIT ?",
            (now, _SWEEP),
        ).fetchall()
        for trace_id, size in stale:
            self._delete(trace_id, int(size))
        self._db.execute(
            "DELETE FROM traces_done WHERE trace_id IN (SELECT trace_id FROM "
            "traces_done WHERE until <= ? LIMIT ?)",
            (now, _SWEEP),
        )

    def claim_due(self, now: float, limit: int, lease_s: float) -> list[str]:
        """:meth:`claim` without the tokens (release/park them with ``token=None``)."""
        return [lease.trace_id for lease in self.claim(now, limit, lease_s)]

    def load(self, trace_id: str) -> list[SpanRecord]:
        now = self._clock()
        with self._lock:
            return self._load(trace_id, now)

    def load_many(self, trace_ids: Sequence[str]) -> list[list[SpanRecord]]:
        now = self._clock()
        with self._lock:
            return [self._load(t, now) for t in trace_ids]

    def _load(self, trace_id: str, now: float) -> list[SpanRecord]:
        row = self._row(trace_id)
        if row is None or row[3] <= now:  # an expired trace is deleted by claim or sweep
            return []
        rows = self._db.execute(
            "SELECT body FROM trace_spans WHERE trace_id = ? ORDER BY seq", (trace_id,)
        ).fetchall()
        return [decode_span(r[0]) for r in rows]

    def release(self, trace_id: str, token: str | None = None) -> bool:
        now = self._clock()

        def run() -> bool:
            if not self._holds(trace_id, token):
                return False
            row = self._row(trace_id)
            if row is not None:
                self._delete(trace_id, int(row[6]))
            self._db.execute(
                "INSERT OR REPLACE INTO traces_done (trace_id, until) VALUES (?, ?)",
                (trace_id, now + self._done_ttl_s),
            )
            self._stat("released")
            return True

        result: bool = self._tx(run)
        return result

    def release_many(self, leases: Sequence[tuple[str, str | None]]) -> list[bool]:
        """Each lease released in its own transaction, in the order given."""
        return [self.release(t, token) for t, token in leases]

    def park(self, trace_id: str, retry_at: float, reason: str, token: str | None = None) -> bool:
        now = self._clock()

        def run() -> bool:
            if not self._holds(trace_id, token):
                return False
            row = self._live(trace_id, now)
            if row is None:
                self._stat("expired")
                return True
            attempts = int(row[4]) + 1
            if attempts >= self._max_attempts:
                self._db.execute(
                    "UPDATE traces SET lease_until = NULL, token = NULL, due_at = NULL, "
                    "attempts = ?, dead_reason = ?, dead_at = ?, expires_at = ? WHERE trace_id = ?",
                    (attempts, reason, retry_at, now + self._dead_ttl_s, trace_id),
                )
                self._stat("dead")
                return True
            self._db.execute(
                "UPDATE traces SET lease_until = NULL, token = NULL, due_at = ?, attempts = ?, "
                "expires_at = MAX(expires_at, ?) WHERE trace_id = ?",
                (retry_at, attempts, retry_at + self._ttl_s, trace_id),
            )
            self._stat("parked")
            return True

        result: bool = self._tx(run)
        return result

    def recover(self, now: float | None = None) -> int:
        """Make every leased trace due now (its claimant was a previous process); returns how
        many. Only the process that owns the file may call it."""
        now = self._clock() if now is None else now

        def run() -> int:
            n = self._db.execute(
                "UPDATE traces SET due_at = MIN(COALESCE(due_at, ?), ?), "
                "lease_until = NULL, token = NULL WHERE lease_until IS NOT NULL",
                (now, now),
            ).rowcount
            self._stat("lease_expired", int(n))
            return int(n)

        result: int = self._tx(run)
        return result

    # --- inspection ----------------------------------------------------------------------------
    def attempts(self, trace_id: str) -> int:
        with self._lock:
            row = self._db.execute(
                "SELECT attempts FROM traces WHERE trace_id = ?", (trace_id,)
            ).fetchone()
            return int(row[0]) if row else 0

    def dead(self, limit: int = 100) -> list[DeadTrace]:
        with self._lock:
            rows = self._db.execute(
                "SELECT trace_id, attempts, dead_reason, dead_at FROM traces "
                "WHERE dead_reason IS NOT NULL ORDER BY dead_at, trace_id "
                "LIMIT ?",
                (limit,),
            ).fetchall()
        return [DeadTrace(t, int(a), str(r), float(at)) for t, a, r, at in rows]

    def pending(self) -> int:
        """Traces due, leased or parked (not dead)."""
        with self._lock:
            row = self._db.execute(
                "SELECT (SELECT COUNT(*) FROM traces WHERE due_at IS NOT NULL) + "
                "(SELECT COUNT(*) FROM traces WHERE lease_until IS NOT NULL)"
            ).fetchone()
            return int(row[0])

    def stats(self) -> dict[str, int]:
        """Cumulative counters (persisted), keys :data:`~ragtrace_consumers.model.STORE_STATS`."""
        with self._lock:
            rows = dict(self._db.execute("SELECT name, value FROM trace_stats").fetchall())
        return {name: int(rows.get(name, 0)) for name in STORE_STATS}

    def close(self) -> None:
        with self._lock:
            self._db.close()
