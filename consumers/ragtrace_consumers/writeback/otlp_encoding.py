"""Evaluation spans encoded straight into OTLP protobuf, without the SDK's span objects.

The write-back sink used to build an SDK ``ReadableSpan`` per evaluation span and let the OTLP
exporter re-walk it into protobuf: two object graphs per span and the exporter's generic
attribute encoder, the largest CPU cost of a write-back. :func:`evaluation_span_messages` builds
the protobuf ``Span`` messages from the scores directly; each is serialised once, on the thread
that scored it, and :func:`export_request` joins the serialised spans into the
``ExportTraceServiceRequest`` the SDK's exporter would have sent (gathering message objects into
one request would copy every span again, the costlier half). Same fields, same bytes (flags,
empty status, link to the evaluated span included): a unit test checks them against the SDK's
own encoder.

:class:`OtlpRequestExporter` ships such requests over OTLP/HTTP through the SDK's
``OTLPSpanExporter`` transport (its endpoint, headers, compression, TLS settings and retries), so
only the encoding changes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource as PbResource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, SpanFlags
from opentelemetry.sdk.resources import Resource

from ragtrace import __version__, semconv
from ragtrace_consumers.model import TraceScores
from ragtrace_consumers.writeback.span_content import (
    evaluation_attributes,
    evaluation_span_id,
    metric_spans,
)

__all__ = [
    "OtlpRequestExporter",
    "SpanMessageExporter",
    "encode_attributes",
    "evaluation_span_messages",
    "export_request",
]

_log = logging.getLogger(__name__)

# A remote parent (the evaluated span lives in the application's process), as the SDK marks it.
_REMOTE_PARENT = (
    SpanFlags.SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK | SpanFlags.SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
)
_INTERNAL = Span.SpanKind.SPAN_KIND_INTERNAL


class SpanMessageExporter(Protocol):
    """Where encoded evaluation spans go (each a serialised ``Span`` message): ``export``
    returns True once they were accepted."""

    def export(self, spans: Sequence[bytes]) -> bool: ...

    def shutdown(self) -> None: ...


def _set_value(target: AnyValue, value: Any) -> None:
    # bool before int: bool is an int subclass.
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, int):
        target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, bytes):
        target.bytes_value = value
    elif isinstance(value, Sequence):
        array = target.array_value
        for item in value:
            _set_value(array.values.add(), item)
    else:
        raise TypeError(f"unsupported attribute value {value!r}")


def encode_attributes(attributes: Mapping[str, Any], out: Any) -> None:
    """Append ``attributes`` to the repeated ``KeyValue`` field ``out`` (in order)."""
    for key, value in attributes.items():
        kv: KeyValue = out.add()
        kv.key = key
        _set_value(kv.value, value)


def evaluation_span_messages(
    scores: TraceScores,
    *,
    at_ns: int,
    recall_threshold: float | None = None,
    groundedness_threshold: float | None = None,
) -> list[Span]:
    """The summary span and one span per metric family, as the OTLP sink writes them
    (:meth:`~ragtrace_consumers.writeback.otlp_sink.OtlpScoreSink` documents the shape); every timestamp
    ``at_ns``."""
    trace = scores.trace
    trace_id = bytes.fromhex(trace.trace_id)
    summary = Span(
        trace_id=trace_id,
        span_id=bytes.fromhex(evaluation_span_id(trace.trace_id, scores.families)),
        parent_span_id=bytes.fromhex(trace.target_span_id),
        name=semconv.SPAN_EVALUATION,
        kind=_INTERNAL,
        start_time_unix_nano=at_ns,
        end_time_unix_nano=at_ns,
        flags=_REMOTE_PARENT,
    )
    encode_attributes(evaluation_attributes(scores), summary.attributes)
    summary.status.SetInParent()
    out = [summary]
    for m in metric_spans(
        scores, recall_threshold=recall_threshold, groundedness_threshold=groundedness_threshold
    ):
        parent = bytes.fromhex(m.parent_span_id)
        span = Span(
            trace_id=trace_id,
            span_id=bytes.fromhex(m.span_id),
            parent_span_id=parent,
            name=m.name,
            kind=_INTERNAL,
            start_time_unix_nano=at_ns,
            end_time_unix_nano=at_ns,
            flags=_REMOTE_PARENT,
        )
        encode_attributes(m.attributes, span.attributes)
        for name, attrs in m.events:
            event = span.events.add()
            event.name = name
            event.time_unix_nano = at_ns
            encode_attributes(attrs, event.attributes)
        link = span.links.add()
        link.trace_id = trace_id
        link.span_id = parent
        link.flags = _REMOTE_PARENT
        span.status.SetInParent()
        out.append(span)
    return out


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited field (wire type 2) of a protobuf message."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


# Field numbers of the OTLP messages joined by hand (opentelemetry/proto/trace/v1/trace.proto).
_REQUEST_RESOURCE_SPANS = 1
_RESOURCE_SPANS_SCOPE_SPANS = 2
_RESOURCE_SPANS_SCHEMA_URL = 3
_SCOPE_SPANS_SPANS = 2
_SCOPE_SPANS_SCHEMA_URL = 3


def export_request(
    spans: Sequence[bytes], resource: Resource, scope: str = semconv.EVALUATION_SCOPE
) -> bytes:
    """The serialised ``ExportTraceServiceRequest`` carrying ``spans`` (each a serialised
    ``Span``) under one resource and one instrumentation scope (name, version, schema URL),
    fields in the order protobuf itself writes them."""
    pb_resource = PbResource()
    encode_attributes(resource.attributes, pb_resource.attributes)
    head = ResourceSpans(resource=pb_resource).SerializePartialToString()
    scope_spans = ScopeSpans(
        scope=InstrumentationScope(name=scope, version=__version__)
    ).SerializePartialToString()
    scope_spans += b"".join(_field(_SCOPE_SPANS_SPANS, span) for span in spans)
    scope_spans += _field(_SCOPE_SPANS_SCHEMA_URL, semconv.SCHEMA_URL.encode())
    body = head + _field(_RESOURCE_SPANS_SCOPE_SPANS, scope_spans)
    if resource.schema_url:
        body += _field(_RESOURCE_SPANS_SCHEMA_URL, resource.schema_url.encode())
    return _field(_REQUEST_RESOURCE_SPANS, body)


class OtlpRequestExporter:
    """A :class:`SpanMessageExporter` over OTLP/HTTP: ``exporter`` is an ``OTLPSpanExporter``
    whose transport (endpoint, headers, compression, TLS, retries within its timeout) sends the
    request; its own span encoding is never used."""

    def __init__(self, exporter: Any, resource: Resource, *, max_request_bytes: int) -> None:
        self._exporter = exporter
        self._resource = resource
        self._max_request_bytes = max_request_bytes

    def export(self, spans: Sequence[bytes]) -> bool:
        data = export_request(spans, self._resource)
        if len(data) > self._max_request_bytes:
            _log.warning(
                "evaluation span request of %d bytes exceeds %d bytes; not sent",
                len(data),
                self._max_request_bytes,
            )
            return False
        # The exporter's HTTP client: the one hook the SDK offers for pre-encoded requests.
        return bool(self._exporter._client.export(data).success)

    def shutdown(self) -> None:
        self._exporter.shutdown()
