"""Decode OTLP trace payloads (protobuf from Kafka, OTLP/JSON from the embedded receiver).

A Kafka message value is one serialized ``ExportTraceServiceRequest`` (the collector's kafka
exporter, ``encoding: otlp_proto``). Anything that cannot be turned into :class:`SpanRecord` values
raises :class:`DecodeError` whose ``reason`` is one of a small fixed set (it becomes a metric
attribute and a dead-letter header) and whose ``detail`` says exactly what and where, e.g.
``resource_spans[0].scope_spans[1].spans[3].trace_id: 8 bytes, expected 16``.

A request with zero spans decodes to ``[]``; a message is rejected as a whole when any span in it
is malformed, so a dead-lettered message can be replayed unchanged once the producer is fixed.

An :class:`Admission` (the :class:`~ragtrace_consumers.intake.admission.EarlySampler`) passed to
:func:`decode_request` decides per trace, on the parsed protobuf, before any
:class:`SpanRecord` is built: the spans of a dropped trace cost only the parse (their span IDs
are not validated; their trace ID is).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Mapping
from typing import Any, cast

from google.protobuf import json_format
from google.protobuf.message import DecodeError as _ProtobufDecodeError
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from ragtrace_consumers.errors import (
    REASON_EMPTY,
    REASON_JSON,
    REASON_JSON_SCHEMA,
    REASON_PARENT_ID,
    REASON_PROTOBUF,
    REASON_SPAN_ID,
    REASON_TRACE_ID,
    DecodeError,
)
from ragtrace_consumers.model import Admission, AttributeValue, SpanRecord

__all__ = [
    "decode_json_request",
    "decode_request",
    "spans_from_request",
]


def decode_request(payload: bytes, admission: Admission | None = None) -> list[SpanRecord]:
    """Spans of one serialized ``ExportTraceServiceRequest``, in payload order; with
    ``admission``, only those of the traces it admits."""
    if not payload:
        raise DecodeError(REASON_EMPTY, "the message has no value")
    request = trace_service_pb2.ExportTraceServiceRequest()
    try:
        request.ParseFromString(bytes(payload))
    except (_ProtobufDecodeError, RuntimeError, ValueError) as exc:
        raise DecodeError(
            REASON_PROTOBUF, f"not an ExportTraceServiceRequest ({len(payload)} bytes): {exc}"
        ) from None
    if not request.resource_spans:
        # A real request with no resource_spans serializes to zero bytes: these bytes are
        # something else that happened to parse as unknown fields.
        raise DecodeError(
            REASON_PROTOBUF,
            f"{len(payload)} bytes parsed to no resource_spans (not an ExportTraceServiceRequest)",
        )
    return spans_from_request(request, admission)


def decode_json_request(payload: bytes, admission: Admission | None = None) -> list[SpanRecord]:
    """Spans of one OTLP/JSON ``ExportTraceServiceRequest``.

    Per the OTLP/JSON encoding, trace and span IDs are hex strings (base64, the generic protobuf
    JSON mapping, is accepted too), 64-bit integers may be strings, enums may be numbers, and both
    lowerCamelCase and snake_case field names are accepted. Unknown fields are ignored. With
    ``admission``, only the spans of the traces it admits (as :func:`decode_request`).
    """
    if not payload or not payload.strip():
        raise DecodeError(REASON_EMPTY, "the request body is empty")
    try:
        document = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DecodeError(REASON_JSON, f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise DecodeError(
            REASON_JSON_SCHEMA, f"top level is {type(document).__name__}, expected an object"
        )
    _ids_to_base64(document)
    request = trace_service_pb2.ExportTraceServiceRequest()
    try:
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise DecodeError(REASON_JSON_SCHEMA, str(exc)) from None
    return spans_from_request(request, admission)


def spans_from_request(
    request: trace_service_pb2.ExportTraceServiceRequest, admission: Admission | None = None
) -> list[SpanRecord]:
    """Turn a parsed request into :class:`SpanRecord` values (of the traces ``admission``
    admits, when given); bad IDs raise :class:`DecodeError`."""
    keep = None if admission is None else _admitted(request, admission)
    if keep is not None and not keep:
        return []  # every trace dropped at decode: no span to build
    records: list[SpanRecord] = []
    for ri, resource_spans in enumerate(request.resource_spans):
        service = _service(resource_spans)
        for si, scope_spans in enumerate(resource_spans.scope_spans):
            scope = scope_spans.scope.name
            version = scope_spans.scope.version
            for pi, span in enumerate(scope_spans.spans):
                if keep is not None and span.trace_id not in keep:
                    continue
                where = f"resource_spans[{ri}].scope_spans[{si}].spans[{pi}]"
                records.append(_record(span, scope, service, where, version))
    return records


def _service(resource_spans: trace_pb2.ResourceSpans) -> str:
    service = "unknown_service"
    for kv in resource_spans.resource.attributes:
        if kv.key == "service.name" and kv.value.WhichOneof("value") == "string_value":
            service = kv.value.string_value or service
    return service


def _admitted(
    request: trace_service_pb2.ExportTraceServiceRequest, admission: Admission
) -> set[bytes]:
    """The raw trace IDs of ``request`` that ``admission`` keeps (invalid IDs are kept, so the
    full decode rejects the message)."""
    traces: dict[bytes, tuple[str, list[trace_pb2.Span]]] = {}
    for resource_spans in request.resource_spans:
        service = _service(resource_spans)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                raw = span.trace_id
                entry = traces.get(raw)
                if entry is None:
                    traces[raw] = (service, [span])
                else:
                    entry[1].append(span)
    interest = admission.interest
    keep: set[bytes] = set()
    for raw, (service, spans) in traces.items():
        if (
            len(raw) != 16
            or not any(raw)
            or admission.admit(raw.hex(), service, functools.partial(_facts, spans, interest))
        ):
            keep.add(raw)
    admission.maybe_flush()
    return keep


def _facts(spans: list[trace_pb2.Span], interest: frozenset[str]) -> dict[str, str]:
    """The first value of each ``interest`` key among ``spans``' attributes, as a string."""
    out: dict[str, str] = {}
    for span in spans:
        for kv in span.attributes:
            key = kv.key
            if key in interest and key not in out:
                value = _attribute(kv.value)
                if value is not None:
                    out[key] = _as_str(value)
    return out


