"""Readers for the span dialects RAG apps are already instrumented with.

Each dialect has one module with one job — recognise a span's RAG role and extract what that
role carries: :mod:`.ragtrace` (our decorators), :mod:`.openinference` (LangChain, LlamaIndex,
…), :mod:`.genai` (OpenTelemetry GenAI conventions), :mod:`.traceloop` (OpenLLMetry),
:mod:`.langfuse` (Langfuse SDK v3+), :mod:`.vercel` (the Vercel AI SDK's own telemetry) and
:mod:`.mapping` (in-house keys from configuration).
:mod:`.chunks` and :mod:`.answers` hold the shared extraction rules (chunk IDs from ID fields,
metadata, then marked content hashes; answers unwrapped from JSON envelopes), :mod:`.tool_results`
what makes a tool call a retrieval step; :mod:`.registry` orders the readers; :mod:`.view` builds
a trace's :class:`~ragtrace_consumers.model.RagTrace` (the answer and its retrieval steps);
:mod:`.unrecognised` counts and logs what no reader took.
"""

from __future__ import annotations

from collections.abc import Iterable

from ragtrace_consumers.model import SpanRecord, group_by_trace
from ragtrace_consumers.readers._reading import Reader, Role, SpanReading
from ragtrace_consumers.readers.mapping import MappingRules
from ragtrace_consumers.readers.registry import (
    SpanReaders,
    default_readers,
    is_evaluation_span,
)
from ragtrace_consumers.readers.view import read_trace, to_rag_trace, user_attributes

__all__ = [
    "MappingRules",
    "Reader",
    "Role",
    "SpanReaders",
    "SpanReading",
    "creates_trace",
    "creating_traces",
    "default_readers",
    "is_evaluation_span",
    "is_rag_span",
    "read_trace",
    "role_of",
    "to_rag_trace",
    "user_attributes",
]


def role_of(span: SpanRecord) -> Role | None:
    """The span's RAG role, or None for a span that is not part of the RAG view."""
    reading = default_readers().read(span)
    return reading.role if reading is not None else None


def is_rag_span(span: SpanRecord) -> bool:
    return role_of(span) is not None


def creates_trace(spans: Iterable[SpanRecord]) -> bool:
    """True when these spans may start a new trace entry: at least one is a RAG span. A non-RAG
    root alone only updates a trace already being assembled (most traffic is not RAG)."""
    return any(is_rag_span(s) for s in spans)


def creating_traces(spans: Iterable[SpanRecord]) -> set[str]:
    """The traces of ``spans`` that :func:`creates_trace` lets start a store entry: what tools
    and tests pass as :meth:`~ragtrace_consumers.model.TraceStore.append`'s ``creates``."""
    return {t for t, group in group_by_trace(spans).items() if creates_trace(group)}
