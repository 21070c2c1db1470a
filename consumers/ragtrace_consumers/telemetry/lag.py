"""Consumer-group lag measured from offsets, one value per partition, by the replica holding it.

The lag of a partition is its **end offset** (the next offset the broker will write) minus the
group's **committed offset** on it (where a restarted or new owner resumes): the records the group
has not durably processed. It is measured the way Kafka's own tooling and KEDA's kafka scaler
measure it, not from a replica's fetch position, so it counts the records scored but not yet
committed and is the same number whichever replica reports it.

Only the replica a partition is assigned to reports it, so each partition has exactly one series;
its Prometheus target is that pod, so when the pod goes away its series go stale with it and
``sum(ragtrace_consumer_lag)`` stays right across rollouts and rebalances. A partition the group
never committed on counts from where the group would start: the beginning of the partition under
``auto_offset_reset=earliest``, its end under ``latest`` (KEDA's ``offsetResetPolicy``).

:class:`LagTracker` runs on the consume thread (kafka-python's client is not thread-safe); it
asks the broker for end offsets at most every ``every_s`` and the committed offset of a partition
once, when it is first seen (after that the runner's own commits are the committed offsets).
``last`` is read by the metrics export thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["LagTracker", "PartitionLag"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PartitionLag:
    """The lag of one partition: ``end_offset - committed_offset``, never below 0."""

    topic: str
    partition: int
    end_offset: int
    committed_offset: int

    def __post_init__(self) -> None:
        if self.partition < 0 or self.end_offset < 0 or self.committed_offset < 0:
            raise ValueError(f"negative partition or offset in {self!r}")

    @property
    def lag(self) -> int:
        return max(0, self.end_offset - self.committed_offset)


class LagTracker:
    """Measures :class:`PartitionLag` of a consumer's assigned partitions (see the module doc)."""

    def __init__(
        self,
        *,
        every_s: float = 5.0,
        timeout_ms: int = 2000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not every_s > 0:
            raise ValueError(f"every_s must be > 0, got {every_s!r}")
        self._every_s = every_s
        self._timeout_ms = timeout_ms
        self._clock = clock
        self._lock = threading.Lock()
        self._fetched: dict[Any, int] = {}  # committed offsets read from the broker, by partition
        self._measured_at: float | None = None
        self.last: tuple[PartitionLag, ...] | None = None
        """The latest measurement (None: none yet); replaced whole, safe to read anywhere."""

    def forget(self, partitions: Iterable[Any]) -> None:
        """Partitions revoked from this replica: no longer reported, re-read if they return."""
        gone = set(partitions)
        with self._lock:
            for tp in gone:
                self._fetched.pop(tp, None)
            if self.last is not None:
                self.last = tuple(
                    x
                    for x in self.last
                    if (x.topic, x.partition) not in {(tp.topic, tp.partition) for tp in gone}
                )

    def measure(
        self, consumer: Any, committed: Mapping[Any, int]
    ) -> tuple[PartitionLag, ...] | None:
        """Measure now if ``every_s`` has passed (else return :attr:`last`). ``committed`` holds
        the offsets this replica committed itself; others are read from the broker once. A
        broker error keeps the previous measurement."""
        now = self._clock()
        if self._measured_at is not None and now - self._measured_at < self._every_s:
            return self.last
        self._measured_at = now
        try:
            result = self._measure(consumer, committed)
        except Exception:  # noqa: BLE001 - lag is best effort (a rebalance, a slow broker)
            _log.debug("lag measurement failed; keeping the previous one", exc_info=True)
            return self.last
        self.last = result
        return result

    def _measure(self, consumer: Any, committed: Mapping[Any, int]) -> tuple[PartitionLag, ...]:
        assigned = sorted(consumer.assignment(), key=lambda tp: (tp.topic, tp.partition))
        if not assigned:
            return ()
        ends = consumer.end_offsets(assigned, timeout_ms=self._timeout_ms)
        with self._lock:
            known = {tp: committed.get(tp, self._fetched.get(tp)) for tp in assigned}
        missing = [tp for tp, off in known.items() if off is None]
        for tp in missing:
            off = consumer.committed(tp, timeout_ms=self._timeout_ms)
            if off is not None:
                known[tp] = off
                with self._lock:
                    self._fetched[tp] = off
        never = [tp for tp, off in known.items() if off is None]
        if never:
            reset = str(getattr(consumer, "config", {}).get("auto_offset_reset", "earliest"))
            start = (
                ends
                if reset == "latest"
                else consumer.beginning_offsets(never, timeout_ms=self._timeout_ms)
            )
            for tp in never:
                known[tp] = start[tp]
        return tuple(
            PartitionLag(tp.topic, tp.partition, int(ends[tp]), int(known[tp] or 0))
            for tp in assigned
            if tp in ends
        )