def _as_str(value: AttributeValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(_as_str(v) for v in value)
    return str(value)


def _record(
    span: trace_pb2.Span, scope: str, service: str, where: str, scope_version: str = ""
) -> SpanRecord:
    trace_id = _hex_id(span.trace_id, 16, REASON_TRACE_ID, f"{where}.trace_id")
    span_id = _hex_id(span.span_id, 8, REASON_SPAN_ID, f"{where}.span_id")
    parent: str | None = None
    if span.parent_span_id and any(span.parent_span_id):
        parent = _hex_id(span.parent_span_id, 8, REASON_PARENT_ID, f"{where}.parent_span_id")
    attributes: dict[str, AttributeValue] = {}
    for kv in span.attributes:
        value = _attribute(kv.value)
        if value is not None:
            attributes[kv.key] = value
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=span.name,
        scope=scope,
        service=service,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        attributes=attributes,
        scope_version=scope_version,
        status_error=span.status.code == trace_pb2.Status.STATUS_CODE_ERROR,
    )


def _hex_id(raw: bytes, size: int, reason: str, where: str) -> str:
    if len(raw) != size:
        raise DecodeError(reason, f"{where}: {len(raw)} bytes, expected {size}")
    if not any(raw):
        raise DecodeError(reason, f"{where}: all zero (invalid ID)")
    return raw.hex()


