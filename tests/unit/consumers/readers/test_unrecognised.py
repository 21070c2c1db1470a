"""Spans no reader recognises are counted by scope and logged once per scope with their keys."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragtrace import semconv
from ragtrace_consumers.readers.unrecognised import METRIC_SPANS_UNRECOGNISED, UnrecognisedSpans
from tests.metric_points import values
from tests.unit.consumers.ingestion_spans import RET, ROOT, record


def _counts(reader: InMemoryMetricReader) -> dict[str, int]:
    return {
        str(dict(k)["scope"]): int(v) for k, v in values(reader, METRIC_SPANS_UNRECOGNISED).items()
    }


def test_counted_by_scope_and_logged_once_per_scope(caplog: pytest.LogCaptureFixture) -> None:
    reader = InMemoryMetricReader()
    counter = UnrecognisedSpans(MeterProvider(metric_readers=[reader]))
    custom = record(
        "7777777777777777",
        parent=ROOT,
        scope="acme.rag",
        attributes={"acme.hits": "[]", "acme.kind": "search"},
    )
    http = record(ROOT, scope="opentelemetry.instrumentation.fastapi")
    retrieval = record(RET, parent=ROOT, attributes={semconv.OPENINFERENCE_SPAN_KIND: "RETRIEVER"})
    evaluation = record("8888888888888888", scope=semconv.EVALUATION_SCOPE)
    embedding = record(
        "9999999999999999", attributes={semconv.OPENINFERENCE_SPAN_KIND: "EMBEDDING"}
    )  # recognised, ignored
    with caplog.at_level(logging.WARNING):
        assert counter.observe([custom, http, retrieval, evaluation, embedding]) == 2
        assert counter.observe([custom]) == 1
    assert _counts(reader) == {"acme.rag": 2, "opentelemetry.instrumentation.fastapi": 1}
    warnings = [r.getMessage() for r in caplog.records if "match no RAG dialect" in r.getMessage()]
    assert len(warnings) == 2
    assert "'acme.rag'" in warnings[0] and "attribute keys: acme.hits, acme.kind" in warnings[0]


def test_scopes_beyond_the_limit_are_counted_as_other() -> None:
    reader = InMemoryMetricReader()
    counter = UnrecognisedSpans(MeterProvider(metric_readers=[reader]), max_scopes=1)
    counter.observe([record(ROOT, scope="a"), record(ROOT, scope="b"), record(ROOT, scope="c")])
    assert _counts(reader) == {"a": 1, "other": 2}
