"""LangChain's serialised objects as OpenInference records them: what a tool returned, and the
user's question in a LangGraph agent's input.

openinference-instrumentation-langchain records a tool span's ``output.value`` as the
serialised ``ToolMessage`` the tool produced: ``{"type": "tool", "data": {"content": …,
"artifact": …, "tool_call_id": …}}`` (or LangChain's constructor form ``{"lc": 1, "kwargs":
{…}}``). A retrieval tool written as LangChain's RAG tutorial writes it
(``@tool(response_format="content_and_artifact")``) returns the passages serialised for the
model as ``content`` and the ``Document``s — each with its own ``id`` — as ``artifact``: the
artifact is the ranked list, the content only its text.

A LangGraph agent (``create_react_agent``, any ``MessagesState`` graph) is invoked with
``{"messages": [...]}``: the graph's root span has no question of its own, only that input,
whose last user message is the question this invocation asks (earlier turns live in the
checkpointer, or precede it in the list).
"""

from __future__ import annotations

from collections.abc import Mapping

from ragtrace_consumers.readers.chunks import looks_like_chunks

__all__ = ["messages_question", "tool_message_result"]


def _fields(value: Mapping[str, object]) -> Mapping[str, object] | None:
    """The fields of a serialised ``ToolMessage``, or None for anything else."""
    data = value.get("data")
    if value.get("type") == "tool" and isinstance(data, Mapping):
        return data
    kwargs = value.get("kwargs")
    ident = value.get("id")
    if (
        isinstance(kwargs, Mapping)
        and isinstance(ident, list)
        and ident
        and ident[-1] == "ToolMessage"
    ):
        return kwargs
    return None


def tool_message_result(value: object) -> object:
    """A tool's result: a serialised ``ToolMessage``'s artifact when it holds documents, else
    its content; any other value unchanged."""
    if not isinstance(value, Mapping):
        return value
    fields = _fields(value)
    if fields is None:
        return value
    artifact = fields.get("artifact")
    return artifact if looks_like_chunks(artifact) else fields.get("content")


_USER_ROLES = ("user", "human")


def _role_and_text(message: object) -> tuple[str, object]:
    """A message's role and content: OpenAI-style ``{"role", "content"}``, LangChain's
    ``{"type": "human", "data": {"content": …}}``, or its constructor form."""
    if not isinstance(message, Mapping):
        return "", None
    if "role" in message:
        return str(message["role"]), message.get("content")
    data = message.get("data", message.get("kwargs"))
    kind = message.get("type")
    if kind == "constructor" and isinstance(data, Mapping):
        kind = data.get("type")
    content = data.get("content") if isinstance(data, Mapping) else message.get("content")
    return str(kind or ""), content


def messages_question(value: object) -> str | None:
    """The question of a graph input ``{"messages": [...]}``: the text of its last user
    message; None for any other value."""
    if not isinstance(value, Mapping) or not isinstance(value.get("messages"), list):
        return None
    for message in reversed(value["messages"]):
        role, content = _role_and_text(message)
        if role.lower() in _USER_ROLES:
            return content if isinstance(content, str) and content.strip() else None
    return None
