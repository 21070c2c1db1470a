"""An answer and its evidence on hand-built agent spans: retrieval steps from tool calls
(GenAI ``execute_tool``, OpenInference ``TOOL``), the user's question over a sub-query, and
the context the model was given (tool results, system-message context) with its sources."""

from __future__ import annotations

import json

from ragtrace.evaluation.attribution import Cell, Thresholds
from ragtrace.evaluation.judges import LexicalJudge
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace.evaluation.retrieval import RecallDefinition
from ragtrace_consumers.model import RagTrace, SpanRecord
from ragtrace_consumers.readers import SpanReaders, to_rag_trace
from ragtrace_consumers.scoring.scores import combine, score_retrieval

TRACE = "1" * 32
Q = "How long are audit logs kept?"
AUDIT = "Audit logs are kept for 90 days."
PRICING = "The Team plan costs 20 dollars per seat."
REGIONS = "Workspace data can be hosted in the EU or the US."


def span(span_id: str, name: str, attributes: dict[str, object], start: int) -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE,
        span_id=span_id * 16,
        parent_span_id="a" * 16,
        name=name,
        scope="pydantic-ai",
        service="app",
        start_ns=start,
        end_ns=start + 1,
        attributes=attributes,  # type: ignore[arg-type]
    )


def docs(*pairs: tuple[str, str]) -> list[dict[str, object]]:
    return [{"id": i, "text": t, "score": 0.5} for i, t in pairs]


def tool(span_id: str, name: str, query: str, result: object, start: int) -> SpanRecord:
    return span(
        span_id,
        f"execute_tool {name}",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.arguments": json.dumps({"query": query}),
            "gen_ai.tool.call.result": result if isinstance(result, str) else json.dumps(result),
        },
        start,
    )


def chat(
    span_id: str, messages: list[dict[str, object]], answer: str, start: int, **more: str
) -> SpanRecord:
    out = [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
    return span(
        span_id,
        "chat gpt-test",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(messages),
            "gen_ai.output.messages": json.dumps(out),
            **more,
        },
        start,
    )


def text(role: str, content: str) -> dict[str, object]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def response(call_id: str, result: object) -> dict[str, object]:
    return {
        "role": "user",
        "parts": [{"type": "tool_call_response", "id": call_id, "result": result}],
    }


def agent_trace(answer: str = AUDIT) -> list[SpanRecord]:
    first = docs(("doc-audit", AUDIT), ("doc-pricing", PRICING))
    second = docs(("doc-pricing", PRICING), ("doc-regions", REGIONS))
    messages = [
        text("user", Q),
        response("call_1", first),
        response("call_2", "42"),
        response("call_3", second),
    ]
    return [
        span("e", "invoke_agent agent", {"gen_ai.operation.name": "invoke_agent"}, 1),
        tool("b", "search_docs", "audit log retention", first, 3),
        tool("c", "calculator", "6 * 7", "42", 4),
        tool("d", "search_docs", "data regions", second, 5),
        chat(
            "f",
            messages,
            answer,
            7,
            **{
                "gen_ai.system_instructions": json.dumps(
                    [
                        {
                            "type": "text",
                            "content": "You are a support bot. Answer only from the search results.",
                        }
                    ]
                )
            },
        ),
    ]


def test_each_tool_call_that_returned_documents_is_a_step_in_start_order() -> None:
    trace = to_rag_trace(agent_trace())
    assert trace is not None
    # the calculator returned no documents: no step
    assert [(s.span_id[0], s.tool, s.query, [c.id for c in s.chunks]) for s in trace.steps] == [
        ("b", "search_docs", "audit log retention", ["doc-audit", "doc-pricing"]),
        ("d", "search_docs", "data regions", ["doc-pricing", "doc-regions"]),
    ]
    assert [s.kind for s in trace.steps] == ["tool", "tool"]
    assert [c.id for c in trace.retrieved] == ["doc-audit", "doc-pricing", "doc-regions"]
    assert trace.retrieval_span_id == "b" * 16
    # the user's question, not the first search's sub-query
    assert trace.query == Q
    # the calculator's result was given to the model too; the instructions are no evidence
    assert [c.id for c in trace.context] == [
        "doc-audit",
        "doc-pricing",
        "doc-regions",
        "tool_result.call_2",
    ]
    assert trace.context_sources == ("tool_result",) and trace.context_source == "tool_result"


