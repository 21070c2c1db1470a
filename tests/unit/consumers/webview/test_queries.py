"""The scored table's schema version 1 (indexed columns, detail) and the web view's queries."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ragtrace_consumers.model import SkippedTrace
from ragtrace_consumers.stores.scored_results import SCHEMA_VERSION
from ragtrace_consumers.stores.sqlite_state import SqliteState
from ragtrace_consumers.webview.errors import BadRequest
from ragtrace_consumers.webview.queries import (
    TraceFilter,
    choices,
    list_traces,
    overview,
    unlabelled_questions,
)
from tests.unit.consumers.webview.rows import result

_OLD_SCHEMA = """
CREATE TABLE judge_cache (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE written (trace_id TEXT NOT NULL, metric TEXT NOT NULL, PRIMARY KEY (trace_id, metric));
CREATE TABLE scored (seq INTEGER PRIMARY KEY AUTOINCREMENT, trace_id TEXT NOT NULL UNIQUE,
    scored_at REAL NOT NULL, record TEXT NOT NULL);
"""


def test_a_state_file_of_schema_0_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(_OLD_SCHEMA)
    rows = [result(1, "fine"), result(2, "generation_failed", groundedness=0.25)]
    for r in rows:
        old.execute(
            "INSERT INTO scored (trace_id, scored_at, record) VALUES (?, ?, ?)",
            (r.trace_id, r.scored_at, json.dumps(r.to_dict())),
        )
    old.commit()
    old.close()
    with SqliteState(path) as state:
        assert state.execute("PRAGMA user_version") == [(SCHEMA_VERSION,)]
        got = state.execute(
            "SELECT trace_id, service, cell, judge, query, groundedness, recall, severity, worst "
            "FROM scored ORDER BY seq"
        )
        assert got == [
            (rows[0].trace_id, "svc-a", "fine", "lexical", "question 1?", 1.0, 1.0, 5, 1.0),
            (
                rows[1].trace_id,
                "svc-b",
                "generation_failed",
                "lexical",
                "question 2?",
                0.25,
                1.0,
                1,
                0.25,
            ),
        ]
        assert state.results.get(rows[1].trace_id) == rows[1]
        assert state.results.detail(rows[1].trace_id) is None
        page = list_traces(state, TraceFilter())
        assert [r.trace_id for r in page.rows] == [rows[1].trace_id, rows[0].trace_id]
    with SqliteState(path) as again:  # opening a migrated file changes nothing
        assert len(again.results) == 2


def test_the_list_is_worst_first_and_filters_use_the_indexes() -> None:
    state = SqliteState(":memory:")
    state.results.put(result(1, "fine"))
    state.results.put(result(2, "retrieval_failed", recall=0.0))
    state.results.put(result(3, "both_failed", recall=0.0, groundedness=0.4))
    state.results.put(result(4, "generation_failed", groundedness=0.5))
    state.results.put(result(5, "generation_failed", groundedness=0.2, judge_name="anthropic"))
    state.results.put(result(6, "unlabelled", recall=None, k=None))
    order = [r.trace_id[-1] for r in list_traces(state, TraceFilter()).rows]
    assert order == ["3", "5", "4", "2", "6", "1"]
    assert [
        r.trace_id[-1] for r in list_traces(state, TraceFilter(cell="generation_failed")).rows
    ] == ["5", "4"]
    assert [r.trace_id[-1] for r in list_traces(state, TraceFilter(service="svc-b")).rows] == [
        "4",
        "2",
        "6",
    ]
    assert [r.trace_id[-1] for r in list_traces(state, TraceFilter(judge="anthropic")).rows] == [
        "5"
    ]
    since = TraceFilter(since=1_800_000_003.0, until=1_800_000_005.0)
    assert [r.trace_id[-1] for r in list_traces(state, since).rows] == ["3", "4"]
    first = list_traces(state, TraceFilter(), page_size=4)
    second = list_traces(state, TraceFilter(page=2), page_size=4)
    assert first.more and not second.more
    assert [r.trace_id[-1] for r in second.rows] == ["6", "1"]
    assert choices(state, "service") == ["svc-a", "svc-b"]
    assert choices(state, "judge") == ["anthropic", "lexical"]
    plan = " ".join(
        str(r[-1])
        for r in state.execute(
            "EXPLAIN QUERY PLAN SELECT record FROM scored WHERE cell = ? "
            "ORDER BY severity, worst, seq LIMIT 51",
            ("fine",),
        )
    )
    assert "scored_cell" in plan and "TEMP B-TREE" not in plan
    buckets = " ".join(
        str(r[-1])
        for r in state.execute(
            "EXPLAIN QUERY PLAN SELECT CAST((scored_at - 1) / 60 AS INTEGER), cell, COUNT(*), "
            "SUM(groundedness), SUM(recall) FROM scored WHERE scored_at >= 1 GROUP BY 1, 2"
        )
    )
    assert "COVERING INDEX scored_time" in buckets


def test_overview_counts_buckets_and_reasons() -> None:
    state = SqliteState(":memory:")
    state.results.put(result(1, "fine"))
    state.results.put(result(2, "fine", groundedness=0.5, recall=0.5))
    state.results.put(result(3, "unjudged", groundedness=None, judge_error="judge timed out"))
    state.results.put(result(4, "unlabelled", recall=None, k=None))
    state.results.put(result(5, "unlabelled", recall=None, k=None, query="question 4?"))
    for n, reason in ((6, "no_answer"), (7, "no_answer"), (8, "no_context")):
        state.skipped.skipped(SkippedTrace(f"{n:032x}", "svc", reason, "why, for people", 1.0))
    o = overview(state)
    assert o.counts["fine"] == 2 and o.counts["unjudged"] == 1 and o.counts["unlabelled"] == 2
    assert sum(b.total for b in o.buckets) == 5
    assert o.bucket_s == 60.0
    (bucket,) = [b for b in o.buckets if b.total]
    assert bucket.groundedness == pytest.approx((1.0 + 0.5 + 1.0 + 1.0) / 4)
    assert bucket.recall == pytest.approx((1.0 + 0.5 + 1.0) / 3)
    assert ("unjudged", "judge timed out", 1) in o.reasons
    assert ("recall n/a", "no labelled question matches the trace", 2) in o.reasons
    assert ("not scored", "no_answer", 2) in o.reasons
    assert ("not scored", "no_context", 1) in o.reasons
    assert unlabelled_questions(state) == [("question 4?", 2, f"{5:032x}")]


def test_overview_lists_the_latest_traces_not_scored_with_their_scopes() -> None:
    from ragtrace_consumers.webview.pages import render_overview

    state = SqliteState(":memory:")
    state.skipped.skipped(SkippedTrace(f"{1:032x}", "svc", "no_context", "no context", 1.0))
    detail = "no reader recognised any span; instrumentation scopes seen: acme.agents 0.4.1"
    state.skipped.skipped(SkippedTrace(f"{2:032x}", "agent-app", "unrecognised", detail, 2.0))
    o = overview(state)
    assert [(e.trace_id, e.reason) for e in o.skipped] == [
        (f"{2:032x}", "unrecognised"),
        (f"{1:032x}", "no_context"),
    ]
    page = render_overview(o, "lexical", None)
    assert "Latest traces seen and not scored" in page
    assert f"<code>{2:032x}</code></td><td>agent-app</td><td>unrecognised</td>" in page
    assert "instrumentation scopes seen: acme.agents 0.4.1" in page


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"cell": ["nope"]}, "cell must be one of"),
        ({"page": ["0"]}, "page must be within"),
        ({"page": ["x"]}, "page must be a whole number"),
        ({"since": ["yesterday"]}, "since: not a time"),
        ({"colour": ["red"]}, "unknown parameter 'colour'"),
        ({"cell": ["fine", "fine"]}, "cell given 2 times"),
        ({"service": ["x" * 201]}, "service must be 1..200"),
    ],
)
def test_bad_filters_are_refused_by_name(params: dict[str, list[str]], message: str) -> None:
    with pytest.raises(BadRequest, match=message) as info:
        TraceFilter.parse(params)
    assert info.value.status == 400


def test_filters_round_trip_through_the_query_string() -> None:
    f = TraceFilter.parse({"cell": ["fine"], "since": ["2027-01-15T08:20"], "page": ["3"]})
    assert f.since == 1_800_001_200.0
    assert f.query() == {"cell": "fine", "since": "1800001200", "page": "3"}
    assert TraceFilter.parse({k: [v] for k, v in f.query().items()}) == f
    odd = TraceFilter(until=1_800_001_200.25)
    assert TraceFilter.parse({k: [v] for k, v in odd.query().items()}) == odd
    assert f.query(page=None) == {"cell": "fine", "since": "1800001200"}
