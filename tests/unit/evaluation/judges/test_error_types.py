"""error.type of a judge failure: each message form the judges produce maps to its class."""

from __future__ import annotations

import pytest

from ragtrace.evaluation.judges.bounds import JudgeLimits
from ragtrace.evaluation.judges.error_types import OTHER, judge_error_type
from ragtrace.evaluation.judges.model.retry import CallBudget


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("malformed judge output after one retry: no tool call", "malformed_output"),
        ("malformed judge output: missing units", "malformed_output"),
        ("unreadable response body: Expecting value", "malformed_output"),
        ("response body is not the openai API's response shape: {}", "malformed_output"),
        ("judge request rejected: HTTP 400: prompt is too long", "400"),
        ("judge request rejected: HTTP 401: invalid x-api-key", "401"),
        ("judge request rejected: HTTP 413: request too large", "too_large"),
        (
            "judge asked to retry after 30s with 2.00s left of its 60s budget (3 attempts): "
            "HTTP 429: rate_limit_error",
            "rate_limit",
        ),
        (
            "judge would retry after 4s with 1.00s left of its 60s budget (5 attempts): "
            "APITimeoutError: Request timed out.",
            "timeout",
        ),
        (
            "judge would retry after 4s with 1.00s left of its 60s budget (5 attempts): "
            "HTTP 529: overloaded",
            "unavailable",
        ),
        ("judge budget of 60s spent", "budget"),
        ("batch request expired", "timeout"),
        ("batch request errored", "batch_errored"),
        ("batch request canceled", "batch_canceled"),
        ("message batches API: connection refused", "unavailable"),
        ("something else entirely", OTHER),
        (None, OTHER),
    ],
)
def test_each_message_form_has_its_error_type(message: str | None, expected: str) -> None:
    assert judge_error_type(message) == expected


def test_refusals_and_spent_budgets_as_the_judges_word_them() -> None:
    refusal = JudgeLimits(max_answer_chars=10).prompt_refusal(10**6)
    assert refusal is not None and judge_error_type(refusal) == "too_large"
    clock = iter([0.0, 100.0])
    budget = CallBudget(60, 30, clock=lambda: next(clock))
    with pytest.raises(Exception, match="judge budget") as spent:
        budget.request_timeout()
    assert judge_error_type(str(spent.value)) == "budget"
