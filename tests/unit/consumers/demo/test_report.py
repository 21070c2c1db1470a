"""The demo report gives every answer its verdict: the cells outside the four-cell table are
named, and every answer not grounded is counted whether its question was labelled or not."""

from __future__ import annotations

from ragtrace_consumers.demo.report import cell_counts, format_text, totals
from ragtrace_consumers.demo.run import DemoQuestion, DemoRun, JudgeDescription


def _question(n: int, cell: str, groundedness: float | None, gold: tuple[str, ...]) -> DemoQuestion:
    return DemoQuestion(
        number=n,
        question=f"question {n}?",
        trace_id=f"{n:032x}",
        retrieved=("c-1",),
        answer="an answer",
        qid=f"q-{n}" if cell != "unlabelled_not_grounded" else None,
        gold=gold,
        cell=cell,
        recall=1.0 if gold else None,
        hit_rate=1.0 if gold else None,
        groundedness=groundedness,
        claims=2,
        unsupported_claims=(),
        judge_error=None,
    )


def _run() -> DemoRun:
    questions = (
        _question(1, "fine", 1.0, ("c-1",)),
        _question(2, "unlabelled_not_grounded", 0.5, ()),
        _question(3, "unanswerable_answered", 0.4, ()),
        _question(4, "unanswerable_declined", None, ()),
    )
    return DemoRun(
        judge=JudgeDescription("lexical", None, "lexical"),
        k=3,
        recall_definition="mean_recall",
        recall_threshold=0.5,
        groundedness_threshold=0.8,
        labelled_questions=3,
        questions=questions,
        endpoint="http://127.0.0.1:1",
        state_path=None,
    )


def test_the_cells_outside_the_table_and_the_answers_not_grounded() -> None:
    run = _run()
    counts = cell_counts(run.questions)
    assert {c: n for c, n in counts.items() if n} == {
        "fine": 1,
        "unlabelled_not_grounded": 1,
        "unanswerable_declined": 1,
        "unanswerable_answered": 1,
    }
    t = totals(run)
    assert t["not_grounded"] == 2  # the unlabelled one and the unanswerable one, not only labelled
    assert t["escalations"] == 2  # a hallucination with no label, an answer that should not be
    lines = format_text(run).splitlines()
    assert (
        "  outside the table (no label, unanswerable, or no judgement): "
        "1 unlabelled · not grounded #2; 1 unanswerable · declined #4; "
        "1 unanswerable · answered #3"
    ) in lines
    assert "  answers not grounded, labelled or not: 2  #2 #3" in lines
    assert "   2  question 2?       n/a      0.50  unlabelled · not grounded" in lines
