"""The MLflow Tracing reader on spans shaped as mlflow-tracing 3.17's OTLP export writes them
(every ``mlflow.*`` value JSON-encoded), and the RAG view of one such trace."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ragtrace_consumers.model import Chunk, SpanRecord
from ragtrace_consumers.readers import Role, SpanReaders, to_rag_trace
from ragtrace_consumers.readers.mlflow import MlflowReader

TRACE = "ab" * 16
READERS = SpanReaders.build()


def _span(
    n: int,
    kind: str,
    inputs: object,
    outputs: object,
    parent: int | None = 1,
    extra: dict[str, str] | None = None,
) -> SpanRecord:
    attrs = {
        "mlflow.traceRequestId": json.dumps(f"tr-{TRACE}"),
        "mlflow.spanType": json.dumps(kind),
        "mlflow.spanInputs": json.dumps(inputs),
        "mlflow.spanOutputs": json.dumps(outputs),
        **(extra or {}),
    }
    return SpanRecord(
        TRACE,
        f"{n:016x}",
        None if parent is None else f"{parent:016x}",
        f"span-{n}",
        "mlflow.tracing.provider",
        "app",
        n * 10,
        n * 10 + 5,
        attrs,
    )


DOCS = [
    {"page_content": "Audit logs are kept for 90 days.", "metadata": {"score": 0.9}, "id": "d-1"},
    {"page_content": "Plans cost 20 dollars.", "metadata": {"doc_id": "d-2"}, "id": None},
]
RETRIEVER = _span(2, "RETRIEVER", {"query": "audit retention", "k": 2}, DOCS)
CHAT = _span(
    3,
    "CHAT_MODEL",
    {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "Answer from the context.\n\n[d-1] Kept 90 days."},
            {"role": "user", "content": "How long are audit logs kept?"},
        ],
    },
    {
        "id": "chatcmpl-7",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "90 days."}}],
    },
    extra={"mlflow.llm.model": json.dumps("gpt-test")},
)
ROOT = _span(1, "UNKNOWN", {"question": "How long are audit logs kept?"}, "90 days.", None)


def test_a_retriever_span_is_a_retrieval_with_the_documents_own_ids_in_rank_order() -> None:
    reading = MlflowReader().read(RETRIEVER)
    assert reading is not None and reading.role is Role.RETRIEVAL
    assert reading.query == "audit retention"
    assert reading.chunks == (
        Chunk("d-1", "Audit logs are kept for 90 days.", 0.9),
        Chunk("d-2", "Plans cost 20 dollars."),
    )


def test_a_chat_model_span_is_a_generation_with_answer_model_and_messages() -> None:
    reading = MlflowReader().read(CHAT)
    assert reading is not None and reading.role is Role.GENERATION
    assert (reading.answer, reading.model, reading.response_id, reading.query) == (
        "90 days.",
        "gpt-test",
        "chatcmpl-7",
        "How long are audit logs kept?",
    )
    assert [c.text for c in reading.prompt] == ["How long are audit logs kept?"]
    # The system message's context paragraph is context; its instructions are not.
    assert [c.text for c in reading.instructions] == ["[d-1] Kept 90 days."]


def test_the_root_is_the_pipeline_and_inner_spans_of_other_types_are_ignored() -> None:
    root = MlflowReader().read(ROOT)
    assert root is not None and (root.role, root.query) == (
        Role.PIPELINE,
        "How long are audit logs kept?",
    )
    inner = MlflowReader().read(_span(4, "CHAIN", {"x": 1}, {"y": 2}))
    assert inner is not None and inner.role is None
    assert MlflowReader().read(_span(5, "EMBEDDING", "text", [0.1])) == inner


def test_a_tool_returning_documents_is_a_retrieval_and_any_other_tool_is_ignored() -> None:
    search = MlflowReader().read(_span(6, "TOOL", {"query": "audit"}, DOCS))
    assert search is not None and search.role is Role.RETRIEVAL
    assert [c.id for c in search.chunks] == ["d-1", "d-2"]
    weather = MlflowReader().read(_span(7, "TOOL", {"city": "Oslo"}, {"temp": 3}))
    assert weather is not None and weather.role is None


def test_spans_without_mlflow_span_type_are_not_mlflows() -> None:
    genai = SpanRecord(
        TRACE, "0" * 15 + "9", None, "chat", "mlflow.tracing.provider", "app", 0, 1,
        {"gen_ai.operation.name": "chat"},
    )  # fmt: skip
    assert MlflowReader().read(genai) is None
    taken = READERS.read(genai)
    assert taken is not None and taken.reader == "genai"


def test_an_mlflow_trace_reads_as_one_rag_trace() -> None:
    trace = to_rag_trace([RETRIEVER, CHAT, ROOT], READERS)
    assert trace is not None
    assert [c.id for c in trace.retrieved] == ["d-1", "d-2"]
    assert trace.answer == "90 days."
    assert trace.target_span_id == ROOT.span_id
    assert trace.pipeline == "span-1"
    assert "mlflow.spanInputs" not in trace.attributes


def test_a_json_encoded_session_id_is_decoded() -> None:
    root = _span(1, "UNKNOWN", "q", "a", None, {"session.id": json.dumps("s-1")})
    trace = to_rag_trace([RETRIEVER, CHAT, root], READERS)
    assert trace is not None and trace.session_id == "s-1"


def _completion(message: Mapping[str, object], finish: str) -> dict[str, object]:
    """An OpenAI ``ChatCompletion`` as ``mlflow.openai.autolog()`` (mlflow-tracing 3.17)
    records its output (the fields ragtrace reads; the rest are nulls and usage)."""
    return {
        "id": "chatcmpl-8",
        "object": "chat.completion",
        "model": "gpt-test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }


def test_a_chat_model_span_that_called_tools_continues_with_no_answer() -> None:
    call = {
        "id": "call_0",
        "type": "function",
        "function": {"name": "search_docs", "arguments": json.dumps({"query": "audit"})},
    }
    asked = {"role": "assistant", "content": None, "tool_calls": [call]}
    inputs = {"model": "gpt-test", "messages": [{"role": "user", "content": "How long?"}]}
    turn = MlflowReader().read(_span(4, "CHAT_MODEL", inputs, _completion(asked, "tool_calls")))
    assert turn is not None and (turn.continues, turn.answer, turn.answer_problem) == (
        True,
        None,
        None,
    )
    answered = {"role": "assistant", "content": "90 days."}
    final = MlflowReader().read(_span(5, "CHAT_MODEL", inputs, _completion(answered, "stop")))
    assert final is not None and (final.continues, final.answer) == (False, "90 days.")
    anthropic = {"stop_reason": "tool_use", "content": [{"type": "tool_use", "name": "search"}]}
    claude = MlflowReader().read(_span(6, "LLM", inputs, anthropic))
    assert claude is not None and claude.continues
