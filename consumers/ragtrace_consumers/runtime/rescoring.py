"""Re-scoring stored traces after their question's label changed (the web view's label form).

A scored trace's spans are deleted once it is released; what stays is its row and its detail
(:mod:`~ragtrace_consumers.stores.scored_results`). :func:`stored_rag_trace` rebuilds from them
what retrieval scoring reads — each retrieval step's ranked IDs and declared top-k, the context,
the query's digest and the trace's own question ID — and :func:`stored_judgement` the judgement
the trace was given. :class:`Rescoring` hands both to :meth:`Pipeline.rescore` (the pipeline's own
retrieval scoring and cell, never a second copy, never another judge call), which keeps the
result in place of the row (:meth:`RecordingSink.record`: the trace keeps its place in the list)
before counting it.

A trace is left as it is when it cannot be re-scored faithfully: no detail (scored before
details were kept), a judgement whose stored form is missing or unreadable, or no labelled
question matching it now.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ragtrace.evaluation.judges import GroundednessResult
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace.normalize import question_sha256
from ragtrace_consumers.model import Chunk, RagTrace, RetrievalStep
from ragtrace_consumers.scoring.label_match import MATCHED_BY_TEXT
from ragtrace_consumers.scoring.pipeline import Pipeline
from ragtrace_consumers.stores.scored_results import ScoredResult, SqliteScoredResults
from ragtrace_consumers.writeback.recording_sink import RecordingSink

__all__ = ["RECENT_TRACES", "Rescoring", "stored_judgement", "stored_rag_trace"]

RECENT_TRACES = 1000
"""How many of the most recently scored traces are searched for others asking a question."""

_log = logging.getLogger(__name__)


def _dicts(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _chunks(value: object) -> tuple[Chunk, ...]:
    return tuple(
        Chunk(
            str(c["id"]),
            _opt_str(c.get("text")),
            float(c["score"]) if isinstance(c.get("score"), int | float) else None,
            bool(c.get("hashed")),
            _opt_str(c.get("turn")),
        )
        for c in _dicts(value)
        if c.get("id")
    )


def _step(s: Mapping[str, Any]) -> RetrievalStep:
    top_k = s.get("top_k")
    return RetrievalStep(
        span_id=str(s.get("span_id") or ""),
        query=_opt_str(s.get("query")),
        chunks=tuple(Chunk(str(i)) for i in s.get("ids") or () if i),
        tool=_opt_str(s.get("tool")),
        top_k=top_k if isinstance(top_k, int) and top_k > 0 else None,
    )


def stored_rag_trace(result: ScoredResult, detail: Mapping[str, Any] | None) -> RagTrace | None:
    """The trace as retrieval scoring reads it, from its stored row and detail (None: no
    detail). A detail written before it kept the query's digest and the trace's own question ID
    falls back to the stored query's digest and to the row's question ID unless that was
    matched by text (then the trace named none that was labelled)."""
    if detail is None:
        return None
    spans = detail.get("span_ids")
    span_ids: Mapping[str, Any] = spans if isinstance(spans, Mapping) else {}
    retrieved = _chunks(detail.get("retrieved"))
    steps = tuple(_step(s) for s in _dicts(detail.get("steps")))
    digest = _opt_str(detail.get("query_sha256"))
    if digest is None and result.query:
        digest = question_sha256(result.query)
    if "question_id" in detail:
        own_qid = _opt_str(detail.get("question_id"))
    else:
        own_qid = result.question_id if result.matched_by != MATCHED_BY_TEXT else None
    extra = result.extra
    sources = extra.get("context_sources")
    return RagTrace(
        trace_id=result.trace_id,
        service=result.service,
        target_span_id=str(span_ids.get("target") or ""),
        pipeline=result.pipeline,
        query=result.query,
        query_sha256=digest,
        question_id=own_qid,
        retrieved=retrieved,
        context=_chunks(detail.get("context")),
        answer=result.answer,
        model=_opt_str(detail.get("model")),
        data_source=_opt_str(detail.get("data_source")),
        context_truncated=bool(detail.get("context_truncated")),
        has_retrieval=bool(retrieved) or any(s.chunks for s in steps),
        has_generation=result.answer is not None,
        retrieval_span_id=_opt_str(span_ids.get("retrieval")),
        generation_span_id=_opt_str(span_ids.get("generation")),
        recall_na_reason=_opt_str(extra.get("recall_na_reason")),
        session_id=_opt_str(detail.get("session_id")),
        context_source=_opt_str(extra.get("context_source")),
        steps=steps,
        context_sources=tuple(str(s) for s in sources) if isinstance(sources, list) else (),
    )


def stored_judgement(
    result: ScoredResult, detail: Mapping[str, Any] | None
) -> tuple[bool, GroundednessResult | None]:
    """(readable, the judgement) of a stored trace: (True, None) for a trace never judged,
    (False, None) when the row has a groundedness its detail does not hold in a readable form."""
    raw = detail.get("groundedness") if detail is not None else None
    if isinstance(raw, Mapping):
        try:
            return True, GroundednessResult.from_dict(raw)
        except (TypeError, ValueError, KeyError):
            _log.warning("trace %s: its stored judgement is unreadable", result.trace_id)
            return False, None
    return result.groundedness is None and result.judge_name is None, None


class Rescoring:
    """Re-scores a trace (and, when asked, the other recently scored traces asking the same
    question) after its label was saved: ``rescoring(trace_id, question, others)`` returns the
    IDs of the traces re-scored, in that order."""

    def __init__(
        self,
        results: SqliteScoredResults,
        pipeline: Pipeline,
        sink: RecordingSink,
        *,
        recent: int = RECENT_TRACES,
    ) -> None:
        if recent < 1:
            raise ValueError(f"recent must be >= 1, got {recent}")
        self._results = results
        self._pipeline = pipeline
        self._sink = sink
        self._recent = recent

    def __call__(self, trace_id: str, question: LabelledQuestion, others: bool) -> list[str]:
        ids = [trace_id] + (self.asking(question, besides=trace_id) if others else [])
        items: list[tuple[RagTrace, GroundednessResult | None, float]] = []
        for tid in ids:
            result = self._results.get(tid)
            if result is None:
                continue
            detail = self._results.detail(tid)
            trace = stored_rag_trace(result, detail)
            readable, judgement = stored_judgement(result, detail)
            if trace is None or not readable:
                continue
            cost = result.extra.get("judge_cost_usd")
            items.append((trace, judgement, float(cost) if isinstance(cost, int | float) else 0.0))
        rescored = self._pipeline.rescore(items, self._sink.record)
        return [
            trace.trace_id
            for (trace, _, _), scores in zip(items, rescored, strict=True)
            if scores is not None
        ]

    def asking(self, question: LabelledQuestion, *, besides: str = "") -> list[str]:
        """The IDs of the :data:`RECENT_TRACES` most recently scored traces that ask
        ``question``: by its qid, or by the stored query's normalised text, newest first."""
        newest = self._results.newest_seq()
        rows = self._results.all(after_seq=max(0, newest - self._recent), limit=self._recent)
        digest = question.question_sha256
        return [
            r.trace_id
            for _, r in reversed(rows)
            if r.trace_id != besides
            and (r.question_id == question.qid or (r.query and question_sha256(r.query) == digest))
        ]
