"""GenAI content log events (OTLP logs, protobuf or OTLP/JSON) become spans under the
operation span they describe, read by the GenAI reader."""

from __future__ import annotations

import base64
import gzip
import json

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2

from ragtrace_consumers.intake.signal_forwarder import decode_log_events
from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.readers import to_rag_trace
from ragtrace_consumers.readers.genai_logs import EVENT_SPAN_ID

TRACE = "0af7651916cd43dd8448eb211c80319c"
CHAT = "b7ad6b7169203331"


def _b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode()


def _request() -> logs_service_pb2.ExportLogsServiceRequest:
    return json_format.ParseDict(
        {
            "resourceLogs": [
                {
                    "resource": {
                        "attributes": [{"key": "service.name", "value": {"stringValue": "bot"}}]
                    },
                    "scopeLogs": [
                        {
                            "scope": {"name": "opentelemetry.instrumentation.openai_v2"},
                            "logRecords": [
                                {
                                    "timeUnixNano": "5",
                                    "eventName": "gen_ai.client.inference.operation.details",
                                    "traceId": _b64(TRACE),
                                    "spanId": _b64(CHAT),
                                    "attributes": [
                                        {
                                            "key": "gen_ai.operation.name",
                                            "value": {"stringValue": "chat"},
                                        },
                                        {
                                            "key": "gen_ai.response.id",
                                            "value": {"stringValue": "chatcmpl-1"},
                                        },
                                        {
                                            "key": "gen_ai.output.messages",
                                            "value": {
                                                "arrayValue": {
                                                    "values": [
                                                        {
                                                            "kvlistValue": {
                                                                "values": [
                                                                    {
                                                                        "key": "role",
                                                                        "value": {
                                                                            "stringValue": "assistant"
                                                                        },
                                                                    },
                                                                    {
                                                                        "key": "parts",
                                                                        "value": {
                                                                            "arrayValue": {
                                                                                "values": [
                                                                                    {
                                                                                        "kvlistValue": {
                                                                                            "values": [
                                                                                                {
                                                                                                    "key": "type",
                                                                                                    "value": {
                                                                                                        "stringValue": "text"
                                                                                                    },
                                                                                                },
                                                                                                {
                                                                                                    "key": "content",
                                                                                                    "value": {
                                                                                                        "stringValue": "It is 90 days."
                                                                                                    },
                                                                                                },
                                                                                            ]
                                                                                        }
                                                                                    }
                                                                                ]
                                                                            }
                                                                        },
                                                                    },
                                                                ]
                                                            }
                                                        }
                                                    ]
                                                }
                                            },
                                        },
                                    ],
                                },
                                {
                                    "timeUnixNano": "6",
                                    "eventName": "other.event",
                                    "traceId": _b64(TRACE),
                                    "spanId": _b64(CHAT),
                                },
                            ],
                        }
                    ],
                }
            ]
        },
        logs_service_pb2.ExportLogsServiceRequest(),
        ignore_unknown_fields=True,
    )


def _json_with_hex_ids() -> bytes:
    document = json_format.MessageToDict(_request())
    for rl in document["resourceLogs"]:
        for sl in rl["scopeLogs"]:
            for r in sl["logRecords"]:
                r["traceId"], r["spanId"] = TRACE, CHAT
    return json.dumps(document).encode()


def test_protobuf_gzip_and_json_log_events_give_the_same_span() -> None:
    pb = _request().SerializeToString()
    got = [
        decode_log_events("application/x-protobuf", "", pb),
        decode_log_events("application/x-protobuf", "gzip", gzip.compress(pb)),
        decode_log_events("application/json", "", _json_with_hex_ids()),
    ]
    assert got[0] == got[1] == got[2]
    (span,) = got[0]
    assert (span.trace_id, span.parent_span_id, span.service) == (TRACE, CHAT, "bot")
    assert span.attributes[EVENT_SPAN_ID] == CHAT
    rag = to_rag_trace([span])
    assert rag is not None
    assert (rag.answer, rag.generation_span_id, rag.response_id) == (
        "It is 90 days.",
        CHAT,
        "chatcmpl-1",
    )


def test_an_undecodable_logs_request_gives_nothing() -> None:
    assert decode_log_events("application/x-protobuf", "", b"\xff\x00junk") == []


def _event(name: str, at: int, body: dict[str, object]) -> dict[str, object]:
    def value(v: object) -> dict[str, object]:
        if isinstance(v, dict):
            return {
                "kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}
            }
        return {"stringValue": str(v)}

    return {
        "timeUnixNano": str(at),
        "eventName": name,
        "traceId": _b64(TRACE),
        "spanId": _b64(CHAT),
        "body": value(body),
    }


CONTEXT = "Context:\n[doc-audit] Audit logs are kept for 90 days."
ANSWER = "Audit logs are kept for 90 days."


def older_input_events() -> list[SpanRecord]:
    """``gen_ai.system.message``, ``gen_ai.tool.message`` and ``gen_ai.choice`` of one chat
    call, as the log events' spans: the system context, the tool's documents and the answer."""
    tool_docs = json.dumps([{"id": "doc-audit", "text": ANSWER}])
    request = json_format.ParseDict(
        {
            "resourceLogs": [
                {
                    "scopeLogs": [
                        {
                            "scope": {"name": "opentelemetry.instrumentation.openai_v2"},
                            "logRecords": [
                                _event("gen_ai.system.message", 1, {"content": CONTEXT}),
                                _event(
                                    "gen_ai.tool.message", 2, {"content": tool_docs, "id": "call_1"}
                                ),
                                _event("gen_ai.choice", 3, {"message": {"content": ANSWER}}),
                            ],
                        }
                    ]
                }
            ]
        },
        logs_service_pb2.ExportLogsServiceRequest(),
    )
    return decode_log_events("application/x-protobuf", "", request.SerializeToString())


def test_older_input_events_give_their_generation_its_instructions_and_tool_results() -> None:
    """``gen_ai.system.message`` and ``gen_ai.tool.message`` (the conventions before the
    structured messages): the system context and the tool's documents the model was given,
    joined to the generation its ``gen_ai.choice`` event answers for."""
    spans = older_input_events()
    assert len(spans) == 3 and {s.attributes[EVENT_SPAN_ID] for s in spans} == {CHAT}
    rag = to_rag_trace(spans)
    assert rag is not None and rag.answer == ANSWER
    assert [(c.id, c.text) for c in rag.context] == [
        ("doc-audit", ANSWER),
        ("instructions.0", CONTEXT),
    ]
    assert rag.context_sources == ("tool_result", "system_instructions")
