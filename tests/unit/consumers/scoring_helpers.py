"""Builders shared by the scoring/delivery unit tests: RAG spans, a scripted judge, a pipeline
wired to in-memory stores, an in-memory span exporter and an in-memory metric reader."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import semconv
from ragtrace.evaluation.attribution import Thresholds
from ragtrace.evaluation.judges import (
    ClaimVerdict,
    GroundednessResult,
    JudgeInfo,
    Usage,
)
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace.evaluation.retrieval import RecallDefinition
from ragtrace_consumers.model import SessionEvidence, SkipLog, SpanRecord, TraceScores
from ragtrace_consumers.readers import to_rag_trace
from ragtrace_consumers.scoring.pipeline import Pipeline, PipelineSettings
from ragtrace_consumers.scoring.sampling import Sampler, SamplerConfig
from ragtrace_consumers.scoring.scores import combine, score_retrieval
from ragtrace_consumers.stores.memory import (
    MemoryIdempotencyStore,
    MemoryJudgeBudget,
    MemoryJudgeResultCache,
    MemoryLabelStore,
    MemoryTraceStore,
)
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics
from ragtrace_consumers.writeback.otlp_sink import OtlpScoreSink
from tests import metric_points
from tests.metric_points import Key, number

PROMPT = "a" * 64
MODEL = "claude-test-1"
T0 = 1_700_000_000.0  # seconds


def tid(n: int) -> str:
    return f"{n:032x}"


def sid(n: int) -> str:
    return f"{n:016x}"


def rag_spans(
    n: int,
    *,
    query: str = "How long are audit logs kept?",
    retrieved: Sequence[tuple[str, str]] = (
        ("c-1", "Audit logs are kept 90 days."),
        ("c-2", "Logs are deleted nightly."),
    ),
    answer: str | None = "Audit logs are kept 90 days.",
    service: str = "rag-app",
    pipeline: str = "support",
    question_id: str | None = None,
    end_s: float = T0,
    root: bool = True,
) -> list[SpanRecord]:
    """A ragtrace-instrumented trace: pipeline root > retrieve, generate (trace ID ``tid(n)``)."""
    t = tid(n)
    end_ns = int(end_s * 1e9)
    ret_attrs: dict[str, Any] = {
        semconv.OPENINFERENCE_SPAN_KIND: semconv.SpanKind.RETRIEVER,
        semconv.INPUT_VALUE: query,
    }
    for i, (cid, text) in enumerate(retrieved):
        ret_attrs[semconv.retrieval_document_id(i)] = cid
        ret_attrs[semconv.retrieval_document_content(i)] = text
    root_attrs: dict[str, Any] = {
        semconv.OPENINFERENCE_SPAN_KIND: semconv.SpanKind.CHAIN,
        semconv.RAGTRACE_PIPELINE_NAME: pipeline,
    }
    if question_id is not None:
        root_attrs[semconv.RAGTRACE_QUESTION_ID] = question_id

    def span(
        number: int,
        parent: int | None,
        name: str,
        start_ms: int,
        end_ms: int,
        attrs: dict[str, Any],
    ) -> SpanRecord:
        """Span ``sid(n * 10 + number)``; its times are milliseconds before ``end_s``."""
        return SpanRecord(
            t,
            sid(n * 10 + number),
            None if parent is None else sid(n * 10 + parent),
            name,
            semconv.INSTRUMENTATION_SCOPE,
            service,
            end_ns - start_ms * 1_000_000,
            end_ns - end_ms * 1_000_000,
            attrs,
        )

    spans = [span(2, 1, semconv.SPAN_RETRIEVE, 3, 2, ret_attrs)]
    if answer is not None:
        gen_attrs: dict[str, Any] = {
            semconv.OPENINFERENCE_SPAN_KIND: semconv.SpanKind.LLM,
            semconv.OUTPUT_VALUE: answer,
            semconv.LLM_MODEL_NAME: "gen-model",
        }
        spans.append(span(3, 1, semconv.SPAN_GENERATE, 2, 1, gen_attrs))
    if root:
        spans.append(span(1, None, semconv.SPAN_PIPELINE, 4, 0, root_attrs))
    return spans


def root_span_id(n: int) -> str:
    return sid(n * 10 + 1)


class ScriptedJudge:
    """An in-process Judge: each call pops a scripted step (a GroundednessResult, or an exception
    to raise), else answers ``default(answer, context)``. Records calls; can block on a gate."""

    def __init__(
        self,
        *steps: object,
        model: str | None = MODEL,
        default: Callable[[str, Sequence[str]], GroundednessResult] | None = None,
        gate: threading.Event | None = None,
    ) -> None:
        self._info = JudgeInfo("anthropic", model, PROMPT)
        self.steps = list(steps)
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.default = default or (lambda a, c: grounded(1, 1, info=self._info))
        self.gate = gate
        self._lock = threading.Lock()

    @property
    def info(self) -> JudgeInfo:
        return self._info

    def groundedness(self, answer: str, context: Sequence[str]) -> GroundednessResult:
        if self.gate is not None:
            self.gate.wait(10)
        with self._lock:
            self.calls.append((answer, tuple(context)))
            step = self.steps.pop(0) if self.steps else None
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, GroundednessResult):
            return step
        return self.default(answer, context)


def grounded(
    entailed: int,
    total: int,
    *,
    info: JudgeInfo | None = None,
    cost: float = 0.002,
    usage: Usage | None = None,
) -> GroundednessResult:
    """A result with ``entailed`` of ``total`` claims verified."""
    claims = tuple(
        ClaimVerdict(f"claim {i}", True, "quote", True)
        if i < entailed
        else ClaimVerdict(f"claim {i}", False, None, False)
        for i in range(total)
    )
    return GroundednessResult.from_claims(
        claims,
        info or JudgeInfo("anthropic", MODEL, PROMPT),
        usage=usage
        or Usage(
            input_tokens=900,
            output_tokens=120,
            cache_read_input_tokens=50,
            cache_creation_input_tokens=10,
        ),
        cost_usd=cost,
        latency_s=0.25,
    )


def trace_scores(
    n: int = 7,
    *,
    gold: frozenset[str] | None = frozenset({"c-1", "c-9"}),
    result: GroundednessResult | None = None,
    cost: float = 0.0,
) -> TraceScores:
    """The scores of trace ``n`` (:func:`rag_spans`, ended at 1.7e9 s) as the pipeline combines
    them: mean recall@5 against question ``q-audit``'s ``gold`` chunks (None: no retrieval
    scores), the groundedness ``result`` (None: none) and its ``cost`` in USD."""
    trace = to_rag_trace(rag_spans(n, end_s=1_700_000_000.0))
    assert trace is not None
    question = None if gold is None else LabelledQuestion("q-audit", "?", gold)
    r = None
    if question is not None:
        r = score_retrieval(trace, question, "query_text", "lv1", 5, RecallDefinition.MEAN_RECALL)
    scores = combine(trace, r, result, Thresholds(), groundedness_cost_usd=cost)
    assert scores is not None
    return scores


class FailingExporter(SpanExporter):
    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls += 1
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        pass


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class Rig:
    pipeline: Pipeline
    traces: MemoryTraceStore
    labels: MemoryLabelStore
    cache: MemoryJudgeResultCache
    idempotency: MemoryIdempotencyStore
    budget: MemoryJudgeBudget
    judge: ScriptedJudge
    exporter: SpanExporter
    reader: InMemoryMetricReader
    metrics: ConsumerMetrics
    sink: OtlpScoreSink
    clock: Clock

    def spans(self) -> list[ReadableSpan]:
        """The summary evaluation spans (one per written trace)."""
        return [s for s in self.all_spans() if s.name == semconv.SPAN_EVALUATION]

    def metric_spans(self) -> list[ReadableSpan]:
        """The per-family evaluation spans (their events, under the spans they evaluate)."""
        return [s for s in self.all_spans() if s.name != semconv.SPAN_EVALUATION]

    def all_spans(self) -> list[ReadableSpan]:
        assert isinstance(self.exporter, InMemorySpanExporter)
        return list(self.exporter.get_finished_spans())

    def points(self, name: str) -> dict[Key, Any]:
        """{sorted attribute items: value (sum, or the histogram point)} of metric ``name``."""
        return {
            k: number(p) if isinstance(p, NumberDataPoint) else p
            for k, p in metric_points.points(self.reader, name).items()
        }


LABELS = (
    LabelledQuestion("q-audit", "How long are audit logs kept?", frozenset({"c-1", "c-9"})),
    LabelledQuestion("q-none", "What is the meaning of life?", frozenset()),
)


def score_sink(exporter: SpanExporter, settings: PipelineSettings) -> OtlpScoreSink:
    """The write-back the rigs use: into ``exporter``, with ``settings``' thresholds."""
    return OtlpScoreSink(
        exporter,
        Resource.create({"service.name": "ragtrace-consumer"}),
        timeout_s=5.0,
        recall_threshold=settings.thresholds.recall,
        groundedness_threshold=settings.thresholds.groundedness,
    )


