"""Exact attribute sets of retrieval, generation and pipeline spans, and how they form one trace."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode

import ragtrace
from ragtrace import semconv as sc
from ragtrace.normalize import question_sha256
from tests.unit.sdk.sdk_spans import (
    assert_attributes,
    by_name,
    finished,
    only_span,
    retrieval_query,
)

Q = "How long are audit logs kept?"
QH = question_sha256(Q)
CHUNKS = [
    {"id": "c1", "text": "Audit logs are kept for 90 days.", "score": 0.91},
    {"id": "c2", "text": "Enterprise plans keep logs for a year.", "score": 0.55},
]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_retrieval_span_exact_attributes() -> None:
    @ragtrace.retrieve
    def retrieve(query: str) -> list[dict[str, Any]]:
        return CHUNKS

    assert retrieve(Q) is CHUNKS
    span = only_span()
    assert span.name == "retrieve"
    assert span.kind is SpanKind.INTERNAL
    assert span.instrumentation_scope is not None
    assert (span.instrumentation_scope.name, span.instrumentation_scope.version) == (
        "ragtrace",
        ragtrace.__version__,
    )
    assert span.status.status_code is StatusCode.UNSET
    assert_attributes(
        span,
        {
            **retrieval_query(Q),
            sc.RAGTRACE_RETRIEVAL_COUNT: 2,
            "retrieval.documents.0.document.id": "c1",
            "retrieval.documents.0.document.score": 0.91,
            "retrieval.documents.0.document.content": "Audit logs are kept for 90 days.",
            "retrieval.documents.1.document.id": "c2",
            "retrieval.documents.1.document.score": 0.55,
            "retrieval.documents.1.document.content": "Enterprise plans keep logs for a year.",
            sc.GEN_AI_RETRIEVAL_DOCUMENTS: '[{"id":"c1","score":0.91},{"id":"c2","score":0.55}]',
        },
    )


def test_retrieval_options_name_top_k_data_source() -> None:
    @ragtrace.retrieve(name="vector-search", top_k=5, data_source="kb-prod")
    def search(q: str) -> list[str]:
        return ["a", "b"]

    search("hello")
    span = only_span()
    assert span.name == "vector-search"
    assert_attributes(
        span,
        {
            sc.OPENINFERENCE_SPAN_KIND: "RETRIEVER",
            sc.GEN_AI_OPERATION_NAME: "retrieval",
            sc.GEN_AI_REQUEST_TOP_K: 5,
            sc.GEN_AI_DATA_SOURCE_ID: "kb-prod",
            sc.INPUT_VALUE: "hello",
            sc.GEN_AI_RETRIEVAL_QUERY_TEXT: "hello",
            sc.RAGTRACE_QUERY_SHA256: question_sha256("hello"),
            sc.RAGTRACE_CONTENT_CAPTURED: True,
            sc.RAGTRACE_RETRIEVAL_COUNT: 2,
            "retrieval.documents.0.document.id": "a",
            "retrieval.documents.1.document.id": "b",
            sc.GEN_AI_RETRIEVAL_DOCUMENTS: '[{"id":"a"},{"id":"b"}]',
        },
    )


def test_top_k_from_call_argument() -> None:
    @ragtrace.retrieve
    def search(query: str, top_k: int = 3) -> list[str]:
        return ["a"] * 0

    search("x", top_k=7)
    search("x")
    first, second = finished()
    assert first.attributes[sc.GEN_AI_REQUEST_TOP_K] == 7  # type: ignore[index]
    assert second.attributes[sc.GEN_AI_REQUEST_TOP_K] == 3  # type: ignore[index]
    assert first.attributes[sc.RAGTRACE_RETRIEVAL_COUNT] == 0  # type: ignore[index]
    assert first.attributes[sc.GEN_AI_RETRIEVAL_DOCUMENTS] == "[]"  # type: ignore[index]


def test_generation_span_exact_attributes_without_retrieval() -> None:
    @ragtrace.generate(model="claude-x")
    def generate(query: str, chunks: list[dict[str, Any]]) -> str:
        return "Ninety days."

    assert generate(Q, CHUNKS) == "Ninety days."
    span = only_span()
    assert span.name == "generate"
    assert_attributes(
        span,
        {
            sc.OPENINFERENCE_SPAN_KIND: "LLM",
            sc.GEN_AI_OPERATION_NAME: "chat",
            sc.INPUT_VALUE: Q,
            sc.OUTPUT_VALUE: "Ninety days.",
            sc.RAGTRACE_QUERY_SHA256: QH,
            sc.RAGTRACE_CONTENT_CAPTURED: True,
            sc.LLM_MODEL_NAME: "claude-x",
            sc.GEN_AI_REQUEST_MODEL: "claude-x",
            sc.RAGTRACE_CONTEXT_COUNT: 2,
            "ragtrace.context.documents.0.document.id": "c1",
            "ragtrace.context.documents.0.document.content": "Audit logs are kept for 90 days.",
            "ragtrace.context.documents.1.document.id": "c2",
            "ragtrace.context.documents.1.document.content": "Enterprise plans keep logs for a year.",
        },
    )


def test_model_from_call_argument_and_json_answer() -> None:
    @ragtrace.generate
    def generate(prompt: str, docs: list[str], model: str = "default-model") -> dict[str, Any]:
        return {"verdict": "yes", "n": 2}

    generate("q?", ["d1"], model="m-2")
    span = only_span()
    assert_attributes(
        span,
        {
            sc.OPENINFERENCE_SPAN_KIND: "LLM",
            sc.GEN_AI_OPERATION_NAME: "chat",
            sc.INPUT_VALUE: "q?",
            sc.OUTPUT_VALUE: '{"verdict": "yes", "n": 2}',
            sc.OUTPUT_MIME_TYPE: "application/json",
            sc.RAGTRACE_QUERY_SHA256: question_sha256("q?"),
            sc.RAGTRACE_CONTENT_CAPTURED: True,
            sc.LLM_MODEL_NAME: "m-2",
            sc.GEN_AI_REQUEST_MODEL: "m-2",
            sc.RAGTRACE_CONTEXT_COUNT: 1,
            "ragtrace.context.documents.0.document.id": "d1",
        },
    )


@pytest.mark.parametrize(
    ("result", "answer"),
    [
        ({"answer": "A", "sources": ["x"]}, "A"),
        (type("AIMessage", (), {"content": "B"})(), "B"),
        ({"text": "C"}, "C"),
    ],
)
def test_answer_shapes(result: object, answer: str) -> None:
    @ragtrace.generate
    def generate(query: str) -> object:
        return result

    assert generate("q") is result
    assert only_span().attributes[sc.OUTPUT_VALUE] == answer  # type: ignore[index]


def test_answer_of_extractor() -> None:
    @ragtrace.generate(answer_of=lambda r: r["choices"][0])
    def generate(query: str) -> dict[str, list[str]]:
        return {"choices": ["first", "second"]}

    generate("q")
    assert only_span().attributes[sc.OUTPUT_VALUE] == "first"  # type: ignore[index]


def test_full_trace_pipeline_retrieve_generate() -> None:
    @ragtrace.retrieve
    def retrieve(query: str) -> list[dict[str, Any]]:
        return CHUNKS

    @ragtrace.generate
    def generate(query: str, chunks: list[dict[str, Any]]) -> str:
        return "Ninety days."

    @ragtrace.pipeline(
        name="support-rag", question_id="q-17", attributes={"release": "2024.6", "canary": True}
    )
    def answer(query: str) -> str:
        ragtrace.set_attributes({"route": "/ask"}, tenant="acme", shard=3)
        return generate(query, retrieve(query))

    assert answer(Q) == "Ninety days."
    root, ret, gen = by_name("support-rag"), by_name("retrieve"), by_name("generate")
    assert root.parent is None
    assert ret.parent is not None and ret.parent.span_id == root.context.span_id
    assert gen.parent is not None and gen.parent.span_id == root.context.span_id
    assert {s.context.trace_id for s in finished()} == {root.context.trace_id}
    assert_attributes(
        root,
        {
            sc.OPENINFERENCE_SPAN_KIND: "CHAIN",
            sc.RAGTRACE_PIPELINE_NAME: "support-rag",
            sc.RAGTRACE_QUESTION_ID: "q-17",
            sc.INPUT_VALUE: Q,
            sc.OUTPUT_VALUE: "Ninety days.",
            sc.RAGTRACE_QUERY_SHA256: QH,
            sc.RAGTRACE_CONTENT_CAPTURED: True,
            "release": "2024.6",
            "canary": True,
            "route": "/ask",
            "tenant": "acme",
            "shard": 3,
        },
    )
    # The generation span names its context by ID only: the retrieval span holds the texts.
    assert_attributes(
        gen,
        {
            sc.OPENINFERENCE_SPAN_KIND: "LLM",
            sc.GEN_AI_OPERATION_NAME: "chat",
            sc.INPUT_VALUE: Q,
            sc.OUTPUT_VALUE: "Ninety days.",
            sc.RAGTRACE_QUERY_SHA256: QH,
            sc.RAGTRACE_CONTENT_CAPTURED: True,
            sc.RAGTRACE_CONTEXT_COUNT: 2,
            "ragtrace.context.documents.0.document.id": "c1",
            "ragtrace.context.documents.1.document.id": "c2",
        },
    )
    assert ret.attributes["retrieval.documents.0.document.content"] == CHUNKS[0]["text"]  # type: ignore[index]


def test_generation_records_text_that_differs_from_the_retrieved_one() -> None:
    @ragtrace.retrieve
    def retrieve(query: str) -> list[dict[str, Any]]:
        return CHUNKS

    @ragtrace.generate
    def generate(query: str, chunks: list[dict[str, Any]]) -> str:
        return "ok"

    @ragtrace.pipeline
    def answer(query: str) -> str:
        chunks = retrieve(query)
        reranked = [{"id": "c2", "text": "rewritten"}, chunks[0], {"id": "c9", "text": "new"}]
        return generate(query, reranked)

    answer(Q)
    gen = by_name("generate")
    assert {k: v for k, v in gen.attributes.items() if k.startswith("ragtrace.context.")} == {  # type: ignore[union-attr]
        sc.RAGTRACE_CONTEXT_COUNT: 3,
        "ragtrace.context.documents.0.document.id": "c2",
        "ragtrace.context.documents.0.document.content": "rewritten",
        "ragtrace.context.documents.1.document.id": "c1",
        "ragtrace.context.documents.2.document.id": "c9",
        "ragtrace.context.documents.2.document.content": "new",
    }


def test_note_without_pipeline_and_across_traces() -> None:
    @ragtrace.retrieve
    def retrieve(query: str) -> list[dict[str, Any]]:
        return CHUNKS

    @ragtrace.generate
    def generate(query: str, chunks: list[dict[str, Any]]) -> str:
        return "ok"

    from opentelemetry import trace

    tracer = trace.get_tracer("app")
    with tracer.start_as_current_span("request"):
        generate(Q, retrieve(Q))
    gen_same_trace = by_name("generate")
    assert "ragtrace.context.documents.0.document.content" not in gen_same_trace.attributes  # type: ignore[operator]
    # A later trace in the same thread does not reuse the earlier trace's note.
    with tracer.start_as_current_span("request-2"):
        generate(Q, CHUNKS)
    second = [s for s in finished() if s.name == "generate"][1]
    assert second.attributes["ragtrace.context.documents.0.document.content"] == CHUNKS[0]["text"]  # type: ignore[index]


def test_set_question_id_per_call_and_outside_pipeline() -> None:
    @ragtrace.pipeline
    def answer(query: str, qid: str | None) -> str:
        assert ragtrace.set_question_id(qid) is (qid is not None)
        return "a"

    answer("one", "probe-1")
    answer("two", None)
    first, second = finished()
    assert first.attributes[sc.RAGTRACE_QUESTION_ID] == "probe-1"  # type: ignore[index]
    assert sc.RAGTRACE_QUESTION_ID not in second.attributes  # type: ignore[operator]
    assert first.attributes[sc.RAGTRACE_PIPELINE_NAME] == "answer"  # type: ignore[index]
    assert first.name == "rag.pipeline"

    # Outside any pipeline: applies to the app's current span; with none, returns False.
    from opentelemetry import trace

    with trace.get_tracer("app").start_as_current_span("root"):
        assert ragtrace.set_question_id("probe-2") is True
        assert ragtrace.set_attributes(tenant="t") is True
    root = finished()[-1]
    assert (root.attributes["ragtrace.question.id"], root.attributes["tenant"]) == ("probe-2", "t")  # type: ignore[index]
    assert ragtrace.set_question_id("nowhere") is False
    assert ragtrace.set_attributes(x=1) is False


def test_user_attribute_values() -> None:
    class Weird:
        def __str__(self) -> str:
            return "weird!"

    @ragtrace.pipeline
    def answer(query: str) -> None:
        ragtrace.set_attributes(
            {"tags": ["a", "b"], "ints": (1, 2), "mixed": [1, "a"], "obj": Weird(), "f": 0.5}
        )

    answer("q")
    got = only_span().attributes
    assert got is not None
    assert (tuple(got["tags"]), tuple(got["ints"]), got["mixed"], got["obj"], got["f"]) == (  # type: ignore[arg-type]
        ("a", "b"),
        (1, 2),
        "[1, 'a']",
        "weird!",
        0.5,
    )
    assert answer("q") is None


def test_pipeline_without_string_query_records_no_query() -> None:
    @ragtrace.pipeline
    def handle(request: dict[str, str]) -> str:
        return "fine"

    handle({"q": "x"})
    assert_attributes(
        only_span(),
        {
            sc.OPENINFERENCE_SPAN_KIND: "CHAIN",
            sc.RAGTRACE_PIPELINE_NAME: "handle",
            sc.OUTPUT_VALUE: "fine",
            sc.RAGTRACE_CONTENT_CAPTURED: True,
        },
    )
    assert ragtrace.error_counts() == {}


def test_query_bundle_like_objects() -> None:
    class QueryBundle:
        query_str = "bundled question"

    @ragtrace.retrieve
    def retrieve(query_bundle: QueryBundle) -> list[str]:
        return ["n1"]

    retrieve(QueryBundle())
    span = only_span()
    assert span.attributes[sc.INPUT_VALUE] == "bundled question"  # type: ignore[index]
    assert span.attributes[sc.RAGTRACE_QUERY_SHA256] == question_sha256("bundled question")  # type: ignore[index]


def test_documents_json_lists_ids_and_scores_in_rank_order() -> None:
    @ragtrace.retrieve
    def retrieve(query: str) -> list[tuple[str, float]]:
        return [("z", 3.0), ("y", 2.0), ("x", 1.0)]

    retrieve("q")
    docs = json.loads(only_span().attributes[sc.GEN_AI_RETRIEVAL_DOCUMENTS])  # type: ignore[arg-type,index]
    assert docs == [{"id": "z", "score": 3.0}, {"id": "y", "score": 2.0}, {"id": "x", "score": 1.0}]


def test_hash_helper_matches_sha256_of_utf8() -> None:
    from ragtrace._recording import text_sha256

    assert text_sha256("café") == sha("café")
