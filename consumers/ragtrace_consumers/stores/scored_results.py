"""The scored results of the embedded evaluator, read and written: one module owns them.

The ``scored`` table holds one row per scored trace (what ``ragtrace serve`` and ``ragtrace
demo`` print from), with the columns the web view filters and orders by (service, model, cell,
judge, query, groundedness, recall, severity, worst score; indexed), and ``scored_detail`` each trace's
detail beside it (ranked chunks with their text, gold IDs, the judge's units, claims, quotes and
checks). The recording sink writes them (:meth:`SqliteScoredResults.put`), and the web view reads
them through the queries below, each through an index: worst first is ``(severity, worst, seq)``
and each filterable column leads an index of its own ordered the same way, so a page of the list
costs O(log n + page), not a scan. The overview's sums over a time window read covering
indexes led by the time, or by the service or model and then the time. A search in the question
text (:class:`Where`'s ``text``) cannot seek: it scans ``scored_search``, an index holding the
question with every column a listing filters and orders by (a tenth of the table's size), and
sorts the matches.

Schema version 1 (``PRAGMA user_version``) added those columns and the detail table; version 2
the ``model`` column (the generation's model). A file written before is migrated in place when
opened (:func:`create_tables`: its columns filled from the stored records, a version-1 row's
model from its detail; its traces have no detail, and the web view says so).

Schema version 3 gave every answer a verdict: the ``grounded`` column (1 passed the
groundedness threshold, 0 did not, null not judged; indexed like the other filters) and the
cells ``unlabelled_not_grounded``, ``unanswerable_declined`` and ``unanswerable_answered``
(:mod:`ragtrace.evaluation.attribution`). An older file is migrated in place, nothing dropped:
``grounded`` is read off a labelled row's cell (exact), an unlabelled row's groundedness is held
against the default threshold (0.8: the file does not say which one was configured), an
``unlabelled`` row labelled with an empty gold set (``extra.gold_size`` 0) is placed by
:func:`~ragtrace.evaluation.declines.decline` on its recorded answer, and every row's severity is
recomputed in the new order. Record and columns are changed together.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ragtrace.evaluation.attribution import Thresholds
from ragtrace.evaluation.declines import decline

if TYPE_CHECKING:
    from ragtrace_consumers.stores.sqlite_state import SqliteState

__all__ = [
    "SCHEMA_VERSION",
    "SEVERITY",
    "ScoredResult",
    "UNLABELLED_CELLS",
    "SqliteScoredResults",
    "Where",
    "create_tables",
]

_SCHEMA = """
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
"""

SCHEMA_VERSION = 3
_COLUMNS = (
    ("service", "TEXT", "json_extract(record, '$.service')"),
    (
        "model",
        "TEXT",
        "COALESCE(json_extract(record, '$.model'), (SELECT json_extract(d.body, '$.model') "
        "FROM scored_detail d WHERE d.trace_id = scored.trace_id))",
    ),
    ("cell", "TEXT", "json_extract(record, '$.cell')"),
    ("judge", "TEXT", "json_extract(record, '$.judge_name')"),
    ("query", "TEXT", "json_extract(record, '$.query')"),
    ("groundedness", "REAL", "json_extract(record, '$.groundedness')"),
    ("recall", "REAL", "json_extract(record, '$.recall')"),
    ("severity", "INTEGER", None),
    ("worst", "REAL", None),
    ("grounded", "INTEGER", None),
)
_INDEXES = """
CREATE INDEX IF NOT EXISTS scored_worst ON scored(severity, worst, seq);
CREATE INDEX IF NOT EXISTS scored_cell ON scored(cell, severity, worst, seq);
CREATE INDEX IF NOT EXISTS scored_service ON scored(service, severity, worst, seq);
CREATE INDEX IF NOT EXISTS scored_judge ON scored(judge, severity, worst, seq);
CREATE INDEX IF NOT EXISTS scored_model ON scored(model, severity, worst, seq);
CREATE INDEX IF NOT EXISTS scored_grounded ON scored(grounded, severity, worst, seq);
CREATE INDEX IF NOT EXISTS scored_time ON scored(
    scored_at, cell, groundedness, recall, severity, worst
);
CREATE INDEX IF NOT EXISTS scored_service_time ON scored(
    service, scored_at, cell, groundedness, recall
);
CREATE INDEX IF NOT EXISTS scored_model_time ON scored(
    model, scored_at, cell, groundedness, recall
);
CREATE INDEX IF NOT EXISTS scored_search ON scored(
    query, severity, worst, cell, service, model, judge, scored_at
);
CREATE INDEX IF NOT EXISTS scored_unlabelled ON scored(query) WHERE cell IN _UNLABELLED;
"""
SEVERITY: Mapping[str, int] = {
    "both_failed": 0,
    "generation_failed": 1,
    "unlabelled_not_grounded": 2,
    "unanswerable_answered": 3,
    "retrieval_failed": 4,
    "unjudged": 5,
    "unlabelled": 6,
    "unanswerable_declined": 7,
    "fine": 8,
}
"""Worst first: a cell's place in the web view's default order (unknown cells after fine)."""
UNLABELLED_CELLS = ("unlabelled", "unlabelled_not_grounded")
"""The cells of a trace no labelled question matched (listed as "seen without a label")."""
_UNLABELLED = "(" + ", ".join(f"'{c}'" for c in UNLABELLED_CELLS) + ")"
_INDEXES = _INDEXES.replace("_UNLABELLED", _UNLABELLED)


def _severity_sql() -> str:
    cases = " ".join(f"WHEN '{c}' THEN {n}" for c, n in SEVERITY.items())
    return f"CASE cell {cases} ELSE {len(SEVERITY)} END"


def _grounded_sql() -> str:
    """A row's ``grounded`` from what an older version kept: exact for a labelled row (its cell
    says), the default threshold for the rest."""
    default = Thresholds().groundedness
    return (
        "CASE WHEN groundedness IS NULL THEN NULL "
        "WHEN cell IN ('fine', 'retrieval_failed') THEN 1 "
        "WHEN cell IN ('generation_failed', 'both_failed') THEN 0 "
        f"ELSE groundedness >= {default!r} END"
    )


_WORST_SQL = (
    "MIN(COALESCE(json_extract(record, '$.groundedness'), 1.0), "
    "COALESCE(json_extract(record, '$.recall'), 1.0))"
)


def _fold(text: object) -> str | None:
    return text.casefold() if isinstance(text, str) else None


def create_tables(conn: sqlite3.Connection) -> None:
    """Create the tables (and indexes) in ``conn``'s file, or bring an older file to
    :data:`SCHEMA_VERSION` (one transaction); and give ``conn`` the case folding a search
    beyond ASCII uses (``ragtrace_fold``)."""
    conn.create_function("ragtrace_fold", 1, _fold, deterministic=True)
    conn.executescript(_SCHEMA)
    _migrate(conn)


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring an older state file to :data:`SCHEMA_VERSION` (one transaction)."""
    if int(conn.execute("PRAGMA user_version").fetchone()[0]) >= SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")  # another process opening the file waits, then sees it done
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version >= SCHEMA_VERSION:
            conn.execute("COMMIT")
            return
        have = {str(r[1]) for r in conn.execute("PRAGMA table_info(scored)")}
        for name, kind, _ in _COLUMNS:
            if name not in have:
                conn.execute(f"ALTER TABLE scored ADD COLUMN {name} {kind}")
        fills = [f"{n} = {expr}" for n, _, expr in _COLUMNS if expr is not None and n not in have]
        if version < 1:
            fills += [f"severity = {_severity_sql()}", f"worst = {_WORST_SQL}"]
        if fills:
            conn.execute(f"UPDATE scored SET {', '.join(fills)}")
        if version < 3:
            _every_answer_a_verdict(conn)
            conn.execute("DROP INDEX IF EXISTS scored_unlabelled")  # its condition changed
        for statement in _INDEXES.strip().split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _every_answer_a_verdict(conn: sqlite3.Connection) -> None:
    """Version 3 (the module docstring): ``grounded``, the new cells, the new severities."""
    conn.execute(f"UPDATE scored SET grounded = {_grounded_sql()}")
    conn.execute(
        "UPDATE scored SET record = json_set(record, '$.grounded', "
        "json(CASE grounded WHEN 1 THEN 'true' WHEN 0 THEN 'false' ELSE 'null' END))"
    )
    moved = []
    for seq, record, grounded in conn.execute(
        "SELECT seq, record, grounded FROM scored WHERE cell = 'unlabelled'"
    ).fetchall():
        d = json.loads(str(record))
        extra = d.get("extra") if isinstance(d.get("extra"), dict) else {}
        if d.get("question_id") and extra.get("gold_size") == 0:
            verdict = decline(d.get("answer")).declined
            cell = "unanswerable_declined" if verdict else "unanswerable_answered"
        elif grounded == 0:
            cell = "unlabelled_not_grounded"
        else:
            continue
        moved.append((cell, cell, int(seq)))
    conn.executemany(
        "UPDATE scored SET cell = ?, record = json_set(record, '$.cell', ?) WHERE seq = ?", moved
    )
    conn.execute(f"UPDATE scored SET severity = {_severity_sql()}")


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
    ``"retrieval_failed"``, …); ``grounded`` whether the groundedness passed its threshold,
    whatever the cell (None: not judged).
    """

    trace_id: str
    scored_at: float
    service: str
    cell: str
    model: str | None = None
    """The model of the generation that answered (None: the trace does not say)."""
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
    grounded: bool | None = None

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
            "model": self.model,
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
            "grounded": self.grounded,
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
        grounded = d.get("grounded")
        return cls(
            trace_id=str(d["trace_id"]),
            scored_at=float(d["scored_at"]),
            service=str(d["service"]),
            cell=str(d["cell"]),
            model=opt_str("model"),
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
            grounded=None if grounded is None else bool(grounded),
        )


_UPSERT = (
    "INSERT INTO scored (trace_id, scored_at, record, service, cell, judge, "
    "query, groundedness, recall, severity, worst, model, grounded) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(trace_id) DO UPDATE SET scored_at = excluded.scored_at, "
    "record = excluded.record, service = excluded.service, model = excluded.model, "
    "cell = excluded.cell, judge = excluded.judge, query = excluded.query, "
    "groundedness = excluded.groundedness, recall = excluded.recall, "
    "severity = excluded.severity, worst = excluded.worst, grounded = excluded.grounded"
)
_NA_REASONS = (
    (
        "recall n/a",
        _UNLABELLED,
        "COALESCE(json_extract(record, '$.extra.recall_na_reason'), "
        "'no labelled question matches the trace')",
    ),
    (
        "unjudged",
        "('unjudged')",
        "COALESCE(json_extract(record, '$.judge_error'), "
        "json_extract(record, '$.extra.groundedness_na_reason'))",
    ),
)
"""(kind, cell, the reason's SQL) of the scores a trace has not."""
_FILTERS = ("cell", "service", "model", "judge", "grounded")
"""The columns a listing filters on by equality."""


@dataclass(frozen=True)
class Where:
    """Which scored traces a query reads: columns equal to values (``cell``, ``service``,
    ``model``, ``judge``, ``grounded``), scored in [since, until), a trace-ID prefix (lower-case hex) and a
    text the question contains, ignoring case (an ASCII text through SQLite's ``LIKE``; any
    other through Python's ``casefold``, row by row)."""

    equal: Mapping[str, str | int] = field(default_factory=dict)
    since: float | None = None
    until: float | None = None
    id_prefix: str | None = None
    text: str | None = None

    def __post_init__(self) -> None:
        for column in self.equal:
            if column not in _FILTERS:
                raise ValueError(f"no filter on {column!r}")
        if self.id_prefix is not None and not all(c in _HEX for c in self.id_prefix):
            raise ValueError(f"a trace-ID prefix is lower-case hex, got {self.id_prefix!r}")

    def sql(self) -> tuple[str, list[object]]:
        """``(" WHERE …" or "", parameters)``."""
        where: list[str] = []
        params: list[object] = []
        for column, value in self.equal.items():
            where.append(f"{column} = ?")
            params.append(value)
        if self.since is not None:
            where.append("scored_at >= ?")
            params.append(self.since)
        if self.until is not None:
            where.append("scored_at < ?")
            params.append(self.until)
        if self.id_prefix:  # a range of the UNIQUE index: 'g' sorts after every hex digit
            where.append("trace_id >= ? AND trace_id < ?")
            params += [self.id_prefix, self.id_prefix + "g"]
        if self.text and not self.text.isascii():
            where.append("instr(ragtrace_fold(query), ?) > 0")
            params.append(self.text.casefold())
        elif self.text:
            escaped = self.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            where.append("query LIKE ? ESCAPE '\\'")
            params.append(f"%{escaped}%")
        return (" WHERE " + " AND ".join(where) if where else ""), params


_HEX = frozenset("0123456789abcdef")


def _row(result: ScoredResult) -> tuple[object, ...]:
    """``result`` as the ``scored`` table's columns, in :data:`_UPSERT`'s order."""
    record = json.dumps(result.to_dict(), sort_keys=True, allow_nan=False)
    g, r = _opt_float(result.groundedness), _opt_float(result.recall)
    worst = min(1.0 if g is None else g, 1.0 if r is None else r)
    return (
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
        result.model,
        None if result.grounded is None else int(result.grounded),
    )


def _result(record: object) -> ScoredResult:
    return ScoredResult.from_dict(json.loads(str(record)))


class SqliteScoredResults:
    """One row per scored trace, in the order they were first scored.

    Re-scoring a trace (it was released and came due again) replaces its record but keeps its
    position, so listings stay stable across restarts.
    """

    def __init__(self, state: SqliteState) -> None:
        self._state = state

    # --- written by the recording sink ----------------------------------------------------
    def put(self, result: ScoredResult, detail: Mapping[str, object] | None = None) -> None:
        """Record ``result`` (and its ``detail``, JSON-able, when given: the web view's trace
        page); a trace recorded before keeps its place and detail unless replaced."""
        self.put_many([(result, detail)])

    def put_many(self, items: Sequence[tuple[ScoredResult, Mapping[str, object] | None]]) -> None:
        """:meth:`put` for many results, in one transaction."""
        rows = [
            (_row(result), None if d is None else json.dumps(d, sort_keys=True, allow_nan=False))
            for result, d in items
        ]
        with self._state.transaction() as conn:
            for row, body in rows:
                conn.execute(_UPSERT, row)
                if body is not None:
                    conn.execute(
                        "INSERT OR REPLACE INTO scored_detail (trace_id, body) VALUES (?, ?)",
                        (row[0], body),
                    )

    # --- read: one trace, and in order -----------------------------------------------------
    def detail(self, trace_id: str) -> dict[str, Any] | None:
        """The detail recorded with the trace (None: none, e.g. scored before it was kept)."""
        rows = self._state.execute("SELECT body FROM scored_detail WHERE trace_id = ?", (trace_id,))
        if not rows:
            return None
        value = json.loads(str(rows[0][0]))
        return value if isinstance(value, dict) else None

    def get(self, trace_id: str) -> ScoredResult | None:
        rows = self._state.execute("SELECT record FROM scored WHERE trace_id = ?", (trace_id,))
        return _result(rows[0][0]) if rows else None

    def all(
        self, *, after_seq: int = 0, limit: int | None = None
    ) -> list[tuple[int, ScoredResult]]:
        """``(seq, result)`` pairs with ``seq > after_seq``, oldest first: poll with the last seq."""
        sql = "SELECT seq, record FROM scored WHERE seq > ? ORDER BY seq"
        params: list[object] = [after_seq]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [(int(seq), _result(rec)) for seq, rec in self._state.execute(sql, params)]

    def newest_seq(self) -> int:
        """The seq of the last trace scored (0: none yet)."""
        return int(self._state.execute("SELECT MAX(seq) FROM scored")[0][0] or 0)

    def __len__(self) -> int:
        return int(self._state.execute("SELECT COUNT(*) FROM scored")[0][0])

    # --- read: the web view's queries --------------------------------------------------------
    def worst_first(self, where: Where, limit: int, offset: int) -> list[ScoredResult]:
        """Traces ``where`` selects, worst first (severity, then lowest score, then oldest)."""
        clause, params = where.sql()
        # A text search scans the small covering index, not the rows in the list's order.
        source = (
            "scored INDEXED BY scored_search" if where.text and not where.id_prefix else "scored"
        )
        # The page's seqs first, from the index alone; then only those rows' records.
        sql = f"SELECT seq FROM {source}{clause} ORDER BY severity, worst, seq LIMIT ? OFFSET ?"
        seqs = [int(r[0]) for r in self._state.execute(sql, [*params, limit, offset])]
        records: dict[int, object] = {}
        if seqs:
            marks = ",".join("?" * len(seqs))
            records = {
                int(seq): rec
                for seq, rec in self._state.execute(
                    f"SELECT seq, record FROM scored WHERE seq IN ({marks})", seqs
                )
            }
        return [_result(records[s]) for s in seqs if s in records]

    def ids_with_prefix(self, prefix: str, most: int = 2) -> list[str]:
        """Up to ``most`` trace IDs starting with ``prefix`` (lower-case hex), in ID order."""
        clause, params = Where(id_prefix=prefix).sql()
        rows = self._state.execute(
            f"SELECT trace_id FROM scored{clause} ORDER BY trace_id LIMIT ?", [*params, most]
        )
        return [str(r[0]) for r in rows]

    def choices(self, column: str, most: int = 200) -> list[str]:
        """The distinct values of ``service``, ``model`` or ``judge`` (index-only: one seek per
        value)."""
        if column not in ("service", "model", "judge"):
            raise ValueError(f"no choices for {column!r}")
        out: list[str] = []
        last: str | None = None
        while len(out) < most:  # a skip scan: SQLite would otherwise read the whole index
            rows = self._state.execute(
                f"SELECT {column} FROM scored WHERE {column} > ? ORDER BY {column} LIMIT 1"
                if last is not None
                else f"SELECT {column} FROM scored WHERE {column} IS NOT NULL "
                f"ORDER BY {column} LIMIT 1",
                (last,) if last is not None else (),
            )
            if not rows:
                break
            last = str(rows[0][0])
            out.append(last)
        return out

    def cell_counts(self, where: Where | None = None) -> dict[str, int]:
        """Traces per cell (cells with none left out)."""
        clause, params = (where or Where()).sql()
        rows = self._state.execute(
            f"SELECT cell, COUNT(*) FROM scored{clause} GROUP BY cell", params
        )
        return {str(cell): int(n) for cell, n in rows}

    def means(
        self, where: Where, grounded_below: float
    ) -> tuple[float | None, float | None, int, int, int]:
        """(mean groundedness, mean recall, traces judged, traces with recall, judged traces
        with groundedness below ``grounded_below``) of the traces ``where`` selects."""
        clause, params = where.sql()
        ((g, gn, r, rn, low),) = self._state.execute(
            "SELECT SUM(groundedness), COUNT(groundedness), SUM(recall), COUNT(recall), "
            f"COALESCE(SUM(groundedness < ?), 0) FROM scored{clause}",
            [grounded_below, *params],
        )
        gn, rn = int(gn), int(rn)
        return (float(g) / gn if gn else None, float(r) / rn if rn else None, gn, rn, int(low))

    def not_grounded_counts(self, where: Where | None = None) -> dict[str, int]:
        """Traces ``where`` selects whose answer was judged below the groundedness threshold,
        per cell, labelled or not."""
        clause, params = (where or Where()).sql()
        clause = f"{clause} AND grounded = 0" if clause else " WHERE grounded = 0"
        rows = self._state.execute(
            f"SELECT cell, COUNT(*) FROM scored{clause} GROUP BY cell", params
        )
        return {str(cell): int(n) for cell, n in rows}

    def time_range(self) -> tuple[float, float] | None:
        """When the first and the last trace were scored (None: none yet)."""
        first = self._state.execute("SELECT scored_at FROM scored ORDER BY scored_at LIMIT 1")
        last = self._state.execute("SELECT scored_at FROM scored ORDER BY scored_at DESC LIMIT 1")
        return (float(first[0][0]), float(last[0][0])) if first and last else None

    def buckets(
        self, start: float, size: float, where: Where | None = None
    ) -> list[tuple[int, str, int, float, int, float, int]]:
        """Per time bucket of ``size`` seconds from ``start`` and cell, of the traces ``where``
        selects scored from ``start`` on: (bucket, cell, traces, sum of groundedness, traces
        judged, sum of recall, traces with recall)."""
        w = where or Where()
        since = start if w.since is None else max(start, w.since)
        clause, params = replace(w, since=since).sql()
        rows = self._state.execute(
            "SELECT CAST((scored_at - ?) / ? AS INTEGER), cell, COUNT(*), "
            "SUM(groundedness), COUNT(groundedness), SUM(recall), COUNT(recall) "
            f"FROM scored{clause} GROUP BY 1, 2",
            [start, size, *params],
        )
        return [
            (int(i), str(cell), int(n), float(g or 0), int(gn), float(r or 0), int(rn))
            for i, cell, n, g, gn, r, rn in rows
        ]

    def na_reasons(self, where: Where | None = None) -> list[tuple[str, str, int]]:
        """(kind, reason, traces) of the traces ``where`` selects scored without recall
        (``recall n/a``) or without groundedness (``unjudged``)."""
        clause, params = (where or Where()).sql()
        # the cells as literals, as the indexes on cell are written
        clause = f"{clause} AND cell IN " if clause else " WHERE cell IN "
        return [
            (kind, str(why), int(n))
            for kind, cells, why_sql in _NA_REASONS
            for why, n in self._state.execute(
                f"SELECT {why_sql} AS why, COUNT(*) FROM scored{clause}{cells} GROUP BY why",
                params,
            )
            if why
        ]

    def judges(self, last: int = 1000) -> tuple[tuple[str, str | None, int], ...]:
        """(judge name, model, traces) among the ``last`` judged traces, most used first."""
        return tuple(
            (str(name), None if model is None else str(model), int(n))
            for name, model, n in self._state.execute(
                "SELECT judge, json_extract(record, '$.judge_model'), COUNT(*) FROM "
                "(SELECT judge, record FROM scored WHERE judge IS NOT NULL ORDER BY seq DESC "
                "LIMIT ?) GROUP BY 1, 2 ORDER BY 3 DESC",
                (last,),
            )
        )

    def unlabelled_questions(self, limit: int = 20) -> list[tuple[str, int, str]]:
        """(question, times seen, latest trace ID) of traces with no labelled question, most
        seen first (through the partial index on unlabelled queries)."""
        counted = self._state.execute(
            "SELECT query, COUNT(*) FROM scored INDEXED BY scored_unlabelled "
            f"WHERE cell IN {_UNLABELLED} AND query IS NOT NULL "
            "GROUP BY query ORDER BY 2 DESC, 1 LIMIT ?",
            (limit,),
        )  # index-only: the partial index holds every unlabelled query
        out = []
        for query, n in counted:
            latest = self._state.execute(
                f"SELECT trace_id FROM scored WHERE cell IN {_UNLABELLED} AND query = ? "
                "ORDER BY seq DESC LIMIT 1",
                (query,),
            )
            out.append((str(query), int(n), str(latest[0][0])))
        return out
