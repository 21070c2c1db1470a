"""The one retry owner of judge calls: a total time budget per judgement.

A judgement (one call of ``groundedness``, ``answer_relevancy`` …) gets ``budget_s`` seconds of
wall time for all its requests and waits. Each request's timeout is the judge's ``timeout_s``
capped by what is left; after a retryable failure (408, 409, 429, 5xx, 529 overloaded, a
timeout, a connection error) the wait is what the API asked (``retry-after-ms`` /
``retry-after``), else exponential back-off (0.5 s doubling, capped at 8 s, −25 % jitter). A wait
that would not leave time for another request raises :class:`JudgeUnavailable` at once
(carrying the API's ``retry-after``), so the caller parks the work instead of blocking past its
lease. Nothing else retries: the SDK client runs with ``max_retries=0`` and the consumers'
scorer parks on the first ``JudgeUnavailable``.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Mapping

from ..base import JudgeUnavailable

__all__ = ["RETRY_STATUSES", "CallBudget", "backoff_s", "parse_retry_after", "retryable"]

RETRY_STATUSES = frozenset({408, 409, 429})
"""Retryable 4xx statuses (any 5xx is retryable too)."""
_MIN_REQUEST_S = 0.05
"""A retry is only worth making with at least this much of the budget left for the request."""


def retryable(status: int) -> bool:
    return status in RETRY_STATUSES or status >= 500


def backoff_s(attempt: int, rand: Callable[[], float] = random.random) -> float:
    """The wait before retry ``attempt`` + 1 when the API named none (0-based ``attempt``)."""
    return min(0.5 * 2.0**attempt, 8.0) * (1 - 0.25 * rand())


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the API asked to wait: ``retry-after-ms``, else ``retry-after`` (seconds or an
    HTTP date); None when absent or unreadable."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else max(email.utils.mktime_tz(parsed) - time.time(), 0.0)


class CallBudget:
    """The time left to one judgement (module doc); start one per judgement."""

    def __init__(
        self,
        budget_s: float,
        timeout_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if budget_s <= 0 or timeout_s <= 0:
            raise ValueError(f"budget_s and timeout_s must be > 0, got {budget_s}, {timeout_s}")
        self.budget_s = budget_s
        self.timeout_s = timeout_s
        self._clock = clock
        self._sleep = sleep
        self._deadline = clock() + budget_s
        self.attempts = 0
        """Requests started so far."""

    def remaining(self) -> float:
        return max(self._deadline - self._clock(), 0.0)

    def request_timeout(self) -> float:
        """The timeout of the next request (counts it); JudgeUnavailable when the budget is
        spent."""
        left = self.remaining()
        if left < _MIN_REQUEST_S:
            raise JudgeUnavailable(f"judge budget of {self.budget_s:g}s spent")
        self.attempts += 1
        return min(self.timeout_s, left)

    def wait_to_retry(self, reason: str, retry_after: float | None) -> None:
        """Sleep before the next request, or raise :class:`JudgeUnavailable` (carrying
        ``retry_after``) when the wait would leave no time for it."""
        delay = retry_after if retry_after is not None else backoff_s(self.attempts - 1)
        left = self.remaining()
        if delay + _MIN_REQUEST_S > left:
            asked = "asked to retry after" if retry_after is not None else "would retry after"
            raise JudgeUnavailable(
                f"judge {asked} {delay:g}s with {left:.2f}s left of its {self.budget_s:g}s "
                f"budget ({self.attempts} attempts): {reason}",
                retry_after,
            )
        self._sleep(delay)
