"""Traces too large for the pipeline after the exporter: named in the app's log, counted, exported.

The collector's Kafka exporter drops a message over its ``max_message_bytes`` and logs no trace ID
(it never looks inside the payload), so the app is the one place that can name such a trace.
Every exported span's OTLP size is estimated from its strings (name, attribute keys and values,
events, links) plus a fixed overhead per field, and summed per trace over the most recent traces:
a trace's spans may leave in several exports that the collector's batch processor merges into one
Kafka message. The first time a trace's estimate crosses the limit
(:data:`ragtrace._config.ENV_MAX_TRACE_EXPORT_BYTES`) its ID is logged at WARNING and counted on
``ragtrace.sdk.oversized``. The spans are still exported: a backend other than Kafka may take them.

The estimate runs on the exporter's background thread, never on the request path; it is within
about 10 % of the encoded size for string-heavy spans (tested against the OTLP encoder).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

from opentelemetry.sdk.trace import ReadableSpan

from ragtrace import _config, _health

__all__ = ["OversizeGuard", "estimate_span_bytes"]

_log = logging.getLogger("ragtrace")

_SPAN_OVERHEAD = 64  # trace and span IDs, parent, times, kind, status and their field tags
_FIELD_OVERHEAD = 6  # an attribute's KeyValue and AnyValue tags and lengths
_REMEMBERED_TRACES = 4096


def _value_bytes(value: object) -> int:
    if isinstance(value, str):
        return len(value) if value.isascii() else len(value.encode("utf-8", "replace"))
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if isinstance(value, (list, tuple)):
        return sum(_value_bytes(item) + 2 for item in value) + 2
    return 9  # bool, int or float: a tag and at most 8 bytes


def _attributes_bytes(attributes: Mapping[str, object] | None) -> int:
    if not attributes:
        return 0
    return sum(len(k) + _value_bytes(v) + _FIELD_OVERHEAD for k, v in attributes.items())


def estimate_span_bytes(span: ReadableSpan) -> int:
    """Approximate OTLP protobuf size of ``span`` (its resource and scope are not counted)."""
    size = _SPAN_OVERHEAD + len(span.name) + _attributes_bytes(span.attributes)
    for event in span.events:
        size += 16 + len(event.name) + _attributes_bytes(event.attributes)
    for link in span.links:
        size += 40 + _attributes_bytes(link.attributes)
    return size


class OversizeGuard:
    """Names and counts each trace whose exported size crosses ``limit()`` bytes, once.

    Remembers the running size of the ``remember`` most recently exported traces; a trace
    forgotten and seen again starts from zero (a later part then has to cross the limit alone).
    Thread-safe: ``force_flush`` may export concurrently with the batch thread.
    """

    def __init__(
        self,
        limit: Callable[[], int] = lambda: _config.current().max_trace_export_bytes,
        *,
        remember: int = _REMEMBERED_TRACES,
    ) -> None:
        if remember < 1:
            raise ValueError(f"remember must be a positive integer, got {remember!r}")
        self._limit = limit
        self._remember = remember
        self._totals: OrderedDict[int, int] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, spans: Sequence[ReadableSpan]) -> list[int]:
        """Add ``spans`` to their traces' sizes; return the trace IDs that crossed the limit now."""
        added: dict[int, int] = {}
        for span in spans:
            context = span.context
            if context is not None:
                added[context.trace_id] = added.get(context.trace_id, 0) + estimate_span_bytes(span)
        limit = self._limit()
        crossed: list[tuple[int, int]] = []
        with self._lock:
            for trace_id, size in added.items():
                before = self._totals.pop(trace_id, 0)
                total = self._totals[trace_id] = before + size
                if before <= limit < total:
                    crossed.append((trace_id, total))
            while len(self._totals) > self._remember:
                self._totals.popitem(last=False)
        for trace_id, total in crossed:
            _log.warning(
                "ragtrace: trace %032x is about %d bytes, over the %d-byte limit of one collector "
                "Kafka message (%s); the collector will drop it, so it will not be scored",
                trace_id,
                total,
                limit,
                _config.ENV_MAX_TRACE_EXPORT_BYTES,
            )
            _health.oversized()
        return [trace_id for trace_id, _ in crossed]
