"""Answer relevancy and correctness on the real pipeline (in-memory stores, the OTLP sink into an
in-memory exporter): scored for judged traces whose labelled question has a reference answer,
written as their own family under the generation span, cached, parked on a judge outage."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan

from ragtrace import semconv
from ragtrace.evaluation.judges import (
    JudgeInfo,
    JudgeUnavailable,
    LexicalJudge,
    MetricResult,
    Usage,
)
from ragtrace.evaluation.labels import LabelledQuestion, label_set_version, load_labels
from ragtrace_consumers.model import (
    FAMILY_ANSWER,
    FAMILY_GROUNDEDNESS,
    FAMILY_RECALL,
    SpanRecord,
    question_from_json,
    question_to_json,
)
from ragtrace_consumers.scoring.pipeline import Outcome
from tests.span_ids import parent_id_of, trace_id_of
from tests.unit.consumers.scoring_helpers import (
    LABELS,
    MODEL,
    PROMPT,
    T0,
    Rig,
    ScriptedJudge,
    grounded,
    rag_spans,
    rig,
    sid,
    tid,
)

REFERENCE = "Audit logs are kept for 90 days, then deleted."
WITH_REFERENCE = (
    LabelledQuestion(
        "q-audit",
        "How long are audit logs kept?",
        frozenset({"c-1", "c-9"}),
        reference_answer=REFERENCE,
    ),
)
SVC_JUDGE = (("judge_model", MODEL), ("pipeline", "support"), ("service", "rag-app"))


def metric(name: str, score: float, details: Sequence[dict[str, object]] = ()) -> MetricResult:
    return MetricResult(
        name,
        score,
        JudgeInfo("anthropic", MODEL, PROMPT),
        tuple(details),
        Usage(input_tokens=300, output_tokens=40),
        cost_usd=0.001,
        latency_s=0.1,
    )


RELEVANT = metric(
    "answer_relevancy",
    1.0,
    [{"need": "retention period of audit logs", "addressed": True, "reason": ""}],
)
CORRECT = metric(
    "answer_correctness",
    2 / 3,
    [
        {"claim": "Audit logs are kept 90 days.", "verdict": "supported"},
        {"fact": "kept for 90 days", "covered": True},
        {"fact": "then deleted", "covered": False},
    ],
)


class AnswerScriptedJudge(ScriptedJudge):
    """ScriptedJudge with the answer metrics: each call pops its metric's next scripted step
    (a MetricResult or an exception)."""

    def __init__(self, *, relevancy: Sequence[object], correctness: Sequence[object]) -> None:
        super().__init__()
        self.script = {"answer_relevancy": list(relevancy), "answer_correctness": list(correctness)}
        self.answer_calls: list[tuple[str, tuple[str, ...]]] = []
        self._answer_lock = threading.Lock()

    def _step(self, name: str, args: tuple[str, ...]) -> MetricResult:
        with self._answer_lock:
            self.answer_calls.append((name, args))
            step = self.script[name].pop(0)
        if isinstance(step, BaseException):
            raise step
        assert isinstance(step, MetricResult)
        return step

    def answer_relevancy(self, question: str, answer: str) -> MetricResult:
        return self._step("answer_relevancy", (question, answer))

    def answer_correctness(self, question: str, answer: str, reference: str) -> MetricResult:
        return self._step("answer_correctness", (question, answer, reference))


def _answer_span(r: Rig) -> ReadableSpan:
    (span,) = [s for s in r.metric_spans() if s.name == f"{semconv.SPAN_EVALUATION}.answer"]
    return span


def test_reference_answer_scores_relevancy_and_correctness_under_the_generation_span() -> None:
    judge = AnswerScriptedJudge(relevancy=[RELEVANT], correctness=[CORRECT])
    r = rig(judge=judge, labels=WITH_REFERENCE)
    r.pipeline.ingest(rag_spans(1), T0)
    assert r.pipeline.process_due(T0) == 1
    question, answer = "How long are audit logs kept?", "Audit logs are kept 90 days."
    assert judge.answer_calls == [
        ("answer_relevancy", (question, answer)),
        ("answer_correctness", (question, answer, REFERENCE)),
    ]
    (summary,) = r.spans()
    a = dict(summary.attributes or {})
    assert a[semconv.EVAL_ANSWER_RELEVANCY] == 1.0
    assert a[semconv.EVAL_ANSWER_CORRECTNESS] == 2 / 3
    assert a[semconv.EVAL_ANSWER_QUESTION_ID] == "q-audit"
    assert a[semconv.EVAL_ANSWER_REFERENCE_SOURCE] == "label"
    assert a[semconv.EVAL_ANSWER_COST_USD] == 0.002
    assert (
        a[semconv.EVAL_CELL] == "fine"
    )  # recall 0.5, grounded 1.0; the answer metrics do not move it
    span = _answer_span(r)
    assert parent_id_of(span) == sid(13)  # the generation span
    assert [f"{link.context.span_id:016x}" for link in span.links] == [sid(13)]
    attrs = dict(span.attributes or {})
    assert attrs.pop(semconv.EVAL_FAMILY) == FAMILY_ANSWER
    assert attrs.pop(semconv.EVAL_TARGET_SPAN_ID) == sid(13)
    assert attrs.pop(semconv.EVAL_MARKER) is True
    assert attrs.pop(semconv.OPENINFERENCE_SPAN_KIND) == semconv.SpanKind.EVALUATOR
    assert attrs == {}
    events = {
        str(a[semconv.GEN_AI_EVALUATION_NAME]): a
        for a in (dict(e.attributes or {}) for e in span.events)
    }
    assert events == {
        "answer_relevancy": {
            semconv.GEN_AI_EVALUATION_NAME: "answer_relevancy",
            semconv.GEN_AI_EVALUATION_SCORE_VALUE: 1.0,
            semconv.GEN_AI_EVALUATION_EXPLANATION: "1 of 1 information needs of the question "
            "addressed",
        },
        "answer_correctness": {
            semconv.GEN_AI_EVALUATION_NAME: "answer_correctness",
            semconv.GEN_AI_EVALUATION_SCORE_VALUE: 2 / 3,
            semconv.GEN_AI_EVALUATION_EXPLANATION: "1 of 1 answer claims supported by the "
            "reference answer, 1 of 2 reference facts covered",
        },
    }
    for family in (FAMILY_RECALL, FAMILY_GROUNDEDNESS, FAMILY_ANSWER):
        assert r.idempotency.written(tid(1), family)
    assert r.points("ragtrace.answer_relevancy")[SVC_JUDGE].sum == 1.0
    assert r.points("ragtrace.answer_correctness")[SVC_JUDGE].sum == 2 / 3


def test_no_reference_answer_no_answer_metrics() -> None:
    judge = AnswerScriptedJudge(relevancy=[], correctness=[])
    r = rig(judge=judge, labels=LABELS)
    r.pipeline.ingest(rag_spans(2), T0)
    r.pipeline.process_due(T0)
    (summary,) = r.spans()
    assert semconv.EVAL_ANSWER_CORRECTNESS not in (summary.attributes or {})
    assert judge.answer_calls == []
    assert not r.idempotency.written(tid(2), FAMILY_ANSWER)


def test_unlabelled_trace_gets_no_answer_metrics() -> None:
    judge = AnswerScriptedJudge(relevancy=[], correctness=[])
    r = rig(judge=judge, labels=WITH_REFERENCE)
    r.pipeline.ingest(rag_spans(3, query="Something nobody labelled"), T0)
    r.pipeline.process_due(T0)
    assert judge.answer_calls == [] and len(r.spans()) == 1


def test_offline_judge_scores_correctness_as_token_f1_and_no_relevancy() -> None:
    r = rig(judge=LexicalJudge(), labels=WITH_REFERENCE)  # type: ignore[arg-type]
    r.pipeline.ingest(rag_spans(4), T0)
    assert r.pipeline.process_due(T0) == 1
    (summary,) = r.spans()
    a = dict(summary.attributes or {})
    # answer "audit logs are kept 90 days" vs reference "audit logs are kept for 90 days then
    # deleted": 6 common words, precision 6/6, recall 6/9, F1 = 2*1*(2/3)/(1+2/3) = 0.8
    assert a[semconv.EVAL_ANSWER_CORRECTNESS] == 0.8
    assert semconv.EVAL_ANSWER_RELEVANCY not in a
    (event,) = _answer_span(r).events
    assert dict(event.attributes or {}) == {
        semconv.GEN_AI_EVALUATION_NAME: "answer_correctness",
        semconv.GEN_AI_EVALUATION_SCORE_VALUE: 0.8,
        semconv.GEN_AI_EVALUATION_EXPLANATION: "token F1 between the answer and the reference "
        "answer",
    }


def test_judge_outage_parks_the_trace_and_the_retry_reuses_the_cached_relevancy() -> None:
    """The judge retries within its own budget (the one retry owner): an outage it gives up on
    parks the trace at once, for as long as the API's retry-after asks."""
    judge = AnswerScriptedJudge(
        relevancy=[RELEVANT],
        correctness=[JudgeUnavailable("529", retry_after=40.0), CORRECT],
    )
    r = rig(grounded(1, 1), judge=judge, labels=WITH_REFERENCE)
    r.pipeline.ingest(rag_spans(5), T0)
    (lease,) = r.pipeline.claim_due(T0)
    assert r.pipeline.process_trace(lease) is Outcome.PARKED
    assert r.spans() == [] and not r.idempotency.written(tid(5), FAMILY_GROUNDEDNESS)
    assert r.points("ragtrace.traces.parked")[(("reason", "judge_unavailable"),)] == 1
    assert r.pipeline.process_due(T0 + 39) == 0
    assert r.pipeline.process_due(T0 + 40) == 1
    (summary,) = r.spans()
    a = dict(summary.attributes or {})
    assert (a[semconv.EVAL_ANSWER_RELEVANCY], a[semconv.EVAL_ANSWER_CORRECTNESS]) == (1.0, 2 / 3)
    # Relevancy was judged once: the retry read it from the cache, still paid by this trace.
    assert [name for name, _ in judge.answer_calls] == [
        "answer_relevancy",
        "answer_correctness",
        "answer_correctness",
    ]
    assert a[semconv.EVAL_ANSWER_COST_USD] == 0.002
    assert len(judge.calls) == 1  # groundedness judged once, cached for the retry


