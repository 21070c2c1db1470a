"""The ingest-and-commit step: decoded spans are stored (``Pipeline.ingest``, durable when it
returns), and only then do their messages' offsets become committable; committable offsets are
committed every ``commit_interval_s`` (after the dead letters before them are acknowledged), on
partition revocation and on shutdown — never by auto-commit."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ragtrace_consumers.intake.kafka_poll import Decoded
from ragtrace_consumers.runtime.kafka.dead_letters import DeadLetters
from ragtrace_consumers.runtime.retry import Dependencies
from ragtrace_consumers.scoring.pipeline import Pipeline

__all__ = ["Ingest", "Offsets"]

_log = logging.getLogger(__name__)

_RETRY_INGEST_S = 1.0


class Offsets:
    """The commit policy: what is committable, what was committed, and when to commit. A
    :class:`~ragtrace_consumers.runtime.kafka.step.Step`: a tick commits when due, the join
    commits what is left."""

    def __init__(
        self,
        consumer: Any,
        dead_letters: DeadLetters,
        *,
        interval_s: float,
        clock: Callable[[], float],
        dependencies: Dependencies | None = None,
    ) -> None:
        self._consumer = consumer
        self._dead_letters = dead_letters
        self._interval_s = interval_s
        self._clock = clock
        self._dependencies = dependencies
        self._committable: dict[Any, int] = {}
        self.committed: dict[Any, int] = {}
        self.last_commit = 0.0

    def advance(self, last: Mapping[Any, int]) -> None:
        """The messages up to ``last`` (per partition) are durable or dead-lettered."""
        for tp, offset in last.items():
            self._committable[tp] = offset + 1

    def due(self, now: float) -> bool:
        return now - self.last_commit >= self._interval_s

    def commit(self, only: Iterable[Any] | None = None, *, blocking: bool = True) -> None:
        """Commit every committable offset not yet committed (dead letters acknowledged
        first); ``blocking=False`` sends the commit without waiting for the broker."""
        self.last_commit = self._clock()
        wanted = set(only) if only is not None else None
        offsets = {
            tp: off
            for tp, off in self._committable.items()
            if self.committed.get(tp) != off and (wanted is None or tp in wanted)
        }
        if not offsets:
            return
        if not self._dead_letters.acknowledged():
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
        self.committed.update(offsets)

    def tick(self, now: float) -> None:
        if self.due(now):
            self.commit()

    def join(self) -> None:
        self.commit()

    def forget(self, partitions: Iterable[Any]) -> None:
        """Partitions no longer held: their offsets are the next owner's."""
        for tp in partitions:
            self._committable.pop(tp, None)
            self.committed.pop(tp, None)


class Ingest:
    """Stores decoded spans; on success their offsets advance, on a store failure the
    consumer seeks back to the first message so they are read again (nothing is committed).
    A :class:`~ragtrace_consumers.runtime.kafka.step.Step` with nothing periodic and nothing
    held: spans are durable when :meth:`submit` returns."""

    def __init__(
        self, consumer: Any, pipeline: Pipeline, offsets: Offsets, clock: Callable[[], float]
    ) -> None:
        self._consumer = consumer
        self._pipeline = pipeline
        self._offsets = offsets
        self._clock = clock
        self.spans = 0

    def submit(self, decoded: Decoded) -> None:
        try:
            self._pipeline.ingest(decoded.spans, self._clock())
        except Exception:  # noqa: BLE001 - a store outage must not kill the loop
            # Not durable: re-read these messages (nothing of them is committed).
            _log.exception(
                "storing %d spans failed; re-reading from the first message", len(decoded.spans)
            )
            for tp, offset in decoded.first.items():
                self._consumer.seek(tp, offset)
            time.sleep(_RETRY_INGEST_S)
            return
        self.spans += len(decoded.spans)
        self._offsets.advance(decoded.last)

    def tick(self, now: float) -> None:
        pass

    def join(self) -> None:
        pass
