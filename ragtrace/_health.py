"""Failures inside ragtrace: logged once per kind, counted, never raised into the host.

Every failure is counted in-process (:func:`error_counts`) and on the OTel counter
``ragtrace.sdk.errors`` (attribute ``reason``); spans lost before export are counted on
``ragtrace.sdk.dropped``; traces too large for the collector's Kafka messages on
``ragtrace.sdk.oversized``. The counters come from the global meter provider, resolved lazily, so an
app without metrics set up pays nothing but a no-op call.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Any

from ragtrace import semconv
from ragtrace._version import __version__

__all__ = [
    "dropped",
    "dropped_counts",
    "error_counts",
    "oversized",
    "oversized_count",
    "report",
    "reset",
]

_log = logging.getLogger("ragtrace")
_lock = threading.Lock()
_errors: Counter[str] = Counter()
_dropped: Counter[str] = Counter()
_logged: set[tuple[str, str]] = set()
_oversized = 0
_instruments: dict[str, Any] = {}


def _counter(name: str, description: str) -> Any:
    instrument = _instruments.get(name)
    if instrument is None:
        from opentelemetry import metrics

        meter = metrics.get_meter(semconv.INSTRUMENTATION_SCOPE, __version__)
        instrument = _instruments[name] = meter.create_counter(
            name, unit="1", description=description
        )
    return instrument


def report(reason: str, exc: BaseException | None = None) -> None:
    """Count a failure of kind ``reason`` and log it the first time that kind and type occur."""
    try:
        kind = type(exc).__name__ if exc is not None else ""
        with _lock:
            _errors[reason] += 1
            first = (reason, kind) not in _logged
            if first:
                _logged.add((reason, kind))
        if first:
            _log.warning(
                "ragtrace: %s failed%s; the call went on untraced in that part (logged once)",
                reason,
                f" ({kind}: {exc})" if exc is not None else "",
                exc_info=exc is not None and _log.isEnabledFor(logging.DEBUG),
            )
        _counter(semconv.METRIC_SDK_ERRORS, "Failures inside the ragtrace SDK").add(
            1, {semconv.ATTR_REASON: reason}
        )
    except Exception:  # noqa: BLE001 - counting must never fail the host either
        pass


def dropped(reason: str, count: int = 1) -> None:
    """Count ``count`` spans lost before export (queue full, exporter failure)."""
    try:
        with _lock:
            _dropped[reason] += count
        _counter(semconv.METRIC_SDK_DROPPED, "Spans the ragtrace SDK dropped before export").add(
            count, {semconv.ATTR_REASON: reason}
        )
    except Exception:  # noqa: BLE001
        pass


def oversized() -> None:
    """Count one trace found larger than the collector's Kafka message limit."""
    global _oversized
    try:
        with _lock:
            _oversized += 1
        _counter(
            semconv.METRIC_SDK_OVERSIZED,
            "Traces larger than one collector Kafka message (estimated); logged with their IDs",
        ).add(1)
    except Exception:  # noqa: BLE001
        pass


def oversized_count() -> int:
    """Traces counted as oversized so far in this process."""
    with _lock:
        return _oversized


def error_counts() -> dict[str, int]:
    """Failures counted so far in this process, by reason."""
    with _lock:
        return dict(_errors)


def dropped_counts() -> dict[str, int]:
    """Spans dropped so far in this process, by reason."""
    with _lock:
        return dict(_dropped)


def reset() -> None:
    """Clear the in-process counts and the logged-once memory (tests use this)."""
    global _oversized
    with _lock:
        _errors.clear()
        _dropped.clear()
        _logged.clear()
        _oversized = 0
