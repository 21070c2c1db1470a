"""The Kafka intake: one ``poll`` of the consumer, each message decoded into span records
(sampling at decode drops unwanted traces before they are built); a message that cannot be
decoded is handed to the dead letters, never retried and never fatal.

It reads the consumer through the calls and the dead-letter sink the runner gives it
(:mod:`ragtrace_consumers.runtime.kafka`), so this room never imports the runtime."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragtrace_consumers.errors import DecodeError
from ragtrace_consumers.intake.decode import decode_request
from ragtrace_consumers.model import Admission, SpanRecord

__all__ = ["UNEXPECTED_DECODE_ERROR", "Decoded", "DeadLetterSink", "KafkaIntake"]

UNEXPECTED_DECODE_ERROR = "unexpected_error"
"""The dead-letter reason of a message whose decoding raised something else than
:class:`~ragtrace_consumers.errors.DecodeError`."""


class DeadLetterSink(Protocol):
    """Where a message that cannot be decoded goes (``runtime.kafka.dead_letters``)."""

    def send(self, msg: Any, reason: str, detail: str) -> None: ...


@dataclass
class Decoded:
    """What one poll brought: the decoded spans, and per partition the first and last offset
    read (dead-lettered messages included)."""

    spans: list[SpanRecord] = field(default_factory=list)
    first: dict[Any, int] = field(default_factory=dict)
    last: dict[Any, int] = field(default_factory=dict)


class KafkaIntake:
    """Polls ``consumer`` (through ``call``: ``call(fn, *args, **kwargs)``, the runner's Kafka
    retrier) and decodes what it returns; counts :attr:`messages`."""

    def __init__(
        self,
        consumer: Any,
        dead_letters: DeadLetterSink,
        call: Callable[..., Any],
        *,
        max_poll_records: int,
        admission: Admission | None = None,
    ) -> None:
        self._consumer = consumer
        self._dead_letters = dead_letters
        self._call = call
        self._max_poll_records = max_poll_records
        self._admission = admission
        self.messages = 0

    def poll(self, timeout_ms: int) -> Decoded | None:
        """One poll; None when it returned nothing."""
        records: Mapping[Any, list[Any]] = self._call(
            self._consumer.poll, timeout_ms=timeout_ms, max_records=self._max_poll_records
        )
        return self.decode(records) if records else None

    def decode(self, records: Mapping[Any, list[Any]]) -> Decoded:
        out = Decoded()
        for tp, messages in records.items():
            for msg in messages:
                out.first.setdefault(tp, msg.offset)
                out.last[tp] = msg.offset
                self.messages += 1
                try:
                    out.spans.extend(decode_request(msg.value or b"", self._admission))
                except DecodeError as exc:
                    self._dead_letters.send(msg, exc.reason, exc.detail)
                except Exception as exc:  # noqa: BLE001 - one bad message never kills the loop
                    self._dead_letters.send(msg, UNEXPECTED_DECODE_ERROR, repr(exc))
        return out
