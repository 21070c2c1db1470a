"""The batch half of the :class:`~ragtrace_consumers.model.TraceStore` seam for a store where a
batch saves nothing (in memory): each trace loaded or released in turn. A store whose round
trips cost (Redis) writes its own; so does the SQLite store, which ``serve`` calls on every
batch, so its batches do not call back into it from here (one lock for a batch's loads)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ragtrace_consumers.model import SpanRecord

__all__ = ["PerTraceBatches"]


class _PerTrace(Protocol):
    def load(self, trace_id: str) -> list[SpanRecord]: ...

    def release(self, trace_id: str, token: str | None = None) -> bool: ...


class PerTraceBatches:
    """Mixin: ``load_many`` and ``release_many`` through the store's own ``load`` and
    ``release``, one trace at a time, in the order given."""

    def load_many(self: _PerTrace, trace_ids: Sequence[str]) -> list[list[SpanRecord]]:
        return [self.load(t) for t in trace_ids]

    def release_many(self: _PerTrace, leases: Sequence[tuple[str, str | None]]) -> list[bool]:
        return [self.release(t, token) for t, token in leases]
