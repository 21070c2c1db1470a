"""The decline rule: what an answer to a question labelled unanswerable did."""

from __future__ import annotations

import pytest

from ragtrace.evaluation.declines import Decline, decline


@pytest.mark.parametrize(
    "answer",
    [
        "I don't know.",
        "I do not know the answer to that.",
        "I\u2019m not sure.",  # a typographic apostrophe
        "The passages do not mention a dark mode.",
        "The provided context doesn't say which plan includes it.",
        "I cannot find that in the documentation. Please contact support.",
        "Sorry, I couldn't find any information on that. You may want to ask your administrator.",
        "There is no information about pricing in the documents.",
        "That is not covered in the docs. [c-1]",
        "",
        "I hope this helps!",  # meta only: no claim at all
    ],
)
def test_answers_that_decline(answer: str) -> None:
    verdict = decline(answer)
    assert verdict.declined, verdict.reason
    assert verdict.reason.startswith(("the answer declines", "the answer says nothing"))


@pytest.mark.parametrize(
    ("answer", "claim"),
    [
        (
            "The dashboard supports light and dark themes. [c-7700]",
            "The dashboard supports light and dark themes.",
        ),
        # A hedge that goes on to answer is an answer.
        (
            "I'm not sure, but it is probably 90 days.",
            "I'm not sure, but it is probably 90 days.",
        ),
        # One decline does not excuse a claim beside it.
        ("I don't know. Logs are kept 30 days.", "Logs are kept 30 days."),
        ("Please contact support for pricing.", "Please contact support for pricing."),
    ],
)
def test_answers_that_answer_quote_the_claim(answer: str, claim: str) -> None:
    assert decline(answer) == Decline(False, f'the answer makes a claim: "{claim}"')


def test_the_reason_quotes_the_deciding_unit() -> None:
    assert decline("I don't know. Please contact support.") == Decline(
        True, 'the answer declines: "I don\'t know."'
    )
    assert decline("") == Decline(True, "the answer says nothing")
    assert decline(None) == Decline(True, "no answer text was recorded")
    with pytest.raises(ValueError, match="reason"):
        Decline(True, "")
