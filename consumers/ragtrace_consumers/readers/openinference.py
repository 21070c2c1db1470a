"""OpenInference instrumentors (LangChain, LlamaIndex, and the rest of its conventions).

``openinference.span.kind`` RETRIEVER / LLM / CHAIN make the roles; a TOOL span is a retrieval
step when it returned chunk-like items or is a configured retrieval tool (``tool.name``, the
query from ``input.value``, the documents from ``output.value``), else ignored like every other
kind (EMBEDDING, PROMPT, RERANKER, AGENT, GUARDRAIL, EVALUATOR).

* Retrieval: ``retrieval.documents.N.document.{id,content,score,metadata}`` (LangChain records
  no ID field: a document's own ``id`` in the retriever's ``output.value`` comes first —
  ``Document.id``, LangChain's and LangChain.js's — then the metadata JSON's); the query is
  ``input.value`` unless that is JSON (LlamaIndex's inner ``_retrieve``:
  ``query_bundle.query_str``); a LangGraph agent's ``{"messages": [...]}`` input asks its last
  user message. A RETRIEVER span that is a function tool (the Agents SDK's ``tool_span_kinds``)
  names its ``tool.name``; a TOOL span's LangChain ``ToolMessage`` gives its artifact
  documents, else its content.
* Generation: the prompt from ``llm.input_messages.N.message.{role,content}`` (system messages
  as its instructions, ``tool`` messages as the tool results it was given); an agent's model
  call given tool results asks its last user message (the Agents SDK's root span records no
  question);
  ``output.value`` unwrapped (LangChain's LLMResult JSON), else
  ``llm.output_messages.N.message.content``; a span with neither (LlamaIndex's outer streaming
  span) has no answer, and assembly takes the inner ``stream_complete`` span's. A reply of
  ``llm.output_messages.N.message.tool_calls`` and no text is an agent's intermediate step
  (``continues``; no answer is no problem there).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ragtrace import semconv
from ragtrace_consumers.model import AttributeValue, Chunk, SpanRecord
from ragtrace_consumers.readers import chunks as chunk_ids
from ragtrace_consumers.readers._reading import (
    DocumentReader,
    Role,
    SpanReading,
    instruction_chunks,
    json_or_none,
    model_of,
    prompt_chunks,
    text_attr,
)
from ragtrace_consumers.readers.answers import extract_answer
from ragtrace_consumers.readers.langchain_json import messages_question, tool_message_result
from ragtrace_consumers.readers.tool_results import message_tool_results

__all__ = [
    "OpenInferenceReader",
    "indexed_documents",
    "kind_role",
    "retrieval_documents",
]

_KIND_ROLE = {
    semconv.SpanKind.RETRIEVER: Role.RETRIEVAL,
    semconv.SpanKind.LLM: Role.GENERATION,
    semconv.SpanKind.CHAIN: Role.PIPELINE,
}
_TOOL = "TOOL"
_TOOL_NAME = "tool.name"
_RETRIEVAL_PREFIX = "retrieval.documents."
_RETRIEVAL_KEY = re.compile(
    "^" + re.escape(_RETRIEVAL_PREFIX) + r"(\d+)\.document\.(id|content|score|metadata)$"
)
_OUTPUT_MESSAGE = re.compile(r"^llm\.output_messages\.(\d+)\.message\.content$")
_OUTPUT_PREFIX = "llm.output_messages."
_INPUT_PREFIX = "llm.input_messages."
_INPUT_MESSAGE = re.compile(r"^llm\.input_messages\.(\d+)\.message\.(role|content)$")


def kind_role(attrs: Mapping[str, AttributeValue]) -> Role | None:
    kind = attrs.get(semconv.OPENINFERENCE_SPAN_KIND)
    return _KIND_ROLE.get(kind.upper()) if isinstance(kind, str) else None


def indexed_documents(
    attrs: Mapping[str, AttributeValue],
    prefix: str,
    pattern: re.Pattern[str],
    keys: Sequence[str] = chunk_ids.DEFAULT_METADATA_ID_KEYS,
    own_ids: Sequence[str | None] = (),
) -> tuple[Chunk, ...]:
    """The documents of the keys ``pattern`` matches (group 1 the index, group 2 the field), in
    index order; every such key starts with ``prefix`` (checked first: most keys fail there).
    A document without an ``id`` field takes ``own_ids[index]`` when there is one, before any
    metadata."""
    found: dict[int, dict[str, AttributeValue]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        m = pattern.match(key)
        if m:
            found.setdefault(int(m.group(1)), {})[m.group(2)] = value
    out = (
        chunk_ids.chunk(
            f.get("id") or (own_ids[i] if i < len(own_ids) else None),
            f.get("content"),
            f.get("score"),
            f.get("metadata"),
            keys,
        )
        for i, f in sorted(found.items())
    )
    return tuple(c for c in out if c is not None)


def retrieval_documents(
    attrs: Mapping[str, AttributeValue], keys: Sequence[str] = chunk_ids.DEFAULT_METADATA_ID_KEYS
) -> tuple[Chunk, ...]:
    return indexed_documents(attrs, _RETRIEVAL_PREFIX, _RETRIEVAL_KEY, keys, _own_ids(attrs))


def _own_ids(attrs: Mapping[str, AttributeValue]) -> list[str | None]:
    """Each document's own ``id`` in the retriever's ``output.value`` (``{"documents": [...]}``),
    by position: OpenInference JS records LangChain.js's ``Document.id`` only there."""
    output = json_or_none(text_attr(attrs, semconv.OUTPUT_VALUE))
    docs = output.get("documents") if isinstance(output, Mapping) else None
    if not isinstance(docs, list):
        return []
    return [
        d["id"] if isinstance(d, Mapping) and isinstance(d.get("id"), str) and d["id"] else None
        for d in docs
    ]


