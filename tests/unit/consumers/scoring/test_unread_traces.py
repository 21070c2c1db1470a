"""Nothing dropped unseen: a trace no reader makes a RAG step of is stored (its root and one
attribute-less span per scope), recorded as skipped ``unrecognised`` with the scopes it showed,
and counted in traces_seen and traces_skipped; a RAG trace is not changed by it."""

from __future__ import annotations

from ragtrace import semconv
from ragtrace_consumers.model import SkippedTrace, SpanRecord
from ragtrace_consumers.readers import role_of
from ragtrace_consumers.scoring.assembly import DEFAULT_IDLE_S, unread_traces
from tests.unit.consumers.scoring_helpers import T0, rag_spans, rig, tid

ROOT_ID, CHILD_ID = "1" * 16, "2" * 16


class Log:
    def __init__(self) -> None:
        self.entries: list[SkippedTrace] = []

    def skipped(self, entry: SkippedTrace) -> None:
        self.entries.append(entry)


def _span(
    n: int, span_id: str, parent: str | None, scope: str, version: str, **attrs: str
) -> SpanRecord:
    return SpanRecord(
        tid(n), span_id, parent, f"op-{span_id[0]}", scope, "agent-app",
        int(T0 * 1e9), int(T0 * 1e9) + 5, attrs, scope_version=version,
    )  # fmt: skip


def _unknown_trace(n: int) -> list[SpanRecord]:
    """An agent framework ragtrace has no reader for: its root, two spans of its own scope
    (content in attributes), one HTTP client span."""
    return [
        _span(n, "3" * 16, ROOT_ID, "acme.agents", "0.4.1", **{"acme.tool.output": "x" * 500}),
        _span(n, "4" * 16, ROOT_ID, "acme.agents", "0.4.1", **{"acme.tool.output": "y"}),
        _span(n, CHILD_ID, ROOT_ID, "opentelemetry.instrumentation.httpx", "0.50b0"),
        _span(n, ROOT_ID, None, "acme.agents", "0.4.1", **{"acme.session": "s"}),
    ]


def test_an_unread_trace_keeps_its_root_and_one_bare_span_per_other_scope() -> None:
    spans = _unknown_trace(1)
    witnesses, unread = unread_traces(spans, [None] * len(spans))
    assert unread == {tid(1)}
    assert [(s.span_id, s.scope, s.scope_version, dict(s.attributes)) for s in witnesses] == [
        (CHILD_ID, "opentelemetry.instrumentation.httpx", "0.50b0", {})
    ]


def test_a_batch_without_the_root_or_with_a_rag_span_has_no_unread_trace() -> None:
    spans = _unknown_trace(1)
    assert unread_traces(spans[:3], [None] * 3) == ([], set())
    rag = rag_spans(2)
    assert unread_traces(rag, [role_of(s) for s in rag]) == ([], set())


def test_an_unrecognised_trace_is_recorded_counted_and_released() -> None:
    log = Log()
    r = rig(skips=log)
    assert r.pipeline.ingest(_unknown_trace(1), T0) == 2  # the root and the HTTP span
    assert r.pipeline.process_due(T0 + DEFAULT_IDLE_S - 1) == 0  # waits like any root
    assert r.pipeline.process_due(T0 + DEFAULT_IDLE_S) == 1
    (entry,) = log.entries
    assert (entry.trace_id, entry.service, entry.reason) == (
        tid(1),
        "agent-app",
        "unrecognised",
    )
    assert entry.detail.endswith(
        "; instrumentation scopes seen: acme.agents 0.4.1, "
        "opentelemetry.instrumentation.httpx 0.50b0"
    )
    skipped = {k: v for k, v in r.points(semconv.METRIC_TRACES_SKIPPED).items() if v}
    assert skipped == {
        (("pipeline", "default"), ("reason", "unrecognised"), ("service", "agent-app")): 1
    }
    assert sum(r.points(semconv.METRIC_TRACES_SEEN).values()) == 1
    assert r.traces.stats()["released"] == 1
    assert r.spans() == []  # nothing written back


def test_a_rag_trace_whose_root_comes_last_is_scored_not_skipped() -> None:
    log = Log()
    r = rig(skips=log)
    spans = rag_spans(3)
    root = [s for s in spans if s.parent_span_id is None]
    r.pipeline.ingest([s for s in spans if s.parent_span_id is not None], T0)
    r.pipeline.ingest(root, T0 + 1)
    assert r.pipeline.process_due(T0 + DEFAULT_IDLE_S + 1) == 1
    assert log.entries == []
    assert len(r.spans()) == 1


def test_a_pipeline_span_without_retrieval_or_generation_stays_not_rag() -> None:
    log = Log()
    r = rig(skips=log)
    root = [s for s in rag_spans(4) if s.parent_span_id is None]
    r.pipeline.ingest(root, T0)
    assert r.pipeline.process_due(T0 + DEFAULT_IDLE_S) == 1
    assert [e.reason for e in log.entries] == ["not_rag"]
