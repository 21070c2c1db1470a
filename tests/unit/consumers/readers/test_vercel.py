"""The Vercel AI SDK reader, on the spans ``ai`` 5 and 6 emit for ``generateText`` with a search
tool (attributes as captured from the real SDK by tests/dialects/node/vercel_app.mjs), and the
LangChain.js document IDs (OpenInference JS)."""

from __future__ import annotations

import json
from dataclasses import replace

from ragtrace_consumers.model import Chunk, SpanRecord
from ragtrace_consumers.readers import default_readers, to_rag_trace
from ragtrace_consumers.readers._reading import Role
from ragtrace_consumers.readers.chunks import chunk, is_location, metadata_id

TRACE = "0af7651916cd43dd8448eb211c80319c"
Q = "How long are audit logs kept?"
SYSTEM = "Answer from the search results only."
DOCS = [
    {"id": "doc-audit", "text": "Audit logs are kept for 90 days.", "score": 0.9},
    {"id": "doc-pricing", "text": "The Team plan costs 20 dollars per seat.", "score": 0.4},
]
ANSWER = "Audit logs are kept for 90 days."
ROOT, FIRST, TOOL, LAST = "1" * 16, "2" * 16, "3" * 16, "4" * 16


def span(span_id: str, parent: str | None, start: int, attrs: dict[str, str]) -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=parent,
        name=attrs["ai.operationId"],
        scope="ai",
        service="app",
        start_ns=start,
        end_ns=start + (100 if parent is None else 10),
        attributes={
            "operation.name": f"{attrs['ai.operationId']} support-bot",
            "ai.telemetry.functionId": "support-bot",
            "ai.telemetry.metadata.sessionId": "session-7",
            **attrs,
        },
    )


USER = {"role": "user", "content": [{"type": "text", "text": Q}]}
CALL = {
    "type": "tool-call",
    "toolCallId": "call_0",
    "toolName": "searchDocs",
    "input": {"query": Q},
}
RESULT = {
    "type": "tool-result",
    "toolCallId": "call_0",
    "toolName": "searchDocs",
    "output": {"type": "json", "value": DOCS},
}


def trace() -> list[SpanRecord]:
    return [
        span(
            ROOT,
            None,
            1,
            {
                "ai.operationId": "ai.generateText",
                "ai.model.id": "gpt-test",
                "ai.prompt": json.dumps({"system": SYSTEM, "prompt": Q}),
                "ai.response.text": ANSWER,
            },
        ),
        span(
            FIRST,
            ROOT,
            2,
            {
                "ai.operationId": "ai.generateText.doGenerate",
                "ai.model.id": "gpt-test",
                "ai.prompt.messages": json.dumps([{"role": "system", "content": SYSTEM}, USER]),
                "ai.response.id": "chatcmpl-1",
                "ai.response.model": "gpt-test",
            },
        ),
        span(
            TOOL,
            ROOT,
            20,
            {
                "ai.operationId": "ai.toolCall",
                "ai.toolCall.name": "searchDocs",
                "ai.toolCall.id": "call_0",
                "ai.toolCall.args": json.dumps({"query": "audit log retention"}),
                "ai.toolCall.result": json.dumps(DOCS),
            },
        ),
        span(
            LAST,
            ROOT,
            40,
            {
                "ai.operationId": "ai.generateText.doGenerate",
                "ai.model.id": "gpt-test",
                "ai.prompt.messages": json.dumps(
                    [
                        {"role": "system", "content": SYSTEM},
                        USER,
                        {"role": "assistant", "content": [CALL]},
                        {"role": "tool", "content": [RESULT]},
                    ]
                ),
                "ai.response.text": ANSWER,
                "ai.response.id": "chatcmpl-2",
                "ai.response.model": "gpt-test-2025",
            },
        ),
    ]


def test_each_span_is_read_for_its_role() -> None:
    root, first, tool, last = (default_readers().read(s) for s in trace())
    assert root is not None and (root.reader, root.role, root.query) == (
        "vercel_ai",
        Role.PIPELINE,
        Q,
    )
    assert tool is not None and (tool.role, tool.query, tool.tool) == (
        Role.RETRIEVAL,
        "audit log retention",
        "searchDocs",
    )
    assert tool.chunks == (
        Chunk("doc-audit", DOCS[0]["text"], 0.9),  # type: ignore[arg-type]
        Chunk("doc-pricing", DOCS[1]["text"], 0.4),  # type: ignore[arg-type]
    )
    assert first is not None and (first.role, first.query, first.answer) == (
        Role.GENERATION,
        Q,
        None,  # a step that only calls a tool has no text
    )
    assert last is not None and (last.role, last.answer, last.model, last.response_id) == (
        Role.GENERATION,
        ANSWER,
        "gpt-test-2025",
        "chatcmpl-2",
    )
    # the model's input: the user's message, the tool's documents, and a system message of
    # instructions only (no evidence)
    assert [c.text for c in last.prompt] == [Q]
    assert [c.id for c in last.tool_results] == ["doc-audit", "doc-pricing"]
    assert last.instructions == ()


def test_the_trace_is_the_answer_over_the_tool_calls_documents() -> None:
    rag = to_rag_trace(trace())
    assert rag is not None
    assert rag.retrieved == (
        Chunk("doc-audit", DOCS[0]["text"], 0.9),  # type: ignore[arg-type]
        Chunk("doc-pricing", DOCS[1]["text"], 0.4),  # type: ignore[arg-type]
    )
    assert (rag.answer, rag.model, rag.response_id) == (ANSWER, "gpt-test-2025", "chatcmpl-2")
    assert rag.context_source == "tool_result" and rag.context == rag.retrieved
    assert (rag.target_span_id, rag.generation_span_id, rag.retrieval_span_id) == (ROOT, LAST, TOOL)
    assert rag.session_id == "session-7"
    # the SDK's own attributes are no user attributes (its telemetry metadata is)
    assert rag.attributes == {
        "operation.name": "ai.generateText support-bot",
        "ai.telemetry.metadata.sessionId": "session-7",
    }


