"""What a reader makes of one span: its RAG role and what it extracted for that role."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from ragtrace._arguments import QUERY_NAMES
from ragtrace_consumers.model import AttributeValue, Chunk, SpanRecord
from ragtrace_consumers.readers.chunks import DEFAULT_METADATA_ID_KEYS, chunks_from_json

__all__ = [
    "DocumentReader",
    "Reader",
    "Role",
    "SpanReading",
    "asks_for_tools",
    "json_or_none",
    "model_of",
    "instruction_chunks",
    "prompt_chunks",
    "query_field",
    "query_in",
    "text_attr",
]


class Role(str, Enum):
    """What a span does in a RAG request."""

    RETRIEVAL = "retrieval"
    GENERATION = "generation"
    PIPELINE = "pipeline"


@dataclass(frozen=True)
class SpanReading:
    """One reader's extraction from one span.

    ``role`` None means the reader recognised the span as its dialect's but not as a RAG step
    (an embedding, prompt-template or task span, a tool that returned no documents): it is
    ignored, not unrecognised.
    ``chunks`` are a retrieval's ranked documents; ``context`` the documents a generation says
    it was given (None: it says nothing); ``prompt`` the messages the model was given other
    than instructions and tool results, one chunk each (the context of last resort when the documents carry IDs only);
    ``answer`` a generation's answer text, or
    ``answer_problem`` saying why an output was there but held no extractable text.
    ``continues``: a generation whose reply is tool calls and no answer, an agent's
    intermediate step: the agent goes on, so it does not mark its trace as nearly complete.

    ``tool`` names the tool of a retrieval made as a tool call (None: a retriever span).
    ``instructions`` are the system/developer messages (and ``gen_ai.system_instructions``) a
    generation was given, one chunk per paragraph; ``tool_results`` the tool results in its
    input messages (chunk-like results as their documents, others as one text chunk each).
    A reading with no role may still carry both for the generation it belongs to (a log event).
    """

    reader: str
    role: Role | None
    query: str | None = None
    chunks: tuple[Chunk, ...] = ()
    context: tuple[Chunk, ...] | None = None
    prompt: tuple[Chunk, ...] = ()
    answer: str | None = None
    answer_problem: str | None = None
    model: str | None = None
    response_id: str | None = None
    continues: bool = False
    tool: str | None = None
    instructions: tuple[Chunk, ...] = ()
    tool_results: tuple[Chunk, ...] = ()

    def summary(self) -> dict[str, object]:
        """Plain data for ``ragtrace inspect`` (texts shortened)."""
        out: dict[str, object] = {
            "reader": self.reader,
            "role": self.role.value if self.role else "ignored",
        }
        if self.query is not None:
            out["query"] = self.query
        if self.chunks:
            out["chunks"] = [_chunk_summary(c) for c in self.chunks]
        if self.context is not None:
            out["context"] = [_chunk_summary(c) for c in self.context]
        if self.prompt:
            out["prompt"] = [_chunk_summary(c) for c in self.prompt]
        if self.instructions:
            out["instructions"] = [_chunk_summary(c) for c in self.instructions]
        if self.tool_results:
            out["tool_results"] = [_chunk_summary(c) for c in self.tool_results]
        for key in ("answer", "answer_problem", "model", "response_id", "tool"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.continues:
            out["continues"] = True
        return out


def _chunk_summary(c: Chunk) -> dict[str, object]:
    out: dict[str, object] = {"id": c.id}
    if c.hashed:
        out["hashed"] = True
    if c.score is not None:
        out["score"] = c.score
    if c.text is not None:
        out["text"] = c.text if len(c.text) <= 80 else c.text[:79] + "…"
    return out


class Reader(Protocol):
    """Recognises one span dialect: ``read`` returns None for a span not in its dialect."""

    name: str

    def read(self, span: SpanRecord) -> SpanReading | None: ...


_NO_TOOLS: frozenset[str] = frozenset()


class DocumentReader:
    """The base of a reader whose retrieved documents may carry their ID in document metadata:
    ``metadata_id_keys`` are the metadata keys tried, in order, for a document's ID. Its
    readings are made by :meth:`retrieval`, :meth:`tool_call`, :meth:`pipeline` and
    :meth:`ignored`. ``retrieval_tools`` names the tools whose calls are retrievals whatever
    they return (configuration: ``mapping.retrieval_tools``)."""

    name: str

    def __init__(
        self,
        metadata_id_keys: Sequence[str] = DEFAULT_METADATA_ID_KEYS,
        retrieval_tools: Collection[str] = (),
    ) -> None:
        self._keys = tuple(metadata_id_keys)
        self._tools = frozenset(retrieval_tools) if retrieval_tools else _NO_TOOLS

    def retrieval(self, query: str | None, documents: object) -> SpanReading:
        """A retrieval: ``documents`` is the parsed JSON of its documents
        (:func:`~ragtrace_consumers.readers.chunks.chunks_from_json`)."""
        return SpanReading(
            self.name, Role.RETRIEVAL, query=query, chunks=chunks_from_json(documents, self._keys)
        )

    def tool_call(self, tool: str | None, arguments: object, result: object) -> SpanReading:
        """A tool call: a retrieval step when its ``result`` (text or parsed JSON) holds
        chunk-like items (:func:`~ragtrace_consumers.readers.tool_results.tool_chunks`) or
        ``tool`` is a configured retrieval tool, its query :func:`query_in` the ``arguments``
        (text or parsed JSON; a single string argument of any name); else ignored (a
        calculator is no retrieval)."""
        from ragtrace_consumers.readers.tool_results import tool_chunks  # (it imports this module)

        configured = tool is not None and tool in self._tools
        chunks = tool_chunks(result, self._keys, whole=configured)
        if not chunks and not configured:
            return self.ignored()
        return SpanReading(
            self.name, Role.RETRIEVAL, query=_tool_query(arguments), chunks=chunks, tool=tool
        )

    def pipeline(self, query: str | None) -> SpanReading:
        """The pipeline (root) span, with the request's query when it has one."""
        return SpanReading(self.name, Role.PIPELINE, query=query)

    def ignored(self) -> SpanReading:
        """A span of this dialect that is no RAG step (it is not counted as unrecognised)."""
        return SpanReading(self.name, None)