def _attribute(value: common_pb2.AnyValue) -> AttributeValue | None:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        if any(v.WhichOneof("value") in _NESTED for v in value.array_value.values):
            return _json(value)  # e.g. structured gen_ai.retrieval.documents: a list of maps
        items = [_scalar(v) for v in value.array_value.values]
        present = [i for i in items if i is not None]
        types = {type(i) for i in present}
        if len(types) <= 1:  # one element type: a homogeneous sequence, as OTel allows
            return cast(AttributeValue, tuple(present))
        return tuple(str(i) for i in present)
    return _scalar(value)


def _scalar(value: common_pb2.AnyValue) -> str | bool | int | float | None:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        return value.double_value
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    if kind in _NESTED:
        return _json(value)
    return None


_NESTED = ("array_value", "kvlist_value")


def _json(value: common_pb2.AnyValue) -> str:
    """A nested value (map, list of maps, …) has no place in a flat attribute: it is kept as the
    JSON of its plain form (maps as objects, arrays as lists), which readers parse like any
    JSON-string attribute."""
    return json.dumps(_plain(value), ensure_ascii=False, sort_keys=True)


def _plain(value: common_pb2.AnyValue) -> object:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_plain(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _plain(kv.value) for kv in value.kvlist_value.values}
    return _scalar(value)


_ID_FIELDS = {
    "traceId": 16,
    "trace_id": 16,
    "spanId": 8,
    "span_id": 8,
    "parentSpanId": 8,
    "parent_span_id": 8,
}
_ID_REASONS = {16: REASON_TRACE_ID, 8: REASON_SPAN_ID}


def _ids_to_base64(document: dict[str, Any]) -> None:
    """Rewrite hex IDs in place to the base64 the generic protobuf JSON parser expects."""
    for ri, rs in enumerate(_list(document, ("resourceSpans", "resource_spans"), "")):
        for si, ss in enumerate(_list(rs, ("scopeSpans", "scope_spans"), f"resourceSpans[{ri}]")):
            where_ss = f"resourceSpans[{ri}].scopeSpans[{si}]"
            for pi, span in enumerate(_list(ss, ("spans",), where_ss)):
                where = f"{where_ss}.spans[{pi}]"
                _convert_ids(span, where)
                for li, link in enumerate(_list(span, ("links",), where)):
                    _convert_ids(link, f"{where}.links[{li}]")


def _list(obj: object, keys: tuple[str, ...], where: str) -> list[Any]:
    if not isinstance(obj, Mapping):
        raise DecodeError(REASON_JSON_SCHEMA, f"{where or 'request'}: expected an object")
    for key in keys:
        if key in obj:
            value = obj[key]
            if value is None:
                return []
            if not isinstance(value, list):
                raise DecodeError(REASON_JSON_SCHEMA, f"{where}.{key}: expected a list")
            return value
    return []


def _convert_ids(obj: object, where: str) -> None:
    if not isinstance(obj, dict):
        raise DecodeError(REASON_JSON_SCHEMA, f"{where}: expected an object")
    for key, size in _ID_FIELDS.items():
        if key not in obj or obj[key] in (None, ""):
            continue
        raw = obj[key]
        reason = REASON_PARENT_ID if key.startswith("parent") else _ID_REASONS[size]
        if not isinstance(raw, str):
            raise DecodeError(reason, f"{where}.{key}: expected a hex string, got {raw!r}")
        decoded = _id_bytes(raw, size)
        if decoded is None:
            raise DecodeError(
                reason,
                f"{where}.{key}: {raw!r} is neither {2 * size} hex digits nor "
                f"base64 of {size} bytes",
            )
        obj[key] = base64.b64encode(decoded).decode("ascii")


def _id_bytes(raw: str, size: int) -> bytes | None:
    if len(raw) == 2 * size:
        try:
            return bytes.fromhex(raw)
        except ValueError:
            pass
    try:
        decoded = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        try:
            decoded = base64.urlsafe_b64decode(raw)
        except (binascii.Error, ValueError):
            return None
    return decoded if len(decoded) == size else None
