"""How the runner's steps call Kafka: through the ``kafka`` retrier when there is one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from ragtrace_consumers.runtime.retry import Retrier

__all__ = ["KafkaCall", "kafka_call"]

T = TypeVar("T")


class KafkaCall(Protocol):
    """``call(fn, *args, **kwargs)``: ``fn``'s result, a broker outage waited out (retry.py)."""

    def __call__(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T: ...


def kafka_call(retry: Retrier | None) -> KafkaCall:
    """Calls through ``retry``, or direct calls when there is none."""
    if retry is not None:
        return retry.call

    def direct(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return fn(*args, **kwargs)

    return direct
