"""Shared helpers of the SDK tests: the in-memory exporter on the global provider, span lookups."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

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
