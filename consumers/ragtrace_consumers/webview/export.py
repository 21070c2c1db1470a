"""The list's rows as a download: CSV (safe for spreadsheets) or JSON.

Both hold the same columns (:data:`COLUMNS`), one row per scored trace in the list's order.
A CSV cell that a spreadsheet would read as a formula — text starting with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return — is written with a leading ``'`` (OWASP's advice on CSV
injection), and every cell is quoted; numbers are written as numbers.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Mapping, Sequence

from ragtrace_consumers.stores.scored_results import ScoredResult

__all__ = ["COLUMNS", "safe_cell", "to_csv", "to_json"]

COLUMNS = (
    "trace_id",
    "scored_at",
    "service",
    "model",
    "cell",
    "question_id",
    "query",
    "k",
    "recall",
    "hit_rate",
    "reciprocal_rank",
    "groundedness",
    "grounded",
    "claims",
    "judge_name",
    "judge_model",
    "judge_error",
)
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> object:
    """``value`` for a CSV cell: text a spreadsheet would run as a formula gets a leading
    ``'``; None is empty; numbers stay numbers."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA):
        return "'" + value
    return value


def _record(r: ScoredResult) -> dict[str, object]:
    d = r.to_dict()
    row = {c: d.get(c) for c in COLUMNS}
    row["scored_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(r.scored_at))
    return row


def to_csv(rows: Sequence[ScoredResult]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for r in rows:
        record = _record(r)
        writer.writerow([safe_cell(record[c]) for c in COLUMNS])
    return out.getvalue().encode("utf-8")


def to_json(rows: Sequence[ScoredResult], filters: Mapping[str, str], truncated: bool) -> bytes:
    """``{"filters": …, "truncated": …, "rows": [...]}``; ``truncated``: more traces matched."""
    body = {"filters": dict(filters), "truncated": truncated, "rows": [_record(r) for r in rows]}
    return json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
