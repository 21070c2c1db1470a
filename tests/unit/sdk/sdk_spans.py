"""Shared helpers of the SDK tests: the in-memory exporter on the global provider, span lookups."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import semconv as sc
from ragtrace.normalize import question_sha256

EXPORTER = InMemorySpanExporter()


def _install() -> None:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
        provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider), "tests need an SDK tracer provider"
    provider.add_span_processor(SimpleSpanProcessor(EXPORTER))


_install()


def finished() -> list[ReadableSpan]:
    return list(EXPORTER.get_finished_spans())


def only_span() -> ReadableSpan:
    spans = finished()
    assert len(spans) == 1, [s.name for s in spans]
    return spans[0]


def by_name(name: str) -> ReadableSpan:
    matches = [s for s in finished() if s.name == name]
    assert len(matches) == 1, [s.name for s in finished()]
    return matches[0]


def attrs(span: ReadableSpan) -> dict[str, Any]:
    """The span's attributes as a plain dict (sequences as tuples)."""
    return {
        k: tuple(v) if isinstance(v, (list, tuple)) else v
        for k, v in (span.attributes or {}).items()
    }


def assert_attributes(span: ReadableSpan, expected: Mapping[str, Any]) -> None:
    """Every attribute is expected, with exactly this value, and none is missing."""
    got = attrs(span)
    for key, value in expected.items():
        assert key in got, f"missing {key}"
        assert got.pop(key) == value, key
    assert got == {}, f"unexpected attributes: {got}"


def retrieval_query(query: str) -> dict[str, Any]:
    """The kind and query attributes the decorator writes on a retrieval span that captured
    ``query`` (the rest of its attributes are each test's own)."""
    return {
        sc.OPENINFERENCE_SPAN_KIND: "RETRIEVER",
        sc.GEN_AI_OPERATION_NAME: "retrieval",
        sc.INPUT_VALUE: query,
        sc.GEN_AI_RETRIEVAL_QUERY_TEXT: query,
        sc.RAGTRACE_QUERY_SHA256: question_sha256(query),
        sc.RAGTRACE_CONTENT_CAPTURED: True,
    }
