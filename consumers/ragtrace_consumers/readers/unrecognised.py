"""Nothing dropped silently: spans no reader recognises are counted and logged.

:class:`UnrecognisedSpans` counts each span that no reader took (and that is not our own
evaluation span) on ``ragtrace.spans.unrecognised`` (Prometheus:
``ragtrace_spans_unrecognised_total``) by instrumentation ``scope``, and logs one warning per
scope — the first time it is seen — with the attribute keys that span carried, so a user can
see which dialect is missing or write a ``mapping`` section for it. At most ``max_scopes``
distinct scopes are labelled; the rest are counted as ``other`` (a metric label must stay
bounded).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence

from opentelemetry import metrics

from ragtrace import __version__, semconv
from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.readers._reading import SpanReading
from ragtrace_consumers.readers.registry import SpanReaders, default_readers, is_evaluation_span

__all__ = ["METRIC_SPANS_UNRECOGNISED", "UnrecognisedSpans"]

METRIC_SPANS_UNRECOGNISED = semconv.METRIC_SPANS_UNRECOGNISED
ATTR_SCOPE = "scope"
_log = logging.getLogger(__name__)


class UnrecognisedSpans:
    """Counts and logs (once per scope) the spans no reader recognises."""

    def __init__(
        self,
        meter_provider: metrics.MeterProvider | None = None,
        *,
        readers: SpanReaders | None = None,
        max_scopes: int = 200,
    ) -> None:
        meter = (meter_provider or metrics.get_meter_provider()).get_meter(
            semconv.EVALUATION_SCOPE, __version__, schema_url=semconv.SCHEMA_URL
        )
        self._counter = meter.create_counter(
            METRIC_SPANS_UNRECOGNISED,
            unit="{span}",
            description="Spans no reader recognised (no known RAG dialect), by scope",
        )
        self._readers = readers
        self._max_scopes = max_scopes
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def observe(self, spans: Iterable[SpanRecord]) -> int:
        """Count (and log, once per scope) the unrecognised spans among ``spans``; returns
        how many there were. Never raises."""
        readers = self._readers or default_readers()
        listed = list(spans)
        try:
            readings = [readers.read(s) for s in listed]
        except Exception:  # noqa: BLE001 - counting must never fail ingestion
            _log.exception("counting unrecognised spans failed")
            return 0
        return self.count(listed, readings)

    def count(self, spans: Sequence[SpanRecord], readings: Sequence[SpanReading | None]) -> int:
        """:meth:`observe` for spans already read (``readings[i]`` is ``spans[i]``'s)."""
        counts: dict[str, int] = {}
        try:
            for span, reading in zip(spans, readings, strict=True):
                if reading is not None or is_evaluation_span(span):
                    continue
                scope = span.scope or "unknown"
                with self._lock:
                    first = scope not in self._seen
                    if first and len(self._seen) < self._max_scopes:
                        self._seen.add(scope)
                    label = scope if scope in self._seen else "other"
                if first and label != "other":
                    _log.warning(
                        "spans of instrumentation scope %r match no RAG dialect ragtrace reads "
                        "(span %r, attribute keys: %s); they are not scored. If they are RAG "
                        "steps, configure the 'mapping' section",
                        scope,
                        span.name,
                        ", ".join(sorted(span.attributes)) or "none",
                    )
                counts[label] = counts.get(label, 0) + 1
            for label, n in counts.items():
                self._counter.add(n, {ATTR_SCOPE: label})
        except Exception:  # noqa: BLE001 - counting must never fail ingestion
            _log.exception("counting unrecognised spans failed")
        return sum(counts.values())
