"""Counter increments summed per batch: one ``add(n)`` per label set instead of one per trace.

Recording a point costs the OpenTelemetry SDK an attribute check and hash per call, about as
much as the rest of a trace's bookkeeping. :class:`BatchedCounter` wraps an SDK counter: inside
:func:`batch` (per thread) its increments are summed by label set and added once when the
block exits; outside it every ``add`` goes straight through. Totals are identical; only the
moment they reach the SDK moves to the end of the batch.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["BatchedCounter", "CounterBatch"]


class CounterBatch:
    """The per-thread buffer shared by a set of :class:`BatchedCounter` values."""

    def __init__(self) -> None:
        self._local = threading.local()

    def buffer(self) -> dict[tuple[Any, tuple[tuple[str, Any], ...]], float] | None:
        buf: dict[tuple[Any, tuple[tuple[str, Any], ...]], float] | None = getattr(
            self._local, "buf", None
        )
        return buf

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Sum increments made by this thread until the block exits (nests: the outermost
        block flushes)."""
        if self.buffer() is not None:
            yield
            return
        buf: dict[tuple[Any, tuple[tuple[str, Any], ...]], float] = {}
        self._local.buf = buf
        try:
            yield
        finally:
            self._local.buf = None
            for (counter, attrs), n in buf.items():
                counter.add(n, dict(attrs))


class BatchedCounter:
    """An SDK counter whose ``add`` is summed inside ``owner.batch()`` (module doc)."""

    __slots__ = ("_counter", "_owner")

    def __init__(self, counter: Any, owner: CounterBatch) -> None:
        self._counter = counter
        self._owner = owner

    def add(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None:
        buf = self._owner.buffer()
        if buf is None:
            self._counter.add(amount, attributes)
            return
        key = (self._counter, tuple(attributes.items()) if attributes else ())
        buf[key] = buf.get(key, 0) + amount
