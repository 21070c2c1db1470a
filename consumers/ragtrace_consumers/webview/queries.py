"""What the web view reads from the embedded evaluator's state file, as values.

The scored results are read through their owner,
:class:`~ragtrace_consumers.stores.scored_results.SqliteScoredResults` (each query through an
index of its table); this module validates the filters (:class:`TraceFilter`: a bad one raises
:class:`~ragtrace_consumers.webview.errors.BadRequest`), pages the list and puts the overview's
numbers together.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from ragtrace_consumers.model import SkippedTrace
from ragtrace_consumers.stores.scored_results import SEVERITY, ScoredResult
from ragtrace_consumers.stores.sqlite_state import SqliteState
from ragtrace_consumers.webview.errors import BadRequest

__all__ = [
    "CELLS",
    "PAGE_SIZE",
    "SKIPPED_SHOWN",
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
SKIPPED_SHOWN = 20
"""How many of the traces not scored last the overview lists."""
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
    equal = {c: v for c in ("cell", "service", "judge") if (v := getattr(f, c)) is not None}
    rows = state.results.worst_first(
        equal, f.since, f.until, limit=page_size + 1, offset=(f.page - 1) * page_size
    )
    return TracePage(tuple(rows[:page_size]), f.page, len(rows) > page_size)


def choices(state: SqliteState, column: str) -> list[str]:
    """The distinct values of ``service`` or ``judge``."""
    return state.results.choices(column)


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
    skipped: tuple[SkippedTrace, ...] = ()
    """The traces seen and not scored last, newest first, each with its reason and detail."""


def _bucket_size(span_s: float) -> float:
    for size in (60.0, 300.0, 900.0, 3600.0, 6 * 3600.0, 86400.0, 7 * 86400.0):
        if span_s / size <= 48:
            return size
    return 30 * 86400.0


def overview(state: SqliteState, *, buckets: int = 48) -> Overview:
    """Counts per cell, the last ``buckets`` time buckets, and the reasons for n/a scores."""
    results = state.results
    counts = {c: 0 for c in CELLS}
    counts.update(results.cell_counts())
    series: list[Bucket] = []
    size = 60.0
    scored = results.time_range()
    if scored is not None:
        lo, hi = scored
        size = _bucket_size(hi - lo)
        start = max(lo, hi - size * buckets)
        start -= start % size
        acc: dict[int, tuple[dict[str, int], list[float]]] = {}
        for i, cell, n, g_sum, g_n, r_sum, r_n in results.buckets(start, size):
            cells, sums = acc.setdefault(i, ({}, [0.0, 0.0, 0.0, 0.0]))
            cells[cell] = n
            for k, v in enumerate((g_sum, g_n, r_sum, r_n)):
                sums[k] += v
        for i in range(int((hi - start) // size) + 1):
            cells, (g, gn, r, rn) = acc.get(i, ({}, [0.0, 0.0, 0.0, 0.0]))
            series.append(
                Bucket(start + i * size, cells, g / gn if gn else None, r / rn if rn else None)
            )
    reasons = results.na_reasons() + [
        ("not scored", why, n)  # seen, never scored (scoring.skips)
        for why, n in state.skipped.reasons()
    ]
    reasons.sort(key=lambda r: -r[2])
    return Overview(
        counts,
        tuple(series),
        size,
        tuple(reasons[:20]),
        results.judges(),
        tuple(state.skipped.latest(SKIPPED_SHOWN)),
    )


def unlabelled_questions(state: SqliteState, limit: int = 20) -> list[tuple[str, int, str]]:
    """(question, times seen, latest trace ID) of traces with no labelled question, most seen
    first."""
    return state.results.unlabelled_questions(limit)
