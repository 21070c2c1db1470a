"""How the readers take each instrumentor's own idioms, on span shapes captured from the real
packages (the dialect tests in tests/dialects run the packages themselves)."""

from __future__ import annotations

import json

from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.readers import default_readers, to_rag_trace
from ragtrace_consumers.readers._reading import Role, query_in
from ragtrace_consumers.readers.answers import dspy_output, extract_answer
from ragtrace_consumers.readers.chunks import looks_like_chunks

TRACE = "0af7651916cd43dd8448eb211c80319c"
Q = "How long are audit logs kept?"


def span(
    span_id: str,
    name: str,
    attributes: dict[str, object],
    parent: str | None = "a" * 16,
    start: int = 1,
    end: int = 2,
) -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        scope="test",
        service="app",
        start_ns=start,
        end_ns=end,
        attributes=attributes,  # type: ignore[arg-type]
    )


def test_query_from_a_decorator_call_record() -> None:
    assert query_in({"args": [Q], "kwargs": {}}) == Q
    assert query_in({"args": [], "kwargs": {"top_k": 3, "question": Q}}) == Q
    # a query-named keyword wins over a positional string; non-strings are passed over
    assert query_in({"args": ["tenant-1"], "kwargs": {"query": Q}}) == Q
    assert query_in({"args": [{"self": 1}, 3, Q], "kwargs": {}}) == Q
    assert query_in({"args": [3], "kwargs": {"k": 1}}) is None
    assert query_in({"question": Q}) == Q
    # LangChain's run record under Traceloop is no call record: its "inputs" hold the query
    assert query_in({"inputs": {"query": Q}, "kwargs": {"name": "x"}}) is None
    assert query_in(Q) == Q


def test_langfuse_observe_retriever_reads_the_call_record() -> None:
    reading = default_readers().read(
        span(
            "b" * 16,
            "search",
            {
                "langfuse.observation.type": "retriever",
                "langfuse.observation.input": json.dumps({"args": [Q], "kwargs": {"top_k": 3}}),
                "langfuse.observation.output": json.dumps(
                    [
                        {
                            "id": "doc-audit",
                            "content": "Audit logs are kept for 90 days.",
                            "score": 0.9,
                        }
                    ]
                ),
            },
        )
    )
    assert reading is not None and reading.role is Role.RETRIEVAL
    assert reading.query == Q
    assert [c.id for c in reading.chunks] == ["doc-audit"]


def test_looks_like_chunks() -> None:
    assert looks_like_chunks([{"id": "d1", "text": "t", "score": 0.5}])
    assert looks_like_chunks([{"page_content": "t", "metadata": {"doc_id": "d1"}}])
    assert not looks_like_chunks([])
    assert not looks_like_chunks([{"text": "t"}])  # a text alone is no document
    assert not looks_like_chunks([{"id": 1, "name": "x"}])
    assert not looks_like_chunks(["a", "b"])
    assert not looks_like_chunks({"id": "d1", "text": "t"})


def _traceloop_task(name: str, output: object) -> SpanRecord:
    return span(
        "c" * 16,
        f"{name}.task",
        {
            "traceloop.span.kind": "task",
            "traceloop.entity.name": name,
            "traceloop.entity.input": json.dumps({"args": [Q], "kwargs": {}}),
            "traceloop.entity.output": json.dumps(output),
        },
    )


def test_a_traceloop_task_returning_documents_is_a_retrieval_whatever_its_name() -> None:
    docs = [
        {"id": "doc-audit", "text": "Audit logs are kept for 90 days.", "score": 0.9},
        {"id": "doc-pricing", "text": "The Team plan costs 20 dollars per seat.", "score": 0.4},
    ]
    reading = default_readers().read(_traceloop_task("retrieve", docs))
    assert reading is not None and reading.role is Role.RETRIEVAL
    assert reading.query == Q
    assert [(c.id, c.score) for c in reading.chunks] == [("doc-audit", 0.9), ("doc-pricing", 0.4)]
    other = default_readers().read(_traceloop_task("format", {"prompt": "x"}))
    assert other is not None and other.role is None


