"""SQLite-backed state for the embedded evaluator (``ragtrace serve`` / ``ragtrace demo``).

One local database file holds what must survive a restart of the single embedded process:

* the judge-result cache (:class:`JudgeResultCache` seam) — a restarted evaluator never pays twice
  for the same (answer, context, judge) judgement;
* the idempotency store (:class:`IdempotencyStore` seam) — a trace scored before the restart is
  not written back a second time;
* the traces seen and not scored, with their reasons (a :class:`SkipLog`);
* the audit labels of the judge's unit verdicts
  (:mod:`~ragtrace_consumers.stores.audit_labels`);
* the scored results — one row per scored trace, kept by their own module,
  :mod:`ragtrace_consumers.stores.scored_results` (its tables are created and migrated here, in
  the same file).

Every write is committed before the call returns (autocommit, WAL journal), so a crash loses
nothing that a method reported as stored. One connection is shared by the receiver's request
threads and the scoring loop, serialised by a lock: the embedded evaluator is a single process
whose throughput is bounded by the judge, not by these tiny writes.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from typing_extensions import Self

from ragtrace_consumers.model import SessionTurn, SkippedTrace
from ragtrace_consumers.stores.audit_labels import SqliteAuditLabels
from ragtrace_consumers.stores.private_files import private_state_file
from ragtrace_consumers.stores.scored_results import SqliteScoredResults, create_tables
from ragtrace_consumers.stores.session_turns import decode_turn, encode_turn

__all__ = [
    "SqliteIdempotencyStore",
    "SqliteJudgeResultCache",
    "SqliteSessionEvidence",
    "SqliteSkippedTraces",
    "SqliteState",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_cache (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS written (
    trace_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    PRIMARY KEY (trace_id, metric)
);
CREATE TABLE IF NOT EXISTS skipped (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    trace_id TEXT NOT NULL UNIQUE,
    service TEXT NOT NULL,
    reason TEXT NOT NULL,
    detail TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS session_turns (
    session_id TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    ended_ns INTEGER NOT NULL,
    turn BLOB NOT NULL,
    PRIMARY KEY (session_id, trace_id)
);
CREATE INDEX IF NOT EXISTS session_turns_ended ON session_turns (ended_ns);
"""


