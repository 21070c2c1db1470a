"""Builders for the ingestion unit tests: real SDK spans encoded by the OTLP proto encoder, and
SpanRecord values written by hand (OpenInference-shaped and ragtrace-shaped)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry import trace as trace_api
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import semconv
from ragtrace_consumers.model import AttributeValue, SpanRecord

TRACE = "0af7651916cd43dd8448eb211c80319c"
ROOT = "b7ad6b7169203331"
RET = "00f067aa0ba902b7"
GEN = "53995c3f42cd8ad8"


def sdk_spans(
    build: Callable[[Callable[[str], trace_api.Tracer]], None], service: str = "support-bot"
) -> list[ReadableSpan]:
    """Run ``build(tracer_for_scope)`` on a private SDK provider; return the finished spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    build(lambda scope: provider.get_tracer(scope))
    provider.shutdown()
    return list(exporter.get_finished_spans())


def payload(spans: Sequence[ReadableSpan]) -> bytes:
    """What the collector's kafka exporter puts in one message."""
    return encode_spans(spans).SerializeToString()


def record(
    span_id: str,
    *,
    parent: str | None = None,
    name: str = "span",
    scope: str = semconv.INSTRUMENTATION_SCOPE,
    service: str = "support-bot",
    start: int = 1_000,
    end: int = 2_000,
    trace_id: str = TRACE,
    attributes: Mapping[str, AttributeValue] | None = None,
) -> SpanRecord:
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        scope=scope,
        service=service,
        start_ns=start,
        end_ns=end,
        attributes=dict(attributes or {}),
    )


def documents(prefix: str, docs: Sequence[tuple[str, str | None, float | None]]) -> dict[str, Any]:
    """``{prefix}.{i}.document.id/content/score`` attributes for (id, text, score) triples."""
    out: dict[str, Any] = {}
    for i, (doc_id, text, score) in enumerate(docs):
        out[f"{prefix}.{i}.document.id"] = doc_id
        if text is not None:
            out[f"{prefix}.{i}.document.content"] = text
        if score is not None:
            out[f"{prefix}.{i}.document.score"] = score
    return out