def test_a_traceloop_workflow_takes_the_query_from_its_call_record() -> None:
    root = span(
        "a" * 16,
        "support_rag.workflow",
        {
            "traceloop.span.kind": "workflow",
            "traceloop.entity.input": json.dumps({"args": [Q], "kwargs": {}}),
        },
        parent=None,
        end=9,
    )
    chat = span(
        "d" * 16,
        "openai.chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "90 days."}]}]
            ),
        },
        start=3,
        end=4,
    )
    trace = to_rag_trace([root, chat])
    assert trace is not None and trace.query == Q and trace.answer == "90 days."


HAYSTACK_ID = "3f1c2b0d9a8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a"


def _haystack_retrieval(metadata: dict[str, object]) -> SpanRecord:
    # OpenInference's Haystack instrumentation: document.id is Haystack's own SHA-256 ID
    return span(
        "e" * 16,
        "CorpusRetriever.run",
        {
            "openinference.span.kind": "RETRIEVER",
            "input.value": json.dumps({"query": Q}),
            "input.mime_type": "application/json",
            "retrieval.documents.0.document.id": HAYSTACK_ID,
            "retrieval.documents.0.document.content": "Audit logs are kept for 90 days.",
            "retrieval.documents.0.document.score": 0.9,
            "retrieval.documents.0.document.metadata": json.dumps(metadata),
        },
    )


def test_the_users_metadata_id_wins_over_a_tools_content_hash() -> None:
    trace = to_rag_trace([_haystack_retrieval({"doc_id": "doc-audit"})])
    assert trace is not None
    assert [c.id for c in trace.retrieved] == ["doc-audit"]
    assert trace.recall_na_reason is None


def test_a_tools_content_hash_alone_makes_recall_na_with_the_fix() -> None:
    trace = to_rag_trace([_haystack_retrieval({"file": "faq.md"})])
    assert trace is not None
    (only,) = trace.retrieved
    assert only.id == HAYSTACK_ID and only.hashed
    assert trace.recall_na_reason is not None
    assert "content hash" in trace.recall_na_reason and "doc_id" in trace.recall_na_reason


def _ids_only_retrieval() -> SpanRecord:
    return span(
        "b" * 16,
        "retrieval corpus",
        {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.retrieval.query.text": Q,
            "gen_ai.retrieval.documents": json.dumps(
                [{"id": "doc-audit", "score": 0.9}, {"id": "doc-pricing", "score": 0.4}]
            ),
        },
        start=1,
        end=2,
    )


def test_ids_only_documents_take_the_context_from_the_genai_input_messages() -> None:
    messages = [
        {"role": "system", "parts": [{"type": "text", "content": "Answer from the context only."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Context:\nAudit logs ...\nQ?"}]},
    ]
    chat = span(
        "d" * 16,
        "chat gpt-test",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(messages),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "90 days."}]}]
            ),
        },
        start=3,
        end=4,
    )
    trace = to_rag_trace([_ids_only_retrieval(), chat])
    assert trace is not None
    assert [c.id for c in trace.retrieved] == ["doc-audit", "doc-pricing"]
    # the system message is an instruction: never evidence
    assert [(c.id, c.text) for c in trace.context] == [
        ("input.message.1", "Context:\nAudit logs ...\nQ?")
    ]
    assert trace.context_source == "generation_input"
    # without the input messages the documents stay the context (texts unknown)
    bare = to_rag_trace([_ids_only_retrieval()])
    assert bare is not None and bare.context_source == "retrieved"


def test_openinference_llm_input_messages_are_the_prompt() -> None:
    reading = default_readers().read(
        span(
            "d" * 16,
            "llm",
            {
                "openinference.span.kind": "LLM",
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": "Be brief.",
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": "Context: Audit logs are kept.",
                "output.value": "Kept.",
            },
        )
    )
    assert reading is not None
    assert [(c.id, c.text) for c in reading.prompt] == [
        ("input.message.1", "Context: Audit logs are kept.")
    ]


