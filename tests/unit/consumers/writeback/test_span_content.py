"""Write-back: the evaluation span (same trace, parent, scope, marker, deterministic ID,
exhaustive attributes and events), delivery before return, suppression during export."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from functools import partial

import pytest
from opentelemetry import context as otel_context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import semconv
from ragtrace.evaluation.attribution import Thresholds
from ragtrace.evaluation.judges import GroundednessResult, JudgeInfo
from ragtrace_consumers.errors import WriteBackError
from ragtrace_consumers.readers import to_rag_trace
from ragtrace_consumers.scoring.scores import combine
from ragtrace_consumers.writeback.otlp_sink import OtlpScoreSink
from ragtrace_consumers.writeback.span_content import (
    evaluation_attributes,
    evaluation_events,
    evaluation_span_id,
    metric_span_id,
)
from tests.span_ids import parent_id_of, span_id_of, trace_id_of
from tests.unit.consumers.scoring_helpers import (
    MODEL,
    PROMPT,
    FailingExporter,
    grounded,
    rag_spans,
    root_span_id,
    sid,
    tid,
    trace_scores,
)

END_NS = 1_700_000_000_000_000_000


# Trace 7, judged for 0.002 USD unless a test says otherwise.
_scores = partial(trace_scores, cost=0.002)


def _sink(exporter: SpanExporter) -> OtlpScoreSink:
    return OtlpScoreSink(
        exporter,
        Resource.create({"service.name": "ragtrace-consumer"}),
        timeout_s=5.0,
        recall_threshold=0.5,
        groundedness_threshold=0.8,
    )


def test_span_id_is_a_function_of_trace_and_families_only() -> None:
    a = evaluation_span_id(tid(1), ["recall", "groundedness"])
    assert a == evaluation_span_id(tid(1), ["groundedness", "recall"])
    assert a == evaluation_span_id(tid(1).upper(), ("recall", "groundedness"))
    assert len(a) == 16 and int(a, 16) != 0
    assert (
        len(
            {
                a,
                evaluation_span_id(tid(1), ["recall"]),
                evaluation_span_id(tid(1), ["groundedness"]),
                evaluation_span_id(tid(2), ["recall", "groundedness"]),
            }
        )
        == 4
    )


def test_full_evaluation_span_in_the_original_trace() -> None:
    exporter = InMemorySpanExporter()
    sink = _sink(exporter)
    sink.write(_scores(result=grounded(2, 3, cost=0.002)))
    span, recall_span, ground_span = exporter.get_finished_spans()
    assert not span.events  # each metric's result sits under the span it evaluates
    ctx = span.get_span_context()
    assert ctx is not None and span.parent is not None
    assert f"{ctx.trace_id:032x}" == tid(7)
    assert parent_id_of(span) == root_span_id(7)
    assert f"{ctx.span_id:016x}" == evaluation_span_id(tid(7), ["recall", "groundedness"])
    assert span.name == semconv.SPAN_EVALUATION
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.name == semconv.EVALUATION_SCOPE
    assert span.resource.attributes["service.name"] == "ragtrace-consumer"
    assert span.start_time == END_NS and span.end_time == END_NS

    attrs = dict(span.attributes or {})
    expected = {
        semconv.EVAL_MARKER: True,
        semconv.OPENINFERENCE_SPAN_KIND: "EVALUATOR",
        semconv.EVAL_TARGET_SPAN_ID: root_span_id(7),
        semconv.EVAL_CELL: "generation_failed",
        semconv.RAGTRACE_PIPELINE_NAME: "support",
        semconv.EVAL_GENERATOR_MODEL: "gen-model",
        semconv.EVAL_K: 5,
        semconv.EVAL_RECALL_DEFINITION: "mean_recall",
        semconv.EVAL_GOLD_SIZE: 2,
        semconv.EVAL_QUESTION_ID: "q-audit",
        semconv.EVAL_MATCHED_BY: "query_text",
        semconv.EVAL_LABELS_VERSION: "lv1",
        semconv.EVAL_RECALL: 0.5,
        semconv.EVAL_HIT_RATE: 1.0,
        semconv.EVAL_PRECISION: 0.2,  # 1 relevant in the top 5
        semconv.EVAL_RECIPROCAL_RANK: 1.0,
        semconv.EVAL_CONTEXT_RELEVANCY: 0.5,
        semconv.EVAL_JUDGE_NAME: "anthropic",
        semconv.EVAL_JUDGE_MODEL: MODEL,
        semconv.EVAL_JUDGE_PROMPT_SHA256: PROMPT,
        semconv.EVAL_JUDGE_COST_USD: 0.002,
        semconv.EVAL_CONTEXT_SOURCE: "retrieved",
        semconv.EVAL_CONTEXT_SOURCES: ("retrieved",),
        semconv.EVAL_GROUNDEDNESS: pytest.approx(2 / 3),
        semconv.EVAL_GROUNDEDNESS_CLAIMS: 3,
        semconv.EVAL_GROUNDEDNESS_UNSUPPORTED: 1,
        semconv.EVAL_GROUNDEDNESS_NO_CLAIMS: False,
    }
    ndcg = attrs.pop(semconv.EVAL_NDCG)
    # Gold {c-1, c-9}, retrieved [c-1, c-2]: DCG = 1, ideal DCG = 1 + 1/log2(3).
    assert ndcg == pytest.approx(1 / (1 + 1 / math.log2(3)))
    for key, value in expected.items():
        assert attrs.pop(key) == value, key
    assert attrs == {}

    # recall -> the retrieval span, groundedness -> the generation span: child of and linked
    # to exactly that span (OpenInference's annotation form), deterministic IDs, same end time.
    for metric_span, family, target in (
        (recall_span, "recall", sid(72)),
        (ground_span, "groundedness", sid(73)),
    ):
        assert metric_span.name == f"{semconv.SPAN_EVALUATION}.{family}"
        assert metric_span.parent is not None
        assert parent_id_of(metric_span) == target
        assert [f"{link.context.span_id:016x}" for link in metric_span.links] == [target]
        assert span_id_of(metric_span) == metric_span_id(tid(7), family)
        assert trace_id_of(metric_span) == tid(7)
        assert metric_span.start_time == END_NS and metric_span.end_time == END_NS
        assert dict(metric_span.attributes or {}) == {
            semconv.EVAL_MARKER: True,
            semconv.OPENINFERENCE_SPAN_KIND: "EVALUATOR",
            semconv.EVAL_TARGET_SPAN_ID: target,
            semconv.EVAL_FAMILY: family,
        }
    events = [
        (e.name, dict(e.attributes or {}), e.timestamp)
        for e in (*recall_span.events, *ground_span.events)
    ]
    assert len(ground_span.events) == 1
    name = semconv.GEN_AI_EVALUATION_NAME
    value = semconv.GEN_AI_EVALUATION_SCORE_VALUE
    label = semconv.GEN_AI_EVALUATION_SCORE_LABEL
    why = semconv.GEN_AI_EVALUATION_EXPLANATION
    assert all(e[0] == semconv.GEN_AI_EVALUATION_RESULT and e[2] == END_NS for e in events)
    got = [e[1] for e in events]
    assert got[0] == {
        name: "recall",
        value: 0.5,
        label: "pass",
        why: "1 of 2 gold chunks in the top 5 (question q-audit, matched by query_text)",
    }
    assert got[1] == {name: "hit_rate", value: 1.0}
    assert got[2] == {name: "precision", value: 0.2}
    assert got[3] == {name: "reciprocal_rank", value: 1.0}
    assert got[4] == {name: "ndcg", value: ndcg}
    assert got[5] == {name: "context_relevancy", value: 0.5}
    assert got[6] == {
        name: "groundedness",
        value: pytest.approx(2 / 3),
        label: "fail",
        why: "2 of 3 claims entailed by the context; unsupported: claim 2",
    }
    assert len(got) == 7


def test_groundedness_only_span_and_its_id() -> None:
    exporter = InMemorySpanExporter()
    _sink(exporter).write(_scores(gold=None, result=grounded(1, 1), cost=0.0))
    span, ground_span = exporter.get_finished_spans()
    attrs = dict(span.attributes or {})
    assert attrs[semconv.EVAL_CELL] == "unlabelled"
    assert semconv.EVAL_RECALL not in attrs and semconv.EVAL_QUESTION_ID not in attrs
    assert attrs[semconv.EVAL_JUDGE_COST_USD] == 0.0
    assert span_id_of(span) == evaluation_span_id(tid(7), ["groundedness"])
    assert [
        dict(e.attributes or {})[semconv.GEN_AI_EVALUATION_NAME] for e in ground_span.events
    ] == ["groundedness"]


def test_the_served_model_is_the_response_model_and_never_the_judge_model() -> None:
    served = dataclasses.replace(grounded(1, 1), served_model=MODEL + "-20250101")
    attrs = evaluation_attributes(_scores(gold=None, result=served))
    assert attrs[semconv.EVAL_JUDGE_MODEL] == MODEL  # the configured model: the identity
    assert attrs[semconv.GEN_AI_RESPONSE_MODEL] == MODEL + "-20250101"
    # a result with no call behind it (a model-free judge) names no response model
    assert semconv.GEN_AI_RESPONSE_MODEL not in evaluation_attributes(
        _scores(gold=None, result=grounded(1, 1))
    )


def test_no_claims_judge_error_and_unanswerable_events() -> None:
    info = JudgeInfo("anthropic", MODEL, PROMPT)
    no_claims = _scores(gold=None, result=GroundednessResult.from_claims((), info))
    assert evaluation_events(no_claims, groundedness_threshold=0.8) == [
        (
            semconv.GEN_AI_EVALUATION_RESULT,
            {
                semconv.GEN_AI_EVALUATION_NAME: "groundedness",
                semconv.GEN_AI_EVALUATION_SCORE_VALUE: 1.0,
                semconv.GEN_AI_EVALUATION_SCORE_LABEL: "pass",
                semconv.GEN_AI_EVALUATION_EXPLANATION: "the answer makes no factual claims",
            },
        )
    ]
    assert evaluation_attributes(no_claims)[semconv.EVAL_GROUNDEDNESS_NO_CLAIMS] is True

    failed = _scores(
        gold=frozenset(),
        result=GroundednessResult.failed("malformed judge output: no tool call", info),
    )
    events = evaluation_events(failed)
    assert events == [
        (
            semconv.GEN_AI_EVALUATION_RESULT,
            {
                semconv.GEN_AI_EVALUATION_NAME: "recall",
                semconv.GEN_AI_EVALUATION_SCORE_LABEL: "unanswerable",
                semconv.GEN_AI_EVALUATION_EXPLANATION: "question q-audit has an empty gold set",
            },
        ),
        (
            semconv.GEN_AI_EVALUATION_RESULT,
            {  # the question has no answer in the corpus, and the bot answered anyway
                semconv.GEN_AI_EVALUATION_NAME: "declined",
                semconv.GEN_AI_EVALUATION_SCORE_VALUE: 0.0,
                semconv.GEN_AI_EVALUATION_SCORE_LABEL: "answered",
                semconv.GEN_AI_EVALUATION_EXPLANATION: (
                    'the answer makes a claim: "Audit logs are kept 90 days."'
                ),
            },
        ),
        (
            semconv.GEN_AI_EVALUATION_RESULT,
            {
                semconv.GEN_AI_EVALUATION_NAME: "groundedness",
                semconv.GEN_AI_EVALUATION_EXPLANATION: "malformed judge output: no tool call",
                semconv.ERROR_TYPE: "malformed_output",
            },
        ),
    ]
    attrs = evaluation_attributes(failed)
    # NaN is never written; an errored judgement has no score attributes, only provenance.
    for key in (
        semconv.EVAL_RECALL,
        semconv.EVAL_HIT_RATE,
        semconv.EVAL_NDCG,
        semconv.EVAL_GROUNDEDNESS,
        semconv.EVAL_GROUNDEDNESS_CLAIMS,
    ):
        assert key not in attrs
    assert attrs[semconv.EVAL_GOLD_SIZE] == 0
    assert attrs[semconv.EVAL_CELL] == "unanswerable_answered"
    assert attrs[semconv.EVAL_JUDGE_PROMPT_SHA256] == PROMPT


def test_long_explanations_are_clipped() -> None:
    info = JudgeInfo("anthropic", MODEL, PROMPT)
    result = GroundednessResult.failed("x" * 5000, info)
    ((_, attrs),) = evaluation_events(_scores(gold=None, result=result))
    text = attrs[semconv.GEN_AI_EVALUATION_EXPLANATION]
    assert isinstance(text, str) and len(text) == 1000 and text.endswith("…")


def test_writing_the_same_scores_twice_yields_an_identical_span() -> None:
    exporter = InMemorySpanExporter()
    sink = _sink(exporter)
    sink.write(_scores(result=grounded(1, 1)))
    sink.write(_scores(result=grounded(1, 1)))
    spans = exporter.get_finished_spans()
    assert len(spans) == 6  # summary, recall, groundedness; twice
    assert [s.to_json() for s in spans[:3]] == [s.to_json() for s in spans[3:]]


def test_failed_delivery_raises() -> None:
    exporter = FailingExporter()
    with pytest.raises(WriteBackError, match=tid(7)):
        _sink(exporter).write(_scores(result=grounded(1, 1)))
    assert exporter.calls == 1


class _RecordingExporter(SpanExporter):
    def __init__(self) -> None:
        self.suppressed: list[object] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.suppressed.append(otel_context.get_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY))
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def test_export_runs_with_instrumentation_suppressed() -> None:
    exporter = _RecordingExporter()
    _sink(exporter).write(_scores(result=grounded(1, 1)))
    assert exporter.suppressed == [True]


def test_concurrent_writes_are_batched_and_each_waits_for_its_own_delivery() -> None:
    import threading

    exporter = InMemorySpanExporter()
    sink = _sink(exporter)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        trace = to_rag_trace(rag_spans(n))
        assert trace is not None
        scores = combine(trace, None, grounded(1, 1), Thresholds())
        assert scores is not None
        try:
            sink.write(scores)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(1, 21)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    summaries = [s for s in exporter.get_finished_spans() if s.name == semconv.SPAN_EVALUATION]
    assert sorted(trace_id_of(s) for s in summaries) == sorted(tid(n) for n in range(1, 21))
