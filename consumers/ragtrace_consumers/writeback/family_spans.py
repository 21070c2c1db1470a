"""Evaluation results where the GenAI conventions and OpenInference put them: one small span per
metric family, child of the span that family evaluates.

The GenAI convention's ``gen_ai.evaluation.result`` SHOULD be parented to the operation it
evaluates. A finished span cannot gain events, so each family gets its own evaluation span in
the same trace, child of (and linked to, OpenInference's annotation form: exactly one link)
its target, carrying that family's events:

* ``recall`` (recall, hit_rate, precision, reciprocal_rank, ndcg, context_relevancy) → the
  retrieval span that returned the documents (``RagTrace.retrieval_span_id``);
* ``groundedness`` → the generation span that carried the answer
  (``RagTrace.generation_span_id``), with ``gen_ai.response.id`` when that span has one
  (a judge error's ``error.type`` comes with the event, :mod:`~ragtrace_consumers.writeback.span_content`);
* ``answer`` (answer_relevancy, answer_correctness) → the same generation span, with the same
  two attributes.

A trace without such a span falls back to ``target_span_id``. Span IDs are functions of (trace,
family) only and timestamps the trace's end, so a replay re-sends identical spans. Pure: the
OTLP sink turns each :class:`MetricSpan` into an SDK span.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from opentelemetry.util.types import AttributeValue

from ragtrace import semconv
from ragtrace_consumers.model import (
    FAMILY_ANSWER,
    FAMILY_GROUNDEDNESS,
    FAMILY_RECALL,
    METRIC_CORRECTNESS,
    METRIC_RELEVANCY,
    TraceScores,
)
from ragtrace_consumers.writeback.span_content import EvaluationEvent, evaluation_events

__all__ = [
    "GEN_AI_RESPONSE_ID",
    "MetricSpan",
    "metric_span_id",
    "metric_spans",
]

GEN_AI_RESPONSE_ID = "gen_ai.response.id"
_FAMILY_OF_EVENT = {
    "groundedness": FAMILY_GROUNDEDNESS,
    METRIC_RELEVANCY: FAMILY_ANSWER,
    METRIC_CORRECTNESS: FAMILY_ANSWER,
}
_ON_GENERATION = frozenset({FAMILY_GROUNDEDNESS, FAMILY_ANSWER})


@dataclass(frozen=True)
class MetricSpan:
    """One family's evaluation span: where it goes and what it carries."""

    family: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    events: tuple[EvaluationEvent, ...] = ()

    def __post_init__(self) -> None:
        if self.family not in (FAMILY_RECALL, FAMILY_GROUNDEDNESS, FAMILY_ANSWER):
            raise ValueError(f"unknown metric family {self.family!r}")
        if len(self.span_id) != 16 or len(self.parent_span_id) != 16:
            raise ValueError(f"bad span IDs {self.span_id!r} / {self.parent_span_id!r}")

    @property
    def name(self) -> str:
        return f"{semconv.SPAN_EVALUATION}.{self.family}"


def metric_span_id(trace_id: str, family: str) -> str:
    """16 hex chars, a function of the trace and the family only (never 0; never equal to the
    summary span's :func:`~ragtrace_consumers.writeback.span_content.evaluation_span_id`)."""
    digest = hashlib.sha256(f"{trace_id.lower()}|metric|{family}".encode()).digest()
    return f"{int.from_bytes(digest[:8], 'big') or 1:016x}"


def metric_spans(
    scores: TraceScores,
    *,
    recall_threshold: float | None = None,
    groundedness_threshold: float | None = None,
) -> list[MetricSpan]:
    """The evaluation span of each family written in ``scores`` (recall first)."""
    trace = scores.trace
    by_family: dict[str, list[EvaluationEvent]] = {
        FAMILY_RECALL: [],
        FAMILY_GROUNDEDNESS: [],
        FAMILY_ANSWER: [],
    }
    for name, attrs in evaluation_events(
        scores, recall_threshold=recall_threshold, groundedness_threshold=groundedness_threshold
    ):
        metric = str(attrs[semconv.GEN_AI_EVALUATION_NAME])
        family = _FAMILY_OF_EVENT.get(metric, FAMILY_RECALL)
        if family in _ON_GENERATION:
            attrs = dict(attrs)
            if trace.response_id:
                attrs[GEN_AI_RESPONSE_ID] = trace.response_id
        by_family[family].append((name, attrs))
    targets = {
        FAMILY_RECALL: trace.retrieval_span_id,
        FAMILY_GROUNDEDNESS: trace.generation_span_id,
        FAMILY_ANSWER: trace.generation_span_id,
    }
    out = []
    for family in scores.families:
        events = by_family[family]
        if not events:
            continue
        parent = targets[family] or trace.target_span_id
        out.append(
            MetricSpan(
                family=family,
                span_id=metric_span_id(trace.trace_id, family),
                parent_span_id=parent,
                attributes={
                    semconv.EVAL_MARKER: True,
                    semconv.OPENINFERENCE_SPAN_KIND: semconv.SpanKind.EVALUATOR,
                    semconv.EVAL_TARGET_SPAN_ID: parent,
                    semconv.EVAL_FAMILY: family,
                },
                events=tuple(events),
            )
        )
    return out
