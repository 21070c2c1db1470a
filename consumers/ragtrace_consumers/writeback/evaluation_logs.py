"""Evaluation results as the GenAI conventions carry them: ``gen_ai.evaluation.result`` events,
i.e. OTLP log records in the evaluated span's context.

One log record per result, its ``trace_id``/``span_id`` those of the span the result judges
(the same targets as the per-family evaluation spans, :mod:`~ragtrace_consumers.writeback.span_content`:
retrieval metrics on the retrieval span, groundedness and the answer metrics on the generation
span), plus the ``cell`` result on the trace's root span. ``event_name`` is
``gen_ai.evaluation.result``; the attributes are the event's (``gen_ai.evaluation.name``,
``.score.value``, ``.score.label``, ``.explanation``, ``gen_ai.response.id``, ``error.type``).
A backend that keeps log records but drops (or samples away) our evaluation spans still has
every score, linked to the span it judged.

Pure: :func:`evaluation_log_records` builds the protobuf ``LogRecord`` messages from the scores,
:func:`logs_export_request` wraps them in the ``ExportLogsServiceRequest`` the SDK's exporter
would send, and :class:`OtlpLogRequestExporter` ships it through an ``OTLPLogExporter``'s
transport (endpoint, headers, TLS, retries).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final, Protocol

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, SeverityNumber
from opentelemetry.sdk.resources import Resource

from ragtrace import __version__, semconv
from ragtrace_consumers.model import TraceScores
from ragtrace_consumers.writeback.otlp_encoding import encode_attributes
from ragtrace_consumers.writeback.span_content import cell_event, metric_spans

__all__ = [
    "RESULTS_AS",
    "LogMessageExporter",
    "OtlpLogRequestExporter",
    "evaluation_log_records",
    "logs_export_request",
]

_log = logging.getLogger(__name__)

RESULTS_AS: Final = ("both", "events", "spans")
"""Where results go: ``events`` (``gen_ai.evaluation.result`` log records), ``spans`` (our
evaluation spans with their span events) or ``both``."""
_SAMPLED = 0x01  # W3C trace flags: the evaluated trace was sampled (it reached us)


class LogMessageExporter(Protocol):
    """Where evaluation log records go: ``export`` returns True once they were accepted."""

    def export(self, records: Sequence[LogRecord]) -> bool: ...

    def shutdown(self) -> None: ...


def evaluation_log_records(
    scores: TraceScores,
    *,
    at_ns: int,
    recall_threshold: float | None = None,
    groundedness_threshold: float | None = None,
) -> list[LogRecord]:
    """One ``gen_ai.evaluation.result`` record per result of ``scores`` (the cell last), each in
    the context of the span it evaluates; every timestamp ``at_ns`` (replays send identical
    records)."""
    trace_id = bytes.fromhex(scores.trace.trace_id)
    out: list[LogRecord] = []

    def add(span_id: str, attributes: dict[str, Any]) -> None:
        record = LogRecord(
            time_unix_nano=at_ns,
            observed_time_unix_nano=at_ns,
            severity_number=SeverityNumber.SEVERITY_NUMBER_INFO,
            severity_text="INFO",
            event_name=semconv.GEN_AI_EVALUATION_RESULT,
            trace_id=trace_id,
            span_id=bytes.fromhex(span_id),
            flags=_SAMPLED,
        )
        encode_attributes(attributes, record.attributes)
        out.append(record)

    for m in metric_spans(
        scores, recall_threshold=recall_threshold, groundedness_threshold=groundedness_threshold
    ):
        for _, attrs in m.events:
            add(m.parent_span_id, attrs)
    _, cell = cell_event(
        scores, recall_threshold=recall_threshold, groundedness_threshold=groundedness_threshold
    )
    add(scores.trace.root_span_id or scores.trace.target_span_id, cell)
    return out


def logs_export_request(
    records: Sequence[LogRecord], resource: Resource, scope: str = semconv.EVALUATION_SCOPE
) -> bytes:
    """The serialised ``ExportLogsServiceRequest`` carrying ``records`` under one resource and
    one instrumentation scope (name, version, schema URL)."""
    request = ExportLogsServiceRequest()
    rl = request.resource_logs.add()
    encode_attributes(resource.attributes, rl.resource.attributes)
    if resource.schema_url:
        rl.schema_url = resource.schema_url
    sl = rl.scope_logs.add()
    sl.scope.CopyFrom(InstrumentationScope(name=scope, version=__version__))
    sl.schema_url = semconv.SCHEMA_URL
    sl.log_records.extend(records)
    return request.SerializeToString()


class OtlpLogRequestExporter:
    """A :class:`LogMessageExporter` over OTLP/HTTP: ``exporter`` is an ``OTLPLogExporter`` whose
    transport sends the request; its own log encoding is never used."""

    def __init__(self, exporter: Any, resource: Resource) -> None:
        self._exporter = exporter
        self._resource = resource

    def export(self, records: Sequence[LogRecord]) -> bool:
        data = logs_export_request(records, self._resource)
        # The exporter's HTTP client: the one hook the SDK offers for pre-encoded requests.
        ok = bool(self._exporter._client.export(data).success)
        if not ok:
            _log.warning("%d evaluation log records not accepted", len(records))
        return ok

    def shutdown(self) -> None:
        self._exporter.shutdown()
