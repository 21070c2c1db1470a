"""The ingest-and-commit step: decoded spans are stored (``Pipeline.admit``, durable when it
returns), and only then do their messages' offsets become committable; committable offsets are
committed every ``commit_interval_s`` (after the dead letters before them are acknowledged), on
partition revocation and on shutdown — never by auto-commit.

A trace complete in its batch (its root span arrived with the rest) is scored straight from the
batch when the scoring workers have room (``Pipeline.admit`` adopts it: leased, never stored).
Its batch's offsets then become committable only once every such trace of the batch is settled
— scored, written back, marked and released, or its spans stored when it could not be — and in
batch order (:meth:`Offsets.hold`, :meth:`Offsets.settle`). A trace that could be neither makes
the consumer re-read from its batch (its spans were never acknowledged).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragtrace_consumers.kafka_runner.dead_letters import DeadLetters
from ragtrace_consumers.kafka_runner.intake import Decoded
from ragtrace_consumers.pipeline import Pipeline
from ragtrace_consumers.retry import Dependencies
from ragtrace_consumers.workers import ScoringWorkers

__all__ = ["Ingest", "Offsets"]

_log = logging.getLogger(__name__)

_RETRY_INGEST_S = 1.0


@dataclass(eq=False)
class Held:
    """One batch's offsets, committable once ``waiting`` adopted traces are settled."""

    first: dict[Any, int]
    last: dict[Any, int]
    waiting: int
    failed: bool = field(default=False)


class Offsets:
    """The commit policy: what is committable, what was committed, and when to commit."""

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
        self._lock = threading.Lock()
        self._held: deque[Held] = deque()

    def advance(self, last: Mapping[Any, int], first: Mapping[Any, int] | None = None) -> None:
        """The messages up to ``last`` (per partition; read from ``first``) are durable or
        dead-lettered (after any batch still held: offsets only ever advance in batch
        order)."""
        with self._lock:
            if self._held:
                self._held.append(Held(dict(first or last), dict(last), 0))
                return
            self._advance(last)

    def _advance(self, last: Mapping[Any, int]) -> None:
        for tp, offset in last.items():
            self._committable[tp] = offset + 1

    def hold(self, first: Mapping[Any, int], last: Mapping[Any, int], waiting: int) -> Held:
        """A batch whose offsets wait for ``waiting`` :meth:`settled` calls."""
        held = Held(dict(first), dict(last), waiting)
        with self._lock:
            self._held.append(held)
        return held

    def settled(self, held: Held, ok: bool) -> None:
        """One adopted trace of ``held`` is settled (``ok``) or lost (any thread)."""
        with self._lock:
            held.waiting -= 1
            held.failed = held.failed or not ok

    def settle(self) -> dict[Any, int]:
        """Advance over the settled batches at the head, in order. When one of them failed,
        nothing from it on is acknowledged: returns, per partition, the offset to re-read from
        (every batch still held is dropped; their messages are read again)."""
        with self._lock:
            while self._held and self._held[0].waiting <= 0 and not self._held[0].failed:
                self._advance(self._held.popleft().last)
            if not self._held or not self._held[0].failed:
                return {}
            rewind: dict[Any, int] = {}
            for held in self._held:
                for tp, offset in {**held.last, **held.first}.items():
                    rewind[tp] = min(offset, rewind.get(tp, offset))
            self._held.clear()
            return rewind

    @property
    def holding(self) -> int:
        """Batches whose offsets wait for adopted traces."""
        with self._lock:
            return len(self._held)

    def due(self, now: float) -> bool:
        return now - self.last_commit >= self._interval_s

    def commit(self, only: Iterable[Any] | None = None, *, blocking: bool = True) -> None:
        """Commit every committable offset not yet committed (dead letters acknowledged
        first); ``blocking=False`` sends the commit without waiting for the broker."""
        self.last_commit = self._clock()
        with self._lock:
            while self._held and self._held[0].waiting <= 0 and not self._held[0].failed:
                self._advance(self._held.popleft().last)
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

    def forget(self, partitions: Iterable[Any]) -> None:
        """Partitions no longer held: their offsets are the next owner's."""
        with self._lock:
            for tp in partitions:
                self._committable.pop(tp, None)
                self.committed.pop(tp, None)
                for held in self._held:
                    held.first.pop(tp, None)
                    held.last.pop(tp, None)


class Ingest:
    """Stores decoded spans, hands the traces complete in the batch to ``workers`` (module
    doc); on success their offsets advance (at once, or once those traces are settled), on a
    store failure the consumer seeks back to the first message so they are read again (nothing
    is committed)."""

    def __init__(
        self,
        consumer: Any,
        pipeline: Pipeline,
        offsets: Offsets,
        clock: Callable[[], float],
        workers: ScoringWorkers | None = None,
    ) -> None:
        self._consumer = consumer
        self._pipeline = pipeline
        self._offsets = offsets
        self._clock = clock
        self._workers = workers
        self.spans = 0
        self.adopted = 0

    def __call__(self, decoded: Decoded) -> None:
        workers = self._workers
        room = 0 if workers is None else max(0, workers.capacity - workers.in_flight)
        try:
            adopted = self._pipeline.admit(decoded.spans, self._clock(), room)
        except Exception:  # noqa: BLE001 - a store outage must not kill the loop
            # Not durable: re-read these messages (nothing of them is committed).
            _log.exception(
                "storing %d spans failed; re-reading from the first message", len(decoded.spans)
            )
            self._rewind(decoded.first)
            return
        self.spans += len(decoded.spans)
        if not adopted or workers is None:
            self._offsets.advance(decoded.last, decoded.first)
            return
        self.adopted += len(adopted)
        held = self._offsets.hold(decoded.first, decoded.last, len(adopted))
        workers.submit(adopted, lambda ok: self._offsets.settled(held, ok))

    def settle(self) -> None:
        """Advance over settled batches; re-read from a batch an adopted trace was lost from
        (the caller's thread: the consumer's)."""
        rewind = self._offsets.settle()
        if rewind:
            _log.error(
                "a trace scored from its batch could neither be finished nor stored; "
                "re-reading from that batch"
            )
            self._rewind(rewind)

    def _rewind(self, first: Mapping[Any, int]) -> None:
        for tp, offset in first.items():
            self._consumer.seek(tp, offset)
        time.sleep(_RETRY_INGEST_S)
