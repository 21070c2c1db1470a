"""``ragtrace.configure``: one call to start exporting spans, for apps with no OpenTelemetry setup.

An app that already installed an SDK ``TracerProvider`` keeps it: ``configure`` then only applies
the ragtrace settings and returns that provider. Otherwise it installs a provider whose spans go
through a ``BatchSpanProcessor`` (export on a background thread; a full queue drops the newest
span and counts it on ``ragtrace.sdk.dropped``, never blocks) to an OTLP/HTTP protobuf exporter.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlparse

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from ragtrace import _config, _health
from ragtrace._config import Redactor
from ragtrace._oversize import OversizeGuard

__all__ = ["DEFAULT_ENDPOINT", "configure"]

DEFAULT_ENDPOINT = "http://localhost:4318"
"""The collector's OTLP/HTTP receiver; spans are posted to ``{endpoint}/v1/traces``."""

_log = logging.getLogger("ragtrace")


def configure(
    service_name: str | None = None,
    endpoint: str | None = None,
    *,
    headers: Mapping[str, str] | None = None,
    resource_attributes: Mapping[str, Any] | None = None,
    exporter: SpanExporter | None = None,
    max_queue_size: int | None = None,
    enabled: bool | None = None,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
    max_attribute_length: int | None = None,
    max_span_content_bytes: int | None = None,
    max_documents: int | None = None,
    max_trace_export_bytes: int | None = None,
) -> trace.TracerProvider:
    """Apply ragtrace settings and, if the app has no SDK tracer provider yet, install one.

    ``service_name`` falls back to ``OTEL_SERVICE_NAME``, then ``unknown_service``. ``endpoint``
    (base URL of an OTLP/HTTP receiver) falls back to ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` /
    ``OTEL_EXPORTER_OTLP_ENDPOINT``, then :data:`DEFAULT_ENDPOINT`. ``exporter`` replaces the OTLP
    exporter (tests, other backends). The other keyword arguments are the SDK settings (see
    ``ragtrace._config``); ``None`` leaves a setting as it is. Returns the provider in use.
    Raises ``ValueError`` for a bad argument.
    """
    if service_name is not None and (not isinstance(service_name, str) or not service_name):
        raise ValueError(f"service_name must be a non-empty string, got {service_name!r}")
    if endpoint is not None:
        parsed = urlparse(endpoint) if isinstance(endpoint, str) else None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(
                f"endpoint must be an http(s) URL such as {DEFAULT_ENDPOINT}, got {endpoint!r}"
            )
    if max_queue_size is not None and (
        isinstance(max_queue_size, bool)
        or not isinstance(max_queue_size, int)
        or max_queue_size < 1
    ):
        raise ValueError(f"max_queue_size must be a positive integer, got {max_queue_size!r}")
    settings = _config.update(
        enabled=enabled,
        capture_content=capture_content,
        redact=redact,
        max_attribute_length=max_attribute_length,
        max_span_content_bytes=max_span_content_bytes,
        max_documents=max_documents,
        max_trace_export_bytes=max_trace_export_bytes,
    )
    existing = trace.get_tracer_provider()
    if isinstance(existing, TracerProvider):
        return existing

    attributes: dict[str, Any] = dict(resource_attributes or {})
    if service_name is not None:
        attributes[SERVICE_NAME] = service_name
    # Room for every attribute of a span carrying max_documents chunks (5 keys each) plus ours.
    limits = SpanLimits(max_span_attributes=max(128, 5 * settings.max_documents + 32))
    provider = TracerProvider(resource=Resource.create(attributes), span_limits=limits)
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        url = None if endpoint is None else endpoint.rstrip("/") + "/v1/traces"
        if endpoint is not None and endpoint.rstrip("/").endswith("/v1/traces"):
            url = endpoint
        exporter = OTLPSpanExporter(endpoint=url, headers=dict(headers) if headers else None)
    batch_size = None if max_queue_size is None else min(512, max_queue_size)
    processor = _CountingBatchSpanProcessor(
        _CountingExporter(exporter), max_queue_size=max_queue_size, max_export_batch_size=batch_size
    )
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    in_use = trace.get_tracer_provider()
    if in_use is not provider:  # another, non-SDK provider was already set: OTel keeps the first
        _log.warning(
            "ragtrace: a tracer provider was already set (%s); keeping it", type(in_use).__name__
        )
        provider.shutdown()
    return in_use


class _CountingExporter(SpanExporter):
    """Counts failed exports (``ragtrace.sdk.errors``/``ragtrace.sdk.dropped``) and names traces
    too large for the collector's Kafka messages (:mod:`ragtrace._oversize`); never raises."""

    def __init__(self, inner: SpanExporter) -> None:
        self._inner = inner
        self._oversize = OversizeGuard()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            self._oversize.check(spans)
        except Exception as exc:  # noqa: BLE001
            _health.report("oversize_check", exc)
        try:
            result = self._inner.export(spans)
        except Exception as exc:  # noqa: BLE001
            _health.report("export", exc)
            _health.dropped("export_failed", len(spans))
            return SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            _health.report("export")
            _health.dropped("export_failed", len(spans))
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


class _CountingBatchSpanProcessor(BatchSpanProcessor):
    """The SDK's batch processor, counting the spans it drops when its queue is full."""

    def on_end(self, span: ReadableSpan) -> None:
        try:
            batch = self._batch_processor
            sampled = span.context is not None and span.context.trace_flags.sampled
            if sampled and len(batch._queue) >= batch._max_queue_size:
                _health.dropped("queue_full")
        except Exception:  # noqa: BLE001 - SDK internals moved: the SDK still drops and logs, we just don't count
            pass
        super().on_end(span)
