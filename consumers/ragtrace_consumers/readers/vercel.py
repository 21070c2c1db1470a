"""The Vercel AI SDK's own telemetry (``ai`` 5 and 6 with ``experimental_telemetry: {isEnabled:
true}``; ``ai`` 7's ``LegacyOpenTelemetry``): spans of the tracer ``ai`` marked by
``ai.operationId``.

* ``ai.generateText`` / ``ai.streamText`` / ``ai.generateObject`` / ``ai.streamObject`` (the
  call the app makes) is the pipeline; its question is ``ai.prompt``'s ``prompt`` (a string),
  else the text of the last user message of its ``messages``.
* ``ai.generateText.doGenerate`` / ``ai.streamText.doStream`` (one model call per step) is a
  generation: ``ai.prompt.messages`` (the model's input: its system messages as instructions,
  user messages, tool results), ``ai.response.text`` (absent on a step that only calls tools),
  ``ai.response.model`` else ``ai.model.id``, ``ai.response.id``. A step whose
  ``ai.response.finishReason`` is ``tool-calls`` is an agent's intermediate step: it
  ``continues``, with no answer.
* ``ai.toolCall`` is a tool call (:meth:`~ragtrace_consumers.readers._reading.DocumentReader.tool_call`):
  a retrieval step when its ``ai.toolCall.result`` holds chunk-like items or the tool
  (``ai.toolCall.name``) is a configured retrieval tool, its query from ``ai.toolCall.args``.
  Any other tool call, and every other ``ai.*`` operation (embed, …), is recognised and ignored.

``ai`` 7's default telemetry (``@ai-sdk/otel``'s ``OpenTelemetry``) follows the GenAI semantic
conventions instead (``chat``, ``execute_tool`` spans) and is read by
:mod:`~ragtrace_consumers.readers.genai`. A session is ``ai.telemetry.metadata.sessionId``
(:data:`SESSION_ID`), read with the other sessions' keys by :mod:`~ragtrace_consumers.readers.view`.
"""

from __future__ import annotations

from collections.abc import Mapping

from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.readers._reading import (
    DocumentReader,
    Role,
    SpanReading,
    asks_for_tools,
    instruction_chunks,
    json_or_none,
    prompt_chunks,
    text_attr,
)
from ragtrace_consumers.readers.answers import unwrap
from ragtrace_consumers.readers.tool_results import message_tool_results

__all__ = ["OPERATION_ID", "SESSION_ID", "VercelReader"]

OPERATION_ID = "ai.operationId"
SESSION_ID = "ai.telemetry.metadata.sessionId"
"""The session key the AI SDK's docs use in ``experimental_telemetry.metadata``."""

TOOL_RESULT = "ai.toolCall.result"
TOOL_ARGS = "ai.toolCall.args"
TOOL_NAME = "ai.toolCall.name"
PROMPT_MESSAGES = "ai.prompt.messages"
RESPONSE_TEXT = "ai.response.text"
RESPONSE_MODEL = "ai.response.model"
MODEL_ID = "ai.model.id"
RESPONSE_ID = "ai.response.id"
FINISH_REASON = "ai.response.finishReason"
PROMPT = "ai.prompt"

_CALLS = frozenset({"ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"})
_MODEL_CALLS = frozenset(
    {
        "ai.generateText.doGenerate",
        "ai.streamText.doStream",
        "ai.generateObject.doGenerate",
        "ai.streamObject.doStream",
    }
)
_TOOL_CALL = "ai.toolCall"
_INSTRUCTION_ROLES = frozenset({"system", "developer"})


def _messages(raw: object) -> list[tuple[str, str]]:
    """``(role, text)`` of each message with text (a string, or its ``text`` parts joined)."""
    out: list[tuple[str, str]] = []
    for m in raw if isinstance(raw, list) else ():
        if isinstance(m, Mapping):
            found = unwrap([m])
            if found:
                out.append((str(m.get("role", "")), found))
    return out


def _tool_results(raw: object) -> list[dict[str, object]]:
    """The ``tool-result`` parts of the messages as GenAI ``tool_call_response`` parts (its
    output ``{"type": "json" | "text", "value"}`` in ai 5 and 6, the bare value before), for
    :func:`~ragtrace_consumers.readers.tool_results.message_tool_results`."""
    parts: list[dict[str, object]] = []
    for m in raw if isinstance(raw, list) else ():
        content = m.get("content") if isinstance(m, Mapping) else None
        for part in content if isinstance(content, list) else ():
            if isinstance(part, Mapping) and part.get("type") == "tool-result":
                output = part.get("output", part.get("result"))
                if isinstance(output, Mapping) and "value" in output:
                    output = output["value"]
                parts.append(
                    {"type": "tool_call_response", "id": part.get("toolCallId"), "response": output}
                )
    return [{"role": "tool", "parts": parts}] if parts else []


def _question(prompt: object) -> str | None:
    """``ai.prompt``'s question: its ``prompt`` string, else the last user message's text."""
    if not isinstance(prompt, Mapping):
        return None
    if isinstance(prompt.get("prompt"), str):
        return str(prompt["prompt"])
    users = [text for role, text in _messages(prompt.get("messages")) if role == "user"]
    return users[-1] if users else None


class VercelReader(DocumentReader):
    name = "vercel_ai"

    def read(self, span: SpanRecord) -> SpanReading | None:
        attrs = span.attributes
        operation = text_attr(attrs, OPERATION_ID)
        if operation is None or not operation.startswith("ai."):
            return None
        if operation == _TOOL_CALL:
            return self.tool_call(
                text_attr(attrs, TOOL_NAME),
                text_attr(attrs, TOOL_ARGS),
                text_attr(attrs, TOOL_RESULT),
            )
        if operation in _MODEL_CALLS:
            raw = json_or_none(text_attr(attrs, PROMPT_MESSAGES))
            messages = _messages(raw)
            users = [text for role, text in messages if role == "user"]
            continues = asks_for_tools(text_attr(attrs, FINISH_REASON))
            return SpanReading(
                self.name,
                Role.GENERATION,
                query=users[-1] if users else None,
                prompt=prompt_chunks(messages),
                answer=None if continues else text_attr(attrs, RESPONSE_TEXT),
                model=text_attr(attrs, RESPONSE_MODEL) or text_attr(attrs, MODEL_ID),
                response_id=text_attr(attrs, RESPONSE_ID),
                instructions=instruction_chunks(
                    [text for role, text in messages if role in _INSTRUCTION_ROLES]
                ),
                tool_results=message_tool_results(_tool_results(raw), self._keys),
                continues=continues,
            )
        if operation in _CALLS:
            return self.pipeline(_question(json_or_none(text_attr(attrs, PROMPT))))
        return self.ignored()
