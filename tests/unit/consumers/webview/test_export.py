"""The list's export: formula-safe CSV (OWASP's CSV injection advice) and JSON, same columns."""

from __future__ import annotations

import csv
import io
import json

import pytest

from ragtrace_consumers.webview.export import COLUMNS, safe_cell, to_csv, to_json
from tests.unit.consumers.webview.rows import result


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ('=HYPERLINK("http://evil")', '\'=HYPERLINK("http://evil")'),
        ("+1+2", "'+1+2"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("How do I export?", "How do I export?"),
        ("a=b", "a=b"),
        (None, ""),
        (0.25, 0.25),
    ],
)
def test_a_cell_a_spreadsheet_would_run_gets_a_leading_quote(
    value: object, written: object
) -> None:
    assert safe_cell(value) == written


def test_csv_and_json_hold_the_same_rows_and_columns() -> None:
    rows = [
        result(1, "fine", query="=cmd|' /C calc'!A0", model="gpt-4o", judge_error=None),
        result(2, "unlabelled", recall=None, k=None, query='Say "hi", then, go'),
    ]
    text = to_csv(rows).decode()
    assert text.startswith('"trace_id","scored_at","service","model"')
    parsed = list(csv.reader(io.StringIO(text)))
    assert parsed[0] == list(COLUMNS)
    first = dict(zip(COLUMNS, parsed[1], strict=True))
    assert first["query"] == "'=cmd|' /C calc'!A0"
    assert first["model"] == "gpt-4o" and first["scored_at"] == "2027-01-15T08:00:01Z"
    assert first["recall"] == "1.0" and first["judge_error"] == ""
    assert dict(zip(COLUMNS, parsed[2], strict=True))["query"] == 'Say "hi", then, go'
    # numbers are unquoted, every text cell quoted
    assert '"fine",' in text and ",1.0," in text
    body = json.loads(to_json(rows, {"cell": "fine"}, truncated=True))
    assert body["filters"] == {"cell": "fine"} and body["truncated"] is True
    assert [list(r) for r in body["rows"]] == [list(COLUMNS)] * 2
    assert body["rows"][0]["query"] == "=cmd|' /C calc'!A0"  # JSON keeps the text as it is
    assert body["rows"][1]["recall"] is None
