"""The Langfuse SDK (v3+, OpenTelemetry-based; instrumentation scope ``langfuse-sdk``).

``langfuse.observation.type`` ``retriever`` is a retrieval (query from the observation input:
a string, ``{"query"|"question"|"input": ...}`` or ``@observe``'s ``{"args", "kwargs"}``; documents from its output: a list, or
``{"documents": [...]}``); ``generation`` is a generation (answer from the output, unwrapped;
model ``langfuse.observation.model.name``). A root observation is the pipeline; every other
type (span, chain, agent, tool, embedding, evaluator, guardrail, event) is ignored.
"""

from __future__ import annotations

from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.readers._reading import (
    DocumentReader,
    Role,
    SpanReading,
    json_or_none,
    query_in,
    text_attr,
)
from ragtrace_consumers.readers.answers import extract_answer

__all__ = ["LangfuseReader"]

TYPE = "langfuse.observation.type"
INPUT = "langfuse.observation.input"
OUTPUT = "langfuse.observation.output"
MODEL = "langfuse.observation.model.name"
_TRACE_INPUT = "langfuse.trace.input"


def _query(raw: str | None) -> str | None:
    parsed = json_or_none(raw)
    if parsed is None:
        return raw
    return query_in(parsed)


class LangfuseReader(DocumentReader):
    name = "langfuse"

    def read(self, span: SpanRecord) -> SpanReading | None:
        attrs = span.attributes
        kind = text_attr(attrs, TYPE)
        if kind is None:
            return None
        if kind == "retriever":
            return self.retrieval(
                _query(text_attr(attrs, INPUT)), json_or_none(text_attr(attrs, OUTPUT))
            )
        if kind == "generation":
            answer, problem = extract_answer(text_attr(attrs, OUTPUT))
            return SpanReading(
                self.name,
                Role.GENERATION,
                answer=answer,
                answer_problem=problem,
                model=text_attr(attrs, MODEL),
            )
        if span.parent_span_id is None:
            return self.pipeline(_query(text_attr(attrs, INPUT) or text_attr(attrs, _TRACE_INPUT)))
        return self.ignored()