class SqliteState:
    """The embedded evaluator's database file and the three stores over it.

    ``path`` may be ``":memory:"`` for a throw-away state (tests). Use as a context manager or
    call :meth:`close`.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        private_state_file(self.path)  # it holds trace content: 0600 in a 0700 directory
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        with self._lock:
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
            create_tables(self._conn)
        self.judge_cache = SqliteJudgeResultCache(self)
        self.idempotency = SqliteIdempotencyStore(self)
        self.results = SqliteScoredResults(self)
        self.skipped = SqliteSkippedTraces(self)
        self.audits = SqliteAuditLabels(self)

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Run one statement under the lock and return all its rows."""
        with self._lock:
            return self._conn.execute(sql, tuple(params)).fetchall()

    def execute_many(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        """Run one statement per row in one transaction, under the lock."""
        with self.transaction() as conn:
            conn.executemany(sql, [tuple(r) for r in rows])

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock, in one transaction: committed when the block ends,
        rolled back when it raises."""
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_IN_CHUNK = 500
"""Keys per ``IN (...)`` query (SQLite's default limit is 999 bound parameters)."""


class SqliteJudgeResultCache:
    """:class:`~ragtrace_consumers.model.JudgeResultCache` in the state file; entries never expire
    (the key already includes the judge model and prompt hash, so a judge change misses)."""

    def __init__(self, state: SqliteState) -> None:
        self._state = state

    def get(self, key: str) -> bytes | None:
        rows = self._state.execute("SELECT value FROM judge_cache WHERE key = ?", (key,))
        return bytes(rows[0][0]) if rows else None

    def put(self, key: str, value: bytes) -> None:
        self._state.execute(
            "INSERT OR REPLACE INTO judge_cache (key, value) VALUES (?, ?)", (key, bytes(value))
        )

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        found: dict[str, bytes] = {}
        for i in range(0, len(keys), _IN_CHUNK):
            chunk = list(keys[i : i + _IN_CHUNK])
            marks = ",".join("?" * len(chunk))
            for key, value in self._state.execute(
                f"SELECT key, value FROM judge_cache WHERE key IN ({marks})", chunk
            ):
                found[key] = bytes(value)
        return [found.get(k) for k in keys]

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        if items:
            self._state.execute_many(
                "INSERT OR REPLACE INTO judge_cache (key, value) VALUES (?, ?)",
                [(k, bytes(v)) for k, v in items],
            )

    def __len__(self) -> int:
        return int(self._state.execute("SELECT COUNT(*) FROM judge_cache")[0][0])


class SqliteIdempotencyStore:
    """:class:`~ragtrace_consumers.model.IdempotencyStore` in the state file."""

    def __init__(self, state: SqliteState) -> None:
        self._state = state

    def written(self, trace_id: str, metric: str) -> bool:
        rows = self._state.execute(
            "SELECT 1 FROM written WHERE trace_id = ? AND metric = ?", (trace_id, metric)
        )
        return bool(rows)

    def mark_written(self, trace_id: str, metric: str) -> None:
        self._state.execute(
            "INSERT OR IGNORE INTO written (trace_id, metric) VALUES (?, ?)", (trace_id, metric)
        )

    def written_many(self, keys: Sequence[tuple[str, str]]) -> list[bool]:
        found: set[tuple[str, str]] = set()
        ids = sorted({t for t, _ in keys})
        for i in range(0, len(ids), _IN_CHUNK):
            chunk = ids[i : i + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._state.execute(
                f"SELECT trace_id, metric FROM written WHERE trace_id IN ({marks})", chunk
            )
            found.update((t, m) for t, m in rows)
        return [k in found for k in keys]

    def mark_written_many(self, keys: Sequence[tuple[str, str]]) -> None:
        if keys:
            self._state.execute_many(
                "INSERT OR IGNORE INTO written (trace_id, metric) VALUES (?, ?)", keys
            )


class SqliteSkippedTraces:
    """One row per trace seen and not scored, with its reason (the latest, when a trace was
    skipped again), in the order first skipped: a :class:`~ragtrace_consumers.model.SkipLog`."""

    def __init__(self, state: SqliteState) -> None:
        self._state = state

    def skipped(self, entry: SkippedTrace) -> None:
        self._state.execute(
            "INSERT INTO skipped (trace_id, service, reason, detail, at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(trace_id) DO UPDATE SET reason = excluded.reason, "
            "detail = excluded.detail, at = excluded.at",
            (entry.trace_id, entry.service, entry.reason, entry.detail, entry.at),
        )

    def all(self) -> list[SkippedTrace]:
        """Every skipped trace, first skipped first."""
        return [entry for _, entry in self.after(0)]

    def after(self, seq: int) -> list[tuple[int, SkippedTrace]]:
        """``(seq, entry)`` of the traces first skipped after ``seq``: poll with the last seq."""
        return [
            (int(n), SkippedTrace(str(t), str(svc), str(r), str(d), float(at)))
            for n, t, svc, r, d, at in self._state.execute(
                "SELECT seq, trace_id, service, reason, detail, at FROM skipped WHERE seq > ? "
                "ORDER BY seq",
                (seq,),
            )
        ]

    def latest(self, limit: int) -> list[SkippedTrace]:
        """The ``limit`` traces skipped last, newest first."""
        return [
            SkippedTrace(str(t), str(svc), str(r), str(d), float(at))
            for t, svc, r, d, at in self._state.execute(
                "SELECT trace_id, service, reason, detail, at FROM skipped ORDER BY at DESC, "
                "seq DESC LIMIT ?",
                (limit,),
            )
        ]

    def reasons(self) -> list[tuple[str, int]]:
        """(reason, traces) of the skipped traces."""
        rows = self._state.execute("SELECT reason, COUNT(*) FROM skipped GROUP BY reason")
        return [(str(why), int(n)) for why, n in rows]

    def __len__(self) -> int:
        return int(self._state.execute("SELECT COUNT(*) FROM skipped")[0][0])


class SqliteSessionEvidence:
    """:class:`~ragtrace_consumers.model.SessionEvidence` in the state file: the newest
    ``max_turns`` turns of each session; turns that ended more than ``ttl_s`` before the newest
    turn recorded are deleted as new ones arrive."""

    def __init__(self, state: SqliteState, *, max_turns: int = 3, ttl_s: float = 1800.0) -> None:
        if max_turns < 1 or not ttl_s > 0:
            raise ValueError(f"max_turns must be >= 1 and ttl_s > 0, got {max_turns}, {ttl_s}")
        self._state, self._max_turns, self._ttl_ns = state, max_turns, int(ttl_s * 1e9)

    def record_many(self, turns: Sequence[tuple[str, SessionTurn]]) -> None:
        if not turns:
            return
        self._state.execute_many(
            "INSERT OR REPLACE INTO session_turns (session_id, trace_id, ended_ns, turn) "
            "VALUES (?, ?, ?, ?)",
            [(s, t.trace_id, t.ended_ns, encode_turn(t)) for s, t in turns],
        )
        newest = max(t.ended_ns for _, t in turns)
        self._state.execute(
            "DELETE FROM session_turns WHERE ended_ns < ?", (newest - self._ttl_ns,)
        )
        self._state.execute_many(
            "DELETE FROM session_turns WHERE session_id = ? AND trace_id NOT IN (SELECT trace_id "
            "FROM session_turns WHERE session_id = ? ORDER BY ended_ns DESC LIMIT ?)",
            [(s, s, self._max_turns) for s in {s for s, _ in turns}],
        )

    def recent_many(
        self, queries: Sequence[tuple[str, int]], max_turns: int, max_age_s: float
    ) -> list[list[SessionTurn]]:
        out = []
        for session_id, before in queries:
            rows = self._state.execute(
                "SELECT turn FROM session_turns WHERE session_id = ? AND ended_ns < ? "
                "AND ended_ns >= ? ORDER BY ended_ns DESC LIMIT ?",
                (session_id, before, before - int(max_age_s * 1e9), max_turns),
            )
            out.append([decode_turn(bytes(r[0])) for r in rows])
        return out

    def __len__(self) -> int:
        return int(self._state.execute("SELECT COUNT(*) FROM session_turns")[0][0])
