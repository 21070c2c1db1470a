"""The scored-results sink of the embedded evaluator: every scored trace is recorded by the
scored results' owner (:mod:`ragtrace_consumers.stores.scored_results`, what ``ragtrace serve``
and ``ragtrace demo`` print from) first, then delivered to the OTLP sink when one is
configured: a result is kept (and shown) whether or not an exporter takes it. The gold IDs kept
in a trace's detail come from the label store seam. :meth:`RecordingSink.record` keeps a
re-scored trace (its label changed) without delivering it again.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ragtrace.evaluation.declines import decline
from ragtrace_consumers.errors import NotRecorded, WriteBackError
from ragtrace_consumers.model import LabelStore, ScoreSink, TraceScores
from ragtrace_consumers.stores.scored_results import ScoredResult, SqliteScoredResults

__all__ = ["RecordingSink", "to_scored_result", "trace_detail"]


def _known(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


_RETRIEVAL_FIELDS = ("question_id", "matched_by", "k", "recall", "hit_rate", "reciprocal_rank")
_JUDGE_FIELDS = (
    *("groundedness", "claims", "unsupported_claims"),
    *("judge_name", "judge_model", "judge_error", "grounded"),
)


def _kept(previous: ScoredResult | None, names: tuple[str, ...]) -> dict[str, Any]:
    """The fields ``names`` of ``previous`` (none without one): a family not written again."""
    return {} if previous is None else {n: getattr(previous, n) for n in names}


def to_scored_result(
    scores: TraceScores, scored_at: float, previous: ScoredResult | None = None
) -> ScoredResult:
    """The table row for ``scores``. A family not written this time (it was written before a
    restart or a re-delivery) keeps its values from ``previous``."""
    trace = scores.trace
    r, g = scores.retrieval, scores.groundedness
    retrieval_fields = _kept(previous, _RETRIEVAL_FIELDS)
    if r is not None:
        retrieval_fields = {
            "question_id": r.question_id,
            "matched_by": r.matched_by,
            "k": r.scores.k,
            "recall": _known(r.scores.recall),
            "hit_rate": _known(r.scores.hit_rate),
            "reciprocal_rank": _known(r.scores.reciprocal_rank),
        }
    judge_fields = _kept(previous, _JUDGE_FIELDS)
    if g is not None:
        judge_fields = {
            "groundedness": g.score,
            "claims": len(g.claims),
            "unsupported_claims": tuple(c.claim for c in g.claims if not c.entailed),
            "judge_name": g.judge.name,
            "judge_model": g.judge.model,
            "judge_error": g.error,
            "grounded": scores.grounded,
        }
    extra: dict[str, object] = dict(previous.extra) if previous is not None else {}
    if r is not None:
        extra.update(
            labels_version=r.labels_version,
            recall_definition=r.definition.value,
            gold_size=r.scores.gold_size,
            k_from="trace" if r.k_declared else "scoring.k",
        )
        if not r.answerable:  # the verdict's reason, for the trace page
            extra["decline_reason"] = decline(trace.answer).reason
        if r.step_recall:
            extra["step_recall"] = [_known(v) for v in r.step_recall]
            extra["step_k"] = list(r.step_k)
    if trace.steps:
        extra["steps"] = [s.summary() for s in trace.steps]
    if g is not None:
        extra.update(judge_cost_usd=scores.groundedness_cost_usd, no_claims=g.no_claims)
        if trace.context_source is not None:
            extra["context_source"] = trace.context_source
            extra["context_sources"] = list(trace.context_sources)
    if scores.answers is not None:
        for m in scores.answers.results:
            extra[m.metric] = m.score
        extra["answer_question_id"] = scores.answers.question_id
        extra["answer_reference_source"] = scores.answers.reference_source
    if r is None and trace.recall_na_reason:
        extra["recall_na_reason"] = trace.recall_na_reason
    if g is None and trace.answer_na_reason:
        extra["groundedness_na_reason"] = trace.answer_na_reason
    if "question_id" not in retrieval_fields and trace.question_id:
        retrieval_fields["question_id"] = trace.question_id
    return ScoredResult(
        trace_id=trace.trace_id,
        scored_at=scored_at,
        service=trace.service,
        cell=scores.cell.value,
        model=trace.model,
        pipeline=trace.pipeline,
        query=trace.query,
        retrieved=tuple(c.id for c in trace.retrieved),
        answer=trace.answer,
        extra=extra,
        **retrieval_fields,
        **judge_fields,
    )


def _chunks(chunks: Sequence[Any]) -> list[dict[str, object]]:
    return [
        {"id": c.id, "text": c.text, "score": _known(c.score), "hashed": c.hashed}
        | ({"turn": c.turn} if c.turn else {})
        for c in chunks
    ]


def trace_detail(scores: TraceScores, gold: frozenset[str] | None) -> dict[str, object]:
    """What the web view's trace page shows beyond the row: the ranked retrieved chunks and the
    context with their text, the gold IDs of the matched question, the judge's full result
    (units, claims, quotes, failed checks, provenance) and the span IDs; and what matching it to
    a label again needs (the query's digest, the trace's own question ID)."""
    trace, g = scores.trace, scores.groundedness
    return {
        "retrieved": _chunks(trace.retrieved),
        "steps": [s.summary() for s in trace.steps],
        "context": _chunks(trace.context),
        "gold": sorted(gold) if gold is not None else None,
        "groundedness": g.to_dict() if g is not None else None,
        "span_ids": {
            "target": trace.target_span_id,
            "retrieval": trace.retrieval_span_id,
            "generation": trace.generation_span_id,
        },
        "context_truncated": trace.context_truncated,
        "model": trace.model,
        "query_sha256": trace.query_sha256,
        "question_id": trace.question_id,
        "data_source": trace.data_source,
        "session_id": trace.session_id,
        "earlier_turn_units": {str(u): t for u, t in sorted(scores.earlier_turn_units.items())},
    }


class RecordingSink:
    """A :class:`~ragtrace_consumers.model.ScoreSink` that records every scored trace in the
    SQLite results table, then delivers it to ``inner`` (the OTLP sink) when there is one.

    With ``labels``, the gold IDs of the matched question (as labelled now) are kept in the
    trace's detail.
    A failure of either raises :class:`WriteBackError`, so the Pipeline parks and retries the
    trace instead of marking it written; a delivery that fails leaves the trace recorded (the
    retry records it again, in place; its metrics are counted once). A failure to record is
    :class:`NotRecorded`.
    """

    def __init__(
        self,
        results: SqliteScoredResults,
        inner: ScoreSink | None = None,
        *,
        clock: Callable[[], float] = time.time,
        labels: LabelStore | None = None,
    ) -> None:
        self._labels = labels
        self._results = results
        self._inner = inner
        self._clock = clock
        self._recorded = threading.Condition()
        self._delivering: set[str] = set()  # recorded, delivery not yet attempted

    def write(self, scores: TraceScores) -> None:
        trace_id = scores.trace.trace_id
        with self._recorded:
            self._delivering.add(trace_id)
        try:
            self.record(scores)
        except NotRecorded:
            with self._recorded:
                self._delivering.discard(trace_id)
            raise
        # A row counts for waiters once its delivery was attempted: the caller's metrics follow.
        try:
            if self._inner is not None:
                self._inner.write(scores)
        finally:
            with self._recorded:
                self._delivering.discard(trace_id)
                self._recorded.notify_all()

    def record(self, scores: TraceScores) -> None:
        """Keep ``scores`` in the results table (in place of the trace's row) without
        delivering them; :class:`NotRecorded` when that fails."""
        try:
            previous = self._results.get(scores.trace.trace_id)
            result = to_scored_result(scores, self._clock(), previous)
            gold = self._gold(result.question_id)
            detail = None
            if previous is None or scores.groundedness is not None or scores.retrieval is not None:
                detail = trace_detail(scores, gold)
            self._results.put(result, detail)
        except Exception as exc:
            raise NotRecorded(
                f"scores of trace {scores.trace.trace_id} not recorded: {exc}"
            ) from exc

    def _gold(self, qid: str | None) -> frozenset[str] | None:
        """The gold IDs of the labelled question ``qid`` (None: not labelled now)."""
        found = None if self._labels is None or not qid else self._labels.by_id(qid)
        gold = getattr(found, "gold", None)
        return None if gold is None else frozenset(gold)

    def wait_for_change(self, timeout_s: float) -> None:
        """Block until a trace is recorded, :meth:`wake` is called, or the timeout."""
        with self._recorded:
            self._recorded.wait(timeout_s)

    def wake(self) -> None:
        with self._recorded:
            self._recorded.notify_all()

    def wait_for_results(self, count: int, timeout_s: float) -> list[ScoredResult]:
        """Block until the table holds at least ``count`` rows whose delivery was attempted (or
        the timeout); returns every row, oldest first."""
        with self._recorded:
            self._recorded.wait_for(
                lambda: len(self._results) - len(self._delivering) >= count, timeout_s
            )
        return [r for _, r in self._results.all()]

    def write_many(self, batch: Sequence[TraceScores]) -> list[WriteBackError | None]:
        """:meth:`write` each in turn: an item not recorded gives its error, the rest go on."""
        out: list[WriteBackError | None] = []
        for scores in batch:
            try:
                self.write(scores)
            except WriteBackError as exc:
                out.append(exc)
            else:
                out.append(None)
        return out

    def shutdown(self) -> None:
        if self._inner is not None:
            self._inner.shutdown()