def test_a_tool_that_returns_no_documents_is_no_retrieval() -> None:
    for result in ('{"temperature": 21}', '"sunny"', "[1, 2]", '{"results": [{"n": 1}]}'):
        weather = span(
            TOOL,
            ROOT,
            20,
            {
                "ai.operationId": "ai.toolCall",
                "ai.toolCall.name": "weather",
                "ai.toolCall.args": '{"city": "Oslo"}',
                "ai.toolCall.result": result,
            },
        )
        reading = default_readers().read(weather)
        assert reading is not None and reading.role is None, result


def test_documents_under_a_key_of_the_result_object_are_a_retrieval() -> None:
    tool = span(
        TOOL,
        ROOT,
        20,
        {
            "ai.operationId": "ai.toolCall",
            "ai.toolCall.name": "searchDocs",
            "ai.toolCall.args": json.dumps({"question": Q}),
            "ai.toolCall.result": json.dumps({"results": DOCS, "total": 2}),
        },
    )
    reading = default_readers().read(tool)
    assert reading is not None and reading.role is Role.RETRIEVAL and reading.query == Q
    assert [c.id for c in reading.chunks] == ["doc-audit", "doc-pricing"]


def test_other_ai_operations_are_recognised_and_ignored() -> None:
    embed = span(TOOL, ROOT, 5, {"ai.operationId": "ai.embed.doEmbed", "ai.values": '["x"]'})
    reading = default_readers().read(embed)
    assert reading is not None and reading.role is None


def test_a_messages_prompt_takes_the_last_user_message() -> None:
    root = span(
        ROOT,
        None,
        1,
        {
            "ai.operationId": "ai.streamText",
            "ai.prompt": json.dumps(
                {"messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": Q}]}
            ),
        },
    )
    reading = default_readers().read(root)
    assert reading is not None and (reading.role, reading.query) == (Role.PIPELINE, Q)


# --- LangChain.js documents (OpenInference JS) -------------------------------------------------


def test_a_file_path_or_url_source_is_never_a_chunk_id() -> None:
    for source in ("/tmp/kb/doc-audit.md", "docs/a.md", "C:\\kb\\a.md", "a.md", "https://x/y"):
        assert is_location(source), source
        assert metadata_id({"source": source, "loc": {"lines": {"from": 1, "to": 1}}}) is None
        assert metadata_id({"source": source, "chunk_index": 2}) is None
    for source in ("kb", "handbook", "doc-7"):
        assert not is_location(source)
    assert metadata_id({"source": "kb", "chunk_index": 2}) == "kb#2"
    # named by the configuration, a path is an ID
    assert metadata_id({"source": "/kb/a.md"}, keys=("source",)) == "/kb/a.md"
    found = chunk(None, "Audit logs are kept for 90 days.", None, {"source": "/kb/a.md"})
    assert found is not None and found.hashed


def test_a_langchainjs_document_id_comes_before_its_loader_metadata() -> None:
    documents = [
        {
            "pageContent": DOCS[0]["text"],
            "metadata": {"source": "/kb/doc-audit.md"},
            "id": "doc-audit",
        },
        {"pageContent": DOCS[1]["text"], "metadata": {"source": "/kb/pricing.md"}},
    ]
    retriever = SpanRecord(
        trace_id=TRACE,
        span_id=TOOL,
        parent_span_id=ROOT,
        name="VectorStoreRetriever",
        scope="@arizeai/openinference-instrumentation-langchain",
        service="app",
        start_ns=1,
        end_ns=2,
        attributes={
            "openinference.span.kind": "RETRIEVER",
            "input.value": Q,
            "output.value": json.dumps({"documents": documents}),
            "output.mime_type": "application/json",
            **{
                f"retrieval.documents.{i}.document.{k}": v
                for i, d in enumerate(documents)
                for k, v in (
                    ("content", str(d["pageContent"])),
                    ("metadata", json.dumps(d["metadata"])),
                )
            },
        },
    )
    reading = default_readers().read(retriever)
    assert reading is not None
    assert [(c.id, c.hashed) for c in reading.chunks] == [
        ("doc-audit", False),
        (reading.chunks[1].id, True),  # a path only: a marked content hash, recall n/a
    ]
    assert reading.chunks[1].id.startswith("sha256:")


def test_a_step_that_called_tools_continues_and_the_answering_step_does_not() -> None:
    """``ai`` 5 and 6 record the step's ``ai.response.finishReason`` (``tool-calls`` on a step
    that called the search tool, no ``ai.response.text``) and the tool calls; the last step stops."""
    calls = json.dumps(
        [{"toolCallId": "call_0", "toolName": "searchDocs", "input": json.dumps(CALL["input"])}]
    )
    turn = {"ai.response.finishReason": "tool-calls", "ai.response.toolCalls": calls}
    spans = trace()
    first = replace(spans[1], attributes={**spans[1].attributes, **turn})
    last = replace(spans[3], attributes={**spans[3].attributes, "ai.response.finishReason": "stop"})
    readers = default_readers()
    step, answer = readers.read(first), readers.read(last)
    assert step is not None and (step.continues, step.answer) == (True, None)
    assert answer is not None and (answer.continues, answer.answer) == (False, ANSWER)
