"""Bounded metric labels for values the applications choose: the generator model, the
retriever's data source and the recall cut-off a trace declares.

A label whose values come from traffic (any model ID an app sends, any ``gen_ai.data_source.id``)
could create series without bound. :class:`BoundedLabel` admits the first ``cap`` distinct values
it sees, per replica, and maps every later one to ``"other"``; a missing value is ``"unknown"``.
Values are also cut to 64 characters. The evaluation span keeps the exact value (spans are
per-trace records; only metric labels need the bound).
"""

from __future__ import annotations

import threading

__all__ = ["DEFAULT_CAP", "MAX_VALUE_CHARS", "OTHER", "UNKNOWN", "BoundedLabel"]

DEFAULT_CAP = 20
MAX_VALUE_CHARS = 64
OTHER = "other"
UNKNOWN = "unknown"


class BoundedLabel:
    """At most ``cap`` distinct label values (plus ``other`` and ``unknown``). Thread-safe."""

    def __init__(self, cap: int = DEFAULT_CAP) -> None:
        if cap < 1:
            raise ValueError(f"cap must be >= 1, got {cap}")
        self.cap = cap
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str | None) -> str:
        if value is None or not value.strip():
            return UNKNOWN
        value = value.strip()[:MAX_VALUE_CHARS]
        if value in self._seen:
            return value
        with self._lock:
            if value in self._seen:
                return value
            if len(self._seen) >= self.cap:
                return OTHER
            self._seen.add(value)
        return value

    @property
    def admitted(self) -> frozenset[str]:
        return frozenset(self._seen)
