"""The dead-letter step: a message that cannot be decoded goes to the dead-letter topic with
headers naming why and where it came from; before any offset is committed, every dead letter
sent so far must be acknowledged by the broker (the ones it did not take are sent again)."""

from __future__ import annotations

import logging
from typing import Any

from ragtrace_consumers.errors import DLQ_HEADER_DETAIL, DLQ_HEADER_REASON
from ragtrace_consumers.runtime.kafka.calls import KafkaCall
from ragtrace_consumers.runtime.retry import Dependencies
from ragtrace_consumers.telemetry.metrics import ConsumerMetrics

__all__ = ["DLQ_HEADER_OFFSET", "DLQ_HEADER_PARTITION", "DLQ_HEADER_TOPIC", "DeadLetters"]

_log = logging.getLogger(__name__)

DLQ_HEADER_TOPIC = "ragtrace.dlq.topic"
DLQ_HEADER_PARTITION = "ragtrace.dlq.partition"
DLQ_HEADER_OFFSET = "ragtrace.dlq.offset"


class DeadLetters:
    """Sends dead letters with ``producer`` (a ``KafkaProducer``) to ``topic``; each is counted
    in :attr:`sent` and in the ``dead_lettered`` metric by reason. A
    :class:`~ragtrace_consumers.runtime.kafka.step.Step`."""

    def __init__(
        self,
        producer: Any,
        topic: str,
        metrics: ConsumerMetrics,
        call: KafkaCall,
        dependencies: Dependencies | None = None,
    ) -> None:
        self._producer = producer
        self._topic = topic
        self._metrics = metrics
        self._call = call
        self._dependencies = dependencies
        self._unacked: list[tuple[Any, dict[str, Any]]] = []
        self.sent = 0

    def send(self, msg: Any, reason: str, detail: str) -> None:
        """Dead-letter ``msg`` (a consumer record) for ``reason``."""
        headers = [
            (DLQ_HEADER_REASON, reason.encode()),
            (DLQ_HEADER_DETAIL, detail[:1000].encode("utf-8", "replace")),
            (DLQ_HEADER_TOPIC, str(msg.topic).encode()),
            (DLQ_HEADER_PARTITION, str(msg.partition).encode()),
            (DLQ_HEADER_OFFSET, str(msg.offset).encode()),
        ]
        self._send({"value": msg.value, "key": msg.key, "headers": headers})
        self.sent += 1
        self._metrics.dead_lettered(reason)
        _log.warning(
            "dead-lettered %s[%d]@%d: %s: %s",
            msg.topic,
            msg.partition,
            msg.offset,
            reason,
            detail[:200],
        )

    def _send(self, message: dict[str, Any]) -> None:
        future = self._call(self._producer.send, self._topic, **message)
        self._unacked.append((future, message))

    def acknowledged(self) -> bool:
        """Flush the producer; re-send what the broker did not take. True once every dead
        letter sent so far is acknowledged (only then may offsets be committed)."""
        if not self._unacked:
            return True
        self._producer.flush()
        failed = [m for f, m in self._unacked if getattr(f, "failed", lambda: False)()]
        self._unacked = []
        if not failed:
            return True
        _log.warning(
            "%d dead letters were not delivered; sending them again before committing", len(failed)
        )
        if self._dependencies is not None:
            self._dependencies.failed("kafka", RuntimeError("dead-letter delivery failed"))
        for message in failed:
            self._send(message)
        return False

    def tick(self, now: float) -> None:
        """Nothing periodic: delivery is checked before each commit (:meth:`acknowledged`)."""

    def join(self) -> None:
        """Wait for every dead letter sent (shutdown)."""
        self._producer.flush()
