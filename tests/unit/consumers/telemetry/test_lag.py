"""Lag from committed and end offsets (consumers/ragtrace_consumers/telemetry/lag.py), with hand-computed values."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import pytest

from ragtrace_consumers.telemetry.lag import LagTracker, PartitionLag

TP = namedtuple("TP", "topic partition")


class Broker:
    """The consumer calls the tracker makes, answered from dicts; counts committed() reads."""

    def __init__(
        self, ends: dict[Any, int], committed: dict[Any, int | None], reset: str = "earliest"
    ) -> None:
        self.ends, self.group = ends, committed
        self.config = {"auto_offset_reset": reset}
        self.assigned = set(ends)
        self.committed_reads = 0
        self.fail = False

    def assignment(self) -> set[Any]:
        return set(self.assigned)

    def end_offsets(self, tps: list[Any], timeout_ms: int | None = None) -> dict[Any, int]:
        if self.fail:
            raise TimeoutError("broker unreachable")
        return {tp: self.ends[tp] for tp in tps}

    def beginning_offsets(self, tps: list[Any], timeout_ms: int | None = None) -> dict[Any, int]:
        return {tp: 100 for tp in tps}

    def committed(self, tp: Any, timeout_ms: int | None = None) -> int | None:
        self.committed_reads += 1
        return self.group.get(tp)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


A, B, C = TP("t", 0), TP("t", 1), TP("t", 2)


def test_lag_is_end_minus_committed_per_partition() -> None:
    broker = Broker({A: 500, B: 120, C: 300}, {A: 480, B: None, C: None})
    clock = Clock()
    tracker = LagTracker(every_s=5, clock=clock)
    got = tracker.measure(broker, {C: 300})
    # A: the group's commit from the broker; B: never committed, counted from its beginning
    # (100, earliest); C: this replica's own commit wins over asking the broker.
    assert got == (
        PartitionLag("t", 0, 500, 480),
        PartitionLag("t", 1, 120, 100),
        PartitionLag("t", 2, 300, 300),
    )
    assert [x.lag for x in got] == [20, 20, 0]
    assert broker.committed_reads == 2
    # Within every_s: the same measurement, no broker call.
    broker.ends[A] = 900
    assert tracker.measure(broker, {C: 300}) is got
    clock.now = 5
    again = tracker.measure(broker, {A: 890, C: 300})
    assert again is not None
    assert [x.lag for x in again] == [10, 20, 0]
    assert broker.committed_reads == 3  # B is read again (still never committed); A is not


def test_never_committed_under_latest_counts_nothing() -> None:
    broker = Broker({A: 50}, {}, reset="latest")
    assert LagTracker().measure(broker, {}) == (PartitionLag("t", 0, 50, 50),)


def test_a_broker_error_keeps_the_previous_measurement() -> None:
    broker = Broker({A: 50}, {A: 40})
    clock = Clock()
    tracker = LagTracker(every_s=1, clock=clock)
    first = tracker.measure(broker, {})
    broker.fail, clock.now = True, 2
    assert tracker.measure(broker, {}) is first


def test_revoked_partitions_are_no_longer_reported() -> None:
    broker = Broker({A: 50, B: 60}, {A: 40, B: 40})
    tracker = LagTracker()
    tracker.measure(broker, {})
    tracker.forget([A])
    assert tracker.last == (PartitionLag("t", 1, 60, 40),)


def test_nothing_assigned_is_an_empty_measurement() -> None:
    broker = Broker({}, {})
    assert LagTracker().measure(broker, {}) == ()


def test_bad_values_raise() -> None:
    with pytest.raises(ValueError):
        PartitionLag("t", -1, 0, 0)
    with pytest.raises(ValueError):
        LagTracker(every_s=0)
    assert PartitionLag("t", 0, 5, 9).lag == 0  # a commit ahead of a stale end offset
