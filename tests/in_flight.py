"""How many callers are inside a block at once: the tests of bounded concurrency count with it."""

from __future__ import annotations

import threading

__all__ = ["InFlight"]


class InFlight:
    """``with in_flight:`` around the work; ``now`` callers are inside, ``peak`` at most ever."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = self.peak = 0

    def __enter__(self) -> None:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self.now -= 1