def test_written_answer_family_is_not_scored_again() -> None:
    judge = AnswerScriptedJudge(relevancy=[], correctness=[])
    r = rig(judge=judge, labels=WITH_REFERENCE)
    r.idempotency.mark_written(tid(6), FAMILY_ANSWER)
    r.pipeline.ingest(rag_spans(6), T0)
    r.pipeline.process_due(T0)
    assert judge.answer_calls == []
    (summary,) = r.spans()
    assert semconv.EVAL_ANSWER_CORRECTNESS not in (summary.attributes or {})


def test_labels_file_reference_answer_round_trips_and_keeps_old_versions(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text(
        json.dumps({"qid": "a", "question": "Q a?", "gold": ["c-1"]})
        + "\n"
        + json.dumps({"qid": "b", "question": "Q b?", "gold": [], "reference_answer": "B."})
        + "\n",
        encoding="utf-8",
    )
    a, b = load_labels(path)
    assert (a.reference_answer, b.reference_answer) == (None, "B.")
    assert question_from_json(question_to_json(b)) == b
    assert question_from_json(question_to_json(a)) == a
    assert "reference_answer" not in question_to_json(a)
    # Without reference answers the version is what it was before the field existed.
    old_form = json.dumps([["a", "Q a?", ["c-1"]]], separators=(",", ":"))
    assert label_set_version([a]) == hashlib.sha256(old_form.encode()).hexdigest()[:12]
    assert label_set_version([b]) != label_set_version([LabelledQuestion("b", "Q b?", frozenset())])


def _with_root_attribute(spans: list[SpanRecord], key: str, value: str) -> list[SpanRecord]:
    return [
        dataclasses.replace(s, attributes={**s.attributes, key: value})
        if s.parent_span_id is None
        else s
        for s in spans
    ]


def test_the_apps_own_reference_answer_is_used_without_a_label() -> None:
    """``ragtrace.reference_answer`` on a span of the trace (here the root): scored although the
    trace matches no labelled question, and before a label's reference when it does."""
    judge = AnswerScriptedJudge(relevancy=[RELEVANT, RELEVANT], correctness=[CORRECT, CORRECT])
    r = rig(judge=judge, labels=WITH_REFERENCE)
    own = "Ninety days."
    unlabelled = rag_spans(7, query="Something nobody labelled")
    r.pipeline.ingest(_with_root_attribute(unlabelled, semconv.RAGTRACE_REFERENCE_ANSWER, own), T0)
    labelled = rag_spans(8)
    r.pipeline.ingest(_with_root_attribute(labelled, semconv.RAGTRACE_REFERENCE_ANSWER, own), T0)
    assert r.pipeline.process_due(T0) == 2
    assert [args[2] for name, args in judge.answer_calls if name == "answer_correctness"] == [
        own,
        own,
    ]
    by_trace = {trace_id_of(s): dict(s.attributes or {}) for s in r.spans()}
    a7, a8 = by_trace[tid(7)], by_trace[tid(8)]
    assert a7[semconv.EVAL_ANSWER_REFERENCE_SOURCE] == "span"
    assert semconv.EVAL_ANSWER_QUESTION_ID not in a7  # no label matched
    assert a7[semconv.EVAL_ANSWER_CORRECTNESS] == 2 / 3
    assert a8[semconv.EVAL_ANSWER_REFERENCE_SOURCE] == "span"
    assert a8[semconv.EVAL_ANSWER_QUESTION_ID] == "q-audit"
