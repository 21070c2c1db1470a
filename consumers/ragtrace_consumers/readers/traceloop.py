"""OpenLLMetry / Traceloop (traceloop-sdk and its opentelemetry-instrumentation-* packages).

Its framework spans carry ``traceloop.span.kind`` (workflow / task / agent / tool) and JSON
``traceloop.entity.input`` / ``traceloop.entity.output``. A retriever run is a task whose
``gen_ai.operation.name`` is ``vector_db_retrieve`` (LangChain; also a span named
``*.retrieve``): the query is the input's ``query``, the documents the output's
``documents`` (``page_content`` + ``metadata``). A ``@task`` on the user's own function is a
retrieval when its output is a list of chunk-like items
(:func:`~ragtrace_consumers.readers.chunks.looks_like_chunks`), whatever its name; the query of
a decorated function is its call record's query argument (:func:`query_in`). The root workflow is the pipeline. Its LLM
spans follow the GenAI conventions and are read by :mod:`~ragtrace_consumers.readers.genai`.
"""

from __future__ import annotations

from collections.abc import Mapping

from ragtrace import semconv
from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.readers._reading import (
    DocumentReader,
    SpanReading,
    json_or_none,
    query_field,
    query_in,
    text_attr,
)
from ragtrace_consumers.readers.chunks import looks_like_chunks
from ragtrace_consumers.readers.genai import GENERATION_OPERATIONS, generation_reading

__all__ = ["TraceloopReader"]

SPAN_KIND = "traceloop.span.kind"
ENTITY_INPUT = "traceloop.entity.input"
ENTITY_OUTPUT = "traceloop.entity.output"
_RETRIEVE_OPERATIONS = frozenset({"vector_db_retrieve", "retrieve", "retrieval"})


def _query(raw: str | None) -> str | None:
    parsed = json_or_none(raw)
    if isinstance(parsed, str):
        return parsed
    if isinstance(parsed, Mapping):
        if parsed.keys() <= {"args", "kwargs"}:  # @workflow / @task on the user's function
            return query_in(parsed)
        for key in ("query", "question", "input", "inputs", "query_str"):
            value = parsed.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, Mapping):
                nested = query_field(value)
                if nested:
                    return nested
    return raw if parsed is None else None


class TraceloopReader(DocumentReader):
    name = "traceloop"

    def read(self, span: SpanRecord) -> SpanReading | None:
        attrs = span.attributes
        kind = text_attr(attrs, SPAN_KIND)
        operation = text_attr(attrs, semconv.GEN_AI_OPERATION_NAME) or ""
        if kind is None:
            if "llm.request.type" in attrs:  # OpenLLMetry's LLM spans before GenAI semconv
                return generation_reading(self.name, attrs)
            return None
        named = operation in _RETRIEVE_OPERATIONS or span.name.endswith(
            (".retrieve", "vector_db_retrieve")
        )
        if named or kind == "task":
            output = json_or_none(text_attr(attrs, ENTITY_OUTPUT))
            if isinstance(output, Mapping) and isinstance(output.get("outputs"), (list, dict)):
                output = output["outputs"]
            if named or looks_like_chunks(output):
                return self.retrieval(_query(text_attr(attrs, ENTITY_INPUT)), output)
        if operation in GENERATION_OPERATIONS:
            return generation_reading(self.name, attrs)
        if kind == "workflow":
            return self.pipeline(_query(text_attr(attrs, ENTITY_INPUT)))
        return self.ignored()