def rig(
    *steps: object,
    judge: ScriptedJudge | None = None,
    exporter: SpanExporter | None = None,
    settings: PipelineSettings | None = None,
    sampler: Sampler | None = None,
    calls_per_minute: int = 1000,
    with_judge: bool = True,
    labels: Sequence[LabelledQuestion] = LABELS,
    skips: SkipLog | None = None,
    sessions: SessionEvidence | None = None,
) -> Rig:
    clock = Clock()
    traces = MemoryTraceStore(clock=clock)
    label_store = MemoryLabelStore(labels, clock=clock)
    cache = MemoryJudgeResultCache(clock=clock)
    idem = MemoryIdempotencyStore(clock=clock)
    budget = MemoryJudgeBudget(calls_per_minute, 10_000_000, clock=clock)
    judge = judge or ScriptedJudge(*steps)
    exporter = exporter or InMemorySpanExporter()
    reader = InMemoryMetricReader()
    metrics = ConsumerMetrics(MeterProvider(metric_readers=[reader]))
    settings = settings or PipelineSettings(quiet_s=5.0, lease_s=60.0)
    sink = score_sink(exporter, settings)
    pipeline = Pipeline(
        traces=traces,
        labels=label_store,
        cache=cache,
        idempotency=idem,
        budget=budget,
        judge=judge if with_judge else None,
        sink=sink,
        metrics=metrics,
        sampler=sampler or Sampler(SamplerConfig()),
        settings=settings,
        clock=clock,
        skips=skips,
        sessions=sessions,
    )
    return Rig(
        pipeline,
        traces,
        label_store,
        cache,
        idem,
        budget,
        judge,
        exporter,
        reader,
        metrics,
        sink,
        clock,
    )
