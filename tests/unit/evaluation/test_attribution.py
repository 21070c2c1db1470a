from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from ragtrace.evaluation.attribution import Cell, Thresholds, attribute
from ragtrace.evaluation.judges import AnthropicJudge, PriceTable
from ragtrace.evaluation.retrieval import recall_at_k
from tests.fakes.anthropic_server import FakeAnthropic, claims_reply

C9930 = (
    "Audit log retention on the Enterprise plan is 90 days. Logs older than the "
    "retention window are deleted nightly and cannot be restored."
)
AUDIT_ANSWER = (
    "Audit logs are retained for 90 days, after which they are deleted nightly and "
    "cannot be restored. [c-9930]"
)
EXPORTS_CHUNK = (
    "POST /v1/exports starts an asynchronous export and returns 202 Accepted with "
    "a job ID; poll GET /v1/exports/{id} until the status is complete."
)
EXPORTS_ANSWER = "POST /v1/exports returns the exported file directly with 200 OK."


@pytest.fixture
def judge() -> Iterator[tuple[FakeAnthropic, AnthropicJudge]]:
    with FakeAnthropic(responder=None) as api:
        yield api, AnthropicJudge(api_key="k", base_url=api.base_url, prices=PriceTable())


def test_cells() -> None:
    assert attribute(1.0, 1.0) is Cell.FINE
    assert attribute(0.0, 1.0) is Cell.RETRIEVAL_FAILED
    assert attribute(1.0, 0.2) is Cell.GENERATION_FAILED
    assert attribute(0.0, 0.0) is Cell.BOTH_FAILED
    assert attribute(None, 1.0) is Cell.UNLABELLED
    assert attribute(math.nan, None) is Cell.UNLABELLED
    assert attribute(0.5, None) is Cell.UNJUDGED
    assert attribute(0.5, math.nan) is Cell.UNJUDGED


def test_every_answer_outside_the_table_gets_a_verdict() -> None:
    # No label, judged below the threshold: a hallucination on unlabelled traffic.
    assert attribute(None, 0.5) is Cell.UNLABELLED_NOT_GROUNDED
    assert attribute(math.nan, 0.79) is Cell.UNLABELLED_NOT_GROUNDED
    assert attribute(None, 0.8) is Cell.UNLABELLED
    assert attribute(None, math.nan) is Cell.UNLABELLED
    assert attribute(None, 0.5, Thresholds(groundedness=0.4)) is Cell.UNLABELLED
    # Labelled unanswerable: what the answer did places it, whatever its groundedness.
    assert attribute(math.nan, 1.0, declined=False) is Cell.UNANSWERABLE_ANSWERED
    assert attribute(math.nan, 0.1, declined=True) is Cell.UNANSWERABLE_DECLINED
    assert attribute(math.nan, None, declined=True) is Cell.UNANSWERABLE_DECLINED


def test_thresholds_are_inclusive_passes_and_configurable() -> None:
    assert attribute(0.5, 0.8) is Cell.FINE  # at the threshold: passes
    assert attribute(0.49, 0.8) is Cell.RETRIEVAL_FAILED
    assert attribute(0.5, 0.79) is Cell.GENERATION_FAILED
    strict = Thresholds(recall=1.0, groundedness=1.0)
    assert attribute(0.67, 1.0, strict) is Cell.RETRIEVAL_FAILED
    assert Cell.GENERATION_FAILED.value == "generation_failed"
    with pytest.raises(ValueError, match="Thresholds.recall"):
        Thresholds(recall=1.5)


def test_seed_audit_log_question_is_a_retrieval_failure(
    judge: tuple[FakeAnthropic, AnthropicJudge],
) -> None:
    api, anthropic_judge = judge
    api.enqueue(
        claims_reply(
            [
                (
                    "Audit logs are retained for 90 days.",
                    True,
                    "Audit log retention on the Enterprise plan is 90 days.",
                ),
                (
                    "They are deleted nightly and cannot be restored.",
                    True,
                    "Logs older than the retention window are deleted nightly and cannot be restored.",
                ),
            ]
        )
    )
    groundedness = anthropic_judge.groundedness(AUDIT_ANSWER, [C9930])
    assert groundedness.score == 1.00
    # the Team-plan chunk is the gold; only the Enterprise passage arrived
    recall = recall_at_k(["c-9930", "c-1204", "c-0007"], {"c-9931"}, 5)
    assert recall == 0.0
    assert attribute(recall, groundedness.score) is Cell.RETRIEVAL_FAILED


def test_seed_exports_question_is_a_generation_failure(
    judge: tuple[FakeAnthropic, AnthropicJudge],
) -> None:
    api, anthropic_judge = judge
    api.enqueue(
        claims_reply(
            [
                ("POST /v1/exports returns the exported file directly.", False, None),
                ("POST /v1/exports responds with 200 OK.", False, None),
            ]
        )
    )
    groundedness = anthropic_judge.groundedness(EXPORTS_ANSWER, [EXPORTS_CHUNK])
    assert groundedness.score == 0.0
    recall = recall_at_k(["c-exports", "c-2", "c-3"], {"c-exports"}, 5)  # correct chunk at rank 1
    assert recall == 1.0
    assert attribute(recall, groundedness.score) is Cell.GENERATION_FAILED
