"""RAG span recognition and to_rag_trace: spans from the real ragtrace decorators, hand-written
OpenInference (LlamaIndex/LangChain-shaped) spans, mixed producers, and our own evaluation spans."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace import semconv
from ragtrace.normalize import question_sha256
from ragtrace_consumers.intake.decode import decode_request
from ragtrace_consumers.model import Chunk, RagTrace, RetrievalStep, SpanRecord
from ragtrace_consumers.readers import (
    Role,
    default_readers,
    is_evaluation_span,
    is_rag_span,
    role_of,
    to_rag_trace,
    user_attributes,
)
from ragtrace_consumers.readers.openinference import retrieval_documents
from ragtrace_consumers.readers.ragtrace import RagtraceReader
from tests.unit.consumers.ingestion_spans import GEN, RET, ROOT, TRACE, documents, payload, record


def retrieved_chunks(span: SpanRecord) -> list[Chunk]:
    """The ranked documents of one retrieval span, as its reader extracts them."""
    reading = default_readers().read(span)
    if reading is not None and reading.chunks:
        return list(reading.chunks)
    return list(retrieval_documents(span.attributes))


def context_chunks(span: SpanRecord) -> list[Chunk] | None:
    """The documents a generation span says it supplied, or None when it says nothing."""
    reading = RagtraceReader().read(span)
    if reading is None or reading.context is None:
        return None
    return list(reading.context)


Q = "How long are audit logs kept?"
T1 = "Audit logs are kept for 90 days."
T2 = "Logs are stored in the EU region."

_EXPORTER = InMemorySpanExporter()


def _global_sdk_provider() -> None:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        trace.set_tracer_provider(TracerProvider())
        provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))


_global_sdk_provider()


# --- spans from the real decorators ----------------------------------------------------------


@ragtrace.retrieve(top_k=2)
def _retrieve(query: str, top_k: int = 2) -> list[dict[str, object]]:
    return [{"id": "c1", "text": T1, "score": 0.9}, {"id": "c2", "text": T2, "score": 0.4}]


@ragtrace.generate(model="claude-test")
def _generate(query: str, chunks: list[dict[str, object]]) -> str:
    return "Audit logs are kept for 90 days."


@ragtrace.pipeline(name="support")
def _answer(query: str) -> str:
    ragtrace.set_question_id("q-audit")
    ragtrace.set_attributes(route="/chat", tenant="acme")
    return _generate(query, _retrieve(query))


def test_spans_from_the_real_decorators_make_the_expected_rag_trace() -> None:
    _EXPORTER.clear()
    assert _answer(Q) == "Audit logs are kept for 90 days."
    spans = _EXPORTER.get_finished_spans()
    assert len(spans) == 3
    records = decode_request(payload(spans))
    root = next(r for r in records if r.parent_span_id is None)
    roles = {r.name: role_of(r) for r in records}
    assert roles == {
        "retrieve": Role.RETRIEVAL,
        "generate": Role.GENERATION,
        "support": Role.PIPELINE,
    }
    rag = to_rag_trace(records)
    assert rag is not None
    assert rag == RagTrace(
        trace_id=root.trace_id,
        service=root.service,
        target_span_id=root.span_id,
        pipeline="support",
        query=Q,
        query_sha256=question_sha256(Q),
        question_id="q-audit",
        retrieved=(Chunk("c1", T1, 0.9), Chunk("c2", T2, 0.4)),
        context=(Chunk("c1", T1, None), Chunk("c2", T2, None)),
        answer="Audit logs are kept for 90 days.",
        model="claude-test",
        attributes={"route": "/chat", "tenant": "acme"},
        context_truncated=False,
        has_retrieval=True,
        has_generation=True,
        ended_ns=root.end_ns,
        retrieval_span_id=next(r.span_id for r in records if r.name == "retrieve"),
        generation_span_id=next(r.span_id for r in records if r.name == "generate"),
        root_span_id=root.span_id,
        context_source="generation",
        context_sources=("generation",),
        steps=(
            RetrievalStep(
                next(r.span_id for r in records if r.name == "retrieve"),
                Q,
                (Chunk("c1", T1, 0.9), Chunk("c2", T2, 0.4)),
                top_k=2,  # @ragtrace.retrieve(top_k=2), recorded as gen_ai.request.top_k
            ),
        ),
    )
    generation = next(r for r in records if r.name == "generate")
    # The SDK did not repeat the texts on the generation span; they came from the retrieval.
    assert semconv.context_document_content(0) not in generation.attributes


# --- hand-written ragtrace-shaped spans -------------------------------------------------------


def _ours(**over: object) -> list[SpanRecord]:
    retrieval = record(
        RET,
        parent=ROOT,
        name="retrieve",
        start=100,
        end=200,
        attributes={
            semconv.OPENINFERENCE_SPAN_KIND: "RETRIEVER",
            semconv.INPUT_VALUE: Q,
            semconv.RAGTRACE_QUERY_SHA256: "f" * 64,
            semconv.RAGTRACE_RETRIEVAL_COUNT: 3,
            **documents(
                "retrieval.documents", [("c1", T1, 0.9), ("c2", T2, 0.5), ("c3", None, 0.1)]
            ),
        },
    )
    # The SDK omits a context text the retrieval span already carries.
    generation = record(
        GEN,
        parent=ROOT,
        name="generate",
        start=300,
        end=900,
        attributes={
            semconv.OPENINFERENCE_SPAN_KIND: "LLM",
            semconv.OUTPUT_VALUE: "90 days.",
            semconv.GEN_AI_REQUEST_MODEL: "req-model",
            semconv.GEN_AI_RESPONSE_MODEL: "resp-model",
            semconv.RAGTRACE_CONTEXT_COUNT: 2,
            **documents("ragtrace.context.documents", [("c2", None, None), ("c9", "other", None)]),
            "user.tier": "gold",
        },
    )
    root = record(
        ROOT,
        name="rag.pipeline",
        start=50,
        end=1000,
        attributes={
            semconv.OPENINFERENCE_SPAN_KIND: "CHAIN",
            semconv.RAGTRACE_PIPELINE_NAME: "support",
            semconv.RAGTRACE_QUESTION_ID: "q7",
            "http.route": "/chat",
            "flags": (1, 2),
            "beta": True,
            semconv.INPUT_VALUE: "ignored",
        },
    )
    spans = {"retrieval": retrieval, "generation": generation, "root": root}
    spans.update(over)  # type: ignore[arg-type]
    return [s for s in spans.values() if s is not None]


def test_ragtrace_spans_full_view() -> None:
    rag = to_rag_trace(_ours())
    assert rag == RagTrace(
        trace_id=TRACE,
        service="support-bot",
        target_span_id=ROOT,
        pipeline="support",
        query=Q,
        query_sha256="f" * 64,
        question_id="q7",
        retrieved=(Chunk("c1", T1, 0.9), Chunk("c2", T2, 0.5), Chunk("c3", None, 0.1)),
        context=(Chunk("c2", T2, None), Chunk("c9", "other", None)),
        answer="90 days.",
        model="resp-model",
        attributes={"http.route": "/chat", "flags": "1,2", "beta": "true", "user.tier": "gold"},
        context_truncated=False,
        has_retrieval=True,
        has_generation=True,
        ended_ns=1000,
        retrieval_span_id=RET,
        generation_span_id=GEN,
        root_span_id=ROOT,
        context_source="generation",
        context_sources=("generation",),
        steps=(
            RetrievalStep(
                RET, Q, (Chunk("c1", T1, 0.9), Chunk("c2", T2, 0.5), Chunk("c3", None, 0.1))
            ),
        ),
    )


def test_without_root_the_generation_is_the_target_and_sha_is_computed() -> None:
    retrieval = dataclasses.replace(
        _ours()[0],
        attributes={
            k: v for k, v in _ours()[0].attributes.items() if k != semconv.RAGTRACE_QUERY_SHA256
        },
    )
    rag = to_rag_trace(_ours(root=None, retrieval=retrieval))
    assert rag is not None
    assert (rag.target_span_id, rag.pipeline, rag.question_id) == (GEN, None, None)
    assert rag.query_sha256 == question_sha256(Q)
    assert rag.attributes == {"user.tier": "gold"}
    assert rag.ended_ns == 900


def test_retrieval_only_targets_the_retrieval_span() -> None:
    rag = to_rag_trace(_ours(root=None, generation=None))
    assert rag is not None
    assert (rag.target_span_id, rag.has_generation, rag.answer, rag.model) == (
        RET,
        False,
        None,
        None,
    )
    assert rag.context == rag.retrieved


def test_model_falls_back_llm_model_name_first_then_response_then_request() -> None:
    gen = _ours()[1]
    with_llm = dataclasses.replace(
        gen, attributes={**gen.attributes, semconv.LLM_MODEL_NAME: "llm-name"}
    )
    assert to_rag_trace(_ours(generation=with_llm)).model == "llm-name"  # type: ignore[union-attr]
    only_req = dataclasses.replace(
        gen,
        attributes={k: v for k, v in gen.attributes.items() if k != semconv.GEN_AI_RESPONSE_MODEL},
    )
    assert to_rag_trace(_ours(generation=only_req)).model == "req-model"  # type: ignore[union-attr]


def test_explicit_empty_context_is_kept_empty() -> None:
    gen = record(
        GEN,
        parent=ROOT,
        attributes={semconv.OPENINFERENCE_SPAN_KIND: "LLM", semconv.RAGTRACE_CONTEXT_COUNT: 0},
    )
    assert context_chunks(gen) == []
    assert to_rag_trace(_ours(generation=gen)).context == ()  # type: ignore[union-attr]


def test_truncated_document_content_flags_the_trace() -> None:
    gen = _ours()[1]
    cut = dataclasses.replace(
        gen,
        attributes={
            **gen.attributes,
            semconv.RAGTRACE_TRUNCATED: ("ragtrace.context.documents.1.document.content",),
        },
    )
    assert to_rag_trace(_ours(generation=cut)).context_truncated is True  # type: ignore[union-attr]
    answer_cut = dataclasses.replace(
        gen, attributes={**gen.attributes, semconv.RAGTRACE_TRUNCATED: (semconv.OUTPUT_VALUE,)}
    )
    assert to_rag_trace(_ours(generation=answer_cut)).context_truncated is False  # type: ignore[union-attr]


def test_several_retrievals_concatenate_in_start_order_and_dedupe() -> None:
    second = record(
        "1111111111111111",
        parent=ROOT,
        name="retrieve",
        start=250,
        end=260,
        attributes={
            semconv.OPENINFERENCE_SPAN_KIND: "RETRIEVER",
            semconv.INPUT_VALUE: "rewritten query",
            **documents("retrieval.documents", [("c4", "four", 0.8), ("c3", "three", 0.7)]),
        },
    )
    first = record(
        "2222222222222222",
        parent=ROOT,
        name="retrieve",
        start=10,
        end=20,
        attributes={
            semconv.OPENINFERENCE_SPAN_KIND: "RETRIEVER",
            **documents("retrieval.documents", [("c0", "zero", None)]),
        },
    )
    rag = to_rag_trace([second, *_ours(), first])
    assert rag is not None
    # The duplicate c3 keeps its first rank and gains the text the later span carried.
    assert rag.retrieved == (
        Chunk("c0", "zero", None),
        Chunk("c1", T1, 0.9),
        Chunk("c2", T2, 0.5),
        Chunk("c3", "three", 0.1),
        Chunk("c4", "four", 0.8),
    )
    # Several steps: their queries are rewrites ("rewritten query"), the question is the
    # pipeline's input, hashed as such (a step's recorded hash is its sub-query's).
    assert [s.query for s in rag.steps] == [None, Q, "rewritten query"]
    assert rag.query == "ignored"
    assert rag.query_sha256 == question_sha256("ignored")


def test_one_retrieval_keeps_its_own_query_as_the_question() -> None:
    """A single retriever step's query is the question, whatever the root's input says."""
    rag = to_rag_trace(_ours())
    assert rag is not None
    assert rag.query == Q


# --- OpenInference ------------------------------------------------------------------------------

LI = "openinference.instrumentation.llama_index"


def _openinference() -> list[SpanRecord]:
    chain = record(
        ROOT,
        name="query",
        scope=LI,
        service="li-app",
        start=0,
        end=5000,
        attributes={
            semconv.OPENINFERENCE_SPAN_KIND: "CHAIN",
            semconv.INPUT_VALUE: Q,
            semconv.OUTPUT_VALUE: "90 days",
            "session.id": "s-1",
        },
    )
    inner_chain = record(
        "3333333333333333",
        parent=ROOT,
        name="synthesize",
        scope=LI,
        service="li-app",
        start=200,
        end=4900,
        attributes={semconv.OPENINFERENCE_SPAN_KIND: "CHAIN"},
    )
    retriever = record(
        RET,
        parent=ROOT,
        name="retrieve",
        scope=LI,
        service="li-app",
        start=10,
        end=150,
        attributes={
            semconv.OPENINFERENCE_SPAN_KIND: "RETRIEVER",
            semconv.INPUT_VALUE: Q,
            **documents("retrieval.documents", [("n1", T1, 0.8), ("n2", T2, 0.7)]),
        },
    )
    llm = record(
        GEN,
        parent="3333333333333333",
        name="llm",
        scope=LI,
        service="li-app",
        start=300,
        end=4800,
        attributes={
            semconv.OPENINFERENCE_SPAN_KIND: "LLM",
            semconv.OUTPUT_VALUE: "Audit logs are kept for 90 days.",
            semconv.LLM_MODEL_NAME: "gpt-x",
            "llm.input_messages.0.message.role": "user",
        },
    )
    return [chain, inner_chain, retriever, llm]


def test_openinference_trace_is_scored_without_our_decorators() -> None:
    rag = to_rag_trace(_openinference())
    assert rag == RagTrace(
        trace_id=TRACE,
        service="li-app",
        target_span_id=ROOT,
        pipeline="query",
        query=Q,
        query_sha256=question_sha256(Q),
        question_id=None,
        retrieved=(Chunk("n1", T1, 0.8), Chunk("n2", T2, 0.7)),
        context=(Chunk("n1", T1, 0.8), Chunk("n2", T2, 0.7)),
        answer="Audit logs are kept for 90 days.",
        model="gpt-x",
        attributes={"session.id": "s-1"},
        context_truncated=False,
        has_retrieval=True,
        has_generation=True,
        ended_ns=5000,
        retrieval_span_id=RET,
        generation_span_id=GEN,
        root_span_id=ROOT,
        context_source="retrieved",
        context_sources=("retrieved",),
        session_id="s-1",
        steps=(RetrievalStep(RET, Q, (Chunk("n1", T1, 0.8), Chunk("n2", T2, 0.7))),),
    )


def test_openinference_documents_without_ids_get_content_ids() -> None:
    span = record(
        RET,
        scope="openinference.instrumentation.langchain",
        attributes={
            semconv.OPENINFERENCE_SPAN_KIND: "RETRIEVER",
            "retrieval.documents.0.document.content": "text one",
            "retrieval.documents.1.document.score": 0.3,
        },
    )
    digest = hashlib.sha256(b"text one").hexdigest()[:16]
    # The second document has neither ID nor content: nothing to keep. The content ID is
    # marked, so recall against gold IDs is reported n/a with a reason instead of 0.0.
    assert retrieved_chunks(span) == [Chunk(f"sha256:{digest}", "text one", None, hashed=True)]
    rag = to_rag_trace([span])
    assert rag is not None and rag.recall_na_reason is not None
    assert rag.recall_na_reason.startswith("1 of 1 retrieved chunks carry no ID")


def test_the_last_ending_llm_span_gives_the_answer() -> None:
    spans = _openinference()
    condense = record(
        "4444444444444444",
        parent=ROOT,
        name="condense",
        scope=LI,
        service="li-app",
        start=1,
        end=9,
        attributes={
            semconv.OPENINFERENCE_SPAN_KIND: "LLM",
            semconv.OUTPUT_VALUE: "standalone question",
        },
    )
    rag = to_rag_trace([*spans, condense])
    assert rag is not None and rag.answer == "Audit logs are kept for 90 days."


def test_ours_win_over_openinference_for_the_same_role() -> None:
    ours = _ours(root=None)
    oi = _openinference()[2:]  # retriever + llm
    rag = to_rag_trace([*oi, *ours])
    assert rag is not None
    assert [c.id for c in rag.retrieved] == ["c1", "c2", "c3"]
    assert rag.answer == "90 days."


def test_genai_retrieval_span_fallbacks() -> None:
    span = record(
        RET,
        scope="some.genai.lib",
        attributes={
            semconv.GEN_AI_OPERATION_NAME: "retrieval",
            semconv.GEN_AI_RETRIEVAL_QUERY_TEXT: Q,
            semconv.GEN_AI_RETRIEVAL_DOCUMENTS: '[{"id": "d1", "score": 0.5}, {"id": "d2"}, 3]',
        },
    )
    assert role_of(span) is Role.RETRIEVAL
    rag = to_rag_trace([span])
    assert rag is not None
    assert rag.retrieved == (Chunk("d1", None, 0.5), Chunk("d2", None, None))
    assert rag.query == Q


# --- what is not a RAG span ---------------------------------------------------------------------


def test_evaluation_spans_are_never_rag_spans() -> None:
    by_scope = record(
        "5555555555555555",
        scope=semconv.EVALUATION_SCOPE,
        attributes={semconv.OPENINFERENCE_SPAN_KIND: "EVALUATOR"},
    )
    by_marker = record(
        "6666666666666666",
        scope="ragtrace",
        attributes={
            semconv.EVAL_MARKER: True,
            semconv.OPENINFERENCE_SPAN_KIND: "LLM",
            semconv.OUTPUT_VALUE: "x",
        },
    )
    assert is_evaluation_span(by_scope) and is_evaluation_span(by_marker)
    assert role_of(by_scope) is None and role_of(by_marker) is None
    assert to_rag_trace([by_scope, by_marker]) is None
    assert to_rag_trace([]) is None


def test_plain_spans_are_not_rag_spans() -> None:
    http = record(
        ROOT, scope="opentelemetry.instrumentation.fastapi", attributes={"http.route": "/chat"}
    )
    assert not is_rag_span(http)
    assert to_rag_trace([http]) is None
    pipeline_only = record(
        ROOT, name="rag.pipeline", attributes={semconv.OPENINFERENCE_SPAN_KIND: "CHAIN"}
    )
    assert to_rag_trace([pipeline_only]) is None


@pytest.mark.parametrize(
    ("name", "attributes", "role"),
    [
        ("retrieve", {}, Role.RETRIEVAL),
        ("generate", {}, Role.GENERATION),
        ("rag.pipeline", {}, Role.PIPELINE),
        ("custom", {semconv.RAGTRACE_CONTEXT_COUNT: 1}, Role.GENERATION),
        ("custom", {semconv.RAGTRACE_RETRIEVAL_COUNT: 1}, Role.RETRIEVAL),
        ("custom", {}, Role.PIPELINE),
    ],
)
def test_our_spans_without_a_kind_fall_back_to_name_and_attributes(name, attributes, role) -> None:  # type: ignore[no-untyped-def]
    assert role_of(record(RET, name=name, attributes=attributes)) is role


def test_user_attributes_skip_rag_namespaces() -> None:
    span = record(
        ROOT,
        attributes={
            "tenant": "acme",
            "n": 3,
            "x": 1.5,
            "ok": False,
            "tags": ("a", "b"),
            "ragtrace.version": "1",
            "input.value": "q",
            "output.value": "a",
            "llm.model_name": "m",
            "gen_ai.request.model": "m",
            "retrieval.documents.0.document.id": "c",
            "openinference.span.kind": "CHAIN",
            "metadata": "{}",
            "code.function": "f",
        },
    )
    assert user_attributes(span) == {
        "tenant": "acme",
        "n": "3",
        "x": "1.5",
        "ok": "false",
        "tags": "a,b",
    }
