"""Never hurting the host: user exceptions pass through untouched, our own failures never raise."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, StatusCode, TraceFlags

import ragtrace
from ragtrace import semconv as sc
from ragtrace._drivers import SUPPRESS_KEY
from ragtrace.normalize import question_sha256
from tests.metric_points import key, metrics, number
from tests.unit.sdk.sdk_spans import assert_attributes, finished, only_span, retrieval_query


class Boom(Exception):
    pass


def test_user_exception_propagates_unchanged_and_is_recorded() -> None:
    error = Boom("index offline")

    @ragtrace.retrieve
    def retrieve(query: str) -> list[str]:
        raise error

    with pytest.raises(Boom) as info:
        retrieve("q")
    assert info.value is error
    span = only_span()
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "Boom: index offline"
    (event,) = span.events
    assert event.name == "exception"
    assert event.attributes is not None
    assert (event.attributes["exception.type"], event.attributes["exception.message"]) == (
        f"{__name__}.Boom",
        "index offline",
    )
    assert_attributes(
        span,
        {
            **retrieval_query("q"),
        },
    )


def test_async_and_generator_exceptions_propagate() -> None:
    @ragtrace.generate
    async def agen(query: str) -> str:
        raise Boom("async")

    @ragtrace.generate
    def stream(query: str) -> Iterator[str]:
        yield "part"
        raise Boom("mid-stream")

    with pytest.raises(Boom, match="async"):
        asyncio.run(agen("q"))
    got = []
    with pytest.raises(Boom, match="mid-stream"):
        for piece in stream("q"):
            got.append(piece)
    assert got == ["part"]
    first, second = finished()
    assert first.status.status_code is StatusCode.ERROR
    assert second.status.status_code is StatusCode.ERROR
    assert second.attributes[sc.OUTPUT_VALUE] == "part"  # type: ignore[index]
    assert second.attributes[sc.RAGTRACE_STREAMED] is True  # type: ignore[index]


def test_base_exceptions_propagate_too() -> None:
    @ragtrace.pipeline
    def answer(query: str) -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        answer("q")
    assert only_span().status.status_code is StatusCode.ERROR


def test_failing_extractor_never_raises_and_is_counted(caplog: pytest.LogCaptureFixture) -> None:
    def bad_id(item: Any) -> str:
        raise RuntimeError("schema changed")

    @ragtrace.retrieve(id_of=bad_id)
    def retrieve(query: str) -> list[dict[str, str]]:
        return [{"x": "1"}]

    with caplog.at_level(logging.WARNING, logger="ragtrace"):
        for _ in range(3):
            assert retrieve("q") == [{"x": "1"}]
    warnings = [r for r in caplog.records if r.name == "ragtrace"]
    assert len(warnings) == 1  # logged once
    assert "chunk extraction" in warnings[0].getMessage()
    assert "ChunkExtractionError" in warnings[0].getMessage()
    assert ragtrace.error_counts() == {"chunk extraction": 3}
    spans = finished()
    assert len(spans) == 3
    assert_attributes(
        spans[0],
        {
            **retrieval_query("q"),
            sc.RAGTRACE_INSTRUMENTATION_ERRORS: 1,
        },
    )
    assert spans[0].status.status_code is StatusCode.UNSET


def test_uninterpretable_context_never_raises() -> None:
    @ragtrace.generate
    def generate(query: str, context: str) -> str:
        return "answer"

    assert generate("q", "one long prompt string") == "answer"
    span = only_span()
    assert span.attributes[sc.RAGTRACE_INSTRUMENTATION_ERRORS] == 1  # type: ignore[index]
    assert sc.RAGTRACE_CONTEXT_COUNT not in span.attributes  # type: ignore[operator]
    assert span.attributes[sc.OUTPUT_VALUE] == "answer"  # type: ignore[index]


def test_unserializable_answer_and_failing_answer_of() -> None:
    class Unprintable:
        def __str__(self) -> str:
            raise ValueError("no str")

        __repr__ = __str__

    result = {"obj": Unprintable()}

    @ragtrace.generate
    def generate(query: str) -> dict[str, Unprintable]:
        return result

    @ragtrace.generate(answer_of=lambda r: r["missing"])
    def generate2(query: str) -> dict[str, str]:
        return {}

    assert generate("q") is result
    assert generate2("q") == {}
    a, b = finished()
    for span in (a, b):
        assert span.attributes[sc.RAGTRACE_INSTRUMENTATION_ERRORS] == 1  # type: ignore[index]
        assert sc.OUTPUT_VALUE not in span.attributes  # type: ignore[operator]
    assert ragtrace.error_counts() == {"reading the result": 2}


def test_failing_redactor_fails_closed() -> None:
    def redact(text: str) -> str:
        raise RuntimeError("regex blew up")

    @ragtrace.retrieve(redact=redact)
    def retrieve(query: str) -> list[dict[str, str]]:
        return [{"id": "a", "text": "secret"}]

    assert retrieve("my ssn") == [{"id": "a", "text": "secret"}]
    a = only_span().attributes
    assert a is not None
    assert sc.INPUT_VALUE not in a and "retrieval.documents.0.document.content" not in a
    assert a["ragtrace.retrieval.documents.0.document.sha256"] == ragtrace._recording.text_sha256(
        "secret"
    )
    assert a["ragtrace.retrieval.documents.0.document.length"] == 6
    assert a[sc.RAGTRACE_QUERY_SHA256] == question_sha256("my ssn")
    assert a[sc.RAGTRACE_INSTRUMENTATION_ERRORS] == 3  # query, query text, chunk text


def test_failing_tracer_start_falls_back_to_plain_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtrace import _kinds

    class BrokenTracer:
        def start_span(self, *a: Any, **k: Any) -> Any:
            raise RuntimeError("provider broken")

    monkeypatch.setattr(_kinds, "_tracer", BrokenTracer())

    @ragtrace.retrieve
    def retrieve(query: str) -> list[str]:
        return ["a"]

    @ragtrace.retrieve
    def stream(query: str) -> Iterator[str]:
        yield "a"

    assert retrieve("q") == ["a"]
    assert list(stream("q")) == ["a"]
    assert ragtrace.error_counts() == {"starting the span": 2}


def test_failing_set_attributes_on_span_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtrace import _recording

    def broken_flush(self: Any, span: Any) -> None:
        raise RuntimeError("exporter-side bug")

    monkeypatch.setattr(_recording.Recorder, "flush", broken_flush)

    @ragtrace.pipeline
    def answer(query: str) -> str:
        return "ok"

    assert answer("q") == "ok"
    only_span()  # still ended
    assert ragtrace.error_counts() == {"setting attributes": 1}


def test_suppressed_instrumentation_makes_no_span() -> None:
    calls = []

    @ragtrace.retrieve
    def retrieve(query: str) -> list[str]:
        calls.append(query)
        return ["a"]

    token = otel_context.attach(otel_context.set_value(SUPPRESS_KEY, True))
    try:
        assert retrieve("q") == ["a"]
    finally:
        otel_context.detach(token)
    assert calls == ["q"]
    assert finished() == []


def test_disabled_makes_no_span(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtrace import _config

    @ragtrace.retrieve
    def retrieve(query: str) -> list[str]:
        return ["a"]

    monkeypatch.setenv(_config.ENV_ENABLED, "false")
    _config.reload()
    assert retrieve("q") == ["a"]
    assert finished() == []
    ragtrace.configure(enabled=True)
    assert retrieve("q") == ["a"]
    assert len(finished()) == 1


def test_not_recording_span_does_no_extraction_work() -> None:
    calls = []

    def id_of(item: Any) -> str:
        calls.append(item)
        return str(item)

    @ragtrace.retrieve(id_of=id_of)
    def retrieve(query: str) -> list[str]:
        return ["a"]

    @ragtrace.pipeline
    def answer(query: str) -> list[str]:
        assert ragtrace.set_question_id("q-1") is False
        return retrieve(query)

    unsampled = SpanContext(
        trace_id=0x1234, span_id=0x5678, is_remote=True, trace_flags=TraceFlags(0)
    )
    token = otel_context.attach(trace.set_span_in_context(NonRecordingSpan(unsampled)))
    try:
        assert answer("q") == ["a"]
    finally:
        otel_context.detach(token)
    assert calls == []
    assert finished() == []


def test_set_question_id_with_bad_type_never_raises() -> None:
    @ragtrace.pipeline
    def answer(query: str) -> None:
        assert ragtrace.set_question_id(42) is False  # type: ignore[arg-type]

    answer("q")
    assert ragtrace.error_counts() == {"set_question_id": 1}


def test_error_counter_reaches_the_metrics_api() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from ragtrace import _health

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    saved = dict(_health._instruments)
    _health._instruments.clear()
    try:
        from unittest import mock

        with mock.patch("opentelemetry.metrics.get_meter", provider.get_meter):
            _health.report("chunk extraction", ValueError("x"))
            _health.report("chunk extraction", ValueError("y"))
            _health.dropped("queue_full", 3)
    finally:
        _health._instruments.clear()
        _health._instruments.update(saved)
    points = {(m.name, key(p)): number(p) for _, m in metrics(reader) for p in m.data.data_points}
    assert points == {
        (sc.METRIC_SDK_ERRORS, (("reason", "chunk extraction"),)): 2,
        (sc.METRIC_SDK_DROPPED, (("reason", "queue_full"),)): 3,
    }
