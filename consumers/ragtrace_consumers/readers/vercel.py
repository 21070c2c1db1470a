"""The Vercel AI SDK's own telemetry (``ai`` 5 and 6 with ``experimental_telemetry: {isEnabled:
true}``; ``ai`` 7's ``LegacyOpenTelemetry``): spans of the tracer ``ai`` marked by
``ai.operationId``.

* ``ai.generateText`` / ``ai.streamText`` / ``ai.generateObject`` / ``ai.streamObject`` (the
  call the app makes) is the pipeline; its question is ``ai.prompt``'s ``prompt`` (a string),
  else the text of the last user message of its ``messages``.
* ``ai.generateText.doGenerate`` / ``ai.streamText.doStream`` (one model call per step) is a
  generation: ``ai.prompt.messages`` (the model's input: system, user, assistant tool calls and
  tool results), ``ai.response.text`` (absent on a step that only calls tools),
  ``ai.response.model`` else ``ai.model.id``, ``ai.response.id``.
* ``ai.toolCall`` is a retrieval step when its ``ai.toolCall.result`` (JSON) holds chunk-like
  items (:func:`~ragtrace_consumers.readers.chunks.looks_like_chunks`: a list, or one under
  ``documents``/``results``/… of an object); the step's query is its ``ai.toolCall.args``'
  query argument (:func:`~ragtrace_consumers.readers._reading.query_in`). Any other tool call,
  and every other ``ai.*`` operation (embed, …), is recognised and ignored.

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
    json_or_none,
    prompt_chunks,
    query_in,
    text_attr,
)
from ragtrace_consumers.readers.answers import unwrap
from ragtrace_consumers.readers.chunks import looks_like_chunks

__all__ = ["OPERATION_ID", "SESSION_ID", "VercelReader"]

OPERATION_ID = "ai.operationId"
SESSION_ID = "ai.telemetry.metadata.sessionId"
"""The session key the AI SDK's docs use in ``experimental_telemetry.metadata``."""

TOOL_RESULT = "ai.toolCall.result"
TOOL_ARGS = "ai.toolCall.args"
PROMPT_MESSAGES = "ai.prompt.messages"
RESPONSE_TEXT = "ai.response.text"
RESPONSE_MODEL = "ai.response.model"
MODEL_ID = "ai.model.id"
RESPONSE_ID = "ai.response.id"
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
_LISTS = ("documents", "docs", "results", "chunks", "nodes", "output", "outputs")


def _messages(raw: object) -> list[tuple[str, str]]:
    """``(role, text)`` of each message with text. A message's content is a string or a list
    of parts: ``text`` parts are joined; a ``tool-result`` part's output (``{"type": "json" |
    "text", "value"}`` in ai 5 and 6, the bare value before) as its JSON text."""
    import json

    out: list[tuple[str, str]] = []
    for m in raw if isinstance(raw, list) else ():
        if not isinstance(m, Mapping):
            continue
        role, content = str(m.get("role", "")), m.get("content")
        if isinstance(content, list) and any(
            isinstance(p, Mapping) and p.get("type") == "tool-result" for p in content
        ):
            for part in content:
                if isinstance(part, Mapping) and part.get("type") == "tool-result":
                    output = part.get("output", part.get("result"))
                    if isinstance(output, Mapping) and "value" in output:
                        output = output["value"]
                    out.append((role, output if isinstance(output, str) else json.dumps(output)))
            continue
        found = unwrap([m])
        if found:
            out.append((role, found))
    return out


def _question(prompt: object) -> str | None:
    """``ai.prompt``'s question: its ``prompt`` string, else the last user message's text."""
    if not isinstance(prompt, Mapping):
        return None
    if isinstance(prompt.get("prompt"), str):
        return str(prompt["prompt"])
    users = [text for role, text in _messages(prompt.get("messages")) if role == "user"]
    return users[-1] if users else None


def _chunk_list(result: object) -> object | None:
    """The chunk-like items of a tool's result, or None when it returned none."""
    if isinstance(result, Mapping):
        result = next((result[k] for k in _LISTS if isinstance(result.get(k), list)), None)
    return result if looks_like_chunks(result) else None


class VercelReader(DocumentReader):
    name = "vercel_ai"

    def read(self, span: SpanRecord) -> SpanReading | None:
        attrs = span.attributes
        operation = text_attr(attrs, OPERATION_ID)
        if operation is None or not operation.startswith("ai."):
            return None
        if operation == _TOOL_CALL:
            items = _chunk_list(json_or_none(text_attr(attrs, TOOL_RESULT)))
            if items is None:
                return self.ignored()
            args = json_or_none(text_attr(attrs, TOOL_ARGS))
            return self.retrieval(query_in(args), items)
        if operation in _MODEL_CALLS:
            messages = _messages(json_or_none(text_attr(attrs, PROMPT_MESSAGES)))
            users = [text for role, text in messages if role == "user"]
            return SpanReading(
                self.name,
                Role.GENERATION,
                query=users[-1] if users else None,
                prompt=prompt_chunks(messages),
                answer=text_attr(attrs, RESPONSE_TEXT),
                model=text_attr(attrs, RESPONSE_MODEL) or text_attr(attrs, MODEL_ID),
                response_id=text_attr(attrs, RESPONSE_ID),
            )
        if operation in _CALLS:
            return self.pipeline(_question(json_or_none(text_attr(attrs, PROMPT))))
        return self.ignored()
