"""The recorded row carries every answer's verdict: ``grounded`` whatever the cell (kept when
the groundedness family is not written again), and why an unanswerable question's answer was
found to decline or to answer."""

from __future__ import annotations

from ragtrace.evaluation.attribution import Thresholds
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace.evaluation.retrieval import RecallDefinition
from ragtrace_consumers.readers import to_rag_trace
from ragtrace_consumers.scoring.scores import combine, score_retrieval
from ragtrace_consumers.writeback.recording_sink import to_scored_result
from tests.unit.consumers.scoring_helpers import grounded, rag_spans


def _trace(answer: str):  # type: ignore[no-untyped-def]
    trace = to_rag_trace(rag_spans(1, answer=answer))
    assert trace is not None
    return trace


def test_an_unlabelled_answer_not_grounded_is_recorded_as_such_and_kept() -> None:
    trace = _trace("Audit logs are kept 90 days.")
    scores = combine(trace, None, grounded(1, 2), Thresholds())
    assert scores is not None
    row = to_scored_result(scores, 1.0)
    assert (row.cell, row.grounded, row.groundedness) == ("unlabelled_not_grounded", False, 0.5)
    assert "decline_reason" not in row.extra
    # Re-scored with the judgement already written: the verdict stays with the row.
    q = LabelledQuestion("q", "?", frozenset({"c-1"}))
    retrieval = score_retrieval(trace, q, "question_id", "v", 5, RecallDefinition.MEAN_RECALL)
    again = combine(trace, retrieval, None, Thresholds())
    assert again is not None
    assert to_scored_result(again, 2.0, row).grounded is False


def test_an_unanswerable_question_keeps_why_its_answer_declined_or_not() -> None:
    q = LabelledQuestion("q-none", "?", frozenset())
    for answer, cell, reason in (
        (
            "I don't know.",
            "unanswerable_declined",
            'the answer declines: "I don\'t know."',
        ),
        (
            "Audit logs are kept 90 days.",
            "unanswerable_answered",
            'the answer makes a claim: "Audit logs are kept 90 days."',
        ),
    ):
        trace = _trace(answer)
        r = score_retrieval(trace, q, "question_id", "v", 5, RecallDefinition.MEAN_RECALL)
        scores = combine(trace, r, None, Thresholds())
        assert scores is not None
        row = to_scored_result(scores, 1.0)
        assert (row.cell, row.grounded, row.recall) == (cell, None, None)
        assert row.extra["decline_reason"] == reason
        assert row.extra["gold_size"] == 0
