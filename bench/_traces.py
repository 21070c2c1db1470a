"""The benchmarks' synthetic RAG trace: three spans in an OTLP ``ExportTraceServiceRequest``.

Trace ``n`` is a pipeline root (OpenInference ``CHAIN``) over a retrieval span (three chunks,
each naming the retention of request ``n``) and a generation span whose answer is the first
chunk's text, so every trace has its own answer and context and costs one judge call. Every
``labelled_every``-th trace names a labelled question ``q-<n % labels>`` on its root. IDs are
random and the spans end now, so a trace is new to any store it reaches.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from ragtrace import semconv as sc

__all__ = ["TraceShape", "add_trace", "export_request"]


@dataclass(frozen=True)
class TraceShape:
    """What varies between the benchmarks' traces.

    ``pipeline``: the root's pipeline name; ``labelled_every``: one trace in this many names a
    labelled question, of ``labels`` questions; ``chunk_ids_every``: chunk IDs repeat after this
    many traces (``None``: every trace has its own).
    """

    pipeline: str
    labelled_every: int
    labels: int
    chunk_ids_every: int | None = None

    def __post_init__(self) -> None:
        if self.labelled_every < 1 or self.labels < 1:
            raise ValueError(f"labelled_every and labels must be >= 1: {self}")


def _kv(key: str, value: str) -> common_pb2.KeyValue:
    return common_pb2.KeyValue(key=key, value=common_pb2.AnyValue(string_value=value))


def add_trace(scope_spans: trace_pb2.ScopeSpans, n: int, shape: TraceShape) -> bytes:
    """Append trace ``n``'s three spans (retrieval, generation, root) to ``scope_spans``;
    returns its trace ID."""
    trace_id = os.urandom(16)
    root_id, retrieve_id, generate_id = (os.urandom(8) for _ in range(3))
    now = time.time_ns()
    chunk_n = n if shape.chunk_ids_every is None else n % shape.chunk_ids_every
    retrieval = [
        _kv(sc.OPENINFERENCE_SPAN_KIND, "RETRIEVER"),
        _kv(sc.INPUT_VALUE, f"How long are logs kept for tenant {n}?"),
    ]
    for i in range(3):
        text = f"Chunk {i} of request {n} says the retention is {n % 90} days."
        retrieval += [
            _kv(sc.retrieval_document_id(i), f"kb-{chunk_n}-{i}"),
            _kv(sc.retrieval_document_content(i), text),
        ]
    generation = [
        _kv(sc.OPENINFERENCE_SPAN_KIND, "LLM"),
        _kv(sc.OUTPUT_VALUE, f"Chunk 0 of request {n} says the retention is {n % 90} days."),
    ]
    root = [
        _kv(sc.OPENINFERENCE_SPAN_KIND, "CHAIN"),
        _kv(sc.RAGTRACE_PIPELINE_NAME, shape.pipeline),
    ]
    if n % shape.labelled_every == 0:
        root.append(_kv(sc.RAGTRACE_QUESTION_ID, f"q-{n % shape.labels}"))
    for span_id, parent, name, attributes in (
        (retrieve_id, root_id, "retrieve", retrieval),
        (generate_id, root_id, "generate", generation),
        (root_id, b"", "rag.pipeline", root),
    ):
        scope_spans.spans.append(
            trace_pb2.Span(
                trace_id=trace_id,
                span_id=span_id,
                parent_span_id=parent,
                name=name,
                start_time_unix_nano=now - 1000,
                end_time_unix_nano=now,
                attributes=attributes,
            )
        )
    return trace_id


def export_request(
    service: str, traces: Iterable[int], shape: TraceShape
) -> tuple[trace_service_pb2.ExportTraceServiceRequest, list[bytes]]:
    """One OTLP request from ``service`` holding the given traces (ragtrace's instrumentation
    scope), and their trace IDs in order."""
    request = trace_service_pb2.ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(_kv("service.name", service))
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = sc.INSTRUMENTATION_SCOPE
    trace_ids = [add_trace(scope_spans, n, shape) for n in traces]
    return request, trace_ids
