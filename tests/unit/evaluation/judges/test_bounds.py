"""Bounds on one judgement: a huge answer or context is refused as ``too_large`` — quickly,
never as a partial score, and never sent to a paid judge (the fake API records every request)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from ragtrace.evaluation.judges import (
    TOO_LARGE,
    GroundednessResult,
    JudgeLimits,
    JudgeSpec,
    LexicalJudge,
    is_too_large,
    make_judge,
)
from ragtrace.evaluation.judges.bounds import CHARS_PER_TOKEN
from tests.fakes.anthropic_server import FakeAnthropic, entail_all
from tests.unit.evaluation.judges.backends import Backend

SOURCE = "Audit log retention on the Enterprise plan is 90 days."


def sentences(n: int) -> str:
    return " ".join(f"Audit log retention for team {i} is 90 days." for i in range(n))


def test_a_25000_sentence_answer_is_refused_fast_naming_the_limit() -> None:
    answer = sentences(25_000)  # about 1.1 MB
    judge = LexicalJudge()
    start = time.process_time()
    result = judge.groundedness(answer, [SOURCE])
    spent = time.process_time() - start
    assert result.score is None and is_too_large(result.error)
    assert result.error == (
        f"{TOO_LARGE}: answer has {len(answer)} characters, limit 20000 "
        f"(max_answer_chars; {len(answer) - 20000} over)"
    )
    assert result.claims == () and result.units == ()
    assert spent < 5.0  # generous: the refusal costs milliseconds; judging it took minutes


def test_the_unit_limit_refuses_an_answer_within_the_character_limit() -> None:
    answer = sentences(25_000)
    judge = make_judge(JudgeSpec("lexical", limits=JudgeLimits(max_answer_chars=2_000_000)))
    result = judge.groundedness(answer, [SOURCE])
    assert result.error == f"{TOO_LARGE}: answer has 25000 units, limit 200 (max_units; 24800 over)"
    stored = GroundednessResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert stored == result and is_too_large(stored.error)


def test_an_answer_at_the_unit_limit_is_judged_whole() -> None:
    judge = LexicalJudge(limits=JudgeLimits(max_units=3))
    result = judge.groundedness(sentences(3), [SOURCE])
    assert result.error is None and len(result.units) == 3
    refused = judge.groundedness(sentences(4), [SOURCE])
    assert refused.error is not None and "answer has 4 units, limit 3" in refused.error


def test_the_context_limit_counts_every_passage() -> None:
    assert len(SOURCE) == 54
    judge = LexicalJudge(limits=JudgeLimits(max_context_chars=108))
    result = judge.groundedness("Audit logs are kept for 90 days.", [SOURCE, SOURCE])
    assert result.error is None
    result = judge.groundedness("Audit logs are kept for 90 days.", [SOURCE] * 2 + ["x" * 10])
    assert result.error == (
        f"{TOO_LARGE}: context has 118 characters, limit 108 (max_context_chars; 10 over)"
    )


def test_claims_mode_is_bounded_too() -> None:
    judge = LexicalJudge(limits=JudgeLimits(max_units=2))
    result = judge.judge_claims(["a claim", "another", "a third"], [SOURCE])
    assert result.error is not None and "answer has 3 units, limit 2" in result.error


def test_limits_must_be_positive_ints() -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_units must be an int > 0"):
            JudgeLimits(max_units=bad)  # type: ignore[arg-type]


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(responder=entail_all) as fake:
        yield fake


def test_a_paid_judge_is_never_sent_a_prompt_above_the_bound(
    api: FakeAnthropic, backend: Backend
) -> None:
    limits = JudgeLimits(max_context_chars=10_000_000, max_prompt_tokens=3_000)
    judge = backend.judge(api, limits=limits)
    big = [SOURCE + " " + "Filler words about other plans. " * 400] * 3  # ~40,000 chars
    refused = judge.groundedness("Audit logs are kept for 90 days.", big)
    assert refused.score is None and refused.error is not None
    assert refused.error.startswith(f"{TOO_LARGE}: prompt has ")
    assert "limit 3000 (max_prompt_tokens;" in refused.error
    assert judge.refusal("Audit logs are kept for 90 days.", big) == refused.error
    assert api.requests == []  # refused before any request

    huge = judge.groundedness(sentences(25_000), [SOURCE])  # default answer bounds
    assert huge.error is not None and is_too_large(huge.error)
    assert api.requests == []

    fine = judge.groundedness("Audit logs are kept for 90 days.", [SOURCE])
    assert fine.error is None and fine.score == 1.0
    assert len(api.requests) == 1
    for request in api.requests:  # what went over the wire stays under the bound
        assert len(json.dumps(request.body)) / CHARS_PER_TOKEN <= limits.max_prompt_tokens
