"""decode_request / decode_json_request: real SDK spans through the OTLP encoders, and every
rejection reason with its exact detail."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Status, StatusCode

from ragtrace_consumers.errors import DECODE_REASONS as REASONS
from ragtrace_consumers.errors import DLQ_HEADER_DETAIL, DLQ_HEADER_REASON, DecodeError
from ragtrace_consumers.intake.decode import decode_json_request, decode_request
from ragtrace_consumers.model import AttributeValue, SpanRecord
from tests.otlp_requests import export_request, otlp_json, otlp_span
from tests.unit.consumers.ingestion_spans import payload, sdk_spans

T_HEX = "5b8efff798038103d269b633813fc60c"
S_HEX = "eee19b7ec3c1b174"
P_HEX = "eee19b7ec3c1b173"


RETRIEVE_ATTRIBUTES: dict[str, AttributeValue] = {
    "openinference.span.kind": "RETRIEVER",
    "input.value": "How long are audit logs kept?",
    "retrieval.documents.0.document.id": "c1",
    "retrieval.documents.0.document.score": 0.5,
    "ragtrace.retrieval.documents.count": 1,
    "ragtrace.content.captured": True,
    "ragtrace.truncated": ("a", "b"),
}


def _two_spans() -> list[ReadableSpan]:
    def build(tracer_for: Callable[[str], trace_api.Tracer]) -> None:
        tracer = tracer_for("ragtrace")
        with (
            tracer.start_as_current_span("rag.pipeline", attributes={"tenant": "acme"}),
            tracer.start_as_current_span("retrieve", attributes=RETRIEVE_ATTRIBUTES) as span,
        ):
            span.set_status(Status(StatusCode.ERROR, "boom"))

    return sdk_spans(build)


def _ns(timestamp: int | None) -> int:
    assert timestamp is not None
    return timestamp


def test_sdk_spans_round_trip_through_the_proto_encoder() -> None:
    spans = _two_spans()
    records = decode_request(payload(spans))
    by_name = {r.name: r for r in records}
    assert set(by_name) == {"rag.pipeline", "retrieve"}
    root, child = by_name["rag.pipeline"], by_name["retrieve"]
    sdk_root = next(s for s in spans if s.name == "rag.pipeline")
    sdk_child = next(s for s in spans if s.name == "retrieve")
    assert root == SpanRecord(
        trace_id=format(sdk_root.context.trace_id, "032x"),
        span_id=format(sdk_root.context.span_id, "016x"),
        parent_span_id=None,
        name="rag.pipeline",
        scope="ragtrace",
        service="support-bot",
        start_ns=_ns(sdk_root.start_time),
        end_ns=_ns(sdk_root.end_time),
        attributes={"tenant": "acme"},
        status_error=False,
    )
    assert child == SpanRecord(
        trace_id=root.trace_id,
        span_id=format(sdk_child.context.span_id, "016x"),
        parent_span_id=root.span_id,
        name="retrieve",
        scope="ragtrace",
        service="support-bot",
        start_ns=_ns(sdk_child.start_time),
        end_ns=_ns(sdk_child.end_time),
        attributes=RETRIEVE_ATTRIBUTES,
        status_error=True,
    )


def test_otlp_json_of_the_same_request_decodes_identically() -> None:
    spans = _two_spans()
    request = trace_service_pb2.ExportTraceServiceRequest()
    request.ParseFromString(payload(spans))
    from_json = decode_json_request(otlp_json(request))
    assert from_json == decode_request(payload(spans))


def _json_request(span: dict[str, Any]) -> bytes:
    return json.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {
                        "attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]
                    },
                    "scopeSpans": [
                        {
                            "scope": {"name": "openinference.instrumentation.langchain"},
                            "spans": [span],
                        }
                    ],
                }
            ]
        }
    ).encode()


def test_json_accepts_hex_base64_string_integers_and_snake_case() -> None:
    base = {
        "name": "retriever",
        "startTimeUnixNano": "1700000000000000000",
        "end_time_unix_nano": 1700000000500000000,
        "kind": 1,
        "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
            {"key": "k_int", "value": {"intValue": "7"}},
            {
                "key": "k_arr",
                "value": {"arrayValue": {"values": [{"intValue": "1"}, {"intValue": 2}]}},
            },
            {"key": "k_bytes", "value": {"bytesValue": base64.b64encode(b"\x01\x02").decode()}},
            {
                "key": "k_kv",
                "value": {"kvlistValue": {"values": [{"key": "a", "value": {"stringValue": "b"}}]}},
            },
            {"key": "k_empty", "value": {}},
        ],
        "status": {"code": "STATUS_CODE_ERROR"},
    }
    hex_ids = dict(base, traceId=T_HEX.upper(), spanId=S_HEX, parentSpanId=P_HEX)
    b64_ids = dict(
        base,
        trace_id=base64.b64encode(bytes.fromhex(T_HEX)).decode(),
        span_id=base64.b64encode(bytes.fromhex(S_HEX)).decode(),
        parent_span_id=base64.b64encode(bytes.fromhex(P_HEX)).decode(),
    )
    expected = [
        SpanRecord(
            trace_id=T_HEX,
            span_id=S_HEX,
            parent_span_id=P_HEX,
            name="retriever",
            scope="openinference.instrumentation.langchain",
            service="svc",
            start_ns=1700000000000000000,
            end_ns=1700000000500000000,
            attributes={
                "openinference.span.kind": "RETRIEVER",
                "k_int": 7,
                "k_arr": (1, 2),
                "k_bytes": "AQI=",
                "k_kv": '{"a": "b"}',
            },
            status_error=True,
        )
    ]
    assert decode_json_request(_json_request(hex_ids)) == expected
    assert decode_json_request(_json_request(b64_ids)) == expected


def test_missing_service_name_and_empty_parent_mean_unknown_service_and_root() -> None:
    span = {"traceId": T_HEX, "spanId": S_HEX, "parentSpanId": "", "name": "x"}
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    [record] = decode_json_request(body)
    assert (record.service, record.parent_span_id, record.scope) == ("unknown_service", None, "")


def test_a_request_without_spans_decodes_to_nothing() -> None:
    assert decode_json_request(b"{}") == []
    assert decode_json_request(b'{"resourceSpans": []}') == []


def _raises(reason: str, detail: str, call, data: bytes) -> DecodeError:  # type: ignore[no-untyped-def]
    with pytest.raises(DecodeError) as info:
        call(data)
    assert (info.value.reason, info.value.detail) == (reason, detail)
    assert str(info.value) == f"{reason}: {detail}"
    return info.value


def test_empty_payloads() -> None:
    _raises("empty_payload", "the message has no value", decode_request, b"")
    _raises("empty_payload", "the request body is empty", decode_json_request, b"  \n")


def test_garbage_protobuf() -> None:
    _raises(
        "protobuf_parse_error",
        "not an ExportTraceServiceRequest (3 bytes): Error parsing message with type "
        "'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest': "
        "Wire format was corrupt",
        decode_request,
        b"\xff\xff\xff",
    )


def test_bytes_that_parse_to_no_resource_spans_are_rejected() -> None:
    # Field 5, varint 1: valid protobuf, but nothing an ExportTraceServiceRequest holds.
    _raises(
        "protobuf_parse_error",
        "2 bytes parsed to no resource_spans (not an ExportTraceServiceRequest)",
        decode_request,
        b"\x28\x01",
    )


def _proto_with(trace_id: bytes, span_id: bytes, parent: bytes = b"") -> bytes:
    good = otlp_span(T_HEX, S_HEX)
    return export_request(
        [good, otlp_span(trace_id, span_id, parent)], service="s"
    ).SerializeToString()


@pytest.mark.parametrize(
    ("ids", "reason", "detail"),
    [
        (
            (b"\x01" * 8, b"\x01" * 8),
            "bad_trace_id",
            "resource_spans[0].scope_spans[0].spans[1].trace_id: 8 bytes, expected 16",
        ),
        (
            (b"\x00" * 16, b"\x01" * 8),
            "bad_trace_id",
            "resource_spans[0].scope_spans[0].spans[1].trace_id: all zero (invalid ID)",
        ),
        (
            (b"\x01" * 16, b""),
            "bad_span_id",
            "resource_spans[0].scope_spans[0].spans[1].span_id: 0 bytes, expected 8",
        ),
        (
            (b"\x01" * 16, b"\x01" * 8, b"\x01" * 4),
            "bad_parent_span_id",
            "resource_spans[0].scope_spans[0].spans[1].parent_span_id: 4 bytes, expected 8",
        ),
    ],
)
def test_bad_ids_reject_the_whole_message_naming_the_span(ids, reason, detail) -> None:  # type: ignore[no-untyped-def]
    _raises(reason, detail, decode_request, _proto_with(*ids))


def test_an_all_zero_parent_is_a_root() -> None:
    [_, span] = decode_request(_proto_with(b"\x01" * 16, b"\x01" * 8, b"\x00" * 8))
    assert span.parent_span_id is None


def test_json_rejections() -> None:
    _raises(
        "json_parse_error",
        "not JSON: Expecting value: line 1 column 1 (char 0)",
        decode_json_request,
        b"nope",
    )
    _raises(
        "json_schema_error", "top level is list, expected an object", decode_json_request, b"[]"
    )
    _raises(
        "json_schema_error",
        "resourceSpans[0].scopeSpans: expected a list",
        decode_json_request,
        b'{"resourceSpans": [{"scopeSpans": 3}]}',
    )
    _raises(
        "bad_trace_id",
        "resourceSpans[0].scopeSpans[0].spans[0].traceId: 'abc' is neither 32 hex digits "
        "nor base64 of 16 bytes",
        decode_json_request,
        _json_request({"traceId": "abc", "spanId": S_HEX}),
    )
    _raises(
        "bad_span_id",
        "resourceSpans[0].scopeSpans[0].spans[0].spanId: expected a hex string, got 5",
        decode_json_request,
        _json_request({"traceId": T_HEX, "spanId": 5}),
    )
    _raises(
        "bad_parent_span_id",
        "resourceSpans[0].scopeSpans[0].spans[0].parentSpanId: 'zz' is neither 16 hex "
        "digits nor base64 of 8 bytes",
        decode_json_request,
        _json_request({"traceId": T_HEX, "spanId": S_HEX, "parentSpanId": "zz"}),
    )
    with pytest.raises(DecodeError) as info:
        decode_json_request(_json_request({"traceId": T_HEX, "spanId": S_HEX, "name": 5}))
    # The detail is protobuf's own message, naming the field path.
    assert info.value.reason == "json_schema_error"
    assert info.value.detail.startswith(
        "Failed to parse resourceSpans field: Failed to parse scopeSpans field: Failed to "
        "parse spans field: Failed to parse name field: "
    )


def test_dlq_headers_and_reason_set() -> None:
    err = DecodeError("bad_span_id", "x" * 5000)
    assert len(err.detail) == 1000
    assert err.headers() == [(DLQ_HEADER_REASON, b"bad_span_id"), (DLQ_HEADER_DETAIL, b"x" * 1000)]
    assert {
        "empty_payload",
        "protobuf_parse_error",
        "json_parse_error",
        "json_schema_error",
        "bad_trace_id",
        "bad_span_id",
        "bad_parent_span_id",
    } == REASONS
    with pytest.raises(ValueError, match="unknown decode error reason 'other'"):
        DecodeError("other")


def test_a_spans_scope_version_is_decoded_and_stored() -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragtrace_consumers.stores.span_encoding import decode_span, encode_span

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("acme.agents", "0.4.1").start_as_current_span("run"):
        pass
    with provider.get_tracer("bare").start_as_current_span("op"):
        pass
    raw = encode_spans(exporter.get_finished_spans()).SerializeToString()
    versioned, bare = decode_request(raw)
    assert (versioned.scope, versioned.scope_version) == ("acme.agents", "0.4.1")
    assert (bare.scope, bare.scope_version) == ("bare", "")
    assert decode_span(encode_span(versioned)) == versioned
    # A span stored before the version was kept (ten fields) reads back without one.
    legacy = json.dumps(json.loads(encode_span(versioned))[:10])
    assert decode_span(legacy).scope_version == ""
