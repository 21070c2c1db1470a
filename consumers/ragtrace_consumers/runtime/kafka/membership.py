"""The rebalance step: group membership and partition flow control.

:meth:`Membership.subscribe` loads the topic's partition metadata right after subscribing,
before the first join, so the first assignment already covers every partition. A kafka-python
3.0 leader that re-joins because the topic metadata changed can otherwise stall for good: the
join's own assignment step clears the "metadata changed" trigger while the join is still in
flight, so once a ``poll`` returns before the join finished, no later ``poll`` completes it (the
assignment is never applied and heartbeats stay off). As a safety net :meth:`Membership.tick`
(the rejoin watchdog): when the membership has been unsettled (joining, rebalancing) for
``stall_timeout_s`` while the topic has partitions, it leaves the group and subscribes again
(counted in ``forced_rejoins`` and logged), backing off up to 8 x ``stall_timeout_s``.

Revoked partitions get their committable offsets committed first (without blocking when called
on kafka-python's IO thread). While the scoring workers are full the held partitions are
paused (``poll`` keeps the membership alive); a partition assigned meanwhile starts paused.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from ragtrace_consumers.runtime.kafka.calls import KafkaCall
from ragtrace_consumers.runtime.kafka.ingest import Offsets
from ragtrace_consumers.runtime.kafka.lag_probe import LagProbe

__all__ = ["Membership"]

_log = logging.getLogger(__name__)

_WATCH_EVERY_S = 1.0
_STALL_BACKOFF_MAX = 8  # forced re-joins back off up to 8 x stall_timeout_s


class Membership:
    """Subscribes ``consumer``, handles its rebalances, pauses and resumes its partitions and
    re-joins a stalled group. A :class:`~ragtrace_consumers.runtime.kafka.step.Step` holding
    nothing at shutdown (closing the consumer leaves the group)."""

    def __init__(
        self,
        consumer: Any,
        offsets: Offsets,
        lag: LagProbe,
        call: KafkaCall,
        *,
        stall_timeout_s: float,
    ) -> None:
        if not stall_timeout_s > 0:
            raise ValueError(f"stall_timeout_s must be > 0, got {stall_timeout_s!r}")
        self._consumer = consumer
        self._offsets = offsets
        self._lag = lag
        self._call = call
        self._topic: str | None = None
        self._stall_timeout_s = stall_timeout_s
        self._stall_wait_s = stall_timeout_s
        self._unsettled_since: float | None = None
        self._last_watch = 0.0
        self.paused = False
        self.forced_rejoins = 0

    # --- subscription --------------------------------------------------------------------
    def subscribe(self, topic: str) -> set[int]:
        """Subscribe to ``topic`` (this object as the rebalance listener), then fetch the
        cluster metadata so the topic's partitions are known before the first join; returns
        them (empty, with a warning, when the topic does not exist yet)."""
        self._topic = topic
        self._consumer.subscribe([topic], listener=_listener(self))
        # A blocking metadata fetch issued after subscribe: its response reaches the group
        # coordinator's metadata listener while the topic is subscribed, so the first assignment
        # is made with every partition and no metadata-triggered re-join follows (module doc).
        self._consumer.topics()
        partitions = set(self._consumer.partitions_for_topic(topic) or ())
        if partitions:
            _log.info("topic %s: %d partitions", topic, len(partitions))
        else:
            _log.warning("topic %s has no partitions yet (does it exist?); waiting for it", topic)
        return partitions

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
        self._offsets.commit(only=revoked, blocking=blocking)
        self._lag.forget(revoked)
        self._offsets.forget(revoked)

    def on_partitions_assigned(self, assigned: Iterable[Any]) -> None:
        assigned = list(assigned)
        _log.info(
            "assigned partitions: %s",
            ", ".join(f"{tp.topic}[{tp.partition}]" for tp in assigned) or "none",
        )
        if self.paused:
            self._consumer.pause(*assigned)

    # --- flow control --------------------------------------------------------------------
    def pause(self) -> None:
        if not self.paused:
            self.paused = True
            self._consumer.pause(*list(self._consumer.assignment()))

    def resume(self) -> None:
        self.paused = False
        self._consumer.resume(*list(self._consumer.assignment()))

    # --- rejoin watchdog -----------------------------------------------------------------
    def tick(self, now: float) -> None:
        """At most once a second: leave and re-join when the membership stays unsettled too
        long (module doc)."""
        if now - self._last_watch < _WATCH_EVERY_S:
            return
        self._last_watch = now
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
        self._call(self.subscribe, self._topic)  # a broker outage is waited out, not fatal
        self._unsettled_since = now
        self._stall_wait_s = min(self._stall_wait_s * 2, self._stall_timeout_s * _STALL_BACKOFF_MAX)

    def join(self) -> None:
        pass

    def _group_settled(self) -> bool | None:
        """True when the consumer is a stable group member, None when it cannot tell."""
        group_metadata: Callable[[], Any] | None = getattr(self._consumer, "group_metadata", None)
        if group_metadata is None:
            return None
        from kafka.structs import MemberState

        return bool(group_metadata().state == MemberState.STABLE)


def _listener(membership: Membership) -> Any:
    """A kafka-python ``ConsumerRebalanceListener`` forwarding to ``membership``."""
    from kafka import ConsumerRebalanceListener

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            membership.on_partitions_revoked(revoked, blocking=False)

        def on_partitions_assigned(self, assigned: Any) -> None:
            membership.on_partitions_assigned(assigned)

    return Listener()
