"""``ragtrace inspect --state FILE --trace ID``: one trace read from ``serve``'s state file.

The trace is found by any unique prefix of its ID; an ambiguous prefix is refused with the IDs
it matches. Spans still held (the trace is being assembled or scored, or was given up) are read
as ``inspect`` reads a file; a scored trace's spans are deleted when it is released, so for it
the reading is what the file kept: the scored result and its detail
(:mod:`~ragtrace_consumers.stores.stored_traces`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragtrace.cli.output import json_safe
from ragtrace_consumers.stores.stored_traces import MAX_MATCHES, matching_trace_ids, stored_trace

__all__ = ["StoredTraceError", "read_stored", "stored_text"]

_SQLITE_HEADER = b"SQLite format 3\x00"
SPANS_GONE = "its spans are not kept once it is scored: this is what the state file kept"


class StoredTraceError(ValueError):
    """The state file or the ID prefix cannot name one stored trace; the message says why."""


def _open(path: str) -> Any:
    from ragtrace_consumers.stores.sqlite_state import SqliteState

    file = Path(path)
    if not file.is_file():
        raise StoredTraceError(f"--state {path}: no such state file")
    with file.open("rb") as f:
        if f.read(len(_SQLITE_HEADER)) != _SQLITE_HEADER:
            raise StoredTraceError(
                f"--state {path}: not a state file (not a SQLite database; serve's --state is)"
            )
    try:
        return SqliteState(path)
    except sqlite3.Error as exc:
        raise StoredTraceError(f"--state {path}: not a readable state file: {exc}") from None


def read_stored(
    path: str, prefix: str, explain: Callable[[list[Any]], list[dict[str, object]]]
) -> dict[str, object]:
    """The reading of the one trace of ``path`` whose ID starts with ``prefix``: ``explain``'s
    reading of its spans (when held) plus ``scored`` and ``detail`` (None: not scored yet) and
    ``spans_kept``. Raises :class:`StoredTraceError`."""
    state = _open(path)
    try:
        try:
            ids = matching_trace_ids(state, prefix)
        except ValueError as exc:
            raise StoredTraceError(f"--trace {prefix}: {exc}") from None
        if not ids:
            raise StoredTraceError(f"--trace {prefix}: no trace with that ID prefix in {path}")
        if len(ids) > 1:
            more = " and more" if len(ids) > MAX_MATCHES else ""
            raise StoredTraceError(
                f"--trace {prefix} is ambiguous in {path}: it starts "
                f"{', '.join(ids[:MAX_MATCHES])}{more}; give more of the ID"
            )
        found = stored_trace(state, ids[0])
    except sqlite3.Error as exc:
        raise StoredTraceError(f"--state {path}: not a readable state file: {exc}") from None
    finally:
        state.close()
    readings = explain(list(found.spans)) if found.spans else []
    reading: dict[str, object] = (
        readings[0] if readings else {"trace_id": found.trace_id, "spans": [], "rag": None}
    )
    reading.setdefault("skipped", {})
    reading["spans_kept"] = bool(found.spans)
    reading["scored"] = None if found.result is None else json_safe(found.result.to_dict())
    reading["detail"] = None if found.detail is None else json_safe(dict(found.detail))
    return reading


def _ids(chunks: object) -> str:
    if not isinstance(chunks, list):
        return "none kept"
    return ", ".join(str(c.get("id")) for c in chunks if isinstance(c, dict)) or "none"


def stored_text(reading: dict[str, Any]) -> list[str]:
    """The lines a stored trace adds to ``inspect``'s text: what its scoring kept."""
    scored, detail = reading.get("scored"), reading.get("detail") or {}
    if scored is None:
        return ["  not scored yet: the state file holds its spans (above)"]
    at = datetime.fromtimestamp(float(scored["scored_at"]), timezone.utc)
    lines = [f"  scored {at:%Y-%m-%d %H:%M:%S} UTC" + ("" if reading["spans_kept"] else ":")]
    if not reading["spans_kept"]:
        lines.append(f"  {SPANS_GONE}")
    for key in ("service", "query", "question_id", "answer"):
        if scored.get(key) is not None:
            lines.append(f"      {key}: {scored[key]!r}")
    lines.append(f"      retrieved (ranked): {_ids(detail.get('retrieved'))}")
    lines.append(f"      context: {_ids(detail.get('context'))}")
    if detail.get("gold") is not None:
        lines.append(f"      gold: {', '.join(detail['gold']) or 'none (unanswerable)'}")

    def num(v: object) -> str:
        return "n/a" if v is None else f"{float(str(v)):.2f}"

    k = scored.get("k")
    recall = f"recall@{k}={num(scored.get('recall'))}" if k else "recall=n/a"
    judge = scored.get("judge_name") or "none"
    lines.append(
        f"      {recall}  groundedness={num(scored.get('groundedness'))}  "
        f"cell={scored['cell']}  judge={judge}"
    )
    lines += [f'      not supported: "{c}"' for c in scored.get("unsupported_claims", [])]
    if scored.get("judge_error"):
        lines.append(f"      judge error: {scored['judge_error']}")
    return lines
