"""The thin runner composing the steps of ``ragtrace consume``'s Kafka side (package doc).

One iteration (:meth:`KafkaRunner.step`): backpressure (pause while the scoring workers are
full, block on them rather than on a timer), claim due traces, poll and decode, ingest, then a
tick of every step (:class:`~ragtrace_consumers.runtime.kafka.step.Step`: commit when due,
measure lag, watch the membership), a status line every 30 s.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from ragtrace_consumers.intake.kafka_poll import KafkaIntake
from ragtrace_consumers.model import Admission
from ragtrace_consumers.runtime.kafka.calls import kafka_call
from ragtrace_consumers.runtime.kafka.dead_letters import DeadLetters
from ragtrace_consumers.runtime.kafka.ingest import Ingest, Offsets
from ragtrace_consumers.runtime.kafka.lag_probe import LagProbe
from ragtrace_consumers.runtime.kafka.membership import Membership
from ragtrace_consumers.runtime.kafka.step import Step
from ragtrace_consumers.runtime.retry import Dependencies, Retrier
from ragtrace_consumers.scoring.pipeline import Pipeline
from ragtrace_consumers.scoring.workers import ScoringWorkers
from ragtrace_consumers.telemetry.lag import LagTracker
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics

__all__ = ["KafkaRunner"]

_log = logging.getLogger(__name__)

_POLL_MS = 200
_BUSY_POLL_MS = 20
_CLAIM_EVERY_S = 0.1
_STATUS_EVERY_S = 30.0


class KafkaRunner:
    """One replica's main loop. ``consumer`` is a ``KafkaConsumer`` (auto-commit off),
    ``producer`` a ``KafkaProducer`` for the dead-letter topic. Call :meth:`subscribe`, then
    :meth:`run` with an event; setting it (SIGTERM) drains in-flight scoring, commits and
    returns."""

    def __init__(
        self,
        consumer: Any,
        producer: Any,
        pipeline: Pipeline,
        workers: ScoringWorkers,
        metrics: ConsumerMetrics,
        *,
        dlq_topic: str,
        commit_interval_s: float = 1.0,
        drain_timeout_s: float = 60.0,
        max_poll_records: int = 500,
        stall_timeout_s: float = 30.0,
        clock: Callable[[], float] = time.time,
        kafka_retry: Retrier | None = None,
        dependencies: Dependencies | None = None,
        admission: Admission | None = None,
    ) -> None:
        call = kafka_call(kafka_retry)
        self._consumer: Any = consumer
        self._workers = workers
        self._metrics = metrics
        self._drain_timeout_s = drain_timeout_s
        self._clock = clock
        self._admission = admission  # sampling at decode (intake.admission): dropped never stored
        self.dead_letters = DeadLetters(producer, dlq_topic, metrics, call, dependencies)
        self.intake = KafkaIntake(
            consumer,
            self.dead_letters,
            call,
            max_poll_records=max_poll_records,
            admission=admission,
        )
        self.offsets = Offsets(
            consumer,
            self.dead_letters,
            interval_s=commit_interval_s,
            clock=clock,
            dependencies=dependencies,
        )
        self.ingest = Ingest(consumer, pipeline, self.offsets, clock)
        self.lag = LagProbe(consumer, metrics, clock, lambda: self.offsets.committed)
        self.membership = Membership(
            consumer, self.offsets, self.lag, call, stall_timeout_s=stall_timeout_s
        )
        # In data order; ticked in this order, joined in reverse (step.py).
        self.steps: tuple[Step, ...] = (
            self.dead_letters,
            self.ingest,
            self.offsets,
            self.lag,
            self.membership,
        )
        self._last_claim = 0.0
        self._backlog = False
        self._last_status = 0.0
        self._done_seen = 0

    # --- counters ------------------------------------------------------------------------
    @property
    def messages(self) -> int:
        return self.intake.messages

    @property
    def spans(self) -> int:
        return self.ingest.spans

    @property
    def dead_lettered(self) -> int:
        return self.dead_letters.sent

    @property
    def forced_rejoins(self) -> int:
        return self.membership.forced_rejoins

    # The runner's state as its tests read it (the steps own it).
    @property
    def _lag(self) -> int | None:
        return self.lag.total

    @property
    def _lag_tracker(self) -> LagTracker:
        return self.lag.tracker

    @property
    def _last_commit(self) -> float:
        return self.offsets.last_commit

    @_last_commit.setter
    def _last_commit(self, value: float) -> None:
        self.offsets.last_commit = value

    # --- group membership and offsets ------------------------------------------------------
    def subscribe(self, topic: str) -> set[int]:
        """See :meth:`Membership.subscribe`."""
        return self.membership.subscribe(topic)

    def on_partitions_revoked(self, revoked: Iterable[Any], *, blocking: bool = True) -> None:
        self.membership.on_partitions_revoked(revoked, blocking=blocking)

    def on_partitions_assigned(self, assigned: Iterable[Any]) -> None:
        self.membership.on_partitions_assigned(assigned)

    def commit(self, only: Iterable[Any] | None = None, *, blocking: bool = True) -> None:
        """See :meth:`Offsets.commit`."""
        self.offsets.commit(only, blocking=blocking)

    # --- main loop -----------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        _log.info("consuming; %d scoring workers", self._workers.size)
        try:
            while not stop.is_set():
                self.step()
        finally:
            self.close()

    def step(self) -> None:
        """One iteration: backpressure, schedule scoring, poll, ingest, tick every step."""
        workers, membership = self._workers, self.membership
        if workers.full:
            membership.pause()
            workers.wait(_POLL_MS / 1000)  # woken by a finished trace
        if membership.paused and not workers.full:
            membership.resume()
        self._fill(self._backlog)
        # Short polls while traces are being scored, so a freed worker gets its next trace soon;
        # none while due traces are waiting (the last claim found some: there may be more), so
        # a backlog is scored back to back instead of one claim per poll timeout.
        busy = workers.in_flight > 0
        decoded = self.intake.poll(
            0 if membership.paused or self._backlog else (_BUSY_POLL_MS if busy else _POLL_MS)
        )
        if decoded is not None:
            self.ingest.submit(decoded)
            self._fill(True)  # traces whose root just arrived are due at once
        now = self._clock()
        for step in self.steps:
            step.tick(now)
        if now - self._last_status >= _STATUS_EVERY_S:
            self._last_status = now
            self._status()

    def _fill(self, force: bool) -> None:
        """Claim due traces for free workers: after a change or while the last claim found
        some (``_backlog``), else at most every 100 ms."""
        now = self._clock()
        if self._workers.full:
            return
        done = self._workers.completed + self._workers.failed
        if force or done != self._done_seen or now - self._last_claim >= _CLAIM_EVERY_S:
            self._last_claim, self._done_seen = now, done
            try:  # store calls retry an outage themselves (retry.py); this is the last guard
                self._backlog = self._workers.fill(now) > 0
            except Exception:  # noqa: BLE001 - claiming failed: the traces stay due, try later
                self._backlog = False
                _log.warning("claiming due traces failed; retrying", exc_info=True)

    def _status(self) -> None:
        _log.info(
            "status: %d messages, %d spans, %d dead-lettered; %d of %d workers busy%s;"
            " %d traces scored, %d failed; lag %s; %d forced re-joins",
            self.messages,
            self.spans,
            self.dead_lettered,
            self._workers.in_flight,
            self._workers.size,
            " (paused)" if self.membership.paused else "",
            self._workers.completed,
            self._workers.failed,
            "unknown" if self.lag.total is None else self.lag.total,
            self.forced_rejoins,
        )

    # --- shutdown ------------------------------------------------------------------------
    def close(self) -> None:
        """Drain scoring, commit, leave the group. Safe to call twice."""
        if self._consumer is None:
            return
        drained = self._workers.drain(self._drain_timeout_s)
        if not drained:
            _log.warning(
                "shutting down with traces still being scored; their leases will "
                "hand them to another replica"
            )
        for step in reversed(self.steps):
            step.join()
        if self._admission is not None:
            self._admission.flush()
        self._consumer.close(autocommit=False)
        self._workers.shutdown()
        self._consumer = None
        _log.info(
            "stopped: %d messages, %d spans, %d dead-lettered",
            self.messages,
            self.spans,
            self.dead_lettered,
        )
