"""What every dialect app shares: an OTLP/HTTP exporter to the evaluator under test and a
record of which trace each question became.

Each app runs in its own process (instrumentors patch frameworks process-wide) and prints one
JSON list: ``[{"question": ..., "trace_id": ...}, ...]``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


class TraceIds(SpanProcessor):
    """Remembers the trace ID of every span that ends, so a question maps to its trace."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.seen: list[str] = []

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        with self._lock:
            self.seen.append(f"{span.context.trace_id:032x}")


def exporter(endpoint: str) -> OTLPSpanExporter:
    return OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")


def provider(endpoint: str, service: str) -> tuple[TracerProvider, TraceIds]:
    ids = TraceIds()
    tp = TracerProvider(resource=Resource.create({"service.name": service}))
    tp.add_span_processor(ids)
    tp.add_span_processor(SimpleSpanProcessor(exporter(endpoint)))
    return tp, ids


def ask_all(
    questions: Iterable[str],
    ask: Callable[[str], object],
    ids: TraceIds,
    flush: Callable[[], object],
) -> None:
    """Ask each question; print which trace each became (exactly one new trace each)."""
    out = []
    for q in questions:
        before = len(ids.seen)
        ask(q)
        flush()
        new = list(dict.fromkeys(ids.seen[before:]))
        assert len(new) == 1, (q, new)
        out.append({"question": q, "trace_id": new[0]})
    print(json.dumps(out))
