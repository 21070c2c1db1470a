"""The Kafka side of ``ragtrace consume``: poll → decode (or dead-letter) → ingest → commit,
while :class:`~ragtrace_consumers.workers.ScoringWorkers` score due traces concurrently.

Offsets: a message's offset becomes committable once its spans are durable in the TraceStore
(``Pipeline.ingest`` returned) or it was dead-lettered; committable offsets are committed every
``commit_interval_s`` (after flushing the dead-letter producer), on partition revocation and on
shutdown — never by auto-commit. Scoring needs no offsets: it works from the TraceStore, whose
leases hand a dead replica's traces to another one.

Backpressure: while every worker is busy the runner pauses its partitions and blocks on the
workers (not on a timer) until one finishes; ``poll`` keeps the group membership alive.

Group membership: :meth:`KafkaRunner.subscribe` loads the topic's partition metadata right after
subscribing, before the first join, so the first assignment already covers every partition. A
kafka-python 3.0 leader that re-joins because the topic metadata changed can otherwise stall for
good: the join's own assignment step clears the "metadata changed" trigger while the join is still
in flight, so once a ``poll`` returns before the join finished, no later ``poll`` completes it
(the assignment is never applied and heartbeats stay off). As a safety net the runner watches its
membership: when it has been unsettled (joining, rebalancing) for ``stall_timeout_s`` while the
topic has partitions, it leaves the group and subscribes again (counted in ``forced_rejoins`` and
logged).

Outages (:mod:`ragtrace_consumers.retry`): store calls wait out a Redis outage inside the stores
(ingest holds its batch, nothing is re-read or dead-lettered twice), dead-letter sends are
retried, a failed commit is retried at the next interval, and offsets are committed only once
the dead letters before them are acknowledged; the loop never exits for an outage.

A replica is stateless apart from its partitions: scale out with more replicas (same group) and
more partitions.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ragtrace_consumers.decode import (
    DLQ_HEADER_DETAIL,
    DLQ_HEADER_REASON,
    Admission,
    DecodeError,
    decode_request,
)
from ragtrace_consumers.lag import LagTracker
from ragtrace_consumers.metrics import ConsumerMetrics
from ragtrace_consumers.model import SpanRecord
from ragtrace_consumers.pipeline import Pipeline
from ragtrace_consumers.retry import Dependencies, Retrier
from ragtrace_consumers.workers import ScoringWorkers

__all__ = [
    "DLQ_HEADER_OFFSET",
    "DLQ_HEADER_PARTITION",
    "DLQ_HEADER_TOPIC",
    "UNEXPECTED_DECODE_ERROR",
    "KafkaRunner",
]

_log = logging.getLogger(__name__)

DLQ_HEADER_TOPIC = "ragtrace.dlq.topic"
DLQ_HEADER_PARTITION = "ragtrace.dlq.partition"
DLQ_HEADER_OFFSET = "ragtrace.dlq.offset"
UNEXPECTED_DECODE_ERROR = "unexpected_error"
_POLL_MS = 200
_BUSY_POLL_MS = 20
_CLAIM_EVERY_S = 0.1
_LAG_EVERY_S = 1.0
_STATUS_EVERY_S = 30.0
_RETRY_INGEST_S = 1.0
_WATCH_EVERY_S = 1.0
_STALL_BACKOFF_MAX = 8  # forced re-joins back off up to 8 x stall_timeout_s


class KafkaRunner:
    """One replica's main loop. ``consumer`` is a subscribed ``KafkaConsumer`` (auto-commit
    off), ``producer`` a ``KafkaProducer`` for the dead-letter topic. Call :meth:`run` with an
    event; setting it (SIGTERM) drains in-flight scoring, commits and returns."""

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
        if not stall_timeout_s > 0:
            raise ValueError(f"stall_timeout_s must be > 0, got {stall_timeout_s!r}")
        self._consumer = consumer
        self._producer = producer
        self._pipeline = pipeline
        self._workers = workers
        self._metrics = metrics
        self._dlq_topic = dlq_topic
        self._commit_interval_s = commit_interval_s
        self._drain_timeout_s = drain_timeout_s
        self._max_poll_records = max_poll_records
        self._clock = clock
        self._admission = admission  # sampling at decode (early_sample): dropped never stored
        self._committable: dict[Any, int] = {}
        self._committed: dict[Any, int] = {}
        self._dlq_unflushed = 0
        self._paused = False
        self._last_commit = 0.0
        self._last_claim = 0.0
        self._last_lag = 0.0
        self._last_status = 0.0
        self._done_seen = 0
        self._lag: int | None = None
        self._topic: str | None = None
        self._stall_timeout_s = stall_timeout_s
        self._stall_wait_s = stall_timeout_s
        self._unsettled_since: float | None = None
        self._last_watch = 0.0
        self.forced_rejoins = 0
        self.messages = 0
        self.spans = 0
        self.dead_lettered = 0
        # Outages (retry.py): DLQ sends are retried, a failed commit marks Kafka down until one
        # succeeds; dead letters not acknowledged by the broker are re-sent before any commit.
        self._kafka_retry = kafka_retry
        self._dependencies = dependencies
        self._dlq_sent: list[tuple[Any, dict[str, Any]]] = []
        self._lag_tracker = LagTracker(clock=clock)
        metrics.set_lag_source(lambda: self._lag_tracker.last)

    # --- group membership ------------------------------------------------------------------
    def subscribe(self, topic: str) -> set[int]:
        """Subscribe to ``topic`` (this runner as the rebalance listener), then fetch the
        cluster metadata so the topic's partitions are known before the first join; returns
        them (empty, with a warning, when the topic does not exist yet)."""
        self._topic = topic
        self._consumer.subscribe([topic], listener=_listener(self))
        # A blocking metadata fetch issued after subscribe: its response reaches the group
        # coordinator's metadata listener while the topic is subscribed, so the first assignment
        # is made with every partition and no metadata-triggered re-join follows (see module doc).
        self._consumer.topics()
        partitions = set(self._consumer.partitions_for_topic(topic) or ())
        if partitions:
            _log.info("topic %s: %d partitions", topic, len(partitions))
        else:
            _log.warning("topic %s has no partitions yet (does it exist?); waiting for it", topic)
        return partitions

    def _group_settled(self) -> bool | None:
        """True when the consumer is a stable group member, None when it cannot tell."""
        group_metadata = getattr(self._consumer, "group_metadata", None)
        if group_metadata is None:
            return None
        from kafka.structs import MemberState

        return bool(group_metadata().state == MemberState.STABLE)

    def _watch_group(self, now: float) -> None:
        """Leave and re-join when the membership stays unsettled too long (module doc)."""
        settled = self._group_settled()
        if settled is None or settled or self._topic is None:
            self._unsettled_since = None
            if settled:
                self._stall_wait_s = self._stall_timeout_s
            return
        if self._unsettled_since is None:
            self._unsettled_since = now
            return
        waited = now - self._unsettled_since
        if waited < self._stall_wait_s:
            return
        if not self._consumer.partitions_for_topic(self._topic):
            self._unsettled_since = now  # nothing to be assigned: not a stall
            return
        self.forced_rejoins += 1
        _log.warning(
            "group membership unsettled for %.0f s with %d partitions assigned; leaving "
            "the group and joining again (forced re-join %d)",
            waited,
            len(self._consumer.assignment()),
            self.forced_rejoins,
        )
        self.on_partitions_revoked(self._consumer.assignment(), blocking=False)
        self._consumer.unsubscribe()
        self._kafka(self.subscribe, self._topic)  # a broker outage is waited out, not fatal
        self._unsettled_since = now
        self._stall_wait_s = min(self._stall_wait_s * 2, self._stall_timeout_s * _STALL_BACKOFF_MAX)

    # --- rebalance listener (kafka-python calls these on its IO thread) --------------------
    def on_partitions_revoked(self, revoked: Iterable[Any], *, blocking: bool = True) -> None:
        """Commit what is committable on ``revoked`` and forget them. ``blocking=False`` (from
        kafka-python's IO thread, where a blocking commit cannot run) sends the commit without
        waiting; if it is lost, the next owner re-reads those messages (ingest is idempotent)."""
        revoked = list(revoked)
        _log.info(
            "revoked partitions: %s",
            ", ".join(f"{tp.topic}[{tp.partition}]" for tp in revoked) or "none",
        )
        self.commit(only=revoked, blocking=blocking)
        self._lag_tracker.forget(revoked)
        for tp in revoked:
            self._committable.pop(tp, None)
            self._committed.pop(tp, None)

    def on_partitions_assigned(self, assigned: Iterable[Any]) -> None:
        assigned = list(assigned)
        _log.info(
            "assigned partitions: %s",
            ", ".join(f"{tp.topic}[{tp.partition}]" for tp in assigned) or "none",
        )
        if self._paused:
            self._consumer.pause(*assigned)

    # --- main loop -----------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        _log.info("consuming; %d scoring workers", self._workers.size)
        try:
            while not stop.is_set():
                self.step()
        finally:
            self.close()

    def step(self) -> None:
        """One iteration: backpressure, schedule scoring, poll, ingest, commit, lag."""
        if self._workers.full:
            self._pause()
            self._workers.wait(_POLL_MS / 1000)  # woken by a finished trace
        if self._paused and not self._workers.full:
            self._resume()
        self._fill(False)
        # Short polls while traces are being scored, so a freed worker gets its next trace soon.
        busy = self._workers.in_flight > 0
        records = self._kafka(
            self._consumer.poll,
            timeout_ms=0 if self._paused else (_BUSY_POLL_MS if busy else _POLL_MS),
            max_records=self._max_poll_records,
        )
        if records:
            self._handle(records)
            self._fill(True)  # traces whose root just arrived are due at once
        now = self._clock()
        if now - self._last_commit >= self._commit_interval_s:
            self.commit()
        if now - self._last_lag >= _LAG_EVERY_S:
            self._last_lag = now
            self._lag = self._measure_lag()
        if now - self._last_watch >= _WATCH_EVERY_S:
            self._last_watch = now
            self._watch_group(now)
        if now - self._last_status >= _STATUS_EVERY_S:
            self._last_status = now
            _log.info(
                "status: %d messages, %d spans, %d dead-lettered; %d of %d workers busy%s;"
                " %d traces scored, %d failed; lag %s; %d forced re-joins",
                self.messages,
                self.spans,
                self.dead_lettered,
                self._workers.in_flight,
                self._workers.size,
                " (paused)" if self._paused else "",
                self._workers.completed,
                self._workers.failed,
                "unknown" if self._lag is None else self._lag,
                self.forced_rejoins,
            )

    def _fill(self, force: bool) -> None:
        """Claim due traces for free workers: after a change, else at most every 100 ms."""
        now = self._clock()
        if self._workers.full:
            return
        done = self._workers.completed + self._workers.failed
        if force or done != self._done_seen or now - self._last_claim >= _CLAIM_EVERY_S:
            self._last_claim, self._done_seen = now, done
            try:  # store calls retry an outage themselves (retry.py); this is the last guard
                self._workers.fill(now)
            except Exception:  # noqa: BLE001 - claiming failed: the traces stay due, try later
                _log.warning("claiming due traces failed; retrying", exc_info=True)

    def _handle(self, records: Mapping[Any, list[Any]]) -> None:
        batch: list[SpanRecord] = []
        first: dict[Any, int] = {}
        last: dict[Any, int] = {}
        for tp, messages in records.items():
            for msg in messages:
                first.setdefault(tp, msg.offset)
                last[tp] = msg.offset
                self.messages += 1
                try:
                    batch.extend(decode_request(msg.value or b"", self._admission))
                except DecodeError as exc:
                    self._dead_letter(msg, exc.reason, exc.detail)
                except Exception as exc:  # noqa: BLE001 - one bad message never kills the loop
                    self._dead_letter(msg, UNEXPECTED_DECODE_ERROR, repr(exc))
        try:
            self._pipeline.ingest(batch, self._clock())
        except Exception:  # noqa: BLE001 - a store outage must not kill the loop
            # Not durable: re-read these messages (nothing of them is committed).
            _log.exception("storing %d spans failed; re-reading from the first message", len(batch))
            for tp, offset in first.items():
                self._consumer.seek(tp, offset)
            time.sleep(_RETRY_INGEST_S)
            return
        self.spans += len(batch)
        for tp, offset in last.items():
            self._committable[tp] = offset + 1

    def _dead_letter(self, msg: Any, reason: str, detail: str) -> None:
        headers = [
            (DLQ_HEADER_REASON, reason.encode()),
            (DLQ_HEADER_DETAIL, detail[:1000].encode("utf-8", "replace")),
            (DLQ_HEADER_TOPIC, str(msg.topic).encode()),
            (DLQ_HEADER_PARTITION, str(msg.partition).encode()),
            (DLQ_HEADER_OFFSET, str(msg.offset).encode()),
        ]
        self._send_dead_letter({"value": msg.value, "key": msg.key, "headers": headers})
        self.dead_lettered += 1
        self._metrics.dead_lettered(reason)
        _log.warning(
            "dead-lettered %s[%d]@%d: %s: %s",
            msg.topic,
            msg.partition,
            msg.offset,
            reason,
            detail[:200],
        )

    def _kafka(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A Kafka call, through the retrier when there is one (retry.py)."""
        if self._kafka_retry is None:
            return fn(*args, **kwargs)
        return self._kafka_retry.call(fn, *args, **kwargs)

    def _send_dead_letter(self, message: dict[str, Any]) -> None:
        future = self._kafka(self._producer.send, self._dlq_topic, **message)
        self._dlq_sent.append((future, message))
        self._dlq_unflushed += 1

    def _flush_dead_letters(self) -> bool:
        """Flush the dead-letter producer; re-send what the broker did not take. True once
        every dead letter sent so far is acknowledged (only then may offsets be committed)."""
        if not self._dlq_unflushed:
            return True
        self._producer.flush()
        failed = [m for f, m in self._dlq_sent if getattr(f, "failed", lambda: False)()]
        self._dlq_sent = []
        self._dlq_unflushed = 0
        if not failed:
            return True
        _log.warning(
            "%d dead letters were not delivered; sending them again before committing", len(failed)
        )
        if self._dependencies is not None:
            self._dependencies.failed("kafka", RuntimeError("dead-letter delivery failed"))
        for message in failed:
            self._send_dead_letter(message)
        return False

    # --- offsets -------------------------------------------------------------------------
    def commit(self, only: Iterable[Any] | None = None, *, blocking: bool = True) -> None:
        """Commit every committable offset not yet committed (dead letters flushed first);
        ``blocking=False`` sends the commit without waiting for the broker."""
        self._last_commit = self._clock()
        wanted = set(only) if only is not None else None
        offsets = {
            tp: off
            for tp, off in self._committable.items()
            if self._committed.get(tp) != off and (wanted is None or tp in wanted)
        }
        if not offsets:
            return
        if not self._flush_dead_letters():
            return  # committed at the next interval, once they are delivered
        from kafka.structs import OffsetAndMetadata

        commit = self._consumer.commit if blocking else self._consumer.commit_async
        try:
            commit({tp: OffsetAndMetadata(off, "", -1) for tp, off in offsets.items()})
        except Exception as exc:  # noqa: BLE001 - e.g. a rebalance: the next owner re-reads
            _log.warning(
                "offset commit failed; retried at the next interval, and uncommitted "
                "messages are re-read after a restart",
                exc_info=True,
            )
            if self._dependencies is not None:
                self._dependencies.failed("kafka", exc)
            return
        if self._dependencies is not None:
            self._dependencies.recovered("kafka")
        self._committed.update(offsets)

    def _pause(self) -> None:
        if not self._paused:
            self._paused = True
            self._consumer.pause(*list(self._consumer.assignment()))

    def _resume(self) -> None:
        self._paused = False
        self._consumer.resume(*list(self._consumer.assignment()))

    def _measure_lag(self) -> int | None:
        """Total lag of the held partitions (committed vs end offsets, see consumers/ragtrace_consumers/lag.py)."""
        lags = self._lag_tracker.measure(self._consumer, self._committed)
        return None if lags is None else sum(x.lag for x in lags)

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
        self.commit()
        if self._admission is not None:
            self._admission.flush()
        self._producer.flush()
        self._consumer.close(autocommit=False)
        self._workers.shutdown()
        self._consumer = None
        _log.info(
            "stopped: %d messages, %d spans, %d dead-lettered",
            self.messages,
            self.spans,
            self.dead_lettered,
        )


def _listener(runner: KafkaRunner) -> Any:
    """A kafka-python ``ConsumerRebalanceListener`` forwarding to ``runner``."""
    from kafka import ConsumerRebalanceListener

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            runner.on_partitions_revoked(revoked, blocking=False)

        def on_partitions_assigned(self, assigned: Any) -> None:
            runner.on_partitions_assigned(assigned)

    return Listener()
