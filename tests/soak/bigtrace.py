"""The oversized trace of issue 23: a valid trace whose answer has 25,000 sentences (~1 MB).

Judged whole it would hold a replica for minutes; with the judge's bounds
(:mod:`ragtrace.evaluation.judges.bounds`) it gets a ``too_large`` result at once, and the
traces behind it are not held up.
"""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from ragtrace import semconv
from tests.e2e.chaos import trace_request

__all__ = ["SENTENCES", "big_trace_request"]

SENTENCES = 25_000


def big_trace_request(salt: int, sentences: int = SENTENCES) -> tuple[bytes, str]:
    """One complete RAG trace whose generation's answer has ``sentences`` sentences (about
    40 bytes each), as an ExportTraceServiceRequest; and its trace ID."""
    body, (trace_id,) = trace_request(1, 1, salt)
    req = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
    answer = " ".join(f"Workspace {salt} keeps fact number {n:05d}." for n in range(sentences))
    for span in req.resource_spans[0].scope_spans[0].spans:
        if span.name == semconv.SPAN_GENERATE:
            for kv in span.attributes:
                if kv.key == semconv.OUTPUT_VALUE:
                    kv.value.string_value = answer
    return req.SerializeToString(), trace_id
