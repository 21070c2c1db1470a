"""GenAI content sent as log events: turned into spans the GenAI reader reads.

The GenAI conventions let an instrumentation put message content in events (OTLP log records)
instead of span attributes — opentelemetry-instrumentation-openai-v2's ``event_only`` mode
sends a ``gen_ai.client.inference.operation.details`` record with structured
``gen_ai.output.messages``; the older conventions a ``gen_ai.choice`` record whose body holds
the message. Each such record with a span context becomes a zero-length span in its trace,
child of the operation span it describes (ID derived from that span and the record), carrying
``gen_ai.operation.name``, the output messages as JSON and :data:`EVENT_SPAN_ID` naming the
operation span, so the evaluation of the answer is written under the operation, not the event.

The older conventions' input events — ``gen_ai.system.message`` and ``gen_ai.tool.message``
(body ``{"content", "id"?}``) — become such spans too, without an operation name: their one
message (as ``gen_ai.input.messages``) is what the operation's generation was given (its
instructions, a tool's result), which assembly joins to that generation.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ragtrace_consumers.model import SpanRecord

__all__ = ["EVENT_NAMES", "EVENT_SPAN_ID", "spans_from_logs"]

EVENT_SPAN_ID = "ragtrace.log_event.span_id"
"""On a span made from a log event: the operation span the event belongs to."""
DETAILS = "gen_ai.client.inference.operation.details"
CHOICE = "gen_ai.choice"
INPUT_EVENT_ROLES = {"gen_ai.system.message": "system", "gen_ai.tool.message": "tool"}
EVENT_NAMES = frozenset({DETAILS, CHOICE, *INPUT_EVENT_ROLES})
_COPIED = (
    "gen_ai.system_instructions",
    "gen_ai.operation.name",
    "gen_ai.response.id",
    "gen_ai.response.model",
    "gen_ai.request.model",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
)


def _value(v: Any) -> object:
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def _scalar(value: object) -> str | bool | int | float:
    if isinstance(value, (str, bool, int, float)):
        return value
    return json.dumps(value, ensure_ascii=False)


def _derived_id(span_id: str, record_index: int, name: str) -> str:
    digest = hashlib.sha256(f"{span_id}|{record_index}|{name}".encode()).digest()
    return f"{int.from_bytes(digest[:8], 'big') or 1:016x}"


def _input_message(role: str, body: object) -> dict[str, object] | None:
    """An input event's body as a message (None without content)."""
    content = body.get("content") if isinstance(body, dict) else None
    if content is None:
        return None
    message: dict[str, object] = {"role": role, "content": content}
    if isinstance(body, dict) and isinstance(body.get("id"), str):
        message["tool_call_id"] = body["id"]
    return message


def spans_from_logs(request: Any) -> list[SpanRecord]:
    """The GenAI content events of an ``ExportLogsServiceRequest`` as spans (others ignored)."""
    out: list[SpanRecord] = []
    for rl in request.resource_logs:
        service = (
            next(
                (
                    kv.value.string_value
                    for kv in rl.resource.attributes
                    if kv.key == "service.name"
                ),
                "",
            )
            or "unknown_service"
        )
        for sl in rl.scope_logs:
            for i, record in enumerate(sl.log_records):
                attrs = {kv.key: _value(kv.value) for kv in record.attributes}
                name = record.event_name or str(attrs.get("event.name", ""))
                if (
                    name not in EVENT_NAMES
                    or len(record.span_id) != 8
                    or len(record.trace_id) != 16
                ):
                    continue
                span_id = record.span_id.hex()
                out_attrs: dict[str, Any] = {
                    k: _scalar(attrs[k]) for k in _COPIED if attrs.get(k) is not None
                }
                if name == CHOICE:
                    body = _value(record.body)
                    message = body.get("message") if isinstance(body, dict) else None
                    content = message.get("content") if isinstance(message, dict) else None
                    if not isinstance(content, str):
                        continue
                    out_attrs["gen_ai.output.messages"] = json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": content}]}]
                    )
                role = INPUT_EVENT_ROLES.get(name)
                if role is not None:
                    message = _input_message(role, _value(record.body))
                    if message is None:
                        continue
                    out_attrs = {"gen_ai.input.messages": json.dumps([message])}
                elif "gen_ai.output.messages" not in out_attrs:
                    continue
                else:
                    out_attrs.setdefault("gen_ai.operation.name", "chat")
                out_attrs[EVENT_SPAN_ID] = span_id
                at = int(record.time_unix_nano or record.observed_time_unix_nano)
                out.append(
                    SpanRecord(
                        trace_id=record.trace_id.hex(),
                        span_id=_derived_id(span_id, i, name),
                        parent_span_id=span_id,
                        name=name,
                        scope=sl.scope.name or "unknown",
                        service=service,
                        start_ns=at,
                        end_ns=at,
                        attributes=out_attrs,
                    )
                )
    return out