def text_attr(attributes: Mapping[str, AttributeValue], key: str) -> str | None:
    value = attributes.get(key)
    return value if isinstance(value, str) and value else None


def query_field(value: Mapping[str, object]) -> str | None:
    """The question in a JSON input object: its first text field among ``query``, ``question``,
    ``input`` and ``query_str``."""
    for key in ("query", "question", "input", "query_str"):
        if isinstance(value.get(key), str):
            return str(value[key])
    return None


_CALL_RECORD = frozenset({"args", "kwargs"})


def query_in(value: object) -> str | None:
    """The question in a parsed JSON input: a string as is; a mapping's :func:`query_field`;
    a decorator SDK's call record ``{"args": [...], "kwargs": {...}}`` (Langfuse ``@observe``,
    Traceloop ``@workflow``/``@task``) resolved as ragtrace's own decorators resolve it: a
    query-named keyword (:data:`ragtrace._arguments.QUERY_NAMES`), else the first positional
    string argument."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        return None
    args, kwargs = value.get("args"), value.get("kwargs")
    if value.keys() <= _CALL_RECORD and (isinstance(args, list) or isinstance(kwargs, Mapping)):
        if isinstance(kwargs, Mapping):
            for key in QUERY_NAMES:
                if isinstance(kwargs.get(key), str):
                    return str(kwargs[key])
        if isinstance(args, list):
            return next((a for a in args if isinstance(a, str)), None)
        return None
    return query_field(value)


def _tool_query(arguments: object) -> str | None:
    if isinstance(arguments, str):
        parsed = json_or_none(arguments)
        arguments = arguments if parsed is None else parsed
    found = query_in(arguments)
    if found is None and isinstance(arguments, Mapping):
        texts = [v for v in arguments.values() if isinstance(v, str)]
        found = texts[0] if len(texts) == 1 else None
    return found


_NOT_PROMPT = frozenset({"system", "developer", "tool"})
_PARAGRAPH = re.compile(r"\n\s*\n")


def prompt_chunks(messages: Sequence[tuple[str, str]]) -> tuple[Chunk, ...]:
    """The ``(role, text)`` messages a model was given as context chunks (IDs
    ``input.message.N``, N the message's position), system and developer messages left out
    (their context is read by :func:`instruction_chunks`), and tool messages (a reader's
    ``tool_results``)."""
    return tuple(
        Chunk(id=f"input.message.{i}", text=text)
        for i, (role, text) in enumerate(messages)
        if role.lower() not in _NOT_PROMPT and text.strip()
    )


def instruction_chunks(texts: Sequence[str]) -> tuple[Chunk, ...]:
    """System/developer texts as context chunks, one per paragraph (IDs ``instructions.N``):
    the app's context often sits there ("Answer from the context below. Context: …"). A
    paragraph of instructions only is dropped — every sentence opens with an imperative to the
    model ("Answer …", "You are …", "Do not …") or reads as an instruction to a model
    (:func:`~ragtrace.evaluation.judges.reads_as_instruction`): it is no evidence, and the
    app's own instructions are no injection."""
    paragraphs = (p.strip() for text in texts for p in _PARAGRAPH.split(text))
    kept = [p for p in paragraphs if p and not _instructions_only(p)]
    return tuple(Chunk(id=f"instructions.{i}", text=p) for i, p in enumerate(kept))


_SENTENCE = re.compile(r"(?<=[.!?:])\s+")
_IMPERATIVE = frozenset(
    {
        "answer",
        "use",
        "respond",
        "reply",
        "be",
        "do",
        "don't",
        "never",
        "always",
        "only",
        "cite",
        "you",
        "keep",
        "refuse",
        "say",
        "write",
        "think",
        "act",
        "follow",
        "provide",
        "avoid",
        "ignore",
        "please",
        "rely",
    }
)


def _instructions_only(paragraph: str) -> bool:
    from ragtrace.evaluation.judges.injection import reads_as_instruction

    if reads_as_instruction(paragraph):
        return True
    for sentence in _SENTENCE.split(paragraph):
        words = sentence.split(maxsplit=1)
        if words and words[0].lower().strip(",;*-#") not in _IMPERATIVE:
            return False
    return True


_TOOL_FINISH = frozenset({"tool_calls", "tool_call", "tool_use", "function_call"})


def asks_for_tools(finish_reasons: object) -> bool:
    """True when a model call's finish reason(s) say it stopped to call tools: OpenAI's
    ``tool_calls`` (``function_call`` before), Pydantic AI's ``tool_call``, Anthropic's
    ``tool_use``, the Vercel AI SDK's ``tool-calls``; one reason or a list of them."""
    reasons = [finish_reasons] if isinstance(finish_reasons, str) else finish_reasons
    if not isinstance(reasons, Sequence):
        return False
    return any(isinstance(r, str) and r.lower().replace("-", "_") in _TOOL_FINISH for r in reasons)


def json_or_none(text: str | None) -> object | None:
    """``text`` parsed as JSON, or None when it is not JSON."""
    if text is None:
        return None
    import json

    stripped = text.strip()
    if not stripped or stripped[0] not in '{["':
        return None
    try:
        parsed: object = json.loads(stripped)
    except ValueError:
        return None
    return parsed


def model_of(attributes: Mapping[str, AttributeValue]) -> str | None:
    """``llm.model_name``, else ``gen_ai.response.model``, else ``gen_ai.request.model``."""
    for key in ("llm.model_name", "gen_ai.response.model", "gen_ai.request.model"):
        found = text_attr(attributes, key)
        if found:
            return found
    return None
