"""Traces seen and not scored, each with its reason: what an operator reads when a trace has
no result row.

The pipeline counts every such trace on the skipped-by-reason metric
(``ragtrace.traces.skipped``, attribute ``reason``) and, when it was given a
:class:`~ragtrace_consumers.model.SkipLog`, records it there too (a
:class:`~ragtrace_consumers.model.SkippedTrace`), with :func:`skip_detail`'s sentence saying
what was missing. The embedded evaluator keeps the log in its SQLite state (``ragtrace serve``).
"""

from __future__ import annotations

from ragtrace_consumers import model
from ragtrace_consumers.model import RagTrace

__all__ = ["skip_detail"]

_DETAILS = {
    "not_rag": "no span was recognised as a retrieval or a generation (ragtrace inspect shows "
    "which reader took each span)",
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


def skip_detail(trace: RagTrace | None, reason: str) -> str:
    """A sentence saying why a trace was not scored (the trace's own n/a reasons appended)."""
    detail = _DETAILS.get(reason, reason)
    if trace is not None:
        extra = [r for r in (trace.recall_na_reason, trace.answer_na_reason) if r]
        if extra:
            detail += "; " + "; ".join(extra)
    return detail
