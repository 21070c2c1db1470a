"""ragtrace's own decorators (instrumentation scope ``ragtrace``).

Roles come from ``openinference.span.kind``; for spans from an older SDK or with the kind
dropped by a collector processor, from the span name or the ``ragtrace.*`` count attributes.
Documents are ``retrieval.documents.N.document.*`` (retrieval) and
``ragtrace.context.documents.N.document.*`` (what a generation was given).
"""

from __future__ import annotations

import re

from ragtrace import semconv
from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.readers import openinference
from ragtrace_consumers.readers._reading import Role, SpanReading, model_of, text_attr

__all__ = ["RagtraceReader"]

_NAME_ROLE = {
    semconv.SPAN_RETRIEVE: Role.RETRIEVAL,
    semconv.SPAN_GENERATE: Role.GENERATION,
    semconv.SPAN_PIPELINE: Role.PIPELINE,
}
_CONTEXT_PREFIX = "ragtrace.context.documents."
_CONTEXT_KEY = re.compile(
    "^" + re.escape(_CONTEXT_PREFIX) + r"(\d+)\.document\.(id|content|score)$"
)


class RagtraceReader:
    name = "ragtrace"

    def read(self, span: SpanRecord) -> SpanReading | None:
        if span.scope != semconv.INSTRUMENTATION_SCOPE:
            return None
        attrs = span.attributes
        role = openinference.kind_role(attrs)
        if role is None:
            if span.name in _NAME_ROLE:
                role = _NAME_ROLE[span.name]
            elif span.name.split(" ", 1)[0] == semconv.GEN_AI_OPERATION_RETRIEVAL:
                role = Role.RETRIEVAL  # the conventions' name (OTEL_SEMCONV_STABILITY_OPT_IN)
            elif semconv.RAGTRACE_CONTEXT_COUNT in attrs:
                role = Role.GENERATION
            elif semconv.RAGTRACE_RETRIEVAL_COUNT in attrs:
                role = Role.RETRIEVAL
            else:
                role = Role.PIPELINE
        if role is Role.RETRIEVAL:
            return SpanReading(
                self.name,
                role,
                query=text_attr(attrs, semconv.INPUT_VALUE),
                chunks=openinference.retrieval_documents(attrs),
            )
        if role is Role.GENERATION:
            context = openinference.indexed_documents(attrs, _CONTEXT_PREFIX, _CONTEXT_KEY)
            listed = context if context else None
            count = attrs.get(semconv.RAGTRACE_CONTEXT_COUNT)
            if (
                listed is None
                and isinstance(count, int)
                and not isinstance(count, bool)
                and count == 0
            ):
                listed = ()
            return SpanReading(
                self.name,
                role,
                query=text_attr(attrs, semconv.INPUT_VALUE),
                context=listed,
                answer=text_attr(attrs, semconv.OUTPUT_VALUE),
                model=model_of(attrs),
            )
        query = (
            None
            if "json" in (text_attr(attrs, semconv.INPUT_MIME_TYPE) or "")
            else text_attr(attrs, semconv.INPUT_VALUE)
        )
        return SpanReading(self.name, role, query=query)