def _scored(trace: RagTrace, gold: set[str], k: int = 1) -> tuple[float, float | None, Cell]:
    question = LabelledQuestion("q", Q, frozenset(gold))
    r = score_retrieval(trace, question, "query_text", "v1", k, RecallDefinition.MEAN_RECALL)
    assert trace.answer is not None
    g = LexicalJudge().groundedness(trace.answer, [c.text or "" for c in trace.context])
    scores = combine(trace, r, g, Thresholds())
    assert scores is not None
    return r.scores.recall, g.score, scores.cell


def test_recall_pools_each_steps_top_k_and_each_step_keeps_its_own() -> None:
    trace = to_rag_trace(agent_trace())
    assert trace is not None
    question = LabelledQuestion("q", Q, frozenset({"doc-audit", "doc-regions"}))
    r = score_retrieval(trace, question, "query_text", "v1", 1, RecallDefinition.MEAN_RECALL)
    # top 1 of each search: audit, pricing — the regions passage is rank 2 of the second
    assert r.scores.recall == 0.5 and r.step_recall == (0.5, 0.0)
    assert _scored(trace, {"doc-audit", "doc-regions"}, k=2) == (1.0, 1.0, Cell.FINE)


def test_a_configured_retrieval_tool_is_a_step_whatever_it_returns() -> None:
    formatted = tool("b", "kb_lookup", Q, f"[doc-audit] {AUDIT}", 3)
    spans = [
        formatted,
        chat("f", [text("user", Q), response("call_1", f"[doc-audit] {AUDIT}")], AUDIT, 7),
    ]
    plain = to_rag_trace(spans)
    assert plain is not None and plain.steps == () and not plain.has_retrieval
    configured = to_rag_trace(spans, SpanReaders.build(retrieval_tools=["kb_lookup"]))
    assert configured is not None
    (step,) = configured.steps
    assert step.tool == "kb_lookup" and step.query == Q
    assert [c.text for c in step.chunks] == [f"[doc-audit] {AUDIT}"]
    # its text is the context; its ID a content hash, so recall is n/a, never 0.0
    assert configured.recall_na_reason is not None


def test_context_only_in_the_system_instructions_is_grounded_and_lands_in_its_cell() -> None:
    """The documents carry IDs only (GenAI content is opt-in) and the app put the passages in
    the system instructions: a faithful answer is grounded."""
    retrieval = span(
        "b",
        "retrieval docs",
        {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.retrieval.query.text": Q,
            "gen_ai.retrieval.documents": json.dumps(
                [{"id": "doc-audit", "score": 0.9}, {"id": "doc-pricing", "score": 0.4}]
            ),
        },
        2,
    )
    system = f"Answer using only the context below.\n\nContext:\n[doc-audit] {AUDIT}\n[doc-pricing] {PRICING}"
    spans = [retrieval, chat("f", [text("system", system), text("user", Q)], AUDIT, 7)]
    trace = to_rag_trace(spans)
    assert trace is not None
    assert trace.context_sources == ("generation_input", "system_instructions")
    assert [(c.id, c.text) for c in trace.context] == [
        ("input.message.1", Q),
        ("instructions.0", f"Context:\n[doc-audit] {AUDIT}\n[doc-pricing] {PRICING}"),
    ]
    assert _scored(trace, {"doc-audit"}) == (1.0, 1.0, Cell.FINE)
    assert _scored(trace, {"doc-regions"}) == (0.0, 1.0, Cell.RETRIEVAL_FAILED)
    # the same through gen_ai.system_instructions (MLflow's GenAI export, Pydantic AI)
    instructions = json.dumps([{"type": "text", "content": system}])
    via = to_rag_trace(
        [
            retrieval,
            chat("f", [text("user", Q)], AUDIT, 7, **{"gen_ai.system_instructions": instructions}),
        ]
    )
    assert via is not None and [c.text for c in via.context] == [c.text for c in trace.context]


