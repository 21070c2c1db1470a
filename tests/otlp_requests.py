"""OTLP trace export requests written by hand, for every suite (unit, e2e, soak, dialects).

One way to spell a request: :func:`otlp_span` builds a span (IDs as hex or as raw bytes, which
may be malformed on purpose), :func:`export_request` wraps spans in one resource carrying
``service.name`` and one instrumentation scope, :func:`records_request` turns the consumers'
``SpanRecord`` values back into the bytes the collector's Kafka exporter writes, and
:func:`otlp_json` gives a request's OTLP/JSON body. :func:`any_value` maps a Python value onto
the ``AnyValue`` the SDK's encoder writes for it (bool, int, float, str, a list as an array, a
mapping as a key-value list; anything else as its ``str``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
    KeyValueList,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from ragtrace_consumers.model import SpanRecord

__all__ = [
    "any_value",
    "export_request",
    "key_values",
    "otlp_json",
    "otlp_span",
    "records_request",
]


def any_value(value: object) -> AnyValue:
    """``value`` as the OTLP ``AnyValue`` the SDK's encoder writes for it."""
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, Mapping):
        return AnyValue(kvlist_value=KeyValueList(values=key_values(value)))
    if isinstance(value, (list, tuple)):
        return AnyValue(array_value=ArrayValue(values=[any_value(v) for v in value]))
    return AnyValue(string_value=str(value))


def key_values(attributes: Mapping[str, object]) -> list[KeyValue]:
    """Attributes as OTLP key-values, in their order."""
    return [KeyValue(key=k, value=any_value(v)) for k, v in attributes.items()]


def _id(value: str | bytes | None) -> bytes:
    if value is None:
        return b""
    return bytes.fromhex(value) if isinstance(value, str) else value


def otlp_span(
    trace_id: str | bytes,
    span_id: str | bytes,
    parent_span_id: str | bytes | None = None,
    name: str = "",
    times: tuple[int, int] = (0, 0),
    attributes: Mapping[str, object] | None = None,
    *,
    error: bool = False,
) -> Span:
    """One OTLP span; ``times`` is (start, end) in Unix nanoseconds. Hex IDs are decoded, bytes
    are taken as they are (a test may need bad ones)."""
    return Span(
        trace_id=_id(trace_id),
        span_id=_id(span_id),
        parent_span_id=_id(parent_span_id),
        name=name,
        start_time_unix_nano=times[0],
        end_time_unix_nano=times[1],
        attributes=key_values(attributes or {}),
        status=Status(code=Status.STATUS_CODE_ERROR) if error else None,
    )


def export_request(
    spans: Iterable[Span], *, service: str, scope: str = ""
) -> ExportTraceServiceRequest:
    """``spans`` in one resource (``service.name`` = ``service``) and one scope."""
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=key_values({"service.name": service})),
                scope_spans=[ScopeSpans(scope=InstrumentationScope(name=scope), spans=spans)],
            )
        ]
    )


def records_request(
    records: Sequence[SpanRecord], *, service: str | None = None, scope: str | None = None
) -> bytes:
    """The serialised request carrying ``records`` under one resource and scope (by default the
    first record's), as the collector's Kafka exporter writes them."""
    spans = []
    for r in records:
        ids, times = (r.trace_id, r.span_id, r.parent_span_id), (r.start_ns, r.end_ns)
        spans.append(otlp_span(*ids, r.name, times, r.attributes, error=r.status_error))
    first = records[0]
    return export_request(
        spans,
        service=first.service if service is None else service,
        scope=first.scope if scope is None else scope,
    ).SerializeToString()


def otlp_json(request: ExportTraceServiceRequest) -> bytes:
    """The OTLP/JSON body of ``request``: lowerCamelCase, int64 as strings, and IDs in hex (the
    protobuf JSON mapping would write base64)."""
    doc = json_format.MessageToDict(request)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(doc).encode()
