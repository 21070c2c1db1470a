"""Content capture off, redaction, per-value truncation, the per-span budget and the trace size bound."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

import ragtrace
from ragtrace import _config
from ragtrace import semconv as sc
from ragtrace.normalize import question_sha256
from tests.unit.sdk.sdk_spans import assert_attributes, by_name, finished, only_span

CHUNKS = [
    {"id": "c1", "text": "alpha text", "score": 0.9},
    {"id": "c2", "text": "béta", "score": 0.1},
]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def make_pair(**options: Any) -> tuple[Any, Any]:
    @ragtrace.retrieve(**options)
    def retrieve(query: str) -> list[dict[str, Any]]:
        return CHUNKS

    @ragtrace.generate(**options)
    def generate(query: str, chunks: list[dict[str, Any]]) -> str:
        return "the answer"

    return retrieve, generate


def capture_off_retrieval(query: str) -> dict[str, Any]:
    return {
        sc.OPENINFERENCE_SPAN_KIND: "RETRIEVER",
        sc.GEN_AI_OPERATION_NAME: "retrieval",
        sc.RAGTRACE_QUERY_SHA256: question_sha256(query),
        sc.RAGTRACE_CONTENT_CAPTURED: False,
        sc.RAGTRACE_RETRIEVAL_COUNT: 2,
        "retrieval.documents.0.document.id": "c1",
        "retrieval.documents.0.document.score": 0.9,
        "ragtrace.retrieval.documents.0.document.sha256": sha("alpha text"),
        "ragtrace.retrieval.documents.0.document.length": 10,
        "retrieval.documents.1.document.id": "c2",
        "retrieval.documents.1.document.score": 0.1,
        "ragtrace.retrieval.documents.1.document.sha256": sha("béta"),
        "ragtrace.retrieval.documents.1.document.length": 4,
        sc.GEN_AI_RETRIEVAL_DOCUMENTS: '[{"id":"c1","score":0.9},{"id":"c2","score":0.1}]',
    }


def capture_off_generation(query: str) -> dict[str, Any]:
    return {
        sc.OPENINFERENCE_SPAN_KIND: "LLM",
        sc.GEN_AI_OPERATION_NAME: "chat",
        sc.RAGTRACE_QUERY_SHA256: question_sha256(query),
        sc.RAGTRACE_CONTENT_CAPTURED: False,
        sc.RAGTRACE_CONTEXT_COUNT: 2,
        "ragtrace.context.documents.0.document.id": "c1",
        "ragtrace.context.documents.0.document.sha256": sha("alpha text"),
        "ragtrace.context.documents.0.document.length": 10,
        "ragtrace.context.documents.1.document.id": "c2",
        "ragtrace.context.documents.1.document.sha256": sha("béta"),
        "ragtrace.context.documents.1.document.length": 4,
    }


def test_capture_off_by_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_config.ENV_CAPTURE_CONTENT, "false")
    _config.reload()
    retrieve, generate = make_pair()
    generate("Secret question?", retrieve("Secret question?"))
    assert_attributes(by_name("retrieve"), capture_off_retrieval("Secret question?"))
    assert_attributes(by_name("generate"), capture_off_generation("Secret question?"))


def test_capture_precedence_argument_over_configure_over_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(_config.ENV_CAPTURE_CONTENT, "true")
    _config.reload()
    ragtrace.configure(capture_content=False)
    retrieve_default, _ = make_pair()
    retrieve_on, _ = make_pair(capture_content=True)
    retrieve_default("q")
    retrieve_on("q")
    off, on = finished()
    assert_attributes(off, capture_off_retrieval("q"))
    assert on.attributes[sc.RAGTRACE_CONTENT_CAPTURED] is True  # type: ignore[index]
    assert on.attributes[sc.INPUT_VALUE] == "q"  # type: ignore[index]

    monkeypatch.setenv(_config.ENV_CAPTURE_CONTENT, "false")
    _config.reload()
    retrieve_on("q")
    assert finished()[-1].attributes["retrieval.documents.1.document.content"] == "béta"  # type: ignore[index]


def test_capture_off_pipeline_records_no_text() -> None:
    @ragtrace.pipeline(capture_content=False)
    def answer(query: str) -> str:
        return "secret answer"

    answer("secret q")
    assert_attributes(
        only_span(),
        {
            sc.OPENINFERENCE_SPAN_KIND: "CHAIN",
            sc.RAGTRACE_PIPELINE_NAME: "answer",
            sc.RAGTRACE_QUERY_SHA256: question_sha256("secret q"),
            sc.RAGTRACE_CONTENT_CAPTURED: False,
        },
    )


def test_redaction_rewrites_text_and_keeps_hashes_of_the_original() -> None:
    def redact(text: str) -> str | None:
        if "DROP" in text:
            return None
        return text.replace("alpha", "[REDACTED]")

    @ragtrace.retrieve(redact=redact)
    def retrieve(query: str) -> list[dict[str, Any]]:
        return [*CHUNKS, {"id": "c3", "text": "DROP me"}]

    retrieve("alpha DROP?")
    assert_attributes(
        only_span(),
        {
            sc.OPENINFERENCE_SPAN_KIND: "RETRIEVER",
            sc.GEN_AI_OPERATION_NAME: "retrieval",
            sc.RAGTRACE_QUERY_SHA256: question_sha256("alpha DROP?"),
            sc.RAGTRACE_CONTENT_CAPTURED: True,
            sc.RAGTRACE_RETRIEVAL_COUNT: 3,
            "retrieval.documents.0.document.id": "c1",
            "retrieval.documents.0.document.score": 0.9,
            "retrieval.documents.0.document.content": "[REDACTED] text",
            "ragtrace.retrieval.documents.0.document.sha256": sha("alpha text"),
            "ragtrace.retrieval.documents.0.document.length": 10,
            "retrieval.documents.1.document.id": "c2",
            "retrieval.documents.1.document.score": 0.1,
            "retrieval.documents.1.document.content": "béta",
            "retrieval.documents.2.document.id": "c3",
            "ragtrace.retrieval.documents.2.document.sha256": sha("DROP me"),
            "ragtrace.retrieval.documents.2.document.length": 7,
            sc.GEN_AI_RETRIEVAL_DOCUMENTS: '[{"id":"c1","score":0.9},{"id":"c2","score":0.1},{"id":"c3"}]',
        },
    )


def test_global_redactor_from_configure_applies_to_answers() -> None:
    ragtrace.configure(redact=lambda t: t.upper())
    _, generate = make_pair()
    generate("q", ["x"])
    a = only_span().attributes
    assert a is not None
    assert (a[sc.INPUT_VALUE], a[sc.OUTPUT_VALUE]) == ("Q", "THE ANSWER")


def test_per_value_truncation_is_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_config.ENV_MAX_ATTRIBUTE_LENGTH, "6")
    _config.reload()

    @ragtrace.generate
    def generate(query: str, chunks: list[dict[str, Any]]) -> str:
        return "a long answer"

    generate("a long question", CHUNKS)
    assert_attributes(
        only_span(),
        {
            sc.OPENINFERENCE_SPAN_KIND: "LLM",
            sc.GEN_AI_OPERATION_NAME: "chat",
            sc.INPUT_VALUE: "a long",
            sc.OUTPUT_VALUE: "a long",
            sc.RAGTRACE_QUERY_SHA256: question_sha256("a long question"),
            sc.RAGTRACE_CONTENT_CAPTURED: True,
            sc.RAGTRACE_CONTEXT_COUNT: 2,
            "ragtrace.context.documents.0.document.id": "c1",
            "ragtrace.context.documents.0.document.content": "alpha ",
            "ragtrace.context.documents.0.document.sha256": sha("alpha text"),
            "ragtrace.context.documents.0.document.length": 10,
            "ragtrace.context.documents.1.document.id": "c2",
            "ragtrace.context.documents.1.document.content": "béta",
            sc.RAGTRACE_TRUNCATED: (
                sc.INPUT_VALUE,
                sc.OUTPUT_VALUE,
                "ragtrace.context.documents.0.document.content",
            ),
        },
    )


def test_span_budget_keeps_ids_then_query_then_answer_then_texts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # IDs c1+c2 = 4 bytes, query 5, answer 10: 19 bytes; 6 left for texts: "alpha " then nothing.
    monkeypatch.setenv(_config.ENV_MAX_SPAN_CONTENT_BYTES, "25")
    _config.reload()
    _, generate = make_pair()
    generate("quest", CHUNKS)
    a = only_span().attributes
    assert a is not None
    assert (a[sc.INPUT_VALUE], a[sc.OUTPUT_VALUE]) == ("quest", "the answer")
    assert a["ragtrace.context.documents.0.document.content"] == "alpha "
    assert "ragtrace.context.documents.1.document.content" not in a
    assert a["ragtrace.context.documents.1.document.sha256"] == sha("béta")
    assert tuple(a[sc.RAGTRACE_TRUNCATED]) == (  # type: ignore[arg-type]
        "ragtrace.context.documents.0.document.content",
        "ragtrace.context.documents.1.document.content",
    )


def test_budget_cuts_multibyte_text_on_a_character_boundary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(_config.ENV_MAX_SPAN_CONTENT_BYTES, "6")
    _config.reload()

    @ragtrace.generate
    def generate(query: str) -> str:
        return ""

    generate("ééé€")  # 2+2+2+3 bytes
    a = only_span().attributes
    assert a is not None
    assert a[sc.INPUT_VALUE] == "ééé"
    assert tuple(a[sc.RAGTRACE_TRUNCATED]) == (sc.INPUT_VALUE,)  # type: ignore[arg-type]


def test_max_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_config.ENV_MAX_DOCUMENTS, "3")
    _config.reload()

    @ragtrace.retrieve(capture_content=False)
    def retrieve(query: str) -> list[str]:
        return [f"d{i}" for i in range(5)]

    retrieve("q")
    a = only_span().attributes
    assert a is not None
    ids = sorted(k for k in a if k.startswith("retrieval.documents."))
    assert ids == [f"retrieval.documents.{i}.document.id" for i in range(3)]
    assert a[sc.RAGTRACE_RETRIEVAL_COUNT] == 5
    assert tuple(a[sc.RAGTRACE_TRUNCATED]) == ("retrieval.documents",)  # type: ignore[arg-type]
    assert a[sc.GEN_AI_RETRIEVAL_DOCUMENTS] == '[{"id":"d0"},{"id":"d1"},{"id":"d2"}]'


def test_huge_inputs_keep_a_trace_far_below_one_megabyte() -> None:
    huge = "x" * 2_000_000
    chunks = [{"id": f"doc-{i}", "text": huge + str(i), "score": 1.0 / (i + 1)} for i in range(5)]

    @ragtrace.retrieve
    def retrieve(query: str) -> list[dict[str, Any]]:
        return chunks

    @ragtrace.generate
    def generate(query: str, context: list[dict[str, Any]]) -> str:
        return huge

    @ragtrace.pipeline(attributes={"tenant": huge})
    def answer(query: str) -> str:
        other = [
            {"id": c["id"], "text": "y" * 500_000} for c in chunks
        ]  # texts unknown to retrieval
        return generate(query, retrieve(query) + other)

    answer(huge)
    spans = finished()
    assert len(spans) == 3
    size = len(encode_spans(spans).SerializeToString())
    assert size < 250_000, size
    for span in spans:
        assert len(encode_spans([span]).SerializeToString()) < 70_000
        assert span.dropped_attributes == 0
    # Still scoreable: every chunk ID is there, in rank order.
    ret = by_name("retrieve").attributes
    assert ret is not None
    assert [ret[f"retrieval.documents.{i}.document.id"] for i in range(5)] == [
        f"doc-{i}" for i in range(5)
    ]


def test_thousand_chunks_stay_bounded() -> None:
    @ragtrace.retrieve
    def retrieve(query: str) -> list[dict[str, Any]]:
        return [{"id": f"chunk-{i:05d}", "text": "t" * 2000, "score": 0.5} for i in range(1000)]

    retrieve("q")
    span = only_span()
    assert span.dropped_attributes == 0
    assert len(encode_spans([span]).SerializeToString()) < 70_000
    assert span.attributes[sc.RAGTRACE_RETRIEVAL_COUNT] == 1000  # type: ignore[index]
    assert (
        sum(k.endswith(".document.id") for k in span.attributes or {})
        == _config.DEFAULT_MAX_DOCUMENTS
    )


def test_default_limits_never_overflow_the_sdk_attribute_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Worst case: every chunk text cut (id, score, content, sha256, length) plus every optional key.
    monkeypatch.setenv(_config.ENV_MAX_ATTRIBUTE_LENGTH, "3")
    _config.reload()

    @ragtrace.retrieve(top_k=50, data_source="kb")
    def retrieve(query: str) -> Any:
        yield from [{"id": f"c{i}", "text": "long text", "score": 0.5} for i in range(50)]
        raise ValueError("after the last chunk")

    with pytest.raises(ValueError, match="after the last chunk"):
        list(retrieve("a long query"))
    span = only_span()
    assert span.dropped_attributes == 0
    # 13 possible fixed keys, less the errors count (none) and the GenAI JSON list (cannot be cut).
    assert len(span.attributes or {}) == 13 - 2 + 5 * _config.DEFAULT_MAX_DOCUMENTS
    assert sc.GEN_AI_RETRIEVAL_DOCUMENTS in span.attributes[sc.RAGTRACE_TRUNCATED]  # type: ignore[index,operator]
