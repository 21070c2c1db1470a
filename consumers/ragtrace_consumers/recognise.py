"""Compatibility names for the span readers (:mod:`ragtrace_consumers.readers`), which replaced
this module: every dialect now has its own reader there."""

from __future__ import annotations

from ragtrace_consumers.model import Chunk, SpanRecord
from ragtrace_consumers.readers import (
    Role,
    is_evaluation_span,
    is_rag_span,
    role_of,
    to_rag_trace,
    user_attributes,
)
from ragtrace_consumers.readers.openinference import retrieval_documents
from ragtrace_consumers.readers.ragtrace import RagtraceReader

__all__ = [
    "Role",
    "context_chunks",
    "is_evaluation_span",
    "is_rag_span",
    "retrieved_chunks",
    "role_of",
    "to_rag_trace",
    "user_attributes",
]


def retrieved_chunks(span: SpanRecord) -> list[Chunk]:
    """The ranked documents of one retrieval span, as its reader extracts them."""
    from ragtrace_consumers.readers import default_readers

    reading = default_readers().read(span)
    if reading is not None and reading.chunks:
        return list(reading.chunks)
    return list(retrieval_documents(span.attributes))


def context_chunks(span: SpanRecord) -> list[Chunk] | None:
    """The documents a generation span says it supplied, or None when it says nothing."""
    reading = RagtraceReader().read(span)
    if reading is None or reading.context is None:
        return None
    return list(reading.context)
