"""What the web view reads from the embedded evaluator's state file, as values.

The scored results are read through their owner,
:class:`~ragtrace_consumers.stores.scored_results.SqliteScoredResults` (each query through an
index of its table); this module validates the filters (:class:`TraceFilter` for the list and
its exports, :class:`OverviewFilter` for the overview: a bad one raises
:class:`~ragtrace_consumers.webview.errors.BadRequest` naming the parameter), pages the list and
puts the overview's numbers together, one function per panel.

The list's search ``q`` is a trace-ID prefix when it is 6 to 32 hex digits starting some trace's
ID (a prefix naming exactly one trace, with no other filter, is a jump to that trace), and else
a text the question contains, ignoring case.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ragtrace_consumers.model import SkippedTrace
from ragtrace_consumers.stores.scored_results import SEVERITY, ScoredResult, Where
from ragtrace_consumers.stores.sqlite_state import SqliteState
from ragtrace_consumers.webview.errors import BadRequest

__all__ = [
    "CELLS",
    "GROUNDED",
    "PAGE_SIZE",
    "SKIPPED_SHOWN",
    "EXPORT_MAX",
    "RANGES",
    "Bucket",
    "Headline",
    "Overview",
    "OverviewFilter",
    "TraceFilter",
    "TracePage",
    "check_trace_id",
    "choices",
    "export_rows",
    "jump_target",
    "list_traces",
    "overview",
    "resolve_trace_id",
    "unlabelled_questions",
]

CELLS = tuple(SEVERITY)
"""Every cell, worst first."""
GROUNDED: Mapping[str, int] = {"yes": 1, "no": 0}
"""The ``grounded`` filter's values and the column's."""
PAGE_SIZE = 50
SKIPPED_SHOWN = 20
"""How many of the traces not scored last the overview lists."""
EXPORT_MAX = 10_000
"""Most rows an export holds (the first of the list's order)."""
RANGES: Mapping[str, float] = {"1h": 3600.0, "24h": 86400.0, "7d": 7 * 86400.0}
"""The overview's named time ranges, ending now."""
_MAX_PAGE = 100_000
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_ID_PREFIX = re.compile(r"^[0-9a-f]{1,32}$")
_ID_SEARCH = re.compile(r"^[0-9a-f]{6,32}$")


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


def resolve_trace_id(state: SqliteState, text: str) -> str:
    """The trace ID that ``text`` (any unique prefix of 1 to 32 hex digits) starts, or
    BadRequest (404: no scored trace starts so; 400: several do)."""
    value = text.strip().lower()
    if _TRACE_ID.match(value):
        return value
    if not _ID_PREFIX.match(value):
        raise BadRequest(f"not a trace ID or a prefix of one (hex digits): {text[:80]!r}")
    ids = state.results.ids_with_prefix(value, 2)
    if not ids:
        raise BadRequest(f"no scored trace ID starts with {value}", 404)
    if len(ids) > 1:
        raise BadRequest(f"trace ID prefix {value} names more than one trace: give more digits")
    return ids[0]


def _one(params: Mapping[str, list[str]], name: str) -> str | None:
    values = params.get(name) or []
    if len(values) > 1:
        raise BadRequest(f"{name} given {len(values)} times")
    return values[0].strip() or None if values else None


def _known_only(params: Mapping[str, list[str]], known: set[str]) -> None:
    unknown = sorted(set(params) - known)
    if unknown:
        raise BadRequest(f"unknown parameter {unknown[0]!r} (known: {', '.join(sorted(known))})")


def _names(owner: object, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(owner, name)
        if value is not None and (not value or len(value) > 200):
            raise BadRequest(f"{name} must be 1..200 characters")


def _text(value: object) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


@dataclass(frozen=True)
class TraceFilter:
    """The list's filters (None: any) and page (1-based)."""

    cell: str | None = None
    service: str | None = None
    model: str | None = None
    judge: str | None = None
    grounded: str | None = None
    """``no``: answers judged below the groundedness threshold, in any cell; ``yes``: above."""
    since: float | None = None
    until: float | None = None
    q: str | None = None
    """A trace-ID prefix or a text the question contains (see the module docstring)."""
    page: int = 1

    def __post_init__(self) -> None:
        if self.cell is not None and self.cell not in CELLS:
            raise BadRequest(f"cell must be one of {', '.join(CELLS)}, got {self.cell!r}")
        if self.grounded is not None and self.grounded not in GROUNDED:
            raise BadRequest(f"grounded must be yes or no, got {self.grounded!r}")
        if not 1 <= self.page <= _MAX_PAGE:
            raise BadRequest(f"page must be within 1..{_MAX_PAGE}, got {self.page}")
        _names(self, ("service", "model", "judge", "q"))
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise BadRequest("until must be later than since")

    @classmethod
    def parse(cls, params: Mapping[str, list[str]]) -> TraceFilter:
        """From query parameters; empty values mean any."""
        _known_only(
            params,
            {"cell", "service", "model", "judge", "grounded", "since", "until", "q", "page"},
        )
        page_text = _one(params, "page")
        try:
            page = int(page_text) if page_text else 1
        except ValueError:
            raise BadRequest(f"page must be a whole number, got {page_text!r}") from None
        since, until = _one(params, "since"), _one(params, "until")
        return cls(
            cell=_one(params, "cell"),
            service=_one(params, "service"),
            model=_one(params, "model"),
            judge=_one(params, "judge"),
            grounded=_one(params, "grounded"),
            since=_when("since", since) if since else None,
            until=_when("until", until) if until else None,
            q=_one(params, "q"),
            page=page,
        )

    def query(self, **change: object) -> dict[str, str]:
        """These filters (with ``change``) as query parameters, unset ones left out."""
        values: dict[str, object] = {
            "q": self.q,
            "cell": self.cell,
            "service": self.service,
            "model": self.model,
            "judge": self.judge,
            "grounded": self.grounded,
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


def _where(state: SqliteState, f: TraceFilter) -> Where:
    equal: dict[str, str | int] = {
        c: v for c in ("cell", "service", "model", "judge") if (v := getattr(f, c)) is not None
    }
    if f.grounded is not None:
        equal["grounded"] = GROUNDED[f.grounded]
    prefix, text = None, f.q
    if f.q is not None:
        lowered = f.q.lower()
        if _ID_SEARCH.match(lowered) and state.results.ids_with_prefix(lowered, 1):
            prefix, text = lowered, None
    return Where(equal, f.since, f.until, prefix, text)


def list_traces(state: SqliteState, f: TraceFilter, page_size: int = PAGE_SIZE) -> TracePage:
    """Scored traces matching ``f``, worst first (severity, then lowest score, then oldest)."""
    rows = state.results.worst_first(
        _where(state, f), limit=page_size + 1, offset=(f.page - 1) * page_size
    )
    return TracePage(tuple(rows[:page_size]), f.page, len(rows) > page_size)


def jump_target(state: SqliteState, f: TraceFilter) -> str | None:
    """The one trace a search names by ID prefix when the search is the only filter (None:
    list as usual)."""
    if f.q is None or f != TraceFilter(q=f.q) or not _ID_SEARCH.match(f.q.lower()):
        return None
    ids = state.results.ids_with_prefix(f.q.lower(), 2)
    return ids[0] if len(ids) == 1 else None


def export_rows(state: SqliteState, f: TraceFilter, most: int = EXPORT_MAX) -> list[ScoredResult]:
    """The list under ``f``'s filters from its first row (``page`` ignored), at most ``most``
    rows (one more tells the caller there were more)."""
    return state.results.worst_first(_where(state, f), limit=most + 1, offset=0)


def choices(state: SqliteState, column: str) -> list[str]:
    """The distinct values of ``service``, ``model`` or ``judge``."""
    return state.results.choices(column)


@dataclass(frozen=True)
class OverviewFilter:
    """The overview's filters: ``service``, ``model`` (None: any) and a time window — a named
    ``range`` ending now (:data:`RANGES`), or ``since``..``until`` (``until`` None: now), or
    neither (every trace, no previous period)."""

    service: str | None = None
    model: str | None = None
    range: str | None = None
    since: float | None = None
    until: float | None = None

    def __post_init__(self) -> None:
        _names(self, ("service", "model"))
        if self.range is not None and self.range not in RANGES:
            raise BadRequest(
                f"range must be one of {', '.join(RANGES)} or custom, got {self.range!r}"
            )
        if self.range is not None and (self.since is not None or self.until is not None):
            raise BadRequest(
                f"range: {self.range} is a range ending now; from/to are for range=custom"
            )
        if self.until is not None and self.since is None:
            raise BadRequest("to: give from as well (a custom range needs its start)")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise BadRequest("to must be later than from")

    @classmethod
    def parse(cls, params: Mapping[str, list[str]]) -> OverviewFilter:
        """From query parameters (``service``, ``model``, ``range``, ``from``, ``to``); empty
        values mean any."""
        _known_only(params, {"service", "model", "range", "from", "to"})
        since, until, named = _one(params, "from"), _one(params, "to"), _one(params, "range")
        if named == "custom":
            if since is None:
                raise BadRequest("from: range=custom needs a start (from)")
            named = None  # from/to say it
        return cls(
            service=_one(params, "service"),
            model=_one(params, "model"),
            range=named,
            since=_when("from", since) if since else None,
            until=_when("to", until) if until else None,
        )

    def query(self, **change: object) -> dict[str, str]:
        """These filters (with ``change``) as query parameters, unset ones left out."""
        values: dict[str, object] = {
            "service": self.service,
            "model": self.model,
            "range": self.range,
            "from": self.since,
            "to": self.until,
        }
        values.update(change)
        return {k: _text(v) for k, v in values.items() if v}

    def window(self, now: float) -> tuple[float, float] | None:
        """[start, end) of the chosen time, or None: every trace."""
        if self.range is not None:
            return now - RANGES[self.range], now
        if self.since is not None:
            return self.since, now if self.until is None else self.until
        return None

    def equal(self) -> dict[str, str]:
        return {c: v for c in ("service", "model") if (v := getattr(self, c)) is not None}


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
class Headline:
    """The headline means of a period: mean groundedness over the judged traces, mean recall
    over the traces with recall, and the share of judged traces whose groundedness is below
    the threshold (not grounded)."""

    groundedness: float | None
    recall: float | None
    judged: int
    with_recall: int
    not_grounded: int

    @property
    def share_not_grounded(self) -> float | None:
        return self.not_grounded / self.judged if self.judged else None


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
    filter: OverviewFilter = OverviewFilter()
    window: tuple[float, float] | None = None
    """[start, end) the numbers cover (None: every trace)."""
    headline: Headline | None = None
    previous: Headline | None = None
    """The same means over the period of equal length just before ``window``."""
    not_grounded: Mapping[str, int] = field(default_factory=dict)
    """Answers judged below the groundedness threshold when scored, per cell: labelled or not."""
    previous_counts: Mapping[str, int] | None = None
    """Traces per cell over that previous period (None without a window)."""

    @property
    def not_grounded_total(self) -> int:
        """Every answer judged not grounded, whatever its cell (the verdicts' headline)."""
        return sum(self.not_grounded.values())


def _bucket_size(span_s: float) -> float:
    for size in (60.0, 300.0, 900.0, 3600.0, 6 * 3600.0, 86400.0, 7 * 86400.0):
        if span_s / size <= 48:
            return size
    return 30 * 86400.0


def _series(
    state: SqliteState, where: Where, window: tuple[float, float] | None, buckets: int
) -> tuple[tuple[Bucket, ...], float]:
    """The charts' time buckets: over ``window``, or the last ``buckets`` of the scored time."""
    results = state.results
    if window is not None:
        lo, hi = window
    else:
        scored = results.time_range()
        if scored is None:
            return (), 60.0
        lo, hi = scored
    size = _bucket_size(hi - lo)
    start = max(lo, hi - size * buckets)
    start -= start % size
    acc: dict[int, tuple[dict[str, int], list[float]]] = {}
    for i, cell, n, g_sum, g_n, r_sum, r_n in results.buckets(start, size, where):
        cells, sums = acc.setdefault(i, ({}, [0.0, 0.0, 0.0, 0.0]))
        cells[cell] = n
        for k, v in enumerate((g_sum, g_n, r_sum, r_n)):
            sums[k] += v
    series = []
    last = int((hi - start) // size) - (1 if window is not None and (hi - start) % size == 0 else 0)
    for i in range(last + 1):
        cells, (g, gn, r, rn) = acc.get(i, ({}, [0.0, 0.0, 0.0, 0.0]))
        series.append(
            Bucket(start + i * size, cells, g / gn if gn else None, r / rn if rn else None)
        )
    return tuple(series), size


def _headline(state: SqliteState, where: Where, grounded_below: float) -> Headline:
    return Headline(*state.results.means(where, grounded_below))


def _reasons(state: SqliteState, where: Where) -> tuple[tuple[str, str, int], ...]:
    reasons = state.results.na_reasons(where) + [
        ("not scored", why, n)  # seen, never scored (scoring.skips)
        for why, n in state.skipped.reasons()
    ]
    reasons.sort(key=lambda r: -r[2])
    return tuple(reasons[:20])


def overview(
    state: SqliteState,
    f: OverviewFilter = OverviewFilter(),
    *,
    buckets: int = 48,
    now: float | None = None,
    grounded_below: float = 0.8,
) -> Overview:
    """Counts per cell, the time buckets, the headline means and the previous period's (with a
    window), and the reasons for n/a scores, of the traces ``f`` selects (the judges and the
    traces not scored are over every trace); ``grounded_below`` is the groundedness threshold."""
    window = f.window(time.time() if now is None else now)
    equal = f.equal()
    where = Where(equal) if window is None else Where(equal, *window)
    counts = {c: 0 for c in CELLS}
    counts.update(state.results.cell_counts(where))
    series, size = _series(state, where, window, buckets)
    previous = previous_counts = None
    if window is not None:
        length = window[1] - window[0]
        before = Where(equal, window[0] - length, window[0])
        previous = _headline(state, before, grounded_below)
        previous_counts = {c: 0 for c in CELLS}
        previous_counts.update(state.results.cell_counts(before))
    return Overview(
        counts,
        series,
        size,
        _reasons(state, where),
        state.results.judges(),
        tuple(state.skipped.latest(SKIPPED_SHOWN)),
        f,
        window,
        _headline(state, where, grounded_below),
        previous,
        state.results.not_grounded_counts(where),
        previous_counts,
    )


def unlabelled_questions(state: SqliteState, limit: int = 20) -> list[tuple[str, int, str]]:
    """(question, times seen, latest trace ID) of traces with no labelled question, most seen
    first."""
    return state.results.unlabelled_questions(limit)
