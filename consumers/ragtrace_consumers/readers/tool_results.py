"""What a tool returned, as context chunks: the evidence of a retrieval made as a tool call.

A tool's result (recorded as text or JSON: ``gen_ai.tool.call.result``, OpenInference
``output.value``, a ``tool_call_response`` part of the model's input messages) is a retrieval's
documents when it holds **chunk-like items**: a non-empty list whose every item is a document
(a text field and an ID, score or metadata field, see
:func:`~ragtrace_consumers.readers.chunks.looks_like_chunks`), bare or under ``documents`` /
``results`` / … of a mapping. A calculator's ``42`` or a weather tool's dict is no retrieval.
A tool configured as a retrieval (``mapping.retrieval_tools``) is read whatever it returns: a
list of texts, or its whole text as one chunk (a content-hash ID: recall n/a, never 0.0).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from ragtrace_consumers.model import Chunk
from ragtrace_consumers.readers._reading import json_or_none
from ragtrace_consumers.readers.chunks import (
    DEFAULT_METADATA_ID_KEYS,
    chunk,
    chunks_from_json,
    looks_like_chunks,
)

__all__ = ["message_tool_results", "tool_chunks"]

_LIST_KEYS = ("documents", "docs", "results", "nodes", "source_nodes", "chunks", "hits")


def _parsed(value: object) -> object:
    """A text as the JSON it holds, else as it is."""
    if not isinstance(value, str):
        return value
    parsed = json_or_none(value)
    return value if parsed is None else parsed


def _items(value: object) -> object:
    """The list a result holds its items in: itself, or a mapping's list under a known key."""
    if isinstance(value, Mapping):
        for key in _LIST_KEYS:
            if isinstance(value.get(key), list):
                return value[key]
    return value


def tool_chunks(
    result: object, keys: Sequence[str] = DEFAULT_METADATA_ID_KEYS, *, whole: bool = False
) -> tuple[Chunk, ...]:
    """The documents in a tool's ``result`` (text or parsed JSON); () when it holds no
    chunk-like items, unless ``whole`` (a configured retrieval tool): then a list of texts or
    documents as chunks, else the result's text as one chunk."""
    if result is None:
        return ()
    items = _items(_parsed(result))
    if looks_like_chunks(items):
        return chunks_from_json(items, keys)
    if not whole:
        return ()
    if isinstance(items, list):
        found = chunks_from_json(items, keys)
        if found:
            return found
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    one = chunk(None, text, None) if text.strip() else None
    return (one,) if one is not None else ()


def _result_text(value: object) -> str | None:
    if isinstance(value, str):
        return value if value.strip() else None
    if value is None:
        return None
    if isinstance(value, list) and all(
        isinstance(p, Mapping) and isinstance(p.get("text", p.get("content")), str) for p in value
    ):
        return "\n".join(str(p.get("text", p.get("content"))) for p in value) or None
    return json.dumps(value, ensure_ascii=False)


def _one_result(
    call_id: object, value: object, position: int, keys: Sequence[str]
) -> tuple[Chunk, ...]:
    found = tool_chunks(value, keys)
    if found:
        return found
    text = _result_text(value)
    if text is None:
        return ()
    name = call_id if isinstance(call_id, str) and call_id else str(position)
    return (Chunk(id=f"tool_result.{name}", text=text),)


def message_tool_results(
    messages: object, keys: Sequence[str] = DEFAULT_METADATA_ID_KEYS
) -> tuple[Chunk, ...]:
    """The tool results in a model's parsed input messages, in order: GenAI
    ``{"type": "tool_call_response", "response"|"result": …}`` parts (any role), and
    ``{"role": "tool", "content": …}`` messages (OpenAI's, OpenInference's). Chunk-like results
    give their documents; any other result one chunk ``tool_result.<call id>`` with its text."""
    if not isinstance(messages, list):
        return ()
    out: list[Chunk] = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        parts = message.get("parts")
        if isinstance(parts, list):
            for j, part in enumerate(parts):
                if isinstance(part, Mapping) and part.get("type") == "tool_call_response":
                    value = part.get("response", part.get("result"))
                    out.extend(_one_result(part.get("id"), value, i * 1000 + j, keys))
        elif message.get("role") == "tool":
            value = message.get("content")
            out.extend(_one_result(message.get("tool_call_id"), value, i, keys))
    return tuple(out)
