"""Write scores back into the trace they evaluate: one evaluation span per write, in the SAME
trace, parented to ``RagTrace.target_span_id``.

The span carries one ``gen_ai.evaluation.result`` event per metric (name, score value, label,
explanation; answer relevancy and correctness too when the trace was scored for them) and flat ``ragtrace.eval.*`` attributes that trace search can filter on. Its span
ID is derived from (trace ID, metric families), and its timestamps and attributes from the
scores alone, so replaying a trace after a crash re-sends an identical span instead of adding a
second, different one. Both timestamps are the evaluated trace's end, which keeps the span
beside what it evaluates in a waterfall view; the scoring delay is a metric instead.

:func:`metric_spans` splits the same events into one small span per metric family, child of
the span that family evaluates (the section at the end of this module).

:func:`evaluation_attributes`, :func:`evaluation_events` and :func:`metric_spans` are pure, for
any other sink.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from opentelemetry.util.types import AttributeValue

from ragtrace import semconv
from ragtrace.evaluation.declines import decline
from ragtrace.evaluation.judges import MetricResult
from ragtrace.evaluation.judges.error_types import judge_error_type
from ragtrace_consumers.model import (
    FAMILY_ANSWER,
    FAMILY_GROUNDEDNESS,
    FAMILY_RECALL,
    METRIC_CORRECTNESS,
    METRIC_RELEVANCY,
    TraceScores,
)
from ragtrace_consumers.scoring.sessions import earlier_turns

__all__ = [
    "FAIL",
    "GEN_AI_RESPONSE_ID",
    "PASS",
    "EvaluationEvent",
    "MetricSpan",
    "cell_event",
    "evaluation_attributes",
    "evaluation_events",
    "evaluation_span_id",
    "metric_span_id",
    "metric_spans",
]

PASS = "pass"
FAIL = "fail"
_EXPLANATION_MAX = 1000

EvaluationEvent = tuple[str, dict[str, AttributeValue]]


def evaluation_span_id(trace_id: str, families: Sequence[str]) -> str:
    """16 hex chars, a function of the trace and the sorted metric families only (never 0)."""
    digest = hashlib.sha256(f"{trace_id.lower()}|{','.join(sorted(families))}".encode()).digest()
    value = int.from_bytes(digest[:8], "big") or 1
    return f"{value:016x}"


def _label(score: float, threshold: float | None) -> str | None:
    if threshold is None:
        return None
    return PASS if score >= threshold else FAIL


def _clip(text: str) -> str:
    return text if len(text) <= _EXPLANATION_MAX else text[: _EXPLANATION_MAX - 1] + "…"


def evaluation_attributes(scores: TraceScores) -> dict[str, AttributeValue]:
    """The flat span attributes (only keys with a value; never NaN)."""
    trace = scores.trace
    attrs: dict[str, AttributeValue] = {
        semconv.EVAL_MARKER: True,
        semconv.OPENINFERENCE_SPAN_KIND: semconv.SpanKind.EVALUATOR,
        semconv.EVAL_TARGET_SPAN_ID: trace.target_span_id,
        semconv.EVAL_CELL: scores.cell.value,
    }
    if trace.pipeline:
        attrs[semconv.RAGTRACE_PIPELINE_NAME] = trace.pipeline
    if trace.model:
        attrs[semconv.EVAL_GENERATOR_MODEL] = trace.model
    if trace.data_source:
        attrs[semconv.GEN_AI_DATA_SOURCE_ID] = trace.data_source
    if trace.session_id:
        attrs[semconv.EVAL_SESSION_ID] = trace.session_id
    if len(trace.steps) > 1:
        attrs[semconv.EVAL_STEPS_COUNT] = len(trace.steps)
    r = scores.retrieval
    if r is not None:
        attrs[semconv.EVAL_K] = r.scores.k
        attrs[semconv.EVAL_RECALL_DEFINITION] = r.definition.value
        attrs[semconv.EVAL_GOLD_SIZE] = r.scores.gold_size
        attrs[semconv.EVAL_QUESTION_ID] = r.question_id
        attrs[semconv.EVAL_MATCHED_BY] = r.matched_by
        attrs[semconv.EVAL_LABELS_VERSION] = r.labels_version
        for key, value in (
            (semconv.EVAL_RECALL, r.scores.recall),
            (semconv.EVAL_HIT_RATE, r.scores.hit_rate),
            (semconv.EVAL_PRECISION, r.scores.precision),
            (semconv.EVAL_RECIPROCAL_RANK, r.scores.reciprocal_rank),
            (semconv.EVAL_NDCG, r.scores.ndcg),
            (semconv.EVAL_CONTEXT_RELEVANCY, r.context_relevancy),
        ):
            if value is not None and not math.isnan(value):
                attrs[key] = float(value)
        if r.step_recall:
            attrs[semconv.EVAL_STEP_RECALL] = tuple(float(v) for v in r.step_recall)
    elif trace.recall_na_reason:
        attrs[semconv.EVAL_RECALL_NA_REASON] = trace.recall_na_reason
    g = scores.groundedness
    if g is None and trace.answer_na_reason:
        attrs[semconv.EVAL_GROUNDEDNESS_NA_REASON] = trace.answer_na_reason
    if g is not None:
        attrs[semconv.EVAL_JUDGE_NAME] = g.judge.name
        if g.judge.model:
            attrs[semconv.EVAL_JUDGE_MODEL] = g.judge.model  # configured: the judge's identity
        if g.served_model:
            attrs[semconv.GEN_AI_RESPONSE_MODEL] = g.served_model  # what the API served
        attrs[semconv.EVAL_JUDGE_PROMPT_SHA256] = g.judge.prompt_sha256
        attrs[semconv.EVAL_JUDGE_COST_USD] = float(scores.groundedness_cost_usd)
        if trace.context_source is not None:
            attrs[semconv.EVAL_CONTEXT_SOURCE] = trace.context_source
            attrs[semconv.EVAL_CONTEXT_SOURCES] = trace.context_sources
        turns = earlier_turns(trace)
        if turns:
            attrs[semconv.EVAL_EARLIER_TURNS] = turns
        if scores.earlier_turn_units:
            attrs[semconv.EVAL_EARLIER_TURN_UNITS] = tuple(sorted(scores.earlier_turn_units))
        if g.injection_suspected:
            attrs[semconv.EVAL_INJECTION_SUSPECTED] = True
        if g.score is not None:
            attrs[semconv.EVAL_GROUNDEDNESS] = float(g.score)
            attrs[semconv.EVAL_GROUNDEDNESS_CLAIMS] = len(g.claims)
            attrs[semconv.EVAL_GROUNDEDNESS_UNSUPPORTED] = g.unsupported_claims
            attrs[semconv.EVAL_GROUNDEDNESS_NO_CLAIMS] = g.no_claims
    a = scores.answers
    if a is not None:
        attrs[semconv.EVAL_ANSWER_REFERENCE_SOURCE] = a.reference_source
        if a.question_id is not None:
            attrs[semconv.EVAL_ANSWER_QUESTION_ID] = a.question_id
        attrs[semconv.EVAL_ANSWER_COST_USD] = float(a.cost_usd)
        for key, m in (
            (semconv.EVAL_ANSWER_RELEVANCY, a.relevancy),
            (semconv.EVAL_ANSWER_CORRECTNESS, a.correctness),
        ):
            if m is not None and m.score is not None:
                attrs[key] = float(m.score)
    return attrs


def _event(
    name: str, value: float | None, label: str | None, explanation: str | None
) -> EvaluationEvent:
    attrs: dict[str, AttributeValue] = {semconv.GEN_AI_EVALUATION_NAME: name}
    if value is not None:
        attrs[semconv.GEN_AI_EVALUATION_SCORE_VALUE] = float(value)
    if label is not None:
        attrs[semconv.GEN_AI_EVALUATION_SCORE_LABEL] = label
    if explanation:
        attrs[semconv.GEN_AI_EVALUATION_EXPLANATION] = _clip(explanation)
    return semconv.GEN_AI_EVALUATION_RESULT, attrs


def _error_event(name: str, error: str | None) -> EvaluationEvent:
    """A judge failure: no value and no label (a failure is not a score), the class of the
    failure as ``error.type`` and the judge's message as the explanation."""
    event_name, attrs = _event(name, None, None, error)
    attrs[semconv.ERROR_TYPE] = judge_error_type(error)
    return event_name, attrs


