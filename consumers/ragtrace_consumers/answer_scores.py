"""The answer metrics of one trace as written back: answer relevancy and answer correctness
against a labelled reference answer (scored by :mod:`ragtrace_consumers.answer_scoring`)."""

from __future__ import annotations

from dataclasses import dataclass

from ragtrace.evaluation.judges import MetricResult

__all__ = ["FAMILY_ANSWER", "METRIC_CORRECTNESS", "METRIC_RELEVANCY", "AnswerScores"]

FAMILY_ANSWER = "answer"
"""Idempotency name of the answer metrics (relevancy and correctness, written together)."""
METRIC_RELEVANCY = "answer_relevancy"
METRIC_CORRECTNESS = "answer_correctness"


@dataclass(frozen=True)
class AnswerScores:
    """The answer metrics of one trace (at least one of the two) and what they were judged
    against: ``question_id`` is the labelled question that gave the reference answer;
    ``cost_usd`` what this trace paid for them (0 when another trace paid for a cached verdict).
    """

    question_id: str
    relevancy: MetricResult | None
    correctness: MetricResult | None
    cost_usd: float = 0.0

    def __post_init__(self) -> None:
        if self.relevancy is None and self.correctness is None:
            raise ValueError("AnswerScores needs relevancy or correctness")
        if self.cost_usd < 0:
            raise ValueError("AnswerScores.cost_usd must be >= 0")

    @property
    def results(self) -> tuple[MetricResult, ...]:
        """The metrics present, relevancy first."""
        return tuple(m for m in (self.relevancy, self.correctness) if m is not None)
