"""An agent's model calls as read: one that only asked for tool calls ``continues`` (no answer,
and no problem), the answering call asks the conversation's last user message, and in an
agent's trace the question is never a retrieval's sub-query."""

from __future__ import annotations

import json

from ragtrace import semconv
from ragtrace_consumers.model import AttributeValue
from ragtrace_consumers.readers import default_readers, to_rag_trace
from tests.unit.consumers.ingestion_spans import GEN, RET, ROOT, record

TOOL_TURN = "1111111111111111"
SCOPE = "openinference.instrumentation.openai_agents"
KIND = semconv.OPENINFERENCE_SPAN_KIND


def _tool_turn() -> dict[str, AttributeValue]:
    call = "llm.output_messages.0.message.tool_calls.0.tool_call."
    return {
        KIND: "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "How long are audit logs kept?",
        "llm.output_messages.0.message.role": "assistant",
        f"{call}id": "call_1",
        f"{call}function.name": "search",
        f"{call}function.arguments": json.dumps({"query": "audit log retention"}),
    }


def test_a_tool_call_turn_continues_and_an_answer_does_not() -> None:
    turn = default_readers().read(
        record(TOOL_TURN, parent=ROOT, scope=SCOPE, attributes=_tool_turn())
    )
    assert turn is not None and turn.continues
    assert (turn.answer, turn.answer_problem) == (None, None)
    answered = {**_tool_turn(), "llm.output_messages.0.message.content": "90 days."}
    final = default_readers().read(record(GEN, parent=ROOT, scope=SCOPE, attributes=answered))
    assert final is not None and not final.continues and final.answer == "90 days."


def test_an_agents_answering_call_asks_its_last_user_message() -> None:
    """The conversation's earlier turn precedes the question; a call given no tool results
    (a chain's prompt) asks nothing."""
    history = {
        KIND: "LLM",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "Answer from the search results only.",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": "What does the Team plan cost?",
        "llm.input_messages.2.message.role": "assistant",
        "llm.input_messages.2.message.content": "20 dollars per seat.",
        "llm.input_messages.3.message.role": "user",
        "llm.input_messages.3.message.content": "And how long are audit logs kept?",
        "llm.output_messages.0.message.content": "90 days.",
    }
    chain = default_readers().read(record(GEN, parent=ROOT, scope=SCOPE, attributes=history))
    assert chain is not None and chain.query is None
    history["llm.input_messages.4.message.role"] = "tool"
    history["llm.input_messages.4.message.content"] = "Audit logs are kept for 90 days."
    agent = default_readers().read(record(GEN, parent=ROOT, scope=SCOPE, attributes=history))
    assert agent is not None and agent.query == "And how long are audit logs kept?"


def test_an_agents_question_is_not_its_retrievals_sub_query() -> None:
    """A retriever the model called (a tool-call turn precedes it) searched the model's
    sub-query; the question is the root's (a LangGraph input's last user message)."""
    question = "How long are audit logs kept?"
    root = {
        KIND: "CHAIN",
        "input.value": json.dumps({"messages": [{"role": "user", "content": question}]}),
        "input.mime_type": "application/json",
    }
    docs = {
        KIND: "RETRIEVER",
        "input.value": "audit log retention",
        "retrieval.documents.0.document.id": "c-1",
        "retrieval.documents.0.document.content": "Audit logs are kept for 90 days.",
    }
    answer = {KIND: "LLM", "llm.output_messages.0.message.content": "90 days."}
    spans = [
        record(ROOT, scope=SCOPE, attributes=root, start=0, end=9),
        record(TOOL_TURN, parent=ROOT, scope=SCOPE, attributes=_tool_turn(), start=1, end=2),
        record(RET, parent=ROOT, scope=SCOPE, attributes=docs, start=3, end=4),
        record(GEN, parent=ROOT, scope=SCOPE, attributes=answer, start=5, end=6),
    ]
    trace = to_rag_trace(spans)
    assert trace is not None and trace.query == question
    chain = to_rag_trace([s for s in spans if s.span_id != TOOL_TURN])
    assert chain is not None and chain.query == "audit log retention"
