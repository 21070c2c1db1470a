"""The OTLP score sink: evaluation spans and consumer metrics through the OpenTelemetry SDK.

Its own span exporter and MeterProvider (never the global ones, so write-back can never enter
an application's span stream), scope ``semconv.EVALUATION_SCOPE``, exporting over OTLP/HTTP to
the collector's evaluation receiver. Every export runs with instrumentation suppressed.

Evaluation spans are built without a tracer: their IDs, timestamps and attributes are all
known in advance (deterministic span ID, the evaluated trace's end), so there is nothing for a
tracer to decide. Towards the collector (:meth:`OtlpScoreSink.to_collector`) they are encoded
straight into OTLP protobuf (:mod:`~ragtrace_consumers.writeback.otlp_encoding`: the same request the SDK's
exporter would send, at a fraction of its CPU); given an SDK ``SpanExporter`` (tests, other
backends) the sink builds finished SDK spans (``ReadableSpan``) for it instead.

Results leave as ``results_as`` says: ``spans`` (those evaluation spans), ``events`` (one
``gen_ai.evaluation.result`` OTLP log record per result in the evaluated span's context,
:mod:`~ragtrace_consumers.writeback.evaluation_logs`, to ``/v1/logs``) or ``both`` (the default
until backends read the log records).

Delivery is synchronous for the caller but batched on the wire: ``write_many`` ends one span per
scored trace, and a single exporter thread ships everything queued in one request (up to 512
spans), then wakes the writer with each span's outcome. ``write``/``write_many`` return only
after the collector accepted (or refused) the spans.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from opentelemetry import trace as trace_api
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link

from ragtrace import __version__, semconv
from ragtrace.suppression import suppressed
from ragtrace_consumers.errors import WriteBackError
from ragtrace_consumers.model import TraceScores
from ragtrace_consumers.writeback.evaluation_logs import (
    RESULTS_AS,
    LogMessageExporter,
    OtlpLogRequestExporter,
    evaluation_log_records,
)
from ragtrace_consumers.writeback.otlp_encoding import (
    OtlpRequestExporter,
    SpanMessageExporter,
    evaluation_span_messages,
)
from ragtrace_consumers.writeback.refused_signals import RefusedSignals
from ragtrace_consumers.writeback.span_content import (
    evaluation_attributes,
    evaluation_span_id,
    metric_spans,
)

__all__ = ["OtlpScoreSink", "make_meter_provider", "make_resource"]

_log = logging.getLogger(__name__)
_BATCH_MAX = 512
_MAX_REQUEST_BYTES = 64 * 1024 * 1024  # the SDK exporter's default limit
_SCOPE = InstrumentationScope(semconv.EVALUATION_SCOPE, __version__, semconv.SCHEMA_URL)
_SAMPLED = trace_api.TraceFlags(trace_api.TraceFlags.SAMPLED)


def make_resource(service_name: str, extra: Mapping[str, str] | None = None) -> Resource:
    """``service.name`` plus a per-process ``service.instance.id`` (replicas stay distinct
    series in Prometheus)."""
    attrs = {
        "service.name": service_name,
        "service.instance.id": f"{socket.gethostname()}-{os.getpid()}",
    }
    attrs.update(extra or {})
    return Resource.create(attrs)


class _Pending:
    __slots__ = ("done", "ok")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.ok = False


class _SdkExporter:
    """A :class:`~ragtrace_consumers.writeback.otlp_encoding.SpanMessageExporter`-like adapter for an SDK
    ``SpanExporter`` (its items are ``ReadableSpan``)."""

    def __init__(self, exporter: SpanExporter) -> None:
        self._exporter = exporter

    def export(self, spans: Sequence[ReadableSpan]) -> bool:
        return self._exporter.export(spans) is SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self._exporter.shutdown()


class _Delivery:
    """Queues finished spans (SDK spans or protobuf messages, as ``exporter`` takes them); one
    thread exports them in batches and reports back per span."""

    def __init__(self, exporter: _SdkExporter | SpanMessageExporter | LogMessageExporter) -> None:
        self._exporter = exporter
        self._cond = threading.Condition()
        self._queue: list[tuple[Any, _Pending]] = []
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="ragtrace-writeback", daemon=True)
        self._thread.start()

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """Spans submitted inside go out together: the exporter waits until the block is left."""
        with self._cond:
            yield

    def submit(self, span: Any) -> _Pending:
        pending = _Pending()
        with self._cond:
            self._queue.append((span, pending))
            self._cond.notify()
        return pending

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue and self._closed:
                    return
                batch, self._queue = self._queue[:_BATCH_MAX], self._queue[_BATCH_MAX:]
            started = time.monotonic()
            try:
                with suppressed():
                    ok = self._exporter.export([s for s, _ in batch])
            except Exception:  # noqa: BLE001 - reported to the writers as a failed delivery
                _log.warning("exporting evaluation results failed", exc_info=True)
                ok = False
            took = time.monotonic() - started
            if not ok or took > 1.0:
                _log.warning(
                    "exported %d evaluation spans or log records in %.1f s: %s",
                    len(batch),
                    took,
                    "ok" if ok else "FAILED",
                )
            for _, pending in batch:
                pending.ok = ok
                pending.done.set()

    def shutdown(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=30)
        self._exporter.shutdown()


class OtlpScoreSink:
    """A :class:`~ragtrace_consumers.model.ScoreSink` sending evaluation spans to
    ``exporter``: a :class:`~ragtrace_consumers.writeback.otlp_encoding.SpanMessageExporter` (protobuf
    messages; :meth:`to_collector`) or an SDK ``SpanExporter`` (``ReadableSpan``; an in-memory
    one in tests), and ``gen_ai.evaluation.result`` log records to ``log_exporter``.
    ``results_as`` (``both``, ``events``, ``spans``) chooses which of the two are written; with
    no ``log_exporter`` only spans can be."""

    def __init__(
        self,
        exporter: SpanExporter | SpanMessageExporter,
        resource: Resource,
        *,
        timeout_s: float = 30.0,
        recall_threshold: float | None = None,
        groundedness_threshold: float | None = None,
        log_exporter: LogMessageExporter | None = None,
        results_as: str = "both",
    ) -> None:
        if results_as not in RESULTS_AS:
            raise ValueError(
                f"results_as must be one of {', '.join(RESULTS_AS)}, got {results_as!r}"
            )
        if results_as == "events" and log_exporter is None:
            raise ValueError("results_as='events' needs a log_exporter")
        self._direct = not isinstance(exporter, SpanExporter)
        self._spans_on = results_as in ("both", "spans")
        self._delivery = _Delivery(
            _SdkExporter(exporter) if isinstance(exporter, SpanExporter) else exporter
        )
        self._log_delivery = (
            _Delivery(log_exporter)
            if log_exporter is not None and results_as in ("both", "events")
            else None
        )
        self._resource = resource
        self._timeout_s = timeout_s
        self._thresholds = (recall_threshold, groundedness_threshold)

    @classmethod
    def to_collector(
        cls,
        endpoint: str,
        resource: Resource,
        *,
        timeout_s: float = 10.0,
        recall_threshold: float | None = None,
        groundedness_threshold: float | None = None,
        results_as: str = "both",
        refusals: RefusedSignals | None = None,
    ) -> OtlpScoreSink:
        """OTLP/HTTP to ``endpoint`` (base URL; ``/v1/traces`` and ``/v1/logs`` are appended).
        With ``refusals``, an endpoint refusing ``/v1/logs`` gets no more log records (the
        spans are still delivered)."""
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        base = endpoint.rstrip("/")
        url, logs_url = base + "/v1/traces", base + "/v1/logs"
        exporter = OTLPSpanExporter(endpoint=url, timeout=timeout_s, session=_session(url))
        log_exporter = OTLPLogExporter(
            endpoint=logs_url, timeout=timeout_s, session=_session(logs_url)
        )
        if refusals is not None:
            refusals.guard(log_exporter, "logs")
        return cls(
            OtlpRequestExporter(exporter, resource, max_request_bytes=_MAX_REQUEST_BYTES),
            resource,
            timeout_s=timeout_s * 3,
            recall_threshold=recall_threshold,
            groundedness_threshold=groundedness_threshold,
            log_exporter=OtlpLogRequestExporter(log_exporter, resource),
            results_as=results_as,
        )

    def write(self, scores: TraceScores) -> None:
        (error,) = self.write_many([scores])
        if error is not None:
            raise error

    def write_many(self, batch: Sequence[TraceScores]) -> list[WriteBackError | None]:
        """Each item's evaluation spans and log records, delivered together; per item None
        (delivered) or the :class:`WriteBackError` (not delivered within the timeout, or
        refused)."""
        pending: list[list[_Pending]] = [[] for _ in batch]
        if self._spans_on:
            with self._delivery.holding():
                for ps, scores in zip(pending, batch, strict=True):
                    ps += [self._delivery.submit(span) for span in self._encode(scores)]
        logs = self._log_delivery
        if logs is not None:
            recall_t, ground_t = self._thresholds
            with logs.holding():
                for ps, scores in zip(pending, batch, strict=True):
                    records = evaluation_log_records(
                        scores,
                        at_ns=scores.trace.ended_ns or time.time_ns(),
                        recall_threshold=recall_t,
                        groundedness_threshold=ground_t,
                    )
                    ps += [logs.submit(record) for record in records]
        deadline = time.monotonic() + self._timeout_s
        out: list[WriteBackError | None] = []
        for scores, ps in zip(batch, pending, strict=True):
            if all(p.done.wait(max(0.0, deadline - time.monotonic())) and p.ok for p in ps):
                out.append(None)
            else:
                out.append(
                    WriteBackError(
                        f"evaluation results of trace {scores.trace.trace_id} not delivered"
                    )
                )
        return out

    def _encode(self, scores: TraceScores) -> Sequence[Any]:
        if not self._direct:
            return self._spans(scores)
        recall_t, ground_t = self._thresholds
        messages = evaluation_span_messages(
            scores,
            at_ns=scores.trace.ended_ns or time.time_ns(),
            recall_threshold=recall_t,
            groundedness_threshold=ground_t,
        )
        return [m.SerializePartialToString() for m in messages]

    def _spans(self, scores: TraceScores) -> list[ReadableSpan]:
        """The summary span (flat ``ragtrace.eval.*`` attributes, child of the target span)
        and one span per metric family carrying its ``gen_ai.evaluation.result`` events,
        child of and linked to the span it evaluates (:mod:`~ragtrace_consumers.writeback.span_content`).
        Deterministic IDs; every timestamp the trace's end (now if unknown)."""
        trace = scores.trace
        trace_id = int(trace.trace_id, 16)
        at = trace.ended_ns or time.time_ns()

        def ctx(span_id: str, remote: bool) -> trace_api.SpanContext:
            return trace_api.SpanContext(
                trace_id, int(span_id, 16), is_remote=remote, trace_flags=_SAMPLED
            )

        summary = ReadableSpan(
            semconv.SPAN_EVALUATION,
            context=ctx(evaluation_span_id(trace.trace_id, scores.families), False),
            parent=ctx(trace.target_span_id, True),
            resource=self._resource,
            attributes=evaluation_attributes(scores),
            kind=trace_api.SpanKind.INTERNAL,
            start_time=at,
            end_time=at,
            instrumentation_scope=_SCOPE,
        )
        recall_t, ground_t = self._thresholds
        out = [summary]
        for m in metric_spans(scores, recall_threshold=recall_t, groundedness_threshold=ground_t):
            target = ctx(m.parent_span_id, True)
            out.append(
                ReadableSpan(
                    m.name,
                    context=ctx(m.span_id, False),
                    parent=target,
                    resource=self._resource,
                    attributes=m.attributes,
                    events=[Event(n, a, at) for n, a in m.events],
                    links=[Link(target)],
                    kind=trace_api.SpanKind.INTERNAL,
                    start_time=at,
                    end_time=at,
                    instrumentation_scope=_SCOPE,
                )
            )
        return out

    def shutdown(self) -> None:
        self._delivery.shutdown()
        if self._log_delivery is not None:
            self._log_delivery.shutdown()


