"""The one retry owner of ``ragtrace consume``: every call to a dependency (Redis, Kafka, the
write-back endpoint) made by the consume loop or a scoring thread goes through a
:class:`Retrier`.

Contract of :meth:`Retrier.call`: a call that fails with one of the dependency's *transient*
errors (connection refused or reset, timeout, a Redis still loading its data) is retried with
capped exponential backoff (:class:`Backoff`) until it succeeds, or until ``stop`` is set — then
the last error is raised, so a SIGTERM during an outage still shuts the replica down. Any other
error is raised at once (a bug is not an outage). While a dependency fails, :class:`Dependencies`
marks it down: ``/readyz`` reports it, the ``ragtrace.consumer.dependency.errors`` counter counts
each failed attempt, and one warning is logged per outage (one info line when it is back).

:class:`Retrying` wraps a store so that each of its methods is such a call: the Pipeline and the
scoring workers run unchanged and simply wait out a Redis restart. Retried store writes are
idempotent or harmless (see docs/reliability.md): a claim whose reply was lost leaves its traces
leased to nobody until the lease runs out, never lost.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ragtrace_consumers.errors import WriteBackError
    from ragtrace_consumers.model import ScoreSink, TraceScores

__all__ = [
    "Backoff",
    "Dependencies",
    "Retrier",
    "Retrying",
    "WatchedSink",
    "kafka_transient_errors",
    "redis_transient_errors",
]

_log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """Delays between attempts: ``initial_s`` doubling (``multiplier``) up to ``max_s``."""

    initial_s: float = 0.1
    max_s: float = 5.0
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.initial_s <= self.max_s or self.multiplier < 1:
            raise ValueError(f"invalid backoff: {self}")

    def delay(self, attempt: int) -> float:
        """The wait after failed attempt number ``attempt`` (1-based)."""
        return float(min(self.max_s, self.initial_s * self.multiplier ** max(0, attempt - 1)))


class Dependencies:
    """Which dependencies are down right now, thread-safe; ``on_error(name)`` is called for each
    failed attempt (the consumer's metric counter)."""

    def __init__(self, on_error: Callable[[str], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._down: dict[str, tuple[float, str]] = {}  # name -> (since, last error)
        self.on_error = on_error

    def failed(self, name: str, error: BaseException) -> None:
        with self._lock:
            first = name not in self._down
            since = time.monotonic() if first else self._down[name][0]
            self._down[name] = (since, repr(error)[:300])
        if first:
            _log.warning("%s is unavailable (%r); retrying with backoff", name, error)
        if self.on_error is not None:
            try:
                self.on_error(name)
            except Exception:  # noqa: BLE001 - counting must never break a retry
                _log.debug("counting a dependency error failed", exc_info=True)

    def recovered(self, name: str) -> None:
        with self._lock:
            was = self._down.pop(name, None)
        if was is not None:
            _log.info("%s is available again after %.1f s", name, time.monotonic() - was[0])

    def down(self) -> dict[str, str]:
        """``{name: "down for N s: last error"}`` of every dependency down now."""
        now = time.monotonic()
        with self._lock:
            return {
                n: f"down for {now - since:.1f}s: {err}" for n, (since, err) in self._down.items()
            }

    def check_all(self) -> tuple[bool, str]:
        """A readiness check failing while any dependency is down (for the health server)."""
        down = self.down()
        if not down:
            return True, "none down"
        return False, "; ".join(f"{n} {d}" for n, d in sorted(down.items()))

    def check(self, name: str) -> Callable[[], tuple[bool, str]]:
        """A readiness check failing while ``name`` is down (for the health server)."""

        def check() -> tuple[bool, str]:
            detail = self.down().get(name)
            return (False, detail) if detail else (True, "ok")

        return check


class Retrier:
    """Retries one dependency's calls (module doc). ``on_wait`` runs while waiting between
    attempts (the consume loop beats its liveness heartbeat: waiting out an outage is not being
    stuck)."""

    def __init__(
        self,
        name: str,
        transient: tuple[type[BaseException], ...],
        *,
        dependencies: Dependencies,
        stop: threading.Event | None = None,
        backoff: Backoff = Backoff(),
        on_wait: Callable[[], None] | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.name = name
        self.transient = transient
        self.dependencies = dependencies
        self.stop = stop or threading.Event()
        self.backoff = backoff
        self._on_wait = on_wait
        self._sleep = sleep

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        attempt = 0
        while True:
            try:
                result = fn(*args, **kwargs)
            except self.transient as exc:
                attempt += 1
                self.dependencies.failed(self.name, exc)
                if self.stop.is_set():
                    raise
                self._wait(self.backoff.delay(attempt))
                if self.stop.is_set():
                    raise
                continue
            if attempt:
                self.dependencies.recovered(self.name)
            return result

    def _wait(self, seconds: float) -> None:
        if self._on_wait is not None:
            self._on_wait()
        if self._sleep is not None:
            self._sleep(seconds)
        else:
            self.stop.wait(seconds)


class Retrying:
    """``target`` with every public method called through ``retrier`` (attributes that are not
    callable pass through). Used to wrap the Redis stores."""

    def __init__(self, target: Any, retrier: Retrier) -> None:
        self._target = target
        self._retrier = retrier

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name.startswith("_") or not callable(value):
            return value

        def retried(*args: Any, **kwargs: Any) -> Any:
            return self._retrier.call(value, *args, **kwargs)

        retried.__name__ = name
        return retried


class WatchedSink:
    """A score sink whose delivery failures mark ``writeback`` down in ``dependencies`` (and
    count it) until a delivery succeeds. It does not retry: an undelivered trace is parked with
    backoff by the Pipeline and scored again (the write-back's capped backoff is
    ``judge.park_backoff_s`` .. ``park_backoff_max_s``)."""

    name = "writeback"

    def __init__(self, sink: ScoreSink, dependencies: Dependencies) -> None:
        self._sink = sink
        self._dependencies = dependencies

    def write_many(self, batch: Sequence[TraceScores]) -> list[WriteBackError | None]:
        errors = self._sink.write_many(batch)
        failed = [e for e in errors if e is not None]
        if failed and len(failed) == len(errors):
            self._dependencies.failed(self.name, failed[0])
        elif errors:
            self._dependencies.recovered(self.name)
        return errors

    def write(self, scores: TraceScores) -> None:
        (error,) = self.write_many([scores])
        if error is not None:
            raise error

    def shutdown(self) -> None:
        self._sink.shutdown()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sink, name)


def redis_transient_errors() -> tuple[type[BaseException], ...]:
    """The redis-py errors of an unavailable server (refused, reset, timed out, loading, read
    only after a failover) and of a Redis Cluster changing hands: a slot moving (MOVED, ASK,
    TRYAGAIN), a slot with no primary while a replica is promoted (CLUSTERDOWN), or the cluster
    client's own redirections running out."""
    import redis.exceptions as rx

    errors: Iterable[type[BaseException]] = (
        rx.ConnectionError,
        rx.TimeoutError,
        rx.ReadOnlyError,
        rx.ClusterError,  # CLUSTERDOWN, MASTERDOWN, the cluster client's retries exhausted
        rx.AskError,  # and MovedError
        rx.TryAgainError,
        rx.SlotNotCoveredError,
        ConnectionError,
        TimeoutError,
    )
    return tuple(errors)


def kafka_transient_errors() -> tuple[type[BaseException], ...]:
    """The kafka-python errors of an unreachable or restarting broker."""
    import kafka.errors as kx

    names = (
        "KafkaTimeoutError",
        "KafkaConnectionError",
        "NoBrokersAvailable",
        "NodeNotReadyError",
        "RequestTimedOutError",
        "NotLeaderForPartitionError",
        "LeaderNotAvailableError",
        "CommitFailedError",
        "RebalanceInProgressError",
        "CoordinatorNotAvailableError",
        "CoordinatorLoadInProgressError",
        "NotCoordinatorError",
        "BrokerNotAvailableError",
    )
    found = tuple(e for e in (getattr(kx, n, None) for n in names) if isinstance(e, type))
    return (*found, ConnectionError, TimeoutError)
