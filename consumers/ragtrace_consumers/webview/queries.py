"""What the web view reads from the embedded evaluator's state file, as values.

Every listing goes through an index of the ``scored`` table (schema version 1 of
:mod:`ragtrace_consumers.stores.sqlite_state`): worst first is ``(severity, worst, seq)``, and
each filterable column leads an index of its own ordered the same way, so a page of the list
costs O(log n + page), not a scan. Filters are validated here (:class:`TraceFilter`) and a bad
one raises :class:`~ragtrace_consumers.webview.errors.BadRequest`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from ragtrace_consumers.stores.sqlite_state import SEVERITY, ScoredResult, SqliteState
from ragtrace_consumers.webview.errors import BadRequest

__all__ = [
    "CELLS",
    "PAGE_SIZE",
    "Bucket",
    "Overview",
    "TraceFilter",
    "TracePage",
    "list_traces",
    "overview",
    "unlabelled_questions",
]

CELLS = tuple(SEVERITY)
"""Every cell, worst first."""
PAGE_SIZE = 50
_MAX_PAGE = 100_000
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")


def _when(name: str, text: str) -> float:
    """A time parameter: epoch seconds or an ISO 8601 date/time (UTC unless it says)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"{name}: not a time (epoch seconds or ISO 8601): {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def check_trace_id(text: str) -> str:
    """A trace ID as the state keeps it (32 lower-case hex), or BadRequest."""
    value = text.strip().lower()
    if not _TRACE_ID.match(value):
        raise BadRequest(f"not a trace ID (32 hex characters): {text[:80]!r}")
    return value


def _text(value: object) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


@dataclass(frozen=True)
class TraceFilter:
    """The list's filters (None: any) and page (1-based)."""

    cell: str | None = None
    service: str | None = None
    judge: str | None = None
    since: float | None = None
    until: float | None = None
    page: int = 1

    def __post_init__(self) -> None:
        if self.cell is not None and self.cell not in CELLS:
            raise BadRequest(f"cell must be one of {', '.join(CELLS)}, got {self.cell!r}")
        if not 1 <= self.page <= _MAX_PAGE:
            raise BadRequest(f"page must be within 1..{_MAX_PAGE}, got {self.page}")
        for name in ("service", "judge"):
            value = getattr(self, name)
            if value is not None and (not value or len(value) > 200):
                raise BadRequest(f"{name} must be 1..200 characters")

    @classmethod
    def parse(cls, params: Mapping[str, list[str]]) -> TraceFilter:
        """From query parameters; empty values mean any."""
        known = {"cell", "service", "judge", "since", "until", "page"}
        unknown = sorted(set(params) - known)
        if unknown:
            raise BadRequest(
                f"unknown parameter {unknown[0]!r} (known: {', '.join(sorted(known))})"
            )

        def one(name: str) -> str | None:
            values = params.get(name) or []
            if len(values) > 1:
                raise BadRequest(f"{name} given {len(values)} times")
            return values[0].strip() or None if values else None

        page_text = one("page")
        try:
            page = int(page_text) if page_text else 1
        except ValueError:
            raise BadRequest(f"page must be a whole number, got {page_text!r}") from None
        since, until = one("since"), one("until")
        return cls(
            cell=one("cell"),
            service=one("service"),
            judge=one("judge"),
            since=_when("since", since) if since else None,
            until=_when("until", until) if until else None,
            page=page,
        )

    def query(self, **change: object) -> dict[str, str]:
        """These filters (with ``change``) as query parameters, unset ones left out."""
        values: dict[str, object] = {
            "cell": self.cell,
            "service": self.service,
            "judge": self.judge,
            "since": self.since,
            "until": self.until,
            "page": self.page if self.page != 1 else None,
        }
        values.update(change)
        return {k: _text(v) for k, v in values.items() if v}


@dataclass(frozen=True)
class TracePage:
    """One page of the list: rows worst first, and whether another page follows."""

    rows: tuple[ScoredResult, ...]
    page: int
    more: bool


def list_traces(state: SqliteState, f: TraceFilter, page_size: int = PAGE_SIZE) -> TracePage:
    """Scored traces matching ``f``, worst first (severity, then lowest score, then oldest)."""
    where, params = [], []
    for column in ("cell", "service", "judge"):
        value = getattr(f, column)
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if f.since is not None:
        where.append("scored_at >= ?")
        params.append(f.since)
    if f.until is not None:
        where.append("scored_at < ?")
        params.append(f.until)
    # The page's seqs first, from the index alone; then only those rows' records.
    sql = "SELECT seq FROM scored"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY severity, worst, seq LIMIT ? OFFSET ?"
    params += [page_size + 1, (f.page - 1) * page_size]
    seqs = [int(r[0]) for r in state.execute(sql, params)]
    shown = seqs[:page_size]
    records: dict[int, str] = {}
    if shown:
        marks = ",".join("?" * len(shown))
        records = {
            int(seq): str(rec)
            for seq, rec in state.execute(
                f"SELECT seq, record FROM scored WHERE seq IN ({marks})", shown
            )
        }
    rows = tuple(ScoredResult.from_dict(json.loads(records[s])) for s in shown if s in records)
    return TracePage(rows, f.page, len(seqs) > page_size)