_CREDENTIAL_PROVIDER_VARS = (
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER",
)
_CA_BUNDLE_VARS = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


def _session(url: str) -> Any:
    """A requests session with the environment's proxy settings for ``url`` resolved once: by
    default requests re-reads the whole environment on every request, a large part of a
    write-back's CPU. None (the exporter's own session, reading the environment each time) when
    a credential provider is set, or a requests CA bundle variable for an https ``url`` (a
    plain http ``url`` has no certificate to verify)."""
    bundles = _CA_BUNDLE_VARS if url.startswith("https:") else ()
    if any(os.environ.get(name) for name in (*_CREDENTIAL_PROVIDER_VARS, *bundles)):
        return None
    import requests

    session = requests.Session()
    session.trust_env = False
    session.proxies.update(requests.utils.get_environ_proxies(url))
    return session


def make_meter_provider(
    resource: Resource,
    *,
    endpoint: str | None = None,
    interval_s: float = 5.0,
    timeout_s: float = 10.0,
    readers: Sequence[MetricReader] = (),
    refusals: RefusedSignals | None = None,
) -> MeterProvider:
    """A MeterProvider exporting over OTLP/HTTP to ``endpoint`` (base URL) every
    ``interval_s``, plus any extra ``readers`` (tests pass an in-memory one). With
    ``refusals``, an endpoint refusing ``/v1/metrics`` is not sent them again."""
    all_readers = list(readers)
    if endpoint is not None:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        exporter = OTLPMetricExporter(
            endpoint=endpoint.rstrip("/") + "/v1/metrics", timeout=timeout_s
        )
        if refusals is not None:
            refusals.guard(exporter, "metrics")
        all_readers.append(
            PeriodicExportingMetricReader(
                exporter,
                export_interval_millis=interval_s * 1000,
                export_timeout_millis=timeout_s * 1000,
            )
        )
    return MeterProvider(resource=resource, metric_readers=all_readers)
