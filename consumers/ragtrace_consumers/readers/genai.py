"""OpenTelemetry GenAI semantic conventions (opentelemetry-instrumentation-openai-v2 and
friends, and OpenLLMetry's LLM spans, which follow them).

``gen_ai.operation.name`` ``retrieval`` is a retrieval: ``gen_ai.retrieval.query.text`` and
``gen_ai.retrieval.documents`` (``{"id", "score", "content"?}`` documents, or documents with
metadata, structured — an OTLP array of maps, which :mod:`~ragtrace_consumers.intake.decode` keeps as
the JSON of its plain form — or as a JSON string). ``chat`` / ``text_completion`` / ``generate_content`` are generations: the messages the model was given
from ``gen_ai.input.messages`` (the prompt), the answer from ``gen_ai.output.messages`` (JSON messages with parts), else the older indexed
``gen_ai.completion.N.content``, else the content of ``gen_ai.choice`` events merged in from
logs (see :mod:`ragtrace_consumers.readers.genai_logs`); its system instructions from the
system/developer messages and ``gen_ai.system_instructions``, and the tool results it was given
from the ``tool_call_response`` parts (``tool`` messages) of its input messages. A call that
stopped to call tools — ``gen_ai.response.finish_reasons`` holding ``tool_calls`` (Pydantic
AI and OpenLLMetry: ``tool_call``, Anthropic: ``tool_use``, the AI SDK 7: ``tool-calls``), or
without finish reasons output messages of ``tool_call`` parts only — is an agent's
intermediate step: it ``continues``, with no answer.

``execute_tool`` is a retrieval step when its result holds chunk-like items or the tool is a
configured retrieval tool (:meth:`~ragtrace_consumers.readers._reading.DocumentReader.tool_call`):
``gen_ai.tool.name``, the query from ``gen_ai.tool.call.arguments``, the documents from
``gen_ai.tool.call.result`` (Pydantic AI's instrumentation version 2 names them
``tool_arguments`` / ``tool_response``). Other operations (embeddings, invoke_agent,
execute_task, …) are recognised and ignored. A span made from an input log event
(:mod:`~ragtrace_consumers.readers.genai_logs`) has no role but carries the instructions and
tool results of the generation it belongs to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ragtrace import semconv
from ragtrace_consumers.model import AttributeValue, Chunk, SpanRecord
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
from ragtrace_consumers.readers.answers import extract_answer, unwrap
from ragtrace_consumers.readers.chunks import DEFAULT_METADATA_ID_KEYS
from ragtrace_consumers.readers.genai_logs import EVENT_SPAN_ID
from ragtrace_consumers.readers.tool_results import message_tool_results

__all__ = ["GENERATION_OPERATIONS", "OUTPUT_MESSAGES", "GenAIReader", "generation_reading"]

GENERATION_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})
OUTPUT_MESSAGES = "gen_ai.output.messages"
INPUT_MESSAGES = "gen_ai.input.messages"
RESPONSE_ID = "gen_ai.response.id"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
FINISH_REASONS = "gen_ai.response.finish_reasons"
EXECUTE_TOOL = "execute_tool"
TOOL_NAME = "gen_ai.tool.name"
TOOL_ARGUMENTS = ("gen_ai.tool.call.arguments", "tool_arguments")
TOOL_RESULT = ("gen_ai.tool.call.result", "tool_response")
_COMPLETION = re.compile(r"^gen_ai\.completion\.(\d+)\.content$")


def _model(attrs: Mapping[str, AttributeValue]) -> str | None:
    found: str | None = text_attr(attrs, semconv.GEN_AI_RESPONSE_MODEL) or text_attr(
        attrs, semconv.GEN_AI_REQUEST_MODEL
    )
    return found


def _texts(messages: object) -> list[tuple[str, str]]:
    """``(role, text)`` of each parsed input message that has text."""
    out: list[tuple[str, str]] = []
    if isinstance(messages, list):
        for m in messages:
            if isinstance(m, Mapping):
                text = unwrap([m])
                if text:
                    out.append((str(m.get("role", "")), text))
    return out


def _system_instructions(attrs: Mapping[str, AttributeValue]) -> list[str]:
    """``gen_ai.system_instructions``: a JSON list of parts (or a plain text)."""
    raw = text_attr(attrs, SYSTEM_INSTRUCTIONS)
    parsed = json_or_none(raw)
    if parsed is None:
        return [raw] if raw else []
    if isinstance(parsed, list):
        parts = [p.get("content", p.get("text")) if isinstance(p, Mapping) else p for p in parsed]
        return [p for p in parts if isinstance(p, str) and p.strip()]
    return []


def _given(
    attrs: Mapping[str, AttributeValue], keys: Sequence[str], evidence: bool = True
) -> tuple[list[tuple[str, str]], tuple[Chunk, ...], tuple[Chunk, ...]]:
    """What a model was given: its text messages, and unless ``evidence`` is False its
    instructions and tool results (only an answer is judged against them: an agent's
    intermediate calls, answered with tool calls, would read every earlier result again)."""
    messages = json_or_none(text_attr(attrs, INPUT_MESSAGES))
    texts = _texts(messages)
    if not evidence:
        return texts, (), ()
    system = [t for role, t in texts if role.lower() in ("system", "developer")]
    instructions = instruction_chunks([*_system_instructions(attrs), *system])
    return texts, instructions, message_tool_results(messages, keys)


def _only_tool_calls(output: object) -> bool:
    """True when the output messages hold tool call parts and nothing else."""
    parts = [
        p
        for m in (output if isinstance(output, list) else ())
        if isinstance(m, Mapping) and isinstance(m.get("parts"), list)
        for p in m["parts"]
    ]
    return bool(parts) and all(
        isinstance(p, Mapping) and p.get("type") == "tool_call" for p in parts
    )


def _continues(attrs: Mapping[str, AttributeValue]) -> bool:
    """A model call that stopped to call tools (an agent's intermediate step): its finish
    reasons say so, or without them its output messages are tool calls only."""
    reasons = attrs.get(FINISH_REASONS)
    if reasons:  # said: the output need not be parsed twice
        return asks_for_tools(reasons)
    output = text_attr(attrs, OUTPUT_MESSAGES)
    return output is not None and _only_tool_calls(json_or_none(output))


def generation_reading(
    name: str,
    attrs: Mapping[str, AttributeValue],
    keys: Sequence[str] = DEFAULT_METADATA_ID_KEYS,
) -> SpanReading:
    """A GenAI generation span's answer, model, response ID and what it was given; a call that
    stopped to call tools ``continues``, with no answer (any text beside its tool calls is a
    preamble, not the agent's answer)."""
    continues = _continues(attrs)
    answer, problem = extract_answer(text_attr(attrs, OUTPUT_MESSAGES), "application/json")
    if continues:
        answer = problem = None
    elif answer is None:
        indexed = sorted(
            (int(m.group(1)), v)
            for k, v in attrs.items()
            if (m := _COMPLETION.match(k)) and isinstance(v, str)
        )
        if indexed:
            answer, problem = extract_answer(indexed[0][1])
    messages, instructions, tool_results = _given(attrs, keys, evidence=answer is not None)
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
        instructions=instructions,
        tool_results=tool_results,
        continues=continues,
    )


def _first(attrs: Mapping[str, AttributeValue], keys: Sequence[str]) -> AttributeValue | None:
    return next((attrs[k] for k in keys if attrs.get(k) not in (None, "")), None)


class GenAIReader(DocumentReader):
    name = "genai"

    def read(self, span: SpanRecord) -> SpanReading | None:
        attrs = span.attributes
        operation = attrs.get(semconv.GEN_AI_OPERATION_NAME)
        if not isinstance(operation, str):
            if any(_COMPLETION.match(k) for k in attrs):  # OpenLLMetry before operation.name
                return generation_reading(self.name, attrs, self._keys)
            if EVENT_SPAN_ID in attrs:  # an input log event: what its generation was given
                _, instructions, tool_results = _given(attrs, self._keys)
                return SpanReading(
                    self.name, None, instructions=instructions, tool_results=tool_results
                )
            return None
        if operation == semconv.GEN_AI_OPERATION_RETRIEVAL:
            docs = json_or_none(text_attr(attrs, semconv.GEN_AI_RETRIEVAL_DOCUMENTS))
            return self.retrieval(text_attr(attrs, semconv.GEN_AI_RETRIEVAL_QUERY_TEXT), docs)
        if operation in GENERATION_OPERATIONS:
            return generation_reading(self.name, attrs, self._keys)
        if operation == EXECUTE_TOOL:
            return self.tool_call(
                text_attr(attrs, TOOL_NAME),
                _first(attrs, TOOL_ARGUMENTS),
                _first(attrs, TOOL_RESULT),
            )
        return self.ignored()