def choices(state: SqliteState, column: str) -> list[str]:
    """The distinct values of ``service`` or ``judge`` (index-only: one seek per value)."""
    if column not in ("service", "judge"):
        raise ValueError(f"no choices for {column!r}")
    out: list[str] = []
    last: str | None = None
    while len(out) < 200:  # a skip scan: SQLite would otherwise read the whole index
        rows = state.execute(
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


@dataclass(frozen=True)
class Bucket:
    """One time bucket of the overview's charts."""

    start: float
    cells: Mapping[str, int]
    groundedness: float | None
    recall: float | None

    @property
    def total(self) -> int:
        return sum(self.cells.values())


@dataclass(frozen=True)
class Overview:
    """The overview page's numbers."""

    counts: Mapping[str, int]
    buckets: tuple[Bucket, ...]
    bucket_s: float
    reasons: tuple[tuple[str, str, int], ...]
    """(kind, reason, traces): why traces were not labelled or not judged, most frequent first."""
    judges: tuple[tuple[str, str | None, int], ...]
    """(judge name, model, traces) seen in the last buckets' traces."""


def _bucket_size(span_s: float) -> float:
    for size in (60.0, 300.0, 900.0, 3600.0, 6 * 3600.0, 86400.0, 7 * 86400.0):
        if span_s / size <= 48:
            return size
    return 30 * 86400.0


def overview(state: SqliteState, *, buckets: int = 48) -> Overview:
    """Counts per cell, the last ``buckets`` time buckets, and the reasons for n/a scores."""
    counts = {c: 0 for c in CELLS}
    for cell, n in state.execute("SELECT cell, COUNT(*) FROM scored GROUP BY cell"):
        counts[str(cell)] = int(n)
    first = state.execute("SELECT scored_at FROM scored ORDER BY scored_at LIMIT 1")
    last_at = state.execute("SELECT scored_at FROM scored ORDER BY scored_at DESC LIMIT 1")
    series: list[Bucket] = []
    size = 60.0
    if first and last_at:
        lo, hi = float(first[0][0]), float(last_at[0][0])
        size = _bucket_size(hi - lo)
        start = max(lo, hi - size * buckets)
        start -= start % size
        rows = state.execute(
            "SELECT CAST((scored_at - ?) / ? AS INTEGER), cell, COUNT(*), "
            "SUM(groundedness), COUNT(groundedness), SUM(recall), COUNT(recall) "
            "FROM scored WHERE scored_at >= ? GROUP BY 1, 2",
            (start, size, start),
        )
        acc: dict[int, list[object]] = {}
        for i, cell, n, g_sum, g_n, r_sum, r_n in rows:
            slot = acc.setdefault(int(i), [{}, 0.0, 0, 0.0, 0])
            cells = slot[0]
            assert isinstance(cells, dict)
            cells[str(cell)] = int(n)
            slot[1] = float(slot[1]) + float(g_sum or 0)  # type: ignore[arg-type]
            slot[2] = int(slot[2]) + int(g_n)  # type: ignore[call-overload]
            slot[3] = float(slot[3]) + float(r_sum or 0)  # type: ignore[arg-type]
            slot[4] = int(slot[4]) + int(r_n)  # type: ignore[call-overload]
        last = int((hi - start) // size)
        for i in range(last + 1):
            cells_, g, gn, r, rn = acc.get(i, [{}, 0.0, 0, 0.0, 0])
            series.append(
                Bucket(
                    start + i * size,
                    dict(cells_),  # type: ignore[call-overload]
                    float(g) / int(gn) if gn else None,  # type: ignore[arg-type, call-overload]
                    float(r) / int(rn) if rn else None,  # type: ignore[arg-type, call-overload]
                )
            )
    reasons = (
        [
            ("recall n/a", str(why), int(n))
            for why, n in state.execute(
                "SELECT COALESCE(json_extract(record, '$.extra.recall_na_reason'), "
                "'no labelled question matches the trace') AS why, COUNT(*) "
                "FROM scored WHERE cell = 'unlabelled' GROUP BY why"
            )
            if why
        ]
        + [
            ("unjudged", str(why), int(n))
            for why, n in state.execute(
                "SELECT COALESCE(json_extract(record, '$.judge_error'), "
                "json_extract(record, '$.extra.groundedness_na_reason')) AS why, COUNT(*) "
                "FROM scored WHERE cell = 'unjudged' GROUP BY why"
            )
            if why
        ]
        + [
            ("not scored", str(why), int(n))  # seen, never scored (scoring.skips)
            for why, n in state.execute("SELECT reason, COUNT(*) FROM skipped GROUP BY reason")
        ]
    )
    reasons.sort(key=lambda r: -r[2])
    judges = tuple(
        (str(name), None if model is None else str(model), int(n))
        for name, model, n in state.execute(
            "SELECT judge, json_extract(record, '$.judge_model'), COUNT(*) FROM "
            "(SELECT judge, record FROM scored WHERE judge IS NOT NULL ORDER BY seq DESC "
            "LIMIT 1000) GROUP BY 1, 2 ORDER BY 3 DESC"
        )
    )
    return Overview(counts, tuple(series), size, tuple(reasons[:20]), judges)


def unlabelled_questions(state: SqliteState, limit: int = 20) -> list[tuple[str, int, str]]:
    """(question, times seen, latest trace ID) of traces with no labelled question, most seen
    first (through the partial index on unlabelled queries)."""
    counted = state.execute(
        "SELECT query, COUNT(*) FROM scored INDEXED BY scored_unlabelled "
        "WHERE cell = 'unlabelled' AND query IS NOT NULL "
        "GROUP BY query ORDER BY 2 DESC, 1 LIMIT ?",
        (limit,),
    )  # index-only: the partial index holds every unlabelled query
    out = []
    for query, n in counted:
        latest = state.execute(
            "SELECT trace_id FROM scored WHERE cell = 'unlabelled' AND query = ? "
            "ORDER BY seq DESC LIMIT 1",
            (query,),
        )
        out.append((str(query), int(n), str(latest[0][0])))
    return out
