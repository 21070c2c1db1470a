"""SQLite-backed state for the embedded evaluator (``ragtrace serve`` / ``ragtrace demo``).

One local database file holds what must survive a restart of the single embedded process:

* the judge-result cache (:class:`JudgeResultCache` seam) — a restarted evaluator never pays twice
  for the same (answer, context, judge) judgement;
* the idempotency store (:class:`IdempotencyStore` seam) — a trace scored before the restart is
  not written back a second time;
* the scored-results table — one row per scored trace, what ``ragtrace serve`` and
  ``ragtrace demo`` print from, with the columns the web view filters and orders by
  (service, cell, judge, query, groundedness, recall, severity, worst score; indexed) and,
  beside it, each trace's detail
  (ranked chunks with their text, gold IDs, the judge's units, claims, quotes and checks).

Schema version 1 (``PRAGMA user_version``) added those columns and the detail table; a file
written before is migrated in place when opened (its columns filled from the stored records;
its traces have no detail, and the web view says so).

Every write is committed before the call returns (autocommit, WAL journal), so a crash loses
nothing that a method reported as stored. One connection is shared by the receiver's request
threads and the scoring loop, serialised by a lock: the embedded evaluator is a single process
whose throughput is bounded by the judge, not by these tiny writes.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from typing_extensions import Self

from ragtrace_consumers.model import SessionTurn
from ragtrace_consumers.scoring.skips import SkippedTrace
from ragtrace_consumers.stores.private_files import private_state_file
from ragtrace_consumers.stores.session_turns import decode_turn, encode_turn

__all__ = [
    "SCHEMA_VERSION",
    "SEVERITY",
    "ScoredResult",
    "SqliteIdempotencyStore",
    "SqliteJudgeResultCache",
    "SqliteScoredResults",
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
CREATE TABLE IF NOT EXISTS scored (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    trace_id TEXT NOT NULL UNIQUE,
    scored_at REAL NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS scored_detail (
    trace_id TEXT PRIMARY KEY,
    body TEXT NOT NULL
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

SCHEMA_VERSION = 1
_COLUMNS = (
    ("service", "TEXT", "json_extract(record, '$.service')"),
    ("cell", "TEXT", "json_extract(record, '$.cell')"),
    ("judge", "TEXT", "json_extract(record, '$.judge_name')"),
    ("query", "TEXT", "json_extract(record, '$.query')"),
    ("groundedness", "REAL", "json_extract(record, '$.groundedness')"),
    ("recall", "REAL", "json_extract(record, '$.recall')"),
    ("severity", "INTEGER", None),
    ("worst", "REAL", None),
)
_INDEXES = """
CREATE INDEX IF NOT EXISTS scored_worst ON scored(severity, worst, seq);
CREATE INDEX IF NOT EXISTS scored_cell ON scored(cell, severity, worst, seq);
CREATE INDEX IF NOT EXISTS scored_service ON scored(service, severity, worst, seq);
CREATE INDEX IF NOT EXISTS scored_judge ON scored(judge, severity, worst, seq);
CREATE INDEX IF NOT EXISTS scored_time ON scored(
    scored_at, cell, groundedness, recall, severity, worst
);
CREATE INDEX IF NOT EXISTS scored_unlabelled ON scored(query) WHERE cell = 'unlabelled';
"""
SEVERITY: Mapping[str, int] = {
    "both_failed": 0,
    "generation_failed": 1,
    "retrieval_failed": 2,
    "unjudged": 3,
    "unlabelled": 4,
    "fine": 5,
}
"""Worst first: a cell's place in the web view's default order (unknown cells after fine)."""


def _severity_sql() -> str:
    cases = " ".join(f"WHEN '{c}' THEN {n}" for c, n in SEVERITY.items())
    return f"CASE json_extract(record, '$.cell') {cases} ELSE {len(SEVERITY)} END"


_WORST_SQL = (
    "MIN(COALESCE(json_extract(record, '$.groundedness'), 1.0), "
    "COALESCE(json_extract(record, '$.recall'), 1.0))"
)


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring an older state file to :data:`SCHEMA_VERSION` (one transaction)."""
    if int(conn.execute("PRAGMA user_version").fetchone()[0]) >= SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")  # another process opening the file waits, then sees it done
    try:
        if int(conn.execute("PRAGMA user_version").fetchone()[0]) >= SCHEMA_VERSION:
            conn.execute("COMMIT")
            return
        have = {str(r[1]) for r in conn.execute("PRAGMA table_info(scored)")}
        for name, kind, _ in _COLUMNS:
            if name not in have:
                conn.execute(f"ALTER TABLE scored ADD COLUMN {name} {kind}")
        fills = [f"{n} = {expr}" for n, _, expr in _COLUMNS if expr is not None]
        fills += [f"severity = {_severity_sql()}", f"worst = {_WORST_SQL}"]
        conn.execute(f"UPDATE scored SET {', '.join(fills)} WHERE severity IS NULL")
        for statement in _INDEXES.strip().split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _opt_float(value: float | None) -> float | None:
    """JSON has no NaN: an unset or NaN score is stored as null."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)


@dataclass(frozen=True)
class ScoredResult:
    """What the embedded evaluator remembers about one scored trace.

    Scores are ``None`` when not computed (no label matched, judging not sampled, the judge
    failed). ``unsupported_claims`` are the answer's claims the judge did not find entailed by
    the supplied context; ``cell`` is the attribution cell value (``"fine"``,
    ``"retrieval_failed"``, …).
    """

    trace_id: str
    scored_at: float
    service: str
    cell: str
    pipeline: str | None = None
    question_id: str | None = None
    query: str | None = None
    matched_by: str | None = None
    k: int | None = None
    recall: float | None = None
    hit_rate: float | None = None
    reciprocal_rank: float | None = None
    groundedness: float | None = None
    claims: int | None = None
    unsupported_claims: tuple[str, ...] = ()
    judge_name: str | None = None
    judge_model: str | None = None
    judge_error: str | None = None
    retrieved: tuple[str, ...] = ()
    answer: str | None = None
    extra: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.trace_id) != 32:
            raise ValueError(
                f"ScoredResult.trace_id must be 32 hex characters, got {self.trace_id!r}"
            )
        if not self.cell:
            raise ValueError("ScoredResult.cell must not be empty")
        for name in ("recall", "hit_rate", "reciprocal_rank", "groundedness"):
            value = getattr(self, name)
            known = value is not None and not (isinstance(value, float) and math.isnan(value))
            if known and not 0.0 <= float(value) <= 1.0:
                raise ValueError(f"ScoredResult.{name} must be within [0, 1], got {value!r}")

    def to_dict(self) -> dict[str, object]:
        return {
            "trace_id": self.trace_id,
            "scored_at": self.scored_at,
            "service": self.service,
            "cell": self.cell,
            "pipeline": self.pipeline,
            "question_id": self.question_id,
            "query": self.query,
            "matched_by": self.matched_by,
            "k": self.k,
            "recall": _opt_float(self.recall),
            "hit_rate": _opt_float(self.hit_rate),
            "reciprocal_rank": _opt_float(self.reciprocal_rank),
            "groundedness": _opt_float(self.groundedness),
            "claims": self.claims,
            "unsupported_claims": list(self.unsupported_claims),
            "judge_name": self.judge_name,
            "judge_model": self.judge_model,
            "judge_error": self.judge_error,
            "retrieved": list(self.retrieved),
            "answer": self.answer,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ScoredResult:
        def opt_str(key: str) -> str | None:
            v = d.get(key)
            return None if v is None else str(v)

        def opt_num(key: str) -> float | None:
            v = d.get(key)
            return None if v is None else float(v)

        def opt_int(key: str) -> int | None:
            v = d.get(key)
            return None if v is None else int(v)

        extra = d.get("extra") or {}
        return cls(
            trace_id=str(d["trace_id"]),
            scored_at=float(d["scored_at"]),
            service=str(d["service"]),
            cell=str(d["cell"]),
            pipeline=opt_str("pipeline"),
            question_id=opt_str("question_id"),
            query=opt_str("query"),
            matched_by=opt_str("matched_by"),
            k=opt_int("k"),
            recall=opt_num("recall"),
            hit_rate=opt_num("hit_rate"),
            reciprocal_rank=opt_num("reciprocal_rank"),
            groundedness=opt_num("groundedness"),
            claims=opt_int("claims"),
            unsupported_claims=tuple(str(c) for c in d.get("unsupported_claims") or ()),
            judge_name=opt_str("judge_name"),
            judge_model=opt_str("judge_model"),
            judge_error=opt_str("judge_error"),
            retrieved=tuple(str(c) for c in d.get("retrieved") or ()),
            answer=opt_str("answer"),
            extra=dict(extra) if isinstance(extra, Mapping) else {},
        )


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
            _migrate(self._conn)
        self.judge_cache = SqliteJudgeResultCache(self)
        self.idempotency = SqliteIdempotencyStore(self)
        self.results = SqliteScoredResults(self)
        self.skipped = SqliteSkippedTraces(self)

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Run one statement under the lock and return all its rows."""
        with self._lock:
            return self._conn.execute(sql, tuple(params)).fetchall()

    def execute_many(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        """Run one statement per row in one transaction, under the lock."""
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(sql, [tuple(r) for r in rows])
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def put_scored(self, rows: Sequence[tuple[Sequence[object], str | None]]) -> None:
        """Upsert ``scored`` rows (and their detail, when not None) in one transaction."""
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                for row, detail in rows:
                    self._put_scored(row, detail)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _put_scored(self, row: Sequence[object], detail: str | None) -> None:
        self._conn.execute(
            "INSERT INTO scored (trace_id, scored_at, record, service, cell, judge, "
            "query, groundedness, recall, severity, worst) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(trace_id) DO UPDATE SET scored_at = excluded.scored_at, "
            "record = excluded.record, service = excluded.service, "
            "cell = excluded.cell, judge = excluded.judge, query = excluded.query, "
            "groundedness = excluded.groundedness, recall = excluded.recall, "
            "severity = excluded.severity, worst = excluded.worst",
            tuple(row),
        )
        if detail is not None:
            self._conn.execute(
                "INSERT OR REPLACE INTO scored_detail (trace_id, body) VALUES (?, ?)",
                (row[0], detail),
            )

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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


class SqliteScoredResults:
    """One row per scored trace, in the order they were first scored.

    Re-scoring a trace (it was released and came due again) replaces its record but keeps its
    position, so listings stay stable across restarts.
    """

    def __init__(self, state: SqliteState) -> None:
        self._state = state

    def put(self, result: ScoredResult, detail: Mapping[str, object] | None = None) -> None:
        """Record ``result`` (and its ``detail``, JSON-able, when given: the web view's trace
        page); a trace recorded before keeps its place and detail unless replaced."""
        self.put_many([(result, detail)])

    def put_many(self, items: Sequence[tuple[ScoredResult, Mapping[str, object] | None]]) -> None:
        """:meth:`put` for many results, in one transaction."""
        rows = []
        for result, detail in items:
            record = json.dumps(result.to_dict(), sort_keys=True, allow_nan=False)
            g, r = _opt_float(result.groundedness), _opt_float(result.recall)
            worst = min(1.0 if g is None else g, 1.0 if r is None else r)
            body = None if detail is None else json.dumps(detail, sort_keys=True, allow_nan=False)
            rows.append(
                (
                    (
                        result.trace_id,
                        result.scored_at,
                        record,
                        result.service,
                        result.cell,
                        result.judge_name,
                        result.query,
                        g,
                        r,
                        SEVERITY.get(result.cell, len(SEVERITY)),
                        worst,
                    ),
                    body,
                )
            )
        self._state.put_scored(rows)

    def detail(self, trace_id: str) -> dict[str, Any] | None:
        """The detail recorded with the trace (None: none, e.g. scored before it was kept)."""
        rows = self._state.execute("SELECT body FROM scored_detail WHERE trace_id = ?", (trace_id,))
        if not rows:
            return None
        value = json.loads(str(rows[0][0]))
        return value if isinstance(value, dict) else None

    def get(self, trace_id: str) -> ScoredResult | None:
        rows = self._state.execute("SELECT record FROM scored WHERE trace_id = ?", (trace_id,))
        return ScoredResult.from_dict(json.loads(str(rows[0][0]))) if rows else None

    def all(
        self, *, after_seq: int = 0, limit: int | None = None
    ) -> list[tuple[int, ScoredResult]]:
        """``(seq, result)`` pairs with ``seq > after_seq``, oldest first: poll with the last seq."""
        sql = "SELECT seq, record FROM scored WHERE seq > ? ORDER BY seq"
        params: list[object] = [after_seq]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [
            (int(seq), ScoredResult.from_dict(json.loads(str(rec))))
            for seq, rec in self._state.execute(sql, params)
        ]

    def __len__(self) -> int:
        return int(self._state.execute("SELECT COUNT(*) FROM scored")[0][0])


class SqliteSkippedTraces:
    """One row per trace seen and not scored, with its reason (the latest, when a trace was
    skipped again), in the order first skipped: a :class:`~ragtrace_consumers.scoring.skips.SkipLog`."""

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
