"""LangChain's serialised messages: a ToolMessage's result, a LangGraph input's question."""

from __future__ import annotations

from ragtrace_consumers.readers.langchain_json import messages_question, tool_message_result

_DOCS = [
    {
        "id": "doc-audit",
        "metadata": {"source": "help-centre/audit.md"},
        "page_content": "Audit logs are kept for 90 days.",
        "type": "Document",
    }
]


def test_a_tool_message_gives_its_artifact_documents() -> None:
    message = {"type": "tool", "data": {"content": "Source: …", "artifact": _DOCS}}
    assert tool_message_result(message) == _DOCS


def test_a_tool_message_without_documents_gives_its_content() -> None:
    plain = {"type": "tool", "data": {"content": "42", "artifact": None}}
    odd = {"type": "tool", "data": {"content": "42", "artifact": {"rows": 3}}}
    assert tool_message_result(plain) == "42"
    assert tool_message_result(odd) == "42"


def test_the_constructor_form_of_a_tool_message_is_read_too() -> None:
    message = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "ToolMessage"],
        "kwargs": {"content": "Source: …", "artifact": _DOCS},
    }
    assert tool_message_result(message) == _DOCS


def test_any_other_result_is_unchanged() -> None:
    other = {"type": "weather", "data": {"temp": 21}}
    assert tool_message_result(other) is other
    assert tool_message_result(_DOCS) is _DOCS
    assert tool_message_result("text") == "text"


def test_a_graph_input_asks_its_last_user_message() -> None:
    value = {
        "messages": [
            {"role": "user", "content": "What does the Team plan cost?"},
            {"role": "assistant", "content": "20 dollars per seat."},
            {"role": "user", "content": "And how long are audit logs kept?"},
        ]
    }
    assert messages_question(value) == "And how long are audit logs kept?"


def test_langchain_serialised_messages_are_read() -> None:
    human = {"type": "human", "data": {"content": "How long are audit logs kept?"}}
    ai = {"type": "ai", "data": {"content": ""}}
    assert messages_question({"messages": [human, ai]}) == "How long are audit logs kept?"
    built = {"lc": 1, "type": "constructor", "kwargs": {"type": "human", "content": "Q?"}}
    assert messages_question({"messages": [built]}) == "Q?"


def test_no_user_message_no_question() -> None:
    assert messages_question({"messages": [{"role": "system", "content": "Be brief."}]}) is None
    assert messages_question({"messages": "not a list"}) is None
    assert messages_question({"question": "Q?"}) is None
