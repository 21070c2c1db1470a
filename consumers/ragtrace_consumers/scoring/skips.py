"""Traces seen and not scored, each with its reason: what an operator reads when a trace has
no result row.

The pipeline counts every such trace on the skipped-by-reason metric
(``ragtrace.traces.skipped``, attribute ``reason``) and, when it was given a
:class:`~ragtrace_consumers.model.SkipLog`, records it there too (a
:class:`~ragtrace_consumers.model.SkippedTrace`), with :func:`skip_detail`'s sentence saying
what was missing. The embedded evaluator keeps the log in its SQLite state (``ragtrace serve``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ragtrace_consumers import model
from ragtrace_consumers.model import RagTrace, SpanRecord
from ragtrace_consumers.readers import SpanReaders

__all__ = ["SKIP_UNRECOGNISED", "scopes_seen", "skip_detail", "unscored_reason"]

SKIP_NOT_RAG = "not_rag"
SKIP_UNRECOGNISED = "unrecognised"
_MAX_SCOPES = 8

_DETAILS = {
    SKIP_NOT_RAG: "no span was recognised as a retrieval or a generation (ragtrace inspect shows "
    "which reader took each span)",
    SKIP_UNRECOGNISED: "no reader recognised any span as a RAG step (a retrieval, a generation "
    "or a pipeline): if they are, configure the 'mapping' section (ragtrace inspect shows each "
    "span's attribute keys)",
    model.SKIP_NO_RETRIEVAL: "no retrieval span and nothing to judge",
    model.SKIP_NO_GENERATION: "no generation span",
    model.SKIP_NO_ANSWER: "the generation recorded no answer text",
    model.SKIP_NO_CONTEXT: "the answer has no context to be judged against (no retrieved "
    "documents and no documents listed on the generation)",
    model.SKIP_CONTEXT_TEXT_MISSING: "the context documents carry IDs but no text, and the "
    "generation recorded no input messages",
    model.SKIP_CONTEXT_TRUNCATED: "the context was truncated at export",
    model.SKIP_SAMPLED_OUT: "sampled out by the sampling rates",
    "unlabelled": "no label matched the question and the answer was not judged",
    "already_scored": "scored before",
    "budget_exhausted": "the judge budget was exhausted",
    "judge_gave_up": "the judge failed until the give-up age",
}


def unscored_reason(spans: Sequence[SpanRecord], readers: SpanReaders) -> str:
    """Why a trace holding no retrieval and no generation is not scored: ``not_rag`` when a
    span was read as its pipeline, else ``unrecognised``."""
    for span in spans:
        reading = readers.read(span)
        if reading is not None and reading.role is not None:
            return SKIP_NOT_RAG
    return SKIP_UNRECOGNISED


def scopes_seen(spans: Sequence[SpanRecord]) -> tuple[str, ...]:
    """The distinct instrumentation scopes of ``spans`` as ``name version`` (``name`` when it
    has none; ``(no scope)`` for an empty name), first seen first, at most eight."""
    names: dict[str, None] = {}
    for span in spans:
        name = span.scope or "(no scope)"
        names[f"{name} {span.scope_version}" if span.scope_version else name] = None
        if len(names) == _MAX_SCOPES:
            break
    return tuple(names)


def skip_detail(trace: RagTrace | None, reason: str, scopes: Sequence[str] = ()) -> str:
    """A sentence saying why a trace was not scored (the trace's own n/a reasons appended, then
    the instrumentation scopes it showed, when given)."""
    detail = _DETAILS.get(reason, reason)
    if scopes:
        detail += "; instrumentation scopes seen: " + ", ".join(scopes)
    if trace is not None:
        extra = [r for r in (trace.recall_na_reason, trace.answer_na_reason) if r]
        if extra:
            detail += "; " + "; ".join(extra)
    return detail
