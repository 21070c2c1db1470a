"""An answer is text: unwrap the JSON envelopes instrumentors record around it.

Understood envelopes: LangChain's ``LLMResult`` (``{"generations": [[{"text": ...}]]}``, chat
generations' message content), message lists (OpenInference/OpenAI ``{"role", "content"}``,
GenAI ``{"role", "parts": [{"type": "text", "content"}]}``: the last assistant message), OpenAI
``{"choices": [{"message": {"content"}}]}`` / ``[{"text"}]``, Anthropic content blocks
(``[{"type": "text", "text"}]``) and ``{"output"|"outputs"|"answer"|"response"|"text"|
"content"|"result": ...}``. Anything else that parses as JSON has no extractable answer: the
trace is unjudged with that reason, never judged on the raw envelope.

A completion in DSPy's field format (``[[ ## reasoning ## ]] … [[ ## response ## ]] … [[ ##
completed ## ]]``) is the model's wire format, not the program's answer: the answer is the
last output field other than ``reasoning`` (the program's output field).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

__all__ = ["dspy_output", "extract_answer", "unwrap"]

_TEXT_KEYS = (
    "answer",
    "output",
    "outputs",
    "response",
    "text",
    "content",
    "result",
    "completion",
    "message",
)


_DSPY_FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]")
_DSPY_NOT_OUTPUT = frozenset({"reasoning", "completed"})


def dspy_output(text: str) -> str | None:
    """The program's output field of a completion in DSPy's field format, or None when
    ``text`` is not in that format."""
    if "[[ ## " not in text:
        return None
    marks = list(_DSPY_FIELD.finditer(text))
    fields = [
        (m.group(1), text[m.end() : marks[i + 1].start() if i + 1 < len(marks) else len(text)])
        for i, m in enumerate(marks)
    ]
    outputs = [body.strip() for name, body in fields if name not in _DSPY_NOT_OUTPUT]
    return outputs[-1] if outputs and outputs[-1] else None


def _parts_text(parts: list[object]) -> str | None:
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and part.get("type", "text") == "text":
            value = part.get("content", part.get("text"))
            if isinstance(value, str):
                texts.append(value)
    return "".join(texts) if texts else None


def _message_text(message: Mapping[str, object]) -> str | None:
    kwargs = message.get("kwargs")
    if isinstance(kwargs, Mapping):  # LangChain's serialised AIMessage
        message = kwargs
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return _parts_text(content)
    parts = message.get("parts")
    if isinstance(parts, list):
        return _parts_text(parts)
    text = message.get("text")
    return text if isinstance(text, str) else None


def _is_message(item: object) -> bool:
    return (
        isinstance(item, Mapping)
        and ("role" in item or "type" in item)
        and any(k in item for k in ("content", "parts", "kwargs"))
    )


def unwrap(value: object, depth: int = 0) -> str | None:
    """The answer text inside a parsed JSON value, or None."""
    if depth > 6:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if not value:
            return None
        if all(_is_message(m) for m in value):
            assistant = [
                m
                for m in value
                if isinstance(m, Mapping)
                and str(m.get("role", m.get("type", ""))) in ("assistant", "ai", "model", "bot")
            ]
            chosen = (assistant or value)[-1]
            assert isinstance(chosen, Mapping)
            return _message_text(chosen)
        if all(isinstance(p, Mapping) and p.get("type") == "text" for p in value):
            return _parts_text(value)
        return unwrap(value[0], depth + 1) if len(value) == 1 else None
    if not isinstance(value, Mapping):
        return None
    generations = value.get("generations")
    if isinstance(generations, list) and generations:
        first = generations[0]
        if isinstance(first, list) and first:
            first = first[0]
        if isinstance(first, Mapping):
            text = first.get("text")
            if isinstance(text, str) and text:
                return text
            message = first.get("message")
            if isinstance(message, Mapping):
                return _message_text(message)
        return None
    choices = value.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        choice = choices[0]
        message = choice.get("message") or choice.get("delta")
        if isinstance(message, Mapping):
            return _message_text(message)
        text = choice.get("text")
        return text if isinstance(text, str) else None
    if _is_message(value):
        return _message_text(value)
    for key in _TEXT_KEYS:
        if key in value:
            found = unwrap(value[key], depth + 1)
            if found is not None:
                return found
    return None


def extract_answer(raw: str | None, mime_type: str | None = None) -> tuple[str | None, str | None]:
    """``(answer, problem)`` for a span's recorded output: plain text as is, a JSON envelope
    unwrapped; ``problem`` says why a present output yields no answer."""
    if raw is None:
        return None, None
    stripped = raw.strip()
    declared_json = "json" in (mime_type or "")
    if not declared_json and (not stripped or stripped[0] not in '{["'):
        return dspy_output(raw) or raw, None
    try:
        parsed = json.loads(stripped)
    except ValueError:
        if declared_json:
            return None, "output declared as JSON does not parse"
        return dspy_output(raw) or raw, None
    text = unwrap(parsed)
    if text is None or not text.strip():
        shape = ", ".join(sorted(parsed)) if isinstance(parsed, Mapping) else type(parsed).__name__
        return None, f"no answer text in the JSON output ({shape})"
    return dspy_output(text) or text, None
