"""Structured ``gen_ai.retrieval.documents`` (an OTLP array of maps, the form the GenAI
conventions prefer on spans) read from real OTLP protobuf bytes exactly like the JSON-string
form."""

from __future__ import annotations

import json
from collections.abc import Mapping

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from ragtrace_consumers.intake.decode import decode_request
from ragtrace_consumers.model import Chunk
from ragtrace_consumers.readers import SpanReaders, to_rag_trace
from tests.otlp_requests import export_request, otlp_span

TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
DOCS = [
    {"id": "c-audit", "score": 0.91, "content": "Audit logs are kept for 90 days."},
    {"id": "c-sso", "score": 0.42, "content": "SSO is available on the Team plan."},
]


def _span(n: int, name: str, attrs: Mapping[str, object], parent: int | None = 1) -> Span:
    parent_id = None if parent is None else parent.to_bytes(8, "big")
    times = (1_700_000_000_000_000_000 + n, 1_700_000_000_100_000_000 + n)
    return otlp_span(TRACE, n.to_bytes(8, "big"), parent_id, name, times, attrs)


def _request(documents: object) -> bytes:
    retrieval = {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.retrieval.query.text": "How long are audit logs kept?",
        "gen_ai.retrieval.documents": documents,
    }
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "90 days."}]}]
        ),
    }
    spans = [
        _span(1, "rag", {}, parent=None),
        _span(2, "retrieval corpus", retrieval),
        _span(3, "chat gpt-test", chat),
    ]
    return export_request(spans, service="support-bot", scope="my.app").SerializeToString()


def test_structured_documents_are_read_from_otlp_bytes() -> None:
    spans = decode_request(_request(DOCS))
    (retrieval,) = [s for s in spans if s.name == "retrieval corpus"]
    # The array of maps arrives as the JSON of its plain form.
    assert json.loads(str(retrieval.attributes["gen_ai.retrieval.documents"])) == DOCS
    trace = to_rag_trace(spans)
    assert trace is not None
    assert trace.retrieved == (
        Chunk("c-audit", "Audit logs are kept for 90 days.", 0.91),
        Chunk("c-sso", "SSO is available on the Team plan.", 0.42),
    )
    assert trace.recall_na_reason is None
    assert trace.query == "How long are audit logs kept?"
    assert trace.answer == "90 days."
    assert trace.retrieval_span_id == f"{2:016x}"


def test_structured_and_json_string_documents_read_the_same() -> None:
    structured = to_rag_trace(decode_request(_request(DOCS)))
    as_string = to_rag_trace(decode_request(_request(json.dumps(DOCS))))
    assert structured == as_string


def test_a_map_attribute_is_plain_json() -> None:
    spans = decode_request(_request({"documents": DOCS}))
    (retrieval,) = [s for s in spans if s.name == "retrieval corpus"]
    assert json.loads(str(retrieval.attributes["gen_ai.retrieval.documents"])) == {
        "documents": DOCS
    }
    trace = to_rag_trace(spans)
    assert trace is not None and [c.id for c in trace.retrieved] == ["c-audit", "c-sso"]


def _pydantic_ai_chat(n: int, output: list[Mapping[str, object]], finish: str | None) -> Span:
    """A chat span as Pydantic AI 2.68 (``Agent`` with ``Instrumentation``) records it: the
    finish reasons an array, the output messages JSON with their own ``finish_reason``."""
    message: dict[str, object] = {"role": "assistant", "parts": output}
    attrs: dict[str, object] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.agent.name": "agent",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.system_instructions": json.dumps(
            [{"type": "text", "content": f"Answer from the context.\n\n{CONTEXT}"}]
        ),
        "gen_ai.response.model": "gpt-test",
        "gen_ai.response.id": f"chatcmpl-{n}",
    }
    if finish is not None:
        message["finish_reason"] = finish
        attrs["gen_ai.response.finish_reasons"] = [finish]
    attrs["gen_ai.output.messages"] = json.dumps([message])
    return _span(n, "chat gpt-test", attrs)


CONTEXT = "[c-audit] Audit logs are kept for 90 days."
_CALL = {
    "type": "tool_call",
    "id": "call_0",
    "name": "search_docs",
    "arguments": json.dumps({"query": "audit log retention"}),
}


def test_a_chat_span_that_asked_for_tools_continues_with_no_answer() -> None:
    """Pydantic AI's tool-call turn (finish reason ``tool_call``) continues; so does a call
    whose finish reason says so beside a text preamble (Anthropic's ``tool_use``), the AI SDK
    7's ``tool-calls``, and one whose output is tool calls only with no finish reason; the
    answering call does not, nor text with no finish reason."""
    text = {"type": "text", "content": "90 days."}
    spans = [
        _pydantic_ai_chat(2, [_CALL], "tool_call"),
        _pydantic_ai_chat(3, [{"type": "text", "content": "Let me search."}, _CALL], "tool_use"),
        _pydantic_ai_chat(4, [_CALL], "tool-calls"),
        _pydantic_ai_chat(5, [_CALL], None),
        _pydantic_ai_chat(6, [text], "stop"),
        _pydantic_ai_chat(7, [text], None),
    ]
    request = export_request(spans, service="agent", scope="pydantic-ai")
    records = decode_request(request.SerializeToString())
    readers = SpanReaders.build()
    got = [readers.read(r) for r in records]
    assert [(g.continues, g.answer, g.answer_problem) for g in got if g is not None] == [
        *[(True, None, None)] * 4,
        (False, "90 days.", None),
        (False, "90 days.", None),
    ]
    # Only an answer is judged against what the model was given.
    assert got[0] is not None and got[0].instructions == ()
    assert got[4] is not None and [c.text for c in got[4].instructions] == [CONTEXT]