def evaluation_events(
    scores: TraceScores,
    *,
    recall_threshold: float | None = None,
    groundedness_threshold: float | None = None,
) -> list[EvaluationEvent]:
    """One ``gen_ai.evaluation.result`` event per metric, retrieval metrics first.

    Unanswerable questions (empty gold set) get a ``recall`` event labelled ``unanswerable``
    with no value, then a ``declined`` event: value 1.0 and label ``declined`` when the answer
    declined (:func:`~ragtrace.evaluation.declines.decline`), 0.0 and ``answered`` when it did
    not, the deciding unit quoted as explanation; a judge error gets a ``groundedness`` event with no value
    and no label, its ``error.type`` (:func:`~ragtrace.evaluation.judges.error_types.judge_error_type`)
    and the judge's message as explanation.
    """
    events: list[EvaluationEvent] = []
    r = scores.retrieval
    if r is not None:
        s = r.scores
        if not r.answerable:
            events.append(
                _event(
                    "recall",
                    None,
                    "unanswerable",
                    f"question {r.question_id} has an empty gold set",
                )
            )
            did = decline(scores.trace.answer)
            events.append(
                _event(
                    "declined",
                    1.0 if did.declined else 0.0,
                    "declined" if did.declined else "answered",
                    did.reason,
                )
            )
        else:
            found = round(s.recall * s.gold_size)
            why = (
                f"{found} of {s.gold_size} gold chunks in the top {s.k} "
                f"(question {r.question_id}, matched by {r.matched_by})"
            )
            # The headline's pass/fail goes on the event of the definition it was scored by.
            verdict = _label(r.headline, recall_threshold)
            by = r.definition.value
            events.append(_event("recall", s.recall, verdict if by == "mean_recall" else None, why))
            events.append(
                _event("hit_rate", s.hit_rate, verdict if by == "hit_rate" else None, None)
            )
            events.append(_event("precision", s.precision, None, None))
            events.append(_event("reciprocal_rank", s.reciprocal_rank, None, None))
            events.append(_event("ndcg", s.ndcg, None, None))
            if r.context_relevancy is not None:
                events.append(_event("context_relevancy", r.context_relevancy, None, None))
    g = scores.groundedness
    if g is not None:
        if g.score is None:
            events.append(_error_event("groundedness", g.error))
        elif g.no_claims:
            events.append(
                _event(
                    "groundedness",
                    g.score,
                    _label(g.score, groundedness_threshold),
                    "the answer makes no factual claims",
                )
            )
        else:
            entailed = len(g.claims) - g.unsupported_claims
            why = f"{entailed} of {len(g.claims)} claims entailed by the context"
            unsupported = [c.claim for c in g.claims if not c.entailed]
            if unsupported:
                why += "; unsupported: " + " | ".join(unsupported)
            events.append(
                _event("groundedness", g.score, _label(g.score, groundedness_threshold), why)
            )
    if scores.answers is not None:
        events += [_answer_event(m) for m in scores.answers.results]
    return events


