"""OpenTelemetry GenAI semantic conventions (opentelemetry-instrumentation-openai-v2 and
friends, and OpenLLMetry's LLM spans, which follow them).

``gen_ai.operation.name`` ``retrieval`` is a retrieval: ``gen_ai.retrieval.query.text`` and
``gen_ai.retrieval.documents`` (``{"id", "score", "content"?}`` documents, or documents with
metadata, structured — an OTLP array of maps, which :mod:`~ragtrace_consumers.intake.decode` keeps as
the JSON of its plain form — or as a JSON string). ``chat`` / ``text_completion`` / ``generate_content`` are generations: the messages the model was given
from ``gen_ai.input.messages`` (the prompt), the answer from ``gen_ai.output.messages`` (JSON messages with parts), else the older indexed
``gen_ai.completion.N.content``, else the content of ``gen_ai.choice`` events merged in from
logs (see :mod:`ragtrace_consumers.readers.genai_logs`). Other operations (embeddings,
execute_tool, invoke_agent, execute_task, …) are recognised and ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ragtrace import semconv
from ragtrace_consumers.model import AttributeValue, SpanRecord
from ragtrace_consumers.readers._reading import (
    DocumentReader,
    Role,
    SpanReading,
    json_or_none,
    prompt_chunks,
    text_attr,
)
from ragtrace_consumers.readers.answers import extract_answer, unwrap

__all__ = ["GENERATION_OPERATIONS", "OUTPUT_MESSAGES", "GenAIReader", "generation_reading"]

GENERATION_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})
OUTPUT_MESSAGES = "gen_ai.output.messages"
INPUT_MESSAGES = "gen_ai.input.messages"
RESPONSE_ID = "gen_ai.response.id"
_COMPLETION = re.compile(r"^gen_ai\.completion\.(\d+)\.content$")


def _model(attrs: Mapping[str, AttributeValue]) -> str | None:
    found: str | None = text_attr(attrs, semconv.GEN_AI_RESPONSE_MODEL) or text_attr(
        attrs, semconv.GEN_AI_REQUEST_MODEL
    )
    return found


def _input_messages(attrs: Mapping[str, AttributeValue]) -> list[tuple[str, str]]:
    """``(role, text)`` of each message in ``gen_ai.input.messages`` that has text."""
    messages = json_or_none(text_attr(attrs, INPUT_MESSAGES))
    out: list[tuple[str, str]] = []
    if isinstance(messages, list):
        for m in messages:
            if isinstance(m, Mapping):
                text = unwrap([m])
                if text:
                    out.append((str(m.get("role", "")), text))
    return out


def generation_reading(name: str, attrs: Mapping[str, AttributeValue]) -> SpanReading:
    """A GenAI generation span's answer, model and response ID."""
    answer, problem = extract_answer(text_attr(attrs, OUTPUT_MESSAGES), "application/json")
    if answer is None:
        indexed = sorted(
            (int(m.group(1)), v)
            for k, v in attrs.items()
            if (m := _COMPLETION.match(k)) and isinstance(v, str)
        )
        if indexed:
            answer, problem = extract_answer(indexed[0][1])
    messages = _input_messages(attrs)
    users = [text for role, text in messages if role == "user"]
    return SpanReading(
        name,
        Role.GENERATION,
        query=users[-1] if users else None,
        prompt=prompt_chunks(messages),
        answer=answer,
        answer_problem=problem,
        model=_model(attrs),
        response_id=text_attr(attrs, RESPONSE_ID),
    )


class GenAIReader(DocumentReader):
    name = "genai"

    def read(self, span: SpanRecord) -> SpanReading | None:
        attrs = span.attributes
        operation = attrs.get(semconv.GEN_AI_OPERATION_NAME)
        if not isinstance(operation, str):
            if any(_COMPLETION.match(k) for k in attrs):  # OpenLLMetry before operation.name
                return generation_reading(self.name, attrs)
            return None
        if operation == semconv.GEN_AI_OPERATION_RETRIEVAL:
            docs = json_or_none(text_attr(attrs, semconv.GEN_AI_RETRIEVAL_DOCUMENTS))
            return self.retrieval(text_attr(attrs, semconv.GEN_AI_RETRIEVAL_QUERY_TEXT), docs)
        if operation in GENERATION_OPERATIONS:
            return generation_reading(self.name, attrs)
        return self.ignored()
