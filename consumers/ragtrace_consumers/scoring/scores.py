"""Scores of one trace: retrieval metrics against its labelled question, groundedness from the
judge, and the attribution cell that places the two together.

Pure values and functions; the judge call itself (cache, budget, retries) is in
:mod:`ragtrace_consumers.scoring.judging`. The metric code is the shared evaluation core
(:func:`ragtrace.evaluation.retrieval.score_question`, :func:`attribute`), never a copy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragtrace.evaluation.attribution import Thresholds, attribute
from ragtrace.evaluation.declines import decline
from ragtrace.evaluation.judges import GroundednessResult
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace.evaluation.retrieval import (
    RecallDefinition,
    context_relevancy,
    score_question,
    score_steps,
)
from ragtrace_consumers.model import (
    AnswerScores,
    RagTrace,
    RetrievalScores,
    RetrievalStep,
    TraceScores,
)
from ragtrace_consumers.scoring.sessions import earlier_turn_units

__all__ = [
    "combine",
    "score_retrieval",
    "step_cutoffs",
]


def score_retrieval(
    trace: RagTrace,
    question: LabelledQuestion,
    matched_by: str,
    labels_version: str,
    k: int,
    definition: RecallDefinition,
    *,
    k_from_trace: bool = True,
) -> RetrievalScores:
    """Score the trace's retrieval steps against its labelled ``question``: recall@k and the
    rest over the union of every step's top k in first-appearance order
    (:func:`~ragtrace.evaluation.retrieval.score_steps`; one step: its top k), and each step's
    own recall@k under ``definition`` (NaN for an unanswerable question).

    Each step's k is the top-k its span declares (:func:`step_cutoffs`) when ``k_from_trace``,
    else ``k`` (the configuration pins it); ``k`` also stands for a step that declares none.

    Context relevancy is the share of the chunks supplied to generation that are gold; it is
    left out when the trace says nothing about what was supplied.
    """
    gold = frozenset(question.gold)
    qid = str(question.qid)
    retrieved = [c.id for c in trace.retrieved]
    with_docs = [s for s in trace.steps if s.chunks]
    ranked = [[c.id for c in s.chunks] for s in with_docs] or [retrieved]
    ks = step_cutoffs(with_docs, k, k_from_trace=k_from_trace) or [k]
    scores = score_steps(ranked, gold, ks)
    per_step = (
        tuple(
            score_question(ids, gold, cut).recall_as(definition)
            for ids, cut in zip(ranked, ks, strict=True)
        )
        if len(ranked) > 1
        else ()
    )
    supplied = [c.id for c in trace.context]
    relevancy = context_relevancy(supplied, gold) if supplied and gold else None
    if relevancy is not None and math.isnan(relevancy):
        relevancy = None
    positions = tuple(i for i, chunk_id in enumerate(retrieved) if chunk_id in gold)
    declared = k_from_trace and any(s.top_k is not None for s in with_docs)
    return RetrievalScores(
        qid,
        matched_by,
        labels_version,
        definition,
        scores,
        relevancy,
        gold_positions=positions,
        step_recall=per_step,
        step_k=tuple(ks) if per_step else (),
        k_declared=declared,
    )


def step_cutoffs(steps: Sequence[RetrievalStep], k: int, *, k_from_trace: bool = True) -> list[int]:
    """Each step's recall cut-off: its declared top-k when ``k_from_trace`` and it declares
    one, else ``k``."""
    return [s.top_k if k_from_trace and s.top_k is not None else k for s in steps]


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
    """The cell from everything known, and the families still to write; None if none is.

    A question labelled unanswerable is placed by whether its answer declined
    (:func:`~ragtrace.evaluation.declines.decline`); ``grounded`` is the groundedness verdict
    against its threshold whatever the cell (None: not judged)."""
    recall = retrieval.headline if retrieval is not None and retrieval.answerable else None
    g = groundedness.score if groundedness is not None else None
    unanswerable = retrieval is not None and not retrieval.answerable
    declined = decline(trace.answer).declined if unanswerable else None
    cell = attribute(recall, g, thresholds, declined=declined)
    grounded = None if g is None or math.isnan(g) else g >= thresholds.groundedness
    r_out = retrieval if write_retrieval else None
    g_out = groundedness if write_groundedness else None
    if r_out is None and g_out is None and answers is None:
        return None
    return TraceScores(
        trace,
        r_out,
        g_out,
        cell,
        groundedness_cost_usd if g_out is not None else 0.0,
        answers,
        earlier_turn_units=earlier_turn_units(g_out, trace.context) if g_out is not None else {},
        grounded=grounded,
    )
