from __future__ import annotations

import pytest

from ragtrace.evaluation.judges import (
    ClaimVerdict,
    GroundednessResult,
    JudgeInfo,
    JudgeUnavailable,
    MetricResult,
    Usage,
)

INFO = JudgeInfo("anthropic", "claude-haiku-4-5-20251001", "a" * 64)


def test_claim_is_entailed_only_with_a_verified_quote() -> None:
    ok = ClaimVerdict("c", True, "quote", True)
    fabricated = ClaimVerdict("c", True, "made up", False)
    empty = ClaimVerdict("c", True, None, False)
    rejected = ClaimVerdict("c", False, None, False)
    assert (ok.entailed, ok.downgraded, ok.downgrade_reason) == (True, False, None)
    assert (fabricated.entailed, fabricated.downgraded) == (False, True)
    assert fabricated.downgrade_reason == "evidence quote not found in the context"
    assert (empty.entailed, empty.downgraded) == (False, True)
    assert empty.downgrade_reason == "no evidence quote given"
    assert (rejected.entailed, rejected.downgraded, rejected.downgrade_reason) == (
        False,
        False,
        None,
    )


def test_claim_verdict_validation() -> None:
    with pytest.raises(ValueError, match="non-empty evidence"):
        ClaimVerdict("c", True, "  ", True)
    with pytest.raises(ValueError, match="support"):
        ClaimVerdict("c", True, None, False, support=1.5)


def test_score_is_verified_entailed_over_claims() -> None:
    claims = [
        ClaimVerdict("a", True, "q", True),
        ClaimVerdict("b", True, "x", False),
        ClaimVerdict("c", False, None, False),
        ClaimVerdict("d", True, "q", True),
    ]
    result = GroundednessResult.from_claims(claims, INFO)
    assert result.score == 0.5
    assert result.unsupported_claims == 2
    assert result.downgraded_claims == 1
    assert result.no_claims is False


def test_no_claims_scores_one_flagged() -> None:
    result = GroundednessResult.from_claims([], INFO)
    assert (result.score, result.no_claims, result.claims) == (1.0, True, ())


def test_error_result_has_no_score() -> None:
    result = GroundednessResult.failed("malformed", INFO, usage=Usage(10, 2))
    assert result.score is None and result.error == "malformed"
    with pytest.raises(ValueError, match="score is None exactly when error"):
        GroundednessResult(0.5, (), INFO, error="boom")
    with pytest.raises(ValueError, match="score is None exactly when error"):
        GroundednessResult(None, (), INFO)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        GroundednessResult(1.5, (), INFO)
    with pytest.raises(ValueError, match="no_claims"):
        GroundednessResult(0.5, (), INFO, no_claims=True)


def test_round_trip_through_dict() -> None:
    result = GroundednessResult.from_claims(
        [ClaimVerdict("a", True, "q", True), ClaimVerdict("b", True, "x", False, support=0.25)],
        INFO,
        usage=Usage(100, 20, 5, 7),
        cost_usd=0.0123,
        latency_s=0.5,
    )
    d = result.to_dict()
    assert d["claims"][1] == {  # type: ignore[index]
        "claim": "b",
        "entailed": False,
        "judge_entailed": True,
        "evidence": "x",
        "evidence_verified": False,
        "downgraded": True,
        "downgrade_reason": "evidence quote not found in the context",
        "support": 0.25,
    }
    assert GroundednessResult.from_dict(d) == result
    failed = GroundednessResult.failed("boom", INFO)
    assert GroundednessResult.from_dict(failed.to_dict()) == failed


def test_usage_adds_and_validates() -> None:
    assert Usage(1, 2, 3, 4) + Usage(10, 20, 30, 40) == Usage(11, 22, 33, 44)
    assert Usage(1, 2, 3, 4).total_tokens == 10
    with pytest.raises(ValueError, match="input_tokens"):
        Usage(-1)


def test_judge_info_and_metric_result_validate() -> None:
    with pytest.raises(ValueError, match="64 hex"):
        JudgeInfo("x", None, "abc")
    with pytest.raises(ValueError, match="score is None exactly when error"):
        MetricResult("answer_relevancy", None, INFO)
    assert JudgeUnavailable("down", 2.5).retry_after == 2.5
    assert JudgeUnavailable("down").retry_after is None
