"""CallBudget, the one retry owner: retry-after honoured within a total budget, never beyond."""

from __future__ import annotations

import pytest

from ragtrace.evaluation.judges import CallBudget, JudgeUnavailable
from ragtrace.evaluation.judges.model.retry import backoff_s, parse_retry_after, retryable


class Clock:
    """Virtual time: sleeping advances it, so does ``advance`` (a request taking time)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _budget(budget_s: float, timeout_s: float = 30.0) -> tuple[CallBudget, Clock]:
    clock = Clock()
    return CallBudget(budget_s, timeout_s, clock=clock, sleep=clock.sleep), clock


def test_each_request_timeout_is_capped_by_what_is_left() -> None:
    budget, clock = _budget(60.0)
    assert budget.request_timeout() == 30.0
    clock.advance(30.0)  # the request timed out
    budget.wait_to_retry("timeout", 4.0)
    assert budget.request_timeout() == pytest.approx(26.0)  # 60 - 30 - 4
    assert budget.attempts == 2


def test_retry_after_is_honoured_while_it_fits() -> None:
    budget, clock = _budget(10.0)
    budget.request_timeout()
    budget.wait_to_retry("HTTP 429", 3.0)
    budget.request_timeout()
    budget.wait_to_retry("HTTP 429", 6.0)
    assert clock.sleeps == [3.0, 6.0] and budget.remaining() == pytest.approx(1.0)


def test_a_retry_after_beyond_the_budget_raises_at_once_carrying_it() -> None:
    budget, clock = _budget(60.0)
    budget.request_timeout()
    with pytest.raises(JudgeUnavailable, match="asked to retry after 61s") as info:
        budget.wait_to_retry("HTTP 529", 61.0)
    assert info.value.retry_after == 61.0  # the caller parks the trace that long
    assert clock.sleeps == []  # no waiting at all


def test_a_spent_budget_raises_instead_of_sending() -> None:
    budget, clock = _budget(5.0)
    budget.request_timeout()
    clock.advance(5.0)
    with pytest.raises(JudgeUnavailable, match="would retry after"):
        budget.wait_to_retry("timeout", None)
    with pytest.raises(JudgeUnavailable, match="budget of 5s spent"):
        budget.request_timeout()


def test_backoff_doubles_with_jitter_and_is_capped() -> None:
    assert [backoff_s(n, lambda: 0.0) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert backoff_s(0, lambda: 1.0) == 0.375


def test_retry_after_headers_and_retryable_statuses() -> None:
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None and parse_retry_after(None) is None
    assert [retryable(s) for s in (400, 401, 408, 409, 429, 500, 529)] == [
        False,
        False,
        True,
        True,
        True,
        True,
        True,
    ]


def test_a_bad_budget_is_refused() -> None:
    with pytest.raises(ValueError):
        CallBudget(0, 30)
