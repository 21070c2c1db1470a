"""Scores of one trace: retrieval metrics against its labelled question, groundedness from the
judge, and the attribution cell that places the two together.

Pure values and functions; the judge call itself (cache, budget, retries) is in
:mod:`ragtrace_consumers.scoring.judging`. The metric code is the shared evaluation core
(:func:`ragtrace.evaluation.retrieval.score_question`, :func:`attribute`), never a copy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ragtrace.evaluation.attribution import Cell, Thresholds, attribute
from ragtrace.evaluation.judges import GroundednessResult
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace.evaluation.retrieval import (
    QuestionScores,
    RecallDefinition,
    context_relevancy,
    score_question,
)
from ragtrace_consumers.model import RagTrace
from ragtrace_consumers.scoring.answer_scores import FAMILY_ANSWER, AnswerScores

__all__ = [
    "FAMILY_ANSWER",
    "FAMILY_GROUNDEDNESS",
    "FAMILY_RECALL",
    "RetrievalScores",
    "TraceScores",
    "combine",
    "score_retrieval",
]

FAMILY_RECALL = "recall"
"""Idempotency name of the retrieval metrics (recall, hit rate, precision, RR, nDCG), written
together."""
FAMILY_GROUNDEDNESS = "groundedness"


@dataclass(frozen=True)
class RetrievalScores:
    """Retrieval metrics of one trace against the labelled question it matched."""

    question_id: str
    matched_by: str
    labels_version: str
    definition: RecallDefinition
    scores: QuestionScores
    context_relevancy: float | None = None

    def __post_init__(self) -> None:
        if self.matched_by not in ("question_id", "query_text"):
            raise ValueError(f"matched_by must be question_id or query_text: {self.matched_by!r}")

    @property
    def answerable(self) -> bool:
        """False for an unanswerable question (empty gold set): every metric is NaN."""
        return not math.isnan(self.scores.recall)

    @property
    def headline(self) -> float:
        """The recall the attribution cell uses, per the configured definition."""
        if self.definition is RecallDefinition.HIT_RATE:
            return self.scores.hit_rate
        return self.scores.recall


@dataclass(frozen=True)
class TraceScores:
    """Everything written back for one trace. ``retrieval``/``groundedness``/``answers`` are None
    when that family is not (or no longer) to be written; ``cell`` uses retrieval and
    groundedness whenever they are known (the answer metrics do not move it)."""

    trace: RagTrace
    retrieval: RetrievalScores | None
    groundedness: GroundednessResult | None
    cell: Cell
    groundedness_cost_usd: float = 0.0
    answers: AnswerScores | None = None

    def __post_init__(self) -> None:
        if self.retrieval is None and self.groundedness is None and self.answers is None:
            raise ValueError("TraceScores needs at least one family of scores")
        if self.groundedness_cost_usd < 0:
            raise ValueError("groundedness_cost_usd must be >= 0")

    @property
    def families(self) -> tuple[str, ...]:
        """The metric families this write covers, in a fixed order (idempotency keys)."""
        out = []
        if self.retrieval is not None:
            out.append(FAMILY_RECALL)
        if self.groundedness is not None:
            out.append(FAMILY_GROUNDEDNESS)
        if self.answers is not None:
            out.append(FAMILY_ANSWER)
        return tuple(out)


def score_retrieval(
    trace: RagTrace,
    question: LabelledQuestion,
    matched_by: str,
    labels_version: str,
    k: int,
    definition: RecallDefinition,
) -> RetrievalScores:
    """Score the trace's ranked retrieval against its labelled ``question``.

    Context relevancy is the share of the chunks supplied to generation that are gold; it is
    left out when the trace says nothing about what was supplied.
    """
    gold = frozenset(question.gold)
    qid = str(question.qid)
    retrieved = [c.id for c in trace.retrieved]
    scores = score_question(retrieved, gold, k)
    supplied = [c.id for c in trace.context]
    relevancy = context_relevancy(supplied, gold) if supplied and gold else None
    if relevancy is not None and math.isnan(relevancy):
        relevancy = None
    return RetrievalScores(qid, matched_by, labels_version, definition, scores, relevancy)


def combine(
    trace: RagTrace,
    retrieval: RetrievalScores | None,
    groundedness: GroundednessResult | None,
    thresholds: Thresholds,
    *,
    write_retrieval: bool = True,
    write_groundedness: bool = True,
    groundedness_cost_usd: float = 0.0,
    answers: AnswerScores | None = None,
) -> TraceScores | None:
    """The cell from everything known, and the families still to write; None if none is."""
    recall = retrieval.headline if retrieval is not None and retrieval.answerable else None
    g = groundedness.score if groundedness is not None else None
    cell = attribute(recall, g, thresholds)
    r_out = retrieval if write_retrieval else None
    g_out = groundedness if write_groundedness else None
    if r_out is None and g_out is None and answers is None:
        return None
    return TraceScores(
        trace, r_out, g_out, cell, groundedness_cost_usd if g_out is not None else 0.0, answers
    )
