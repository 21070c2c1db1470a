"""One trace as ``ragtrace serve``'s state file keeps it, found by any unique prefix of its ID.

The file keeps a trace's spans (:mod:`~ragtrace_consumers.stores.sqlite_traces`' ``trace_spans``)
only while the trace is being assembled or scored, or given up (dead): releasing a scored trace
deletes them. What stays is its scored result and its detail
(:mod:`~ragtrace_consumers.stores.scored_results`: the query, answer, ranked chunks with their
text, gold IDs, the judge's units and claims). :func:`stored_trace` returns whichever of the two
the file holds, so a reader can say which it shows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.stores.scored_results import ScoredResult
from ragtrace_consumers.stores.span_encoding import decode_span
from ragtrace_consumers.stores.sqlite_state import SqliteState

__all__ = ["MAX_MATCHES", "StoredTrace", "matching_trace_ids", "stored_trace"]

MAX_MATCHES = 10
"""At most this many trace IDs are returned for an ambiguous prefix (enough to choose from)."""

_HEX = re.compile(r"[0-9a-f]{1,32}")


@dataclass(frozen=True)
class StoredTrace:
    """``spans``: the spans still held (empty once the trace is scored and released);
    ``result`` and ``detail``: what was kept of its scoring (None: not scored yet, or scored
    before details were kept)."""

    trace_id: str
    spans: tuple[SpanRecord, ...]
    result: ScoredResult | None
    detail: Mapping[str, Any] | None


def _has_table(state: SqliteState, name: str) -> bool:
    rows = state.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
    return bool(rows)


def matching_trace_ids(state: SqliteState, prefix: str) -> list[str]:
    """The trace IDs (scored, or with spans held) starting with ``prefix`` (hex, any case),
    sorted, at most :data:`MAX_MATCHES` + 1 (more than :data:`MAX_MATCHES`: say "and more").
    Raises ``ValueError`` for a prefix that is not 1 to 32 hex digits."""
    wanted = prefix.lower()
    if not _HEX.fullmatch(wanted):
        raise ValueError(f"a trace ID is 32 hex digits; {prefix!r} is not a prefix of one")
    tables = ["scored"] + (["trace_spans"] if _has_table(state, "trace_spans") else [])
    union = " UNION ".join(f"SELECT trace_id FROM {t} WHERE trace_id LIKE ?" for t in tables)
    rows = state.execute(
        f"SELECT trace_id FROM ({union}) ORDER BY trace_id LIMIT ?",
        [f"{wanted}%"] * len(tables) + [MAX_MATCHES + 1],
    )
    return [str(r[0]) for r in rows]


def stored_trace(state: SqliteState, trace_id: str) -> StoredTrace:
    """What ``state`` holds of ``trace_id`` (module doc)."""
    spans: tuple[SpanRecord, ...] = ()
    if _has_table(state, "trace_spans"):
        rows = state.execute(
            "SELECT body FROM trace_spans WHERE trace_id = ? ORDER BY seq", (trace_id,)
        )
        spans = tuple(decode_span(r[0]) for r in rows)
    return StoredTrace(trace_id, spans, state.results.get(trace_id), state.results.detail(trace_id))
