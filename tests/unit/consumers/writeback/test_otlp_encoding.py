"""Direct OTLP encoding of evaluation spans: byte-for-byte the request the SDK's exporter
builds from the sink's ``ReadableSpan`` objects, and the sink sends it through a
``SpanMessageExporter``."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TypedDict

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace.evaluation.judges import GroundednessResult, JudgeInfo, MetricResult
from ragtrace_consumers.model import METRIC_CORRECTNESS, METRIC_RELEVANCY, AnswerScores, TraceScores
from ragtrace_consumers.writeback.otlp_encoding import (
    OtlpRequestExporter,
    evaluation_span_messages,
    export_request,
)
from ragtrace_consumers.writeback.otlp_sink import OtlpScoreSink
from tests.unit.consumers.scoring_helpers import MODEL, PROMPT, grounded, tid
from tests.unit.consumers.writeback.test_span_content import _scores

RESOURCE = Resource.create({"service.name": "ragtrace-consumer", "service.instance.id": "h-1"})


class _Thresholds(TypedDict):
    recall_threshold: float
    groundedness_threshold: float


THRESHOLDS: _Thresholds = {"recall_threshold": 0.5, "groundedness_threshold": 0.8}


def _answers() -> AnswerScores:
    info = JudgeInfo("anthropic", MODEL, PROMPT)
    return AnswerScores(
        question_id="q-audit",
        relevancy=MetricResult(METRIC_RELEVANCY, 0.75, info, details=({"q": "x"},)),
        correctness=MetricResult(METRIC_CORRECTNESS, None, info, error="timeout"),
        cost_usd=0.001,
    )


def _variants() -> list[TraceScores]:
    info = JudgeInfo("anthropic", MODEL, PROMPT)
    full = _scores(result=grounded(2, 3, cost=0.002))
    return [
        full,
        _scores(gold=None, result=grounded(3, 3)),
        _scores(result=None),
        _scores(gold=frozenset(), result=GroundednessResult.failed("malformed output", info)),
        _scores(gold=None, result=GroundednessResult.from_claims((), info)),
        dataclasses.replace(full, answers=_answers()),
        dataclasses.replace(full, trace=dataclasses.replace(full.trace, response_id="resp-1")),
    ]


def _sdk_request(scores: Sequence[TraceScores]) -> bytes:
    sink = OtlpScoreSink(InMemorySpanExporter(), RESOURCE, **THRESHOLDS)
    try:
        spans = [span for s in scores for span in sink._spans(s)]
    finally:
        sink.shutdown()
    return encode_spans(spans).SerializePartialToString()


def _direct_request(scores: Sequence[TraceScores]) -> bytes:
    spans = [
        span.SerializePartialToString()
        for s in scores
        for span in evaluation_span_messages(s, at_ns=s.trace.ended_ns, **THRESHOLDS)
    ]
    return export_request(spans, RESOURCE)


@pytest.mark.parametrize("index", range(len(_variants())))
def test_each_variant_encodes_to_the_sdk_exporters_bytes(index: int) -> None:
    scores = [_variants()[index]]
    assert _direct_request(scores) == _sdk_request(scores)


def test_a_batch_of_traces_is_one_request_identical_to_the_sdks() -> None:
    scores = _variants()
    direct = _direct_request(scores)
    assert direct == _sdk_request(scores)
    request = ExportTraceServiceRequest.FromString(direct)
    (resource_spans,) = request.resource_spans
    (scope_spans,) = resource_spans.scope_spans
    assert len(scope_spans.spans) == sum(1 + len(s.families) for s in scores)
    assert {span.trace_id.hex() for span in scope_spans.spans} == {scores[0].trace.trace_id}


class _Client:
    def __init__(self, ok: bool) -> None:
        self.ok = ok
        self.sent: list[bytes] = []

    def export(self, data: bytes) -> object:
        self.sent.append(data)
        return dataclasses.make_dataclass("R", [("success", bool)])(self.ok)


class _Transport:
    def __init__(self, ok: bool = True) -> None:
        self._client = _Client(ok)
        self.closed = False

    def shutdown(self) -> None:
        self.closed = True


def test_the_sink_sends_the_direct_request_through_the_exporters_client() -> None:
    transport = _Transport()
    exporter = OtlpRequestExporter(transport, RESOURCE, max_request_bytes=1 << 20)
    sink = OtlpScoreSink(exporter, RESOURCE, timeout_s=5.0, **THRESHOLDS)
    scores = _variants()[:3]
    try:
        assert sink.write_many(scores) == [None, None, None]
    finally:
        sink.shutdown()
    assert transport.closed
    sent = [
        span
        for data in transport._client.sent
        for rs in ExportTraceServiceRequest.FromString(data).resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]
    expected = ExportTraceServiceRequest.FromString(_sdk_request(scores))
    assert sent == list(expected.resource_spans[0].scope_spans[0].spans)


def test_a_refused_or_oversized_request_is_a_failed_delivery() -> None:
    refused = OtlpRequestExporter(_Transport(ok=False), RESOURCE, max_request_bytes=1 << 20)
    spans = [
        m.SerializePartialToString() for m in evaluation_span_messages(_variants()[0], at_ns=1)
    ]
    assert refused.export(spans) is False
    transport = _Transport()
    small = OtlpRequestExporter(transport, RESOURCE, max_request_bytes=10)
    assert small.export(spans) is False
    assert transport._client.sent == []  # never sent
    sink = OtlpScoreSink(
        OtlpRequestExporter(_Transport(ok=False), RESOURCE, max_request_bytes=1 << 20),
        RESOURCE,
        timeout_s=5.0,
    )
    try:
        (error,) = sink.write_many([_variants()[0]])
    finally:
        sink.shutdown()
    assert error is not None and tid(7) in str(error)


def test_a_resource_schema_url_and_long_fields_keep_the_sdks_bytes() -> None:
    """The request is joined by hand: lengths past one varint byte and the optional schema
    URL must come out as protobuf writes them."""
    resource = Resource.create({"service.name": "x" * 300}, schema_url="https://x/1.0")
    scores = _variants() * 40  # a request far over 16 KiB: three-byte lengths
    spans = [
        span.SerializePartialToString()
        for s in scores
        for span in evaluation_span_messages(s, at_ns=s.trace.ended_ns, **THRESHOLDS)
    ]
    sink = OtlpScoreSink(InMemorySpanExporter(), resource, **THRESHOLDS)
    try:
        sdk = [span for s in scores for span in sink._spans(s)]
    finally:
        sink.shutdown()
    expected = encode_spans(sdk).SerializePartialToString()
    assert len(expected) > 1 << 14
    assert export_request(spans, resource) == expected
