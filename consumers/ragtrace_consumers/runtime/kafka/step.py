"""The one step type of the Kafka runner, after arroyo's ``ProcessingStrategy`` cut to what
these steps share.

Each step takes its input through its own method (``Ingest.submit`` the decoded spans,
``Offsets.advance`` the offsets made durable, ``DeadLetters.send`` a message that cannot be
decoded); the runner drives them all the same way: :meth:`Step.tick` on every loop iteration,
:meth:`Step.join` once at shutdown, in reverse data order (offsets committed before the dead
letters are flushed, as :class:`~ragtrace_consumers.runtime.kafka.ingest.Offsets` requires).
``tick`` is arroyo's ``poll``, renamed so it is not read as the consumer's ``poll``.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Step"]


class Step(Protocol):
    """``tick(now)``: the step's periodic work due at ``now`` (never a wait on a timer: a step
    throttles itself and returns); ``join()``: finish what the step holds before the consumer
    closes (shutdown)."""

    def tick(self, now: float) -> None: ...

    def join(self) -> None: ...
