"""The scored table's schema version 1 (indexed columns, detail) and the web view's queries."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from ragtrace_consumers.model import SkippedTrace
from ragtrace_consumers.stores.scored_results import SCHEMA_VERSION, SEVERITY
from ragtrace_consumers.stores.sqlite_state import SqliteState
from ragtrace_consumers.webview.errors import BadRequest
from ragtrace_consumers.webview.queries import (
    Headline,
    OverviewFilter,
    TraceFilter,
    choices,
    jump_target,
    list_traces,
    overview,
    resolve_trace_id,
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
            (
                rows[0].trace_id,
                "svc-a",
                "fine",
                "lexical",
                "question 1?",
                1.0,
                1.0,
                SEVERITY["fine"],
                1.0,
            ),
            (
                rows[1].trace_id,
                "svc-b",
                "generation_failed",
                "lexical",
                "question 2?",
                0.25,
                1.0,
                SEVERITY["generation_failed"],
                0.25,
            ),
        ]
        # The verdict is read off the cell: exact whatever threshold was configured then.
        assert state.results.get(rows[1].trace_id) == dataclasses.replace(rows[1], grounded=False)
        assert state.results.get(rows[0].trace_id) == dataclasses.replace(rows[0], grounded=True)
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
        ({"grounded": ["maybe"]}, "grounded must be yes or no"),
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


def _ids(page_rows: object) -> list[str]:
    return [r.trace_id[-1] for r in page_rows]  # type: ignore[attr-defined]


def test_a_state_file_of_schema_1_gets_the_model_column_from_the_detail(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite3"
    with SqliteState(path) as state:
        state.results.put(result(1, "fine"), {"model": "gpt-4o-mini"})
        state.results.put(result(2, "fine"))  # no detail: no model known
        for index in ("scored_model", "scored_model_time", "scored_service_time", "scored_search"):
            state.execute(f"DROP INDEX {index}")  # back to schema 1's indexes
        state.execute("ALTER TABLE scored DROP COLUMN model")
        state.execute("PRAGMA user_version = 1")
    with SqliteState(path) as state:
        assert state.execute("PRAGMA user_version") == [(SCHEMA_VERSION,)]
        assert state.execute("SELECT model FROM scored ORDER BY seq") == [("gpt-4o-mini",), (None,)]
        # The old record reads as before, with the verdict version 3 adds (read off its cell).
        assert state.results.get(f"{1:032x}") == result(1, "fine", grounded=True)
        assert _ids(list_traces(state, TraceFilter(model="gpt-4o-mini")).rows) == ["1"]


def test_search_by_question_text_is_a_case_insensitive_substring() -> None:
    state = SqliteState(":memory:")
    state.results.put(result(1, "fine", query="How long are AUDIT logs kept?"))
    state.results.put(result(2, "fine", query="Where are audit trails?"))
    state.results.put(result(3, "fine", query="100% uptime_sla?"))
    state.results.put(result(4, "fine", query="1000 uptimeXsla?"))
    assert _ids(list_traces(state, TraceFilter(q="Audit")).rows) == ["1", "2"]
    assert _ids(list_traces(state, TraceFilter(q="audit logs")).rows) == ["1"]
    # LIKE's wildcards are literal text in a search
    assert _ids(list_traces(state, TraceFilter(q="0% uptime_")).rows) == ["3"]
    assert _ids(list_traces(state, TraceFilter(q="nothing like it")).rows) == []
    state.results.put(result(5, "fine", query="Où est l'ÉTÉ ?"))
    assert _ids(list_traces(state, TraceFilter(q="l'été")).rows) == ["5"]  # beyond ASCII too
    plan = " ".join(
        str(r[-1])
        for r in state.execute(
            "EXPLAIN QUERY PLAN SELECT seq FROM scored INDEXED BY scored_search "
            "WHERE query LIKE ? AND cell = ? AND service = ? AND model = ? AND judge = ? "
            "AND scored_at >= ? ORDER BY severity, worst, seq LIMIT 51",
            ("%a%", "fine", "s", "m", "j", 1.0),
        )
    )
    assert "COVERING INDEX scored_search" in plan  # a search never reads the rows it skips


def test_search_by_trace_id_prefix_lists_or_names_the_trace() -> None:
    state = SqliteState(":memory:")
    ids = ["abcdef01" + "0" * 24, "abcdef02" + "0" * 24, "abcd99" + "1" * 26]
    for n, trace_id in enumerate(ids):
        state.results.put(result(n, "fine", trace_id=trace_id, query=f"about abcdef0{n}"))
    both = list_traces(state, TraceFilter(q="ABCDEF0"))
    assert {r.trace_id for r in both.rows} == set(ids[:2])
    assert jump_target(state, TraceFilter(q="abcdef0")) is None  # two traces: list them
    assert jump_target(state, TraceFilter(q="abcdef02")) == ids[1]
    assert jump_target(state, TraceFilter(q="abcdef02", cell="fine")) is None  # other filters
    assert jump_target(state, TraceFilter(q="abcd")) is None  # too short to be taken for an ID
    # hex that starts no trace ID is searched in the question text
    assert [r.trace_id for r in list_traces(state, TraceFilter(q="bcdef01")).rows] == [ids[1]]
    assert resolve_trace_id(state, "abcd9") == ids[2]
    assert resolve_trace_id(state, ids[0].upper()) == ids[0]
    with pytest.raises(BadRequest, match="more than one trace") as many:
        resolve_trace_id(state, "abc")
    assert many.value.status == 400
    with pytest.raises(BadRequest, match="no scored trace ID starts with ff") as none:
        resolve_trace_id(state, "ff")
    assert none.value.status == 404


def test_the_model_filter_and_its_choices_use_an_index() -> None:
    state = SqliteState(":memory:")
    state.results.put(result(1, "fine", model="claude-haiku"))
    state.results.put(result(2, "generation_failed", groundedness=0.2, model="gpt-4o"))
    state.results.put(result(3, "fine"))
    assert _ids(list_traces(state, TraceFilter(model="gpt-4o")).rows) == ["2"]
    assert choices(state, "model") == ["claude-haiku", "gpt-4o"]
    plan = " ".join(
        str(r[-1])
        for r in state.execute(
            "EXPLAIN QUERY PLAN SELECT seq FROM scored WHERE model = ? "
            "ORDER BY severity, worst, seq LIMIT 51",
            ("gpt-4o",),
        )
    )
    assert "scored_model" in plan and "TEMP B-TREE" not in plan
    windowed = " ".join(
        str(r[-1])
        for r in state.execute(
            "EXPLAIN QUERY PLAN SELECT SUM(groundedness), COUNT(recall) FROM scored "
            "WHERE model = ? AND scored_at >= ? AND scored_at < ?",
            ("gpt-4o", 1.0, 2.0),
        )
    )
    assert "COVERING INDEX scored_model_time" in windowed


HOUR = 3600.0
NOW = 1_800_100_000.0


def _at(n: int, seconds_ago: float, cell: str, **kw: object) -> object:
    return result(n, cell, scored_at=NOW - seconds_ago, **kw)


def test_the_overview_over_a_range_compares_with_the_previous_period() -> None:
    state = SqliteState(":memory:")
    rows = [
        _at(1, 10, "fine", groundedness=0.9, recall=1.0, model="m-a"),
        _at(2, 20, "generation_failed", groundedness=0.5, recall=0.5, model="m-a"),
        _at(3, 30, "fine", groundedness=1.0, recall=None, model="m-b", service="svc-c"),
        _at(4, HOUR + 10, "fine", groundedness=1.0, recall=1.0, model="m-a"),  # previous hour
        _at(5, 3 * HOUR, "generation_failed", groundedness=0.1, model="m-a"),  # earlier still
    ]
    for r in rows:
        state.results.put(r)  # type: ignore[arg-type]
    o = overview(state, OverviewFilter(range="1h"), now=NOW)
    assert o.window == (NOW - HOUR, NOW)
    assert o.counts["fine"] == 2 and o.counts["generation_failed"] == 1
    assert o.headline is not None and o.previous is not None
    assert o.headline.groundedness == pytest.approx((0.9 + 0.5 + 1.0) / 3)
    assert o.headline.recall == pytest.approx(0.75)
    assert (o.headline.judged, o.headline.with_recall, o.headline.not_grounded) == (3, 2, 1)
    assert o.headline.share_not_grounded == pytest.approx(1 / 3)
    assert (o.previous.groundedness, o.previous.recall, o.previous.not_grounded) == (1.0, 1.0, 0)
    assert sum(b.total for b in o.buckets) == 3 and o.bucket_s == 300.0
    by_model = overview(state, OverviewFilter(model="m-b", range="1h"), now=NOW)
    assert sum(by_model.counts.values()) == 1 and by_model.previous == Headline(None, None, 0, 0, 0)
    custom = OverviewFilter(since=NOW - 4 * HOUR, until=NOW - 2 * HOUR)
    o = overview(state, custom, now=NOW)
    assert sum(o.counts.values()) == 1 and o.counts["generation_failed"] == 1
    assert o.headline is not None and o.headline.share_not_grounded == 1.0
    everything = overview(state, OverviewFilter(service="svc-c"), now=NOW)
    assert everything.window is None and everything.previous is None
    assert sum(everything.counts.values()) == 1


def test_overview_filters_round_trip_and_bad_ones_are_named() -> None:
    f = OverviewFilter.parse({"range": ["custom"], "from": ["2027-01-15T08:20"], "model": ["m"]})
    assert f == OverviewFilter(model="m", since=1_800_001_200.0)
    assert OverviewFilter.parse({k: [v] for k, v in f.query().items()}) == f
    assert f.window(1_800_009_999.0) == (1_800_001_200.0, 1_800_009_999.0)
    named = OverviewFilter.parse({"range": ["24h"], "service": ["svc-a"]})
    assert named.query() == {"range": "24h", "service": "svc-a"}
    assert named.window(NOW) == (NOW - 86400.0, NOW)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"range": ["2w"]}, "range must be one of 1h, 24h, 7d or custom"),
        ({"range": ["24h"], "from": ["2027-01-01"]}, "range: 24h is a range ending now"),
        ({"range": ["custom"]}, "from: range=custom needs a start"),
        ({"to": ["2027-01-01"]}, "to: give from as well"),
        ({"from": ["2027-01-02"], "to": ["2027-01-01"]}, "to must be later than from"),
        ({"from": ["last week"]}, "from: not a time"),
        ({"model": ["m", "n"]}, "model given 2 times"),
        ({"cell": ["fine"]}, "unknown parameter 'cell'"),
    ],
)
def test_bad_overview_parameters_are_refused_by_name(
    params: dict[str, list[str]], message: str
) -> None:
    with pytest.raises(BadRequest, match=message) as info:
        OverviewFilter.parse(params)
    assert info.value.status == 400


def test_list_filters_with_search_and_model_round_trip() -> None:
    f = TraceFilter.parse({"q": [" audit logs "], "model": ["gpt-4o"], "page": ["2"]})
    assert f == TraceFilter(q="audit logs", model="gpt-4o", page=2)
    assert TraceFilter.parse({k: [v] for k, v in f.query().items()}) == f
    with pytest.raises(BadRequest, match="q must be 1..200"):
        TraceFilter.parse({"q": ["x" * 201]})
    with pytest.raises(BadRequest, match="until must be later than since"):
        TraceFilter.parse({"since": ["20"], "until": ["10"]})


def test_the_grounded_filter_lists_every_answer_not_grounded_whatever_its_cell() -> None:
    state = SqliteState(":memory:")
    state.results.put(result(1, "fine", grounded=True))
    state.results.put(result(2, "generation_failed", groundedness=0.5, grounded=False))
    state.results.put(result(3, "unlabelled_not_grounded", recall=None, k=None, grounded=False))
    state.results.put(result(4, "unlabelled", recall=None, k=None, grounded=True))
    state.results.put(result(5, "unanswerable_answered", recall=None, grounded=False))
    state.results.put(result(6, "unanswerable_declined", recall=None, grounded=None))
    no = TraceFilter.parse({"grounded": ["no"]})
    assert no.query() == {"grounded": "no"}
    assert [r.trace_id[-1] for r in list_traces(state, no).rows] == ["2", "3", "5"]
    yes = list_traces(state, TraceFilter(grounded="yes")).rows
    assert [r.trace_id[-1] for r in yes] == ["4", "1"]
    o = overview(state)
    assert o.not_grounded == {
        "generation_failed": 1,
        "unlabelled_not_grounded": 1,
        "unanswerable_answered": 1,
    }
    assert o.not_grounded_total == 3
    # Seen without a label: both unlabelled cells, never a question labelled unanswerable.
    assert [q for q, _, _ in unlabelled_questions(state)] == ["question 3?", "question 4?"]
    plan = " ".join(
        str(r[-1])
        for r in state.execute(
            "EXPLAIN QUERY PLAN SELECT seq FROM scored WHERE grounded = 0 "
            "ORDER BY severity, worst, seq LIMIT 51"
        )
    )
    assert "scored_grounded" in plan and "TEMP B-TREE" not in plan
