"""Per-family evaluation spans: targets, conditionally required attributes, fallbacks."""

from __future__ import annotations

import dataclasses
from typing import Any

from ragtrace import semconv
from ragtrace.evaluation.attribution import Thresholds
from ragtrace.evaluation.judges import GroundednessResult, JudgeInfo
from ragtrace_consumers.model import RagTrace
from ragtrace_consumers.readers import to_rag_trace
from ragtrace_consumers.scoring.scores import combine
from ragtrace_consumers.writeback.span_content import (
    GEN_AI_RESPONSE_ID,
    evaluation_span_id,
    metric_span_id,
    metric_spans,
)
from tests.unit.consumers.scoring_helpers import (
    MODEL,
    PROMPT,
    grounded,
    rag_spans,
    root_span_id,
    sid,
    tid,
)


def _trace(**over: Any) -> RagTrace:
    trace = to_rag_trace(rag_spans(4))
    assert trace is not None
    return dataclasses.replace(trace, **over)


def test_a_judge_error_carries_error_type_and_the_response_id() -> None:
    failed = GroundednessResult.failed(
        "malformed judge output after one retry: no tool call",
        JudgeInfo("anthropic", MODEL, PROMPT),
    )
    scores = combine(_trace(response_id="chatcmpl-9"), None, failed, Thresholds())
    assert scores is not None
    (span,) = metric_spans(scores)
    assert span.family == "groundedness" and span.parent_span_id == sid(43)
    assert span.events == (
        (
            semconv.GEN_AI_EVALUATION_RESULT,
            {
                semconv.GEN_AI_EVALUATION_NAME: "groundedness",
                semconv.GEN_AI_EVALUATION_EXPLANATION: (
                    "malformed judge output after one retry: no tool call"
                ),
                semconv.ERROR_TYPE: "malformed_output",
                GEN_AI_RESPONSE_ID: "chatcmpl-9",
            },
        ),
    )


def test_no_response_id_no_error_type_when_judged() -> None:
    scores = combine(_trace(), None, grounded(1, 1), Thresholds())
    assert scores is not None
    (span,) = metric_spans(scores)
    ((_, attrs),) = span.events
    assert GEN_AI_RESPONSE_ID not in attrs and semconv.ERROR_TYPE not in attrs


def test_without_an_evaluated_span_the_target_span_is_the_parent() -> None:
    scores = combine(_trace(generation_span_id=None), None, grounded(1, 1), Thresholds())
    assert scores is not None
    (span,) = metric_spans(scores)
    assert span.parent_span_id == root_span_id(4)


def test_ids_depend_on_trace_and_family_only_and_never_collide_with_the_summary() -> None:
    ids = {
        metric_span_id(tid(1), "recall"),
        metric_span_id(tid(1), "groundedness"),
        metric_span_id(tid(2), "recall"),
        evaluation_span_id(tid(1), ["recall"]),
        evaluation_span_id(tid(1), ["groundedness"]),
    }
    assert len(ids) == 5
    assert metric_span_id(tid(1).upper(), "recall") == metric_span_id(tid(1), "recall")
