"""Traces too large for one collector Kafka message are named in the app's log and counted."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

import ragtrace
from ragtrace import _config
from ragtrace._oversize import OversizeGuard, estimate_span_bytes
from tests.unit.sdk.sdk_spans import finished
from tests.unit.sdk.test_setup import run_python


def _rag_trace(chunk_bytes: int, chunks: int = 5) -> list[ReadableSpan]:
    @ragtrace.retrieve
    def retrieve(query: str) -> list[dict[str, object]]:
        return [
            {"id": f"c{i}", "text": f"passage {i} " + "x" * chunk_bytes, "score": 0.5}
            for i in range(chunks)
        ]

    @ragtrace.generate
    def generate(query: str, passages: list[dict[str, object]]) -> str:
        return "an answer ü " * 40

    @ragtrace.pipeline
    def answer(query: str) -> str:
        return generate(query, retrieve(query))

    answer("how long are audit logs kept?")
    return list(finished())


@pytest.mark.parametrize("chunk_bytes", [200, 5_000, 12_000])
def test_the_estimate_is_within_ten_percent_of_the_encoded_size(chunk_bytes: int) -> None:
    """Against the trace encoded as one request, as the collector's Kafka message holds it."""
    spans = _rag_trace(chunk_bytes)
    encoded = encode_spans(spans).ByteSize()
    estimate = sum(estimate_span_bytes(span) for span in spans)
    assert abs(estimate - encoded) <= 0.1 * encoded, (estimate, encoded)


def test_a_trace_crossing_the_limit_is_logged_with_its_id_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    spans = _rag_trace(12_000)
    trace_id = spans[0].context.trace_id
    size = sum(estimate_span_bytes(span) for span in spans)
    guard = OversizeGuard(lambda: size - 1)
    with caplog.at_level(logging.WARNING, logger="ragtrace"):
        # the trace leaves in two exports: the second one carries it over the limit
        assert guard.check(spans[:1]) == []
        assert guard.check(spans[1:]) == [trace_id]
        assert guard.check(spans[1:]) == []  # already named
    (record,) = caplog.records
    assert f"{trace_id:032x}" in record.getMessage()
    assert _config.ENV_MAX_TRACE_EXPORT_BYTES in record.getMessage()
    assert ragtrace.oversized_count() == 1


def test_a_trace_at_the_limit_passes_and_others_are_not_mixed_in() -> None:
    first = _rag_trace(12_000)
    second = [s for s in _rag_trace(12_000) if s.context.trace_id != first[0].context.trace_id]
    size = sum(estimate_span_bytes(span) for span in first)
    guard = OversizeGuard(lambda: size)
    assert guard.check(first + second) == []
    assert ragtrace.oversized_count() == 0


def test_only_the_most_recent_traces_are_remembered() -> None:
    spans = _rag_trace(12_000)
    size = sum(estimate_span_bytes(span) for span in spans)
    guard = OversizeGuard(lambda: size - 1, remember=1)
    other = [s for s in _rag_trace(100) if s.context.trace_id != spans[0].context.trace_id]
    assert guard.check(spans[:1]) == []
    assert guard.check(other) == []  # pushes the first trace out
    assert guard.check(spans[1:]) == []  # the rest alone stays under the limit
    with pytest.raises(ValueError, match="remember"):
        OversizeGuard(remember=0)


def test_configure_names_an_oversized_trace_and_still_exports_it() -> None:
    result = run_python(
        """
import json, logging, ragtrace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
messages = []
class Keep(logging.Handler):
    def emit(self, record): messages.append(record.getMessage())
logging.getLogger("ragtrace").addHandler(Keep())
exporter = InMemorySpanExporter()
provider = ragtrace.configure(exporter=exporter)
@ragtrace.retrieve
def retrieve(query): return [{"id": f"c{i}", "text": "x" * 4000} for i in range(10)]
@ragtrace.generate
def generate(query, chunks): return "a"
@ragtrace.pipeline
def answer(query): return generate(query, retrieve(query))
answer("big")
provider.force_flush()
spans = exporter.get_finished_spans()
trace_id = f"{spans[0].context.trace_id:032x}"
print(json.dumps({"spans": len(spans), "oversized": ragtrace.oversized_count(),
                  "named": [m for m in messages if trace_id in m] != []}))
""",
        RAGTRACE_MAX_TRACE_EXPORT_BYTES="30000",
    )
    assert result == {"spans": 3, "oversized": 1, "named": True}


def test_a_bad_limit_falls_back_and_a_bad_argument_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_config.ENV_MAX_TRACE_EXPORT_BYTES, "-3")
    assert _config.reload().max_trace_export_bytes == _config.DEFAULT_MAX_TRACE_EXPORT_BYTES
    with pytest.raises(ValueError, match="max_trace_export_bytes"):
        ragtrace.configure(max_trace_export_bytes=0)
