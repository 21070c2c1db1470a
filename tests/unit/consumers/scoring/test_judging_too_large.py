"""A valid trace too large to judge never holds up the traces behind it: it is written back with
a ``too_large`` groundedness error (counted as judge error ``too_large``, never a score), and the
good trace after it is scored as usual — the pipeline over in-memory stores, the real offline
judge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtrace import semconv
from ragtrace.evaluation.judges import GroundednessResult, LexicalJudge, is_too_large
from ragtrace_consumers.model import FAMILY_GROUNDEDNESS
from tests.span_ids import trace_id_of
from tests.unit.consumers.scoring_helpers import T0, Rig, ScriptedJudge, rag_spans, rig, tid

HUGE = " ".join(f"Audit logs for team {i} are kept 90 days." for i in range(25_000))
GOOD = "Audit logs are kept 90 days."
CONTEXT = ("Audit logs are kept 90 days.", "Logs are deleted nightly.")


class OfflineJudge(ScriptedJudge):
    """The offline judge behind the scripted one's call log (``refusal`` included, so the
    consumer can refuse before calling, as it does with the real judges)."""

    paid = False

    def __init__(self, *, refusal: bool = True) -> None:
        self.lexical = LexicalJudge()
        super().__init__(default=self.lexical.groundedness)
        self._info = self.lexical.info
        if refusal:
            self.refusal = self.lexical.refusal


def _groundedness_events(r: Rig) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for span in r.metric_spans():
        for event in span.events:
            attrs = dict(event.attributes or {})
            if attrs[semconv.GEN_AI_EVALUATION_NAME] == "groundedness":
                assert trace_id_of(span) not in out
                out[trace_id_of(span)] = attrs
    return out


def _too_large_errors(r: Rig) -> int:
    points = r.points(semconv.METRIC_JUDGE_ERRORS)
    return sum(v for k, v in points.items() if ("reason", "too_large") in k)


def _run(judge: OfflineJudge) -> Rig:
    r = rig(judge=judge)
    r.pipeline.ingest(
        rag_spans(1, answer=HUGE, retrieved=(("c-1", CONTEXT[0]), ("c-2", CONTEXT[1]))), T0
    )
    r.pipeline.ingest(rag_spans(2, answer=GOOD), T0)
    assert r.pipeline.process_due(T0) == 2
    return r


def _expected(answer: str, context: Sequence[str]) -> GroundednessResult:
    return LexicalJudge().groundedness(answer, list(context))


def test_a_huge_trace_is_refused_before_the_judge_and_the_next_one_is_scored() -> None:
    judge = OfflineJudge()
    r = _run(judge)
    assert judge.calls == [(GOOD, CONTEXT)]  # the huge answer never reached the judge
    events = _groundedness_events(r)
    huge, good = events[tid(1)], events[tid(2)]
    assert huge[semconv.ERROR_TYPE] == "too_large"
    assert semconv.GEN_AI_EVALUATION_SCORE_LABEL not in huge
    assert semconv.GEN_AI_EVALUATION_SCORE_VALUE not in huge
    assert str(huge[semconv.GEN_AI_EVALUATION_EXPLANATION]).startswith("too_large: answer has ")
    assert "max_answer_chars" in str(huge[semconv.GEN_AI_EVALUATION_EXPLANATION])
    assert good[semconv.GEN_AI_EVALUATION_SCORE_VALUE] == _expected(GOOD, CONTEXT).score == 1.0
    assert r.idempotency.written(tid(1), FAMILY_GROUNDEDNESS)
    assert r.idempotency.written(tid(2), FAMILY_GROUNDEDNESS)
    assert r.traces.pending() == 0
    assert _too_large_errors(r) == 1


def test_a_judge_refusing_on_its_own_is_counted_the_same() -> None:
    judge = OfflineJudge(refusal=False)  # no pre-check: the judge's own bound answers
    r = _run(judge)
    assert [a for a, _ in judge.calls] == [HUGE, GOOD]
    events = _groundedness_events(r)
    assert is_too_large(str(events[tid(1)][semconv.GEN_AI_EVALUATION_EXPLANATION]))
    assert events[tid(2)][semconv.GEN_AI_EVALUATION_SCORE_VALUE] == 1.0
    assert _too_large_errors(r) == 1