def test_dspy_field_format_yields_the_programs_output_field() -> None:
    wire = (
        "[[ ## reasoning ## ]]\nThe context says so.\n\n[[ ## response ## ]]\n"
        "Audit logs are kept for 90 days.\n\n[[ ## completed ## ]]"
    )
    assert dspy_output(wire) == "Audit logs are kept for 90 days."
    assert extract_answer(wire) == ("Audit logs are kept for 90 days.", None)
    assert extract_answer(json.dumps([wire])) == ("Audit logs are kept for 90 days.", None)
    assert dspy_output("plain answer") is None
    assert dspy_output("[[ ## reasoning ## ]]\nonly thoughts\n[[ ## completed ## ]]") is None


def _dspy_retrieval(span_id: str, parent: str, documents: list[dict[str, object]]) -> SpanRecord:
    attrs: dict[str, object] = {
        "openinference.span.kind": "RETRIEVER",
        "input.value": json.dumps({"query": Q}),
        "input.mime_type": "application/json",
    }
    for i, doc in enumerate(documents):
        for field, value in doc.items():
            attrs[f"retrieval.documents.{i}.document.{field}"] = value
    return span(span_id, "retrieve", attrs, parent=parent)


def test_nested_retrieval_spans_are_one_retrieval() -> None:
    texts = ["Audit logs are kept for 90 days.", "The Team plan costs 20 dollars per seat."]
    outer = _dspy_retrieval("1" * 16, "a" * 16, [{"content": t} for t in texts])
    inner = _dspy_retrieval(
        "2" * 16,
        "1" * 16,
        [
            {"id": "doc-audit", "content": texts[0], "score": 0.9},
            {"id": "doc-pricing", "content": texts[1], "score": 0.4},
        ],
    )
    trace = to_rag_trace([outer, inner])
    assert trace is not None
    assert [(c.id, c.text, c.score, c.hashed) for c in trace.retrieved] == [
        ("doc-audit", texts[0], 0.9, False),
        ("doc-pricing", texts[1], 0.4, False),
    ]
    assert trace.recall_na_reason is None and trace.retrieval_span_id == "1" * 16
    # siblings stay two retrievals
    sibling = _dspy_retrieval("3" * 16, "a" * 16, [{"id": "doc-dark", "content": "Dark."}])
    both = to_rag_trace([outer, sibling])
    assert both is not None and len(both.retrieved) == 3


def test_a_langgraph_root_asks_its_input_users_message() -> None:
    root = span(
        "b" * 16,
        "LangGraph",
        {
            "openinference.span.kind": "CHAIN",
            "input.value": json.dumps({"messages": [{"role": "user", "content": "Q?"}]}),
            "input.mime_type": "application/json",
        },
        parent=None,
    )
    reading = default_readers().read(root)
    assert reading is not None and (reading.role, reading.query) == (Role.PIPELINE, "Q?")


def test_a_langchain_documents_own_id_wins_over_its_source_path() -> None:
    """OpenInference leaves ``Document.id`` out of ``retrieval.documents``; the retriever's
    ``output.value`` has it, and the loader's ``metadata.source`` (a file path) is no chunk ID."""
    docs = [
        {"id": d, "metadata": {"source": f"kb/{d}.md"}, "page_content": t, "type": "Document"}
        for d, t in (("doc-1", "One."), ("doc-2", "Two."))
    ]
    attrs: dict[str, object] = {
        "openinference.span.kind": "RETRIEVER",
        "input.value": "q",
        "output.value": json.dumps({"documents": docs}),
    }
    for i, doc in enumerate(docs):
        attrs[f"retrieval.documents.{i}.document.content"] = doc["page_content"]
        attrs[f"retrieval.documents.{i}.document.metadata"] = json.dumps(doc["metadata"])
    reading = default_readers().read(span("c" * 16, "retriever", attrs))
    assert reading is not None
    assert [c.id for c in reading.chunks] == ["doc-1", "doc-2"]
    assert [c.text for c in reading.chunks] == ["One.", "Two."]
