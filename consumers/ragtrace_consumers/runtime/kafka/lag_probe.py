"""The lag step: at most once a second, the lag of the held partitions (committed offsets
against end offsets, see :mod:`ragtrace_consumers.telemetry.lag`), reported as the consumer-lag metric."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ragtrace_consumers.telemetry.lag import LagTracker
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics

__all__ = ["LagProbe"]

_LAG_EVERY_S = 1.0


class LagProbe:
    """Measures the lag of ``consumer``'s partitions against the offsets ``committed`` returns;
    :attr:`total` is the last sum (None until known). A
    :class:`~ragtrace_consumers.runtime.kafka.step.Step` holding nothing at shutdown."""

    def __init__(
        self,
        consumer: Any,
        metrics: ConsumerMetrics,
        clock: Callable[[], float],
        committed: Callable[[], Mapping[Any, int]],
    ) -> None:
        self._consumer = consumer
        self._committed = committed
        self.tracker = LagTracker(clock=clock)
        self.total: int | None = None
        self._last = 0.0
        metrics.set_lag_source(lambda: self.tracker.last)

    def tick(self, now: float) -> None:
        if now - self._last < _LAG_EVERY_S:
            return
        self._last = now
        lags = self.tracker.measure(self._consumer, self._committed())
        self.total = None if lags is None else sum(x.lag for x in lags)

    def join(self) -> None:
        pass

    def forget(self, partitions: Iterable[Any]) -> None:
        self.tracker.forget(partitions)
