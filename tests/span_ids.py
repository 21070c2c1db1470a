"""A finished span's IDs as the hex strings the consumers use (the span must have them)."""

from __future__ import annotations

from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["parent_id_of", "span_id_of", "trace_id_of"]


def trace_id_of(span: ReadableSpan | trace_api.Span) -> str:
    context = span.get_span_context()
    assert context is not None, f"span {span!r} has no context"
    return format(context.trace_id, "032x")


def span_id_of(span: ReadableSpan | trace_api.Span) -> str:
    context = span.get_span_context()
    assert context is not None, f"span {span!r} has no context"
    return format(context.span_id, "016x")


def parent_id_of(span: ReadableSpan) -> str:
    assert span.parent is not None, f"span {span.name!r} has no parent"
    return format(span.parent.span_id, "016x")
