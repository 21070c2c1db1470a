"""Bounded, batched scoring: judge calls on N worker threads, store and write-back work in
batches, at most ``capacity`` traces in flight, explicit backpressure.

The three stages of :class:`~ragtrace_consumers.scoring.pipeline.Pipeline` run here:

* :meth:`ScoringWorkers.fill` (the caller's thread) claims as many due traces as there is room
  for and prepares them as one batch (a few store round trips for all of them);
* each trace that needs a judge call goes to one of ``size`` worker threads (judge calls take
  seconds: they run off the thread that reads spans, ``size`` at a time);
* one finisher thread takes every trace that is ready (judged, answered from the cache, or
  needing no judge) and finishes them as one batch: one write-back delivery, one round trip
  each to mark and release. While it delivers, the next batch gathers.

At most ``capacity`` (``size * depth``) traces are claimed and unfinished at once, so a claimed
trace is finished within ``depth`` rounds of judgements: the ``depth - 1`` rounds queued ahead of
it on the ``size`` threads, then its own. A judgement takes at most the judge's time budget
(``judge.budget_s``: every request, retry and back-off wait included; the judge then gives up and
the trace is parked), so the lease must outlast ``depth × (budget_s + JUDGEMENT_MARGIN_S)``, or
another replica claims the trace mid-judgement and pays the judge twice. :func:`check_lease`
refuses a configuration that does not (both ``consume`` and ``serve`` call it at start-up).
A judge without a time budget (:func:`judgement_bound_s` is None: it answers in process at once,
like the lexical judge) cannot keep a trace waiting past its lease, so its in-flight bound is
:data:`UNBUDGETED_CAPACITY` traces instead (memory, not the lease, is what it bounds): the
claims then fill whole ``assembly.claim_batch`` batches and the stages overlap instead of
waiting on each other's round trips; and such a judge is called on the thread that prepared the
batch (handing an instant call to another thread costs more than the call).
When ``capacity`` traces are in flight, :attr:`ScoringWorkers.full` is true and the reader refuses
more input (the Kafka runner pauses its partitions) until :meth:`wait` reports finished traces —
no sleep loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from ragtrace_consumers.errors import ConfigError
from ragtrace_consumers.model import Lease

__all__ = [
    "DEFAULT_DEPTH",
    "JUDGEMENT_MARGIN_S",
    "UNBUDGETED_CAPACITY",
    "ScoringWorkers",
    "TraceProcessor",
    "check_lease",
    "judgement_bound_s",
    "lease_needed_s",
]

_log = logging.getLogger(__name__)
_SLOW_S = 10.0
DEFAULT_DEPTH = 4
"""Traces in flight per worker thread (see the module doc): four rounds of the longest
judgement (the default 60 s budget, plus the margin) take 244 s, under the default 300 s lease."""
UNBUDGETED_CAPACITY = 512
"""Traces in flight with a judge that has no time budget (module doc): eight claim batches."""
JUDGEMENT_MARGIN_S = 1.0
"""Added to each judgement's budget: the time around the judge call that the budget does not
count (the hand-over between threads, parsing and checking the verdicts, the finishing batch's
store round trips)."""


def judgement_bound_s(judge: object) -> float | None:
    """The most one judgement by ``judge`` blocks a worker: its ``budget_s`` (the Anthropic
    judge); None for a judge without one (the lexical judge answers at once)."""
    budget = getattr(judge, "budget_s", None)
    return float(budget) if isinstance(budget, (int, float)) else None


def lease_needed_s(
    budget_s: float, depth: int = DEFAULT_DEPTH, margin_s: float = JUDGEMENT_MARGIN_S
) -> float:
    """The longest a claimed trace can wait to be finished (module doc)."""
    return depth * (budget_s + margin_s)


def check_lease(
    lease_s: float,
    budget_s: float | None,
    depth: int = DEFAULT_DEPTH,
    margin_s: float = JUDGEMENT_MARGIN_S,
) -> None:
    """Raise :class:`~ragtrace_consumers.errors.ConfigError` when ``lease_s`` could expire
    before a claimed trace is judged (module doc); nothing to check when ``budget_s`` is None."""
    if budget_s is None:
        return
    needed = lease_needed_s(budget_s, depth, margin_s)
    if lease_s <= needed:
        raise ConfigError(
            f"assembly.lease_s: {lease_s:g} s can expire while a claimed trace waits for the "
            f"judge: {depth} traces in flight per worker x (judge.budget_s {budget_s:g} s + "
            f"{margin_s:g} s margin) = {needed:g} s; raise assembly.lease_s above {needed:g} "
            "or lower judge.budget_s"
        )


class TraceProcessor(Protocol):
    """What the workers drive (a :class:`~ragtrace_consumers.scoring.pipeline.Pipeline`)."""

    def claim_due(self, now: float | None = None, limit: int | None = None) -> Sequence[Lease]: ...

    def prepare(self, leases: Sequence[Lease]) -> Sequence[Any]: ...

    def judge(self, work: Any) -> None: ...

    def finish(self, works: Sequence[Any]) -> Sequence[Any]: ...


class ScoringWorkers:
    """Drives ``processor`` (module doc) with ``size`` judge threads and one finisher."""

    def __init__(
        self,
        processor: TraceProcessor,
        size: int,
        *,
        depth: int = DEFAULT_DEPTH,
        budgeted: bool = True,
    ) -> None:
        """``budgeted=False``: the judge has no time budget (module doc): at most
        ``max(size * depth, UNBUDGETED_CAPACITY)`` traces in flight, each judged on the thread
        that prepared it."""
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self._processor = processor
        self._size = size
        self._budgeted = budgeted
        self._capacity = size * depth if budgeted else max(size * depth, UNBUDGETED_CAPACITY)
        self._pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="ragtrace-score")
        self._lock = threading.Lock()
        self._has_ready = threading.Condition(self._lock)
        self._has_finished = threading.Condition(self._lock)
        self._ready: list[Any] = []
        self._in_flight = 0
        self._unreaped = 0
        self._closed = False
        self.completed = 0
        self.failed = 0
        self._finisher = threading.Thread(
            target=self._finish_loop, daemon=True, name="ragtrace-finish"
        )
        self._finisher.start()

    @property
    def size(self) -> int:
        return self._size

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    @property
    def full(self) -> bool:
        return self.in_flight >= self._capacity

    def fill(self, now: float | None = None) -> int:
        """Claim and prepare due traces for the free room, start their judge calls; returns
        how many were claimed."""
        free = self._capacity - self.in_flight
        if free <= 0 or self._closed:
            return 0
        leases = self._processor.claim_due(now, free)
        if not leases:
            return 0
        with self._lock:
            self._in_flight += len(leases)
        try:
            works = self._processor.prepare(leases)
        except Exception:  # noqa: BLE001 - a store outage: the leases run out, any replica retries
            _log.error(
                "preparing %d claimed traces failed; they will be retried after their lease",
                len(leases),
                exc_info=True,
            )
            self._done(len(leases), len(leases))
            return len(leases)
        ready = []
        for work in works:
            if not getattr(work, "needs_judge_call", False):
                ready.append(work)
            elif self._budgeted:
                self._pool.submit(self._judge, work)
            else:  # answers at once, in process: a thread hop would cost more than the call
                self._judge(work, enqueue=False)
                ready.append(work)
        self._enqueue(ready)
        return len(leases)

    def _judge(self, work: Any, *, enqueue: bool = True) -> None:
        started = time.monotonic()
        try:
            self._processor.judge(work)
        except Exception:  # noqa: BLE001 - judge() guards its own failures; never lose a trace
            _log.error("judging trace %s failed", getattr(work, "trace_id", work), exc_info=True)
        finally:
            took = time.monotonic() - started
            if took > _SLOW_S:
                _log.warning("trace %s took %.1f s to judge", getattr(work, "trace_id", work), took)
            if enqueue:
                self._enqueue([work])

    def _enqueue(self, works: Sequence[Any]) -> None:
        if works:
            with self._lock:
                self._ready.extend(works)
                self._has_ready.notify()

    def _finish_loop(self) -> None:
        while True:
            with self._lock:
                while not self._ready and not self._closed:
                    self._has_ready.wait()
                if not self._ready:
                    return
                batch, self._ready = self._ready, []
            try:
                failed = sum(1 for outcome in self._processor.finish(batch) if outcome is None)
            except Exception:  # noqa: BLE001 - a store or sink outage: leases run out, retried
                # Not a bad trace (those never raise): the leases run out and any replica
                # retries these traces.
                _log.error(
                    "finishing %d traces failed; they will be retried after their lease",
                    len(batch),
                    exc_info=True,
                )
                failed = len(batch)
            self._done(len(batch), failed)

    def _done(self, n: int, failed: int) -> None:
        with self._lock:
            self._in_flight -= n
            self._unreaped += n
            self.completed += n - failed
            self.failed += failed
            self._has_finished.notify_all()

    def reap(self) -> int:
        """How many traces finished since the last call."""
        with self._lock:
            n, self._unreaped = self._unreaped, 0
            return n

    def wait(self, timeout: float) -> int:
        """Block until a trace in flight finishes (or ``timeout``); returns how many finished
        since the last :meth:`reap`."""
        with self._lock:
            if self._in_flight and not self._unreaped:
                self._has_finished.wait(timeout)
        return self.reap()

    def wake(self) -> None:
        """Make a :meth:`wait` in progress return now (new work arrived)."""
        with self._lock:
            self._has_finished.notify_all()

    def drain(self, timeout: float) -> bool:
        """Wait for every trace in flight; True when none is left."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._has_finished.wait(left)
            drained = not self._in_flight
        self.reap()
        return drained

    def shutdown(self) -> None:
        """Stop: judge calls not started are dropped (their leases run out); the finisher
        finishes what is ready, then exits."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            self._closed = True
            self._has_ready.notify_all()