def test_a_system_message_is_the_context_of_an_answer_without_retrieval_only_when_configured() -> (
    None
):
    """No retrieval step, no listed documents, no tool results (MLflow's GenAI export drops the
    retriever span): by default the system message is not evidence, so a plain chat app is
    never judged against its own system prompt; ``mapping.system_context`` makes it so."""
    system = f"Answer using only the context below.\n\nContext:\n[doc-audit] {AUDIT}"
    spans = [chat("f", [text("system", system), text("user", Q)], AUDIT, 7)]
    unconfigured = to_rag_trace(spans)
    assert unconfigured is not None
    assert (unconfigured.context, unconfigured.context_sources) == ((), ())
    configured = to_rag_trace(spans, SpanReaders.build(system_context=True))
    assert configured is not None
    assert configured.context_sources == ("system_instructions",)
    assert [(c.id, c.text) for c in configured.context] == [
        ("instructions.0", f"Context:\n[doc-audit] {AUDIT}"),
    ]
    # an instructions-only system prompt stays no evidence, configured or not
    persona = [
        chat("f", [text("system", "You are a helpful assistant."), text("user", Q)], AUDIT, 7)
    ]
    bare = to_rag_trace(persona, SpanReaders.build(system_context=True))
    assert bare is not None and (bare.context, bare.context_sources) == ((), ())


def test_openinference_tool_spans_are_steps_and_a_tool_message_is_a_tool_result() -> None:
    tool_span = span(
        "b",
        "search_docs",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "search_docs",
            "input.value": json.dumps({"query": "audit retention"}),
            "output.value": json.dumps(docs(("doc-audit", AUDIT))),
        },
        3,
    )
    other = span(
        "c",
        "get_weather",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "input.value": '{"city": "Paris"}',
            "output.value": '{"temperature": 21}',
        },
        4,
    )
    llm = span(
        "f",
        "ChatOpenAI",
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": Q,
            "llm.input_messages.1.message.role": "tool",
            "llm.input_messages.1.message.content": json.dumps(docs(("doc-audit", AUDIT))),
            "output.value": AUDIT,
        },
        7,
    )
    trace = to_rag_trace([tool_span, other, llm])
    assert trace is not None
    (step,) = trace.steps
    assert (step.tool, step.query, [c.id for c in step.chunks]) == (
        "search_docs",
        "audit retention",
        ["doc-audit"],
    )
    assert [c.id for c in trace.context] == ["doc-audit"]
    assert trace.context_sources == ("tool_result",)


def test_a_single_plain_retriever_keeps_its_query_as_the_question() -> None:
    retrieval = span(
        "b",
        "retrieval docs",
        {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.retrieval.query.text": Q,
            "gen_ai.retrieval.documents": json.dumps(docs(("doc-audit", AUDIT))),
        },
        2,
    )
    trace = to_rag_trace([retrieval, chat("f", [text("user", f"Context: {AUDIT}\n{Q}")], AUDIT, 7)])
    assert trace is not None and trace.query == Q
    assert [(s.kind, s.query) for s in trace.steps] == [("retriever", Q)]
    assert trace.context_sources == ("retrieved",)


def test_pydantic_ai_instrumentation_version_2_tool_attributes_are_read() -> None:
    """Pydantic AI's deprecated instrumentation version 2 names a tool's content
    ``tool_arguments`` / ``tool_response`` on its ``running tool`` span."""
    result = docs(("doc-audit", AUDIT))
    v2 = span(
        "b",
        "running tool",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "search_docs",
            "tool_arguments": json.dumps({"query": "audit retention"}),
            "tool_response": json.dumps(result),
        },
        3,
    )
    trace = to_rag_trace([v2, chat("f", [text("user", Q), response("call_1", result)], AUDIT, 7)])
    assert trace is not None
    assert [(s.tool, s.query, [c.id for c in s.chunks]) for s in trace.steps] == [
        ("search_docs", "audit retention", ["doc-audit"])
    ]