def _versus(name: str, value: float, threshold: float | None) -> str:
    if threshold is None:
        return f"{name} {value:.2f}"
    return f"{name} {value:.2f} {'>=' if value >= threshold else '<'} {threshold:g}"


def cell_event(
    scores: TraceScores,
    *,
    recall_threshold: float | None = None,
    groundedness_threshold: float | None = None,
) -> EvaluationEvent:
    """The headline result: ``gen_ai.evaluation.name`` ``cell``, the attribution cell as its
    label (:class:`~ragtrace.evaluation.attribution.Cell`: ``fine``, ``retrieval_failed``,
    ``generation_failed``, ``both_failed``, ``unlabelled``, ``unlabelled_not_grounded``,
    ``unanswerable_declined``, ``unanswerable_answered``, ``unjudged``) and why as its
    explanation (each side against its threshold, or why it is unknown; for an unanswerable
    question what the answer did). No value: a cell is a category."""
    trace, why = scores.trace, []
    r = scores.retrieval
    if r is not None and r.answerable:
        why.append(_versus(r.definition.value, r.headline, recall_threshold))
    elif r is not None:
        why.append(f"question {r.question_id} is unanswerable (empty gold set)")
        why.append(decline(trace.answer).reason)
    elif trace.recall_na_reason:
        why.append(f"recall unknown: {trace.recall_na_reason}")
    g = scores.groundedness
    if g is not None and g.score is not None:
        why.append(_versus("groundedness", g.score, groundedness_threshold))
    elif g is not None:
        why.append("groundedness unknown: the judge failed")
    elif trace.answer_na_reason:
        why.append(f"groundedness unknown: {trace.answer_na_reason}")
    return _event("cell", None, scores.cell.value, "; ".join(why) or None)


def _answer_event(m: MetricResult) -> EvaluationEvent:
    """An answer metric's event: its score, or the judge's failure."""
    if m.score is None:
        return _error_event(m.metric, m.error)
    if m.metric == METRIC_RELEVANCY:
        needs = [d for d in m.details if "need" in d]
        addressed = sum(bool(d.get("addressed")) for d in needs)
        why = f"{addressed} of {len(needs)} information needs of the question addressed"
    elif any(d.get("method") == "token_f1" for d in m.details):
        why = "token F1 between the answer and the reference answer"
    else:
        claims = [d for d in m.details if "claim" in d]
        facts = [d for d in m.details if "fact" in d]
        supported = sum(d.get("verdict") == "supported" for d in claims)
        covered = sum(bool(d.get("covered")) for d in facts)
        why = (
            f"{supported} of {len(claims)} answer claims supported by the reference answer, "
            f"{covered} of {len(facts)} reference facts covered"
        )
    return _event(m.metric, m.score, None, why)


# --- One span per metric family ---------------------------------------------------------------
# The GenAI convention's ``gen_ai.evaluation.result`` SHOULD be parented to the operation it
# evaluates. A finished span cannot gain events, so each family gets its own evaluation span in
# the same trace, child of (and linked to, OpenInference's annotation form: exactly one link) its
# target, carrying that family's events: ``recall`` (recall, hit_rate, precision,
# reciprocal_rank, ndcg, context_relevancy) → the retrieval span that returned the documents
# (``RagTrace.retrieval_span_id``); ``groundedness`` → the generation span that carried the
# answer (``RagTrace.generation_span_id``), with ``gen_ai.response.id`` when that span has one;
# ``answer`` (answer_relevancy, answer_correctness) → the same generation span. A trace without
# such a span falls back to ``target_span_id``. Span IDs are functions of (trace, family) only.

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