def _query(attrs: Mapping[str, AttributeValue]) -> str | None:
    raw: str | None = text_attr(attrs, semconv.INPUT_VALUE)
    parsed = json_or_none(raw)
    if parsed is None and "json" not in (text_attr(attrs, semconv.INPUT_MIME_TYPE) or ""):
        return raw
    if isinstance(parsed, str):
        return parsed
    if isinstance(parsed, Mapping):
        bundle = parsed.get("query_bundle")
        if isinstance(bundle, Mapping) and isinstance(bundle.get("query_str"), str):
            return str(bundle["query_str"])
        for key in ("query", "query_str", "question", "input"):
            if isinstance(parsed.get(key), str):
                return str(parsed[key])
        return messages_question(parsed)
    return None


def _answer(attrs: Mapping[str, AttributeValue]) -> tuple[str | None, str | None]:
    answer, problem = extract_answer(
        text_attr(attrs, semconv.OUTPUT_VALUE), text_attr(attrs, semconv.OUTPUT_MIME_TYPE)
    )
    if answer is not None:
        return answer, None
    messages = sorted(
        (int(m.group(1)), v)
        for k, v in attrs.items()
        if (m := _OUTPUT_MESSAGE.match(k)) and isinstance(v, str)
    )
    if messages:
        return messages[-1][1], None
    return None, problem


def _asks_for_tools(attrs: Mapping[str, AttributeValue]) -> bool:
    return any(k.startswith(_OUTPUT_PREFIX) and ".message.tool_calls." in k for k in attrs)


def _input_messages(attrs: Mapping[str, AttributeValue]) -> list[tuple[str, str]]:
    """``llm.input_messages`` as ``(role, text)``, in order (messages without text left out)."""
    found: dict[int, dict[str, str]] = {}
    for key, value in attrs.items():
        if key.startswith(_INPUT_PREFIX) and isinstance(value, str):
            m = _INPUT_MESSAGE.match(key)
            if m:
                found.setdefault(int(m.group(1)), {})[m.group(2)] = value
    return [(f.get("role", ""), f["content"]) for _, f in sorted(found.items()) if "content" in f]


def _agent_question(messages: list[tuple[str, str]]) -> str | None:
    """The question an agent's model call answers: its last user message, when tool results
    follow it (the conversation's earlier turns precede it); None for a model call given no
    tool results (a chain's prompt is no question: its retrieval or pipeline span has that)."""
    roles = [role for role, _ in messages]
    last_user = max((i for i, role in enumerate(roles) if role == "user"), default=None)
    if last_user is None or "tool" not in roles[last_user:]:
        return None
    return messages[last_user][1]


def _evidence(
    messages: list[tuple[str, str]], keys: Sequence[str]
) -> tuple[tuple[Chunk, ...], tuple[Chunk, ...]]:
    """The instructions and tool results among a model call's input messages."""
    system = [text for role, text in messages if role.lower() in ("system", "developer")]
    tools = [{"role": "tool", "content": text} for role, text in messages if role == "tool"]
    return instruction_chunks(system), message_tool_results(tools, keys)


class OpenInferenceReader(DocumentReader):
    name = "openinference"

    def read(self, span: SpanRecord) -> SpanReading | None:
        attrs = span.attributes
        if not isinstance(attrs.get(semconv.OPENINFERENCE_SPAN_KIND), str):
            return None
        role = kind_role(attrs)
        if role is Role.RETRIEVAL:
            return SpanReading(
                self.name,
                role,
                query=_query(attrs),
                chunks=retrieval_documents(attrs, self._keys),
                tool=text_attr(attrs, _TOOL_NAME),
            )
        if role is Role.GENERATION:
            answer, problem = _answer(attrs)
            messages = _input_messages(attrs)
            continues = answer is None and _asks_for_tools(attrs)
            instructions, tool_results = (
                _evidence(messages, self._keys) if messages and answer is not None else ((), ())
            )
            return SpanReading(
                self.name,
                role,
                query=_agent_question(messages) if messages else None,
                prompt=prompt_chunks(messages),
                answer=answer,
                answer_problem=None if continues else problem,
                model=model_of(attrs),
                instructions=instructions,
                tool_results=tool_results,
                continues=continues,
            )
        if role is Role.PIPELINE:
            return SpanReading(self.name, role, query=_query(attrs))
        if attrs.get(semconv.OPENINFERENCE_SPAN_KIND) == _TOOL:
            output = text_attr(attrs, semconv.OUTPUT_VALUE)
            parsed = json_or_none(output)
            return self.tool_call(
                text_attr(attrs, _TOOL_NAME),
                text_attr(attrs, semconv.INPUT_VALUE),
                output if parsed is None else tool_message_result(parsed),
            )
        return SpanReading(self.name, None)
