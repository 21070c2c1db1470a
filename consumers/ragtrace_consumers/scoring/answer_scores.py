"""The answer metrics of one trace as written back: answer relevancy and answer correctness
against a reference answer (scored by :mod:`ragtrace_consumers.scoring.answer_judging`)."""

from __future__ import annotations

from dataclasses import dataclass

from ragtrace.evaluation.judges import MetricResult

__all__ = [
    "FAMILY_ANSWER",
    "METRIC_CORRECTNESS",
    "METRIC_RELEVANCY",
    "REFERENCE_FROM_LABEL",
    "REFERENCE_FROM_SPAN",
    "AnswerScores",
]

FAMILY_ANSWER = "answer"
"""Idempotency name of the answer metrics (relevancy and correctness, written together)."""
METRIC_RELEVANCY = "answer_relevancy"
METRIC_CORRECTNESS = "answer_correctness"
REFERENCE_FROM_SPAN = "span"
REFERENCE_FROM_LABEL = "label"


@dataclass(frozen=True)
class AnswerScores:
    """The answer metrics of one trace (at least one of the two) and what they were judged
    against: ``reference_source`` says where the reference answer came from (``span``: the
    trace's own ``ragtrace.reference_answer``; ``label``: the matched labelled question's);
    ``question_id`` is the labelled question the trace matched, if any; ``cost_usd`` what this
    trace paid for them (0 when another trace paid for a cached verdict).
    """

    question_id: str | None
    relevancy: MetricResult | None
    correctness: MetricResult | None
    cost_usd: float = 0.0
    reference_source: str = REFERENCE_FROM_LABEL

    def __post_init__(self) -> None:
        if self.relevancy is None and self.correctness is None:
            raise ValueError("AnswerScores needs relevancy or correctness")
        if self.reference_source not in (REFERENCE_FROM_SPAN, REFERENCE_FROM_LABEL):
            raise ValueError(f"unknown reference source {self.reference_source!r}")
        if self.reference_source == REFERENCE_FROM_LABEL and self.question_id is None:
            raise ValueError("a reference answer from a label needs its question_id")
        if self.cost_usd < 0:
            raise ValueError("AnswerScores.cost_usd must be >= 0")

    @property
    def results(self) -> tuple[MetricResult, ...]:
        """The metrics present, relevancy first."""
        return tuple(m for m in (self.relevancy, self.correctness) if m is not None)
