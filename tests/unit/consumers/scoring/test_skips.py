"""Nothing unexplained: a trace seen and not scored is on the skipped-by-reason metric and in
the skip log with its reason, and ``ragtrace inspect`` says why a trace would not be scored."""

from __future__ import annotations

import json

from ragtrace_consumers.commands.inspect import explain
from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.stores.sqlite_state import SqliteState
from tests.unit.consumers.scoring_helpers import T0, rag_spans, rig, tid


def test_a_skipped_trace_is_counted_and_logged_with_its_reason() -> None:
    with SqliteState(":memory:") as state:
        r = rig(calls_per_minute=0, skips=state.skipped)
        r.pipeline.ingest(rag_spans(13, query="unlabelled"), T0)
        r.pipeline.process_due(T0)
        assert r.spans() == []
        key = (("pipeline", "support"), ("reason", "budget_exhausted"), ("service", "rag-app"))
        assert r.points("ragtrace.traces.skipped")[key] == 1
        (entry,) = state.skipped.all()
        assert (entry.trace_id, entry.service, entry.reason) == (
            tid(13),
            "rag-app",
            "budget_exhausted",
        )
        assert entry.detail == "the judge budget was exhausted"


def test_an_unlabelled_trace_without_an_answer_is_logged_as_unlabelled() -> None:
    with SqliteState(":memory:") as state:
        r = rig(skips=state.skipped)
        r.pipeline.ingest(rag_spans(15, query="unlabelled", answer=None), T0)
        assert r.pipeline.process_due(T0 + 60) == 1  # no generation: the idle period
        assert r.spans() == []
        (entry,) = state.skipped.all()
        assert (entry.trace_id, entry.reason) == (tid(15), "unlabelled")
        assert entry.detail == "no label matched the question and the answer was not judged"


def _traceloop(span_id: str, name: str, attrs: dict[str, object], parent: str | None) -> SpanRecord:
    return SpanRecord(
        "ab" * 16,
        span_id,
        parent,
        name,
        "traceloop",
        "app",
        1,
        2,
        attrs,  # type: ignore[arg-type]
    )


def test_inspect_says_why_a_trace_would_not_be_scored() -> None:
    root = _traceloop(
        "1" * 16,
        "rag.workflow",
        {"traceloop.span.kind": "workflow", "traceloop.entity.input": json.dumps({"args": ["q"]})},
        None,
    )
    chat = _traceloop(
        "2" * 16,
        "openai.chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "An answer."}]}]
            ),
        },
        "1" * 16,
    )
    (trace,) = explain([root, chat])
    assert trace["skipped"] == {
        "recall": "no_retrieval: no retrieval span and nothing to judge",
        "judge": "no_context: the answer has no context to be judged against (no retrieved "
        "documents and no documents listed on the generation)",
    }
    (bare,) = explain([root])
    assert bare["rag"] is None
    assert str(bare["skipped"]["trace"]).startswith("not_rag: ")  # type: ignore[index]


def test_inspect_names_the_scopes_of_a_trace_no_reader_recognises() -> None:
    from dataclasses import replace

    root = replace(
        _traceloop("1" * 16, "agent.run", {"acme.input": "q"}, None),
        scope="acme.agents",
        scope_version="0.4.1",
    )
    http = replace(_traceloop("2" * 16, "GET", {"http.method": "GET"}, "1" * 16), scope="httpx")
    (trace,) = explain([root, http])
    assert trace["rag"] is None
    why = str(trace["skipped"]["trace"])  # type: ignore[index]
    assert why.startswith("unrecognised: no reader recognised any span as a RAG step")
    assert why.endswith("; instrumentation scopes seen: acme.agents 0.4.1, httpx")
    rows: list[dict[str, object]] = trace["spans"]  # type: ignore[assignment]
    assert [(row["reader"], row.get("scope_version")) for row in rows] == [
        ("unrecognised", "0.4.1"),
        ("unrecognised", None),
    ]


def test_the_skip_log_keeps_one_row_per_trace_and_polls_by_seq() -> None:
    from ragtrace_consumers.model import SkippedTrace

    with SqliteState(":memory:") as state:
        log = state.skipped
        log.skipped(SkippedTrace(tid(1), "app", "no_context", "first", 1.0))
        log.skipped(SkippedTrace(tid(2), "app", "not_rag", "second", 2.0))
        log.skipped(SkippedTrace(tid(1), "app", "unlabelled", "again", 3.0))
        assert [(e.trace_id, e.reason, e.detail) for e in log.all()] == [
            (tid(1), "unlabelled", "again"),
            (tid(2), "not_rag", "second"),
        ]
        first, second = log.after(0)
        assert log.after(first[0]) == [second] and log.after(second[0]) == []
        assert len(log) == 2
