"""In-process stand-ins for kafka-python's KafkaConsumer and KafkaProducer, shared by the Kafka
runner's tests: a consumer that serves scripted poll batches and records commits, pauses and
seeks; a producer that records what it sent; one whose first send the broker never acknowledges."""

from __future__ import annotations

from collections import namedtuple
from typing import Any, ClassVar

__all__ = ["TP", "FakeConsumer", "FakeProducer", "LossyProducer", "Msg", "UnackedFuture"]

TP = namedtuple("TP", "topic partition")
Msg = namedtuple("Msg", "topic partition offset key value")


class FakeConsumer:
    def __init__(self, batches: list[dict[Any, list[Msg]]]) -> None:
        self.batches = list(batches)
        self.commits: list[dict[Any, int]] = []
        self.paused: set[Any] = set()
        self.pause_calls = 0
        self.seeks: list[tuple[Any, int]] = []
        self.closed = False
        self.assigned = {TP("spans", 0), TP("spans", 1)}
        self.timeouts: list[int] = []

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[Any, list[Msg]]:
        self.timeouts.append(timeout_ms)
        if self.paused or not self.batches:
            return {}
        return self.batches.pop(0)

    def commit(self, offsets: dict[Any, Any]) -> None:
        self.commits.append({tp: om.offset for tp, om in offsets.items()})

    def assignment(self) -> set[Any]:
        return set(self.assigned)

    def pause(self, *tps: Any) -> None:
        self.pause_calls += 1
        self.paused |= set(tps)

    def resume(self, *tps: Any) -> None:
        self.paused -= set(tps)

    def seek(self, tp: Any, offset: int) -> None:
        self.seeks.append((tp, offset))

    config: ClassVar[dict[str, str]] = {"auto_offset_reset": "earliest"}

    def end_offsets(self, tps: list[Any], timeout_ms: int | None = None) -> dict[Any, int]:
        return {tp: 10 for tp in tps}

    def beginning_offsets(self, tps: list[Any], timeout_ms: int | None = None) -> dict[Any, int]:
        return {tp: 2 for tp in tps}

    def committed(self, tp: Any, timeout_ms: int | None = None) -> int | None:
        return None  # the group never committed before this runner

    def close(self, autocommit: bool = True) -> None:
        assert autocommit is False
        self.closed = True


class FakeProducer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, Any, list[tuple[str, bytes]]]] = []
        self.flushed = 0

    def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: Any = None,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        self.sent.append((topic, value or b"", key, headers or []))

    def flush(self) -> None:
        self.flushed += 1


class UnackedFuture:
    """A send's future: ``failed()`` says whether the broker refused the record."""

    def __init__(self, failed: bool) -> None:
        self._failed = failed

    def failed(self) -> bool:
        return self._failed


class LossyProducer(FakeProducer):
    """The first dead letter is not acknowledged by the broker."""

    def send(self, topic: str, *args: Any, **kwargs: Any) -> Any:
        super().send(topic, *args, **kwargs)
        return UnackedFuture(len(self.sent) == 1)
