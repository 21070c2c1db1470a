"""Bounded scoring concurrency: N worker threads, at most N traces in flight, explicit
backpressure.

Judge calls take seconds; they run here, off the thread that reads spans, so judge latency
never stalls consumption until every worker is busy. Then :attr:`ScoringWorkers.full` is true
and the reader refuses more input (the Kafka runner pauses its partitions) until
:meth:`wait` reports a finished trace — no sleep loop. Traces are claimed only for free
workers, so a claimed trace never sits in a queue while its lease runs out.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Protocol

__all__ = ["ScoringWorkers", "TraceProcessor"]

_log = logging.getLogger(__name__)
_SLOW_S = 10.0


class TraceProcessor(Protocol):
    """What the workers drive (a :class:`~ragtrace.consumers.pipeline.Pipeline`): claims (a
    :class:`~ragtrace.consumers.model.Lease` each) handed back to ``process_trace``."""

    def claim_due(self, now: float | None = None, limit: int | None = None) -> Sequence[Any]: ...

    def process_trace(self, lease: Any) -> object: ...


class ScoringWorkers:
    """Runs ``processor.process_trace`` for claimed traces on ``size`` threads."""

    def __init__(self, processor: TraceProcessor, size: int) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self._processor = processor
        self._size = size
        self._pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="ragtrace-score")
        self._in_flight: set[Future[object]] = set()
        self._lock = threading.Lock()
        self.completed = 0
        self.failed = 0

    @property
    def size(self) -> int:
        return self._size

    @property
    def in_flight(self) -> int:
        self.reap()
        return len(self._in_flight)

    @property
    def full(self) -> bool:
        return self.in_flight >= self._size

    def fill(self, now: float | None = None) -> int:
        """Claim due traces for every free worker and start them; returns how many started."""
        free = self._size - self.in_flight
        if free <= 0:
            return 0
        leases = self._processor.claim_due(now, free)
        for lease in leases:
            future = self._pool.submit(self._timed, lease)
            with self._lock:
                self._in_flight.add(future)
        return len(leases)

    def _timed(self, lease: Any) -> object:
        started = time.monotonic()
        try:
            return self._processor.process_trace(lease)
        finally:
            took = time.monotonic() - started
            if took > _SLOW_S:
                _log.warning("trace %s took %.1f s to score", getattr(lease, "trace_id", lease),
                             took)

    def reap(self) -> int:
        """Forget finished traces (logging any failure); returns how many finished."""
        with self._lock:
            done = {f for f in self._in_flight if f.done()}
            self._in_flight -= done
        for future in done:
            exc = future.exception()
            if exc is not None:
                # A store outage, not a bad trace (those never raise): the lease runs out and
                # any replica retries the trace.
                self.failed += 1
                _log.error("scoring a trace failed; it will be retried after its lease",
                           exc_info=exc)
            else:
                self.completed += 1
        return len(done)

    def wait(self, timeout: float) -> int:
        """Block until a trace in flight finishes (or ``timeout``); returns how many finished."""
        with self._lock:
            pending = set(self._in_flight)
        if pending:
            wait(pending, timeout=timeout, return_when=FIRST_COMPLETED)
        return self.reap()

    def drain(self, timeout: float) -> bool:
        """Wait for every trace in flight; True when none is left."""
        with self._lock:
            pending = set(self._in_flight)
        if pending:
            wait(pending, timeout=timeout)
        self.reap()
        return not self._in_flight

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
