"""The OTLP score sink: evaluation spans and consumer metrics through the OpenTelemetry SDK.

Its own TracerProvider and MeterProvider (never the global ones, so write-back can never enter
an application's span stream), scope ``semconv.EVALUATION_SCOPE``, exporting over OTLP/HTTP to
the collector's evaluation receiver. Every export runs with instrumentation suppressed.

Deterministic span IDs: the SDK asks its IdGenerator for a span ID; ours returns the ID the
writer put in a context variable just before starting the span (and a random one otherwise).

Delivery is synchronous for the caller but batched on the wire: ``write`` ends the span, and a
single exporter thread ships everything queued by all workers in one request, then wakes each
writer with the outcome. ``write`` returns only after the collector accepted the span.
"""

from __future__ import annotations

import contextvars
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping, Sequence

from opentelemetry import context as otel_context
from opentelemetry import trace as trace_api
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from ragtrace.consumers.score import TraceScores
from ragtrace.consumers.writeback import (
    WriteBackError,
    evaluation_attributes,
    evaluation_events,
    evaluation_span_id,
    suppressed,
)

from ragtrace import semconv

__all__ = ["OtlpScoreSink", "make_meter_provider", "make_resource"]

_log = logging.getLogger(__name__)
_NEXT_SPAN_ID: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "ragtrace_next_span_id", default=None)
_BATCH_MAX = 512


def make_resource(service_name: str, extra: Mapping[str, str] | None = None) -> Resource:
    """``service.name`` plus a per-process ``service.instance.id`` (replicas stay distinct
    series in Prometheus)."""
    attrs = {"service.name": service_name,
             "service.instance.id": f"{socket.gethostname()}-{os.getpid()}"}
    attrs.update(extra or {})
    return Resource.create(attrs)


class _ContextIdGenerator(RandomIdGenerator):
    def generate_span_id(self) -> int:
        wanted = _NEXT_SPAN_ID.get()
        return wanted if wanted is not None else super().generate_span_id()


class _Pending:
    __slots__ = ("done", "ok")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.ok = False


class _DeliveringProcessor(SpanProcessor):
    """Queues ended spans; one thread exports them in batches and reports back per span."""

    def __init__(self, exporter: SpanExporter) -> None:
        self._exporter = exporter
        self._cond = threading.Condition()
        self._queue: list[tuple[ReadableSpan, _Pending]] = []
        self._waiting: dict[tuple[int, int], _Pending] = {}
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="ragtrace-writeback", daemon=True)
        self._thread.start()

    def expect(self, trace_id: int, span_id: int) -> _Pending:
        pending = _Pending()
        with self._cond:
            self._waiting[(trace_id, span_id)] = pending
        return pending

    def on_end(self, span: ReadableSpan) -> None:
        ctx = span.get_span_context()
        if ctx is None:
            return
        with self._cond:
            pending = self._waiting.pop((ctx.trace_id, ctx.span_id), None) or _Pending()
            self._queue.append((span, pending))
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue and self._closed:
                    return
                batch, self._queue = self._queue[:_BATCH_MAX], self._queue[_BATCH_MAX:]
            token = otel_context.attach(
                otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY, True))
            started = time.monotonic()
            try:
                ok = self._exporter.export([s for s, _ in batch]) is SpanExportResult.SUCCESS
            except Exception:  # noqa: BLE001 - reported to the writers as a failed delivery
                _log.warning("exporting evaluation spans failed", exc_info=True)
                ok = False
            finally:
                otel_context.detach(token)
            took = time.monotonic() - started
            if not ok or took > 1.0:
                _log.warning("exported %d evaluation spans in %.1f s: %s", len(batch), took,
                             "ok" if ok else "FAILED")
            for _, pending in batch:
                pending.ok = ok
                pending.done.set()

    def shutdown(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=30)
        self._exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class OtlpScoreSink:
    """A :class:`~ragtrace.consumers.writeback.ScoreSink` sending evaluation spans through the
    OTel SDK to ``exporter`` (an ``OTLPSpanExporter`` in production, an in-memory one in tests).
    """

    def __init__(self, exporter: SpanExporter, resource: Resource, *, timeout_s: float = 30.0,
                 recall_threshold: float | None = None,
                 groundedness_threshold: float | None = None) -> None:
        self._processor = _DeliveringProcessor(exporter)
        self._provider = TracerProvider(resource=resource, sampler=ALWAYS_ON,
                                        id_generator=_ContextIdGenerator())
        self._provider.add_span_processor(self._processor)
        self._tracer = self._provider.get_tracer(semconv.EVALUATION_SCOPE)
        self._timeout_s = timeout_s
        self._thresholds = (recall_threshold, groundedness_threshold)

    @classmethod
    def to_collector(cls, endpoint: str, resource: Resource, *, timeout_s: float = 10.0,
                     recall_threshold: float | None = None,
                     groundedness_threshold: float | None = None) -> OtlpScoreSink:
        """OTLP/HTTP to ``endpoint`` (base URL; ``/v1/traces`` is appended)."""
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces",
                                    timeout=timeout_s)
        return cls(exporter, resource, timeout_s=timeout_s * 3, recall_threshold=recall_threshold,
                   groundedness_threshold=groundedness_threshold)

    def write(self, scores: TraceScores) -> None:
        trace = scores.trace
        trace_id = int(trace.trace_id, 16)
        span_id = int(evaluation_span_id(trace.trace_id, scores.families), 16)
        parent = trace_api.SpanContext(trace_id, int(trace.target_span_id, 16), is_remote=True,
                                       trace_flags=trace_api.TraceFlags(
                                           trace_api.TraceFlags.SAMPLED))
        ctx = trace_api.set_span_in_context(trace_api.NonRecordingSpan(parent))
        at = trace.ended_ns or None
        pending = self._processor.expect(trace_id, span_id)
        token = _NEXT_SPAN_ID.set(span_id)
        try:
            with suppressed():
                span = self._tracer.start_span(semconv.SPAN_EVALUATION, context=ctx,
                                               attributes=evaluation_attributes(scores),
                                               start_time=at)
        finally:
            _NEXT_SPAN_ID.reset(token)
        recall_t, ground_t = self._thresholds
        for name, attrs in evaluation_events(scores, recall_threshold=recall_t,
                                             groundedness_threshold=ground_t):
            span.add_event(name, attributes=attrs, timestamp=at)
        span.end(end_time=at)
        if not pending.done.wait(self._timeout_s) or not pending.ok:
            raise WriteBackError(f"evaluation span of trace {trace.trace_id} not delivered")

    def shutdown(self) -> None:
        self._provider.shutdown()


def make_meter_provider(resource: Resource, *, endpoint: str | None = None,
                        interval_s: float = 5.0, timeout_s: float = 10.0,
                        readers: Sequence[MetricReader] = ()) -> MeterProvider:
    """A MeterProvider exporting over OTLP/HTTP to ``endpoint`` (base URL) every
    ``interval_s``, plus any extra ``readers`` (tests pass an in-memory one)."""
    all_readers = list(readers)
    if endpoint is not None:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        exporter = OTLPMetricExporter(endpoint=endpoint.rstrip("/") + "/v1/metrics",
                                      timeout=timeout_s)
        all_readers.append(PeriodicExportingMetricReader(
            exporter, export_interval_millis=interval_s * 1000,
            export_timeout_millis=timeout_s * 1000))
    return MeterProvider(resource=resource, metric_readers=all_readers)
