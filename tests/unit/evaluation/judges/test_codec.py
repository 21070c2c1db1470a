"""Judge results keep their stored form across versions.

Results live on as JSON in the SQLite and Redis stores and in cached judgements, and are read
back by later versions. ``result_dicts.json`` holds the JSON that the hand-written
``to_dict`` methods (before the codec) wrote for every case below: each case must still
serialise to exactly those bytes (key order included) and read back equal. ``LEGACY`` holds
stored forms older writers produced, with what they read as.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragtrace.evaluation.judges import (
    ClaimVerdict,
    GroundednessResult,
    JudgeInfo,
    MetricResult,
    UnitVerdict,
    Usage,
)

FIXTURES = Path(__file__).with_name("result_dicts.json")
INFO = JudgeInfo("anthropic", "claude-haiku-4-5-20251001", "a" * 64)
LEXICAL = JudgeInfo("lexical", None, "b" * 64)

Result = JudgeInfo | Usage | ClaimVerdict | UnitVerdict | GroundednessResult | MetricResult


def cases() -> dict[str, Result]:
    """Every result type, with each optional part present and absent."""
    verified = ClaimVerdict("Logs are kept 90 days.", True, "kept for 90 days", True, unit=1)
    not_found = ClaimVerdict("b", True, "x", False, support=0.25)
    no_quote = ClaimVerdict("c", True, None, False, unit=2, check="no_quote")
    unrelated = ClaimVerdict("d", True, "some quote", True, support=0.0, unit=2, check="unrelated")
    rejected = ClaimVerdict("e", False, None, False)
    units = (
        UnitVerdict(1, "Logs are kept 90 days.", True),
        UnitVerdict(2, "They are encrypted.", False, check="coverage"),
        UnitVerdict(3, "Thanks!", False, claimless=True),
    )
    return {
        "judge_info": INFO,
        "judge_info_model_free": LEXICAL,
        "usage_empty": Usage(),
        "usage": Usage(100, 20, 5, 7),
        "claim_verified": verified,
        "claim_not_found": not_found,
        "claim_no_quote": no_quote,
        "claim_unrelated": unrelated,
        "claim_rejected": rejected,
        "unit_supported": units[0],
        "unit_coverage": units[1],
        "unit_claimless": units[2],
        "groundedness_from_claims": GroundednessResult.from_claims(
            [verified, not_found, rejected],
            INFO,
            usage=Usage(100, 20, 5, 7),
            cost_usd=0.0123,
            latency_s=0.5,
        ),
        "groundedness_no_claims": GroundednessResult.from_claims([], LEXICAL),
        "groundedness_from_units": GroundednessResult.from_units(
            units,
            [verified, no_quote, unrelated],
            INFO,
            injection_suspected=[2, 3],
            usage=Usage(1200, 300, 1000, 0),
            cost_usd=0.004,
            latency_s=1.25,
            served_model="claude-haiku-4-5-20251001",
        ),
        "groundedness_all_claimless": GroundednessResult.from_units([units[2]], [], LEXICAL),
        "groundedness_failed": GroundednessResult.failed("boom", INFO),
        "groundedness_failed_full": GroundednessResult.failed(
            "malformed output",
            INFO,
            usage=Usage(10, 2),
            cost_usd=0.001,
            latency_s=2.0,
            injection_suspected=[1],
            served_model="claude-haiku-4-5-20251001",
        ),
        "metric": MetricResult(
            "answer_correctness",
            0.75,
            INFO,
            details=({"statement": "a", "verdict": "TP"}, {"statement": "b", "verdict": "FN"}),
            usage=Usage(50, 10),
            cost_usd=0.0002,
            latency_s=0.3,
        ),
        "metric_failed": MetricResult("answer_relevancy", None, LEXICAL, error="offline"),
        "metric_served_model": MetricResult(
            "answer_relevancy", 1.0, INFO, served_model="claude-haiku-4-5-20251001"
        ),
    }


def _fixtures() -> dict[str, str]:
    data: dict[str, str] = json.loads(FIXTURES.read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("name", sorted(cases()))
def test_serialises_to_the_stored_bytes(name: str) -> None:
    assert json.dumps(cases()[name].to_dict()) == _fixtures()[name]


@pytest.mark.parametrize("name", sorted(cases()))
def test_stored_form_reads_back_equal(name: str) -> None:
    result = cases()[name]
    assert type(result).from_dict(json.loads(_fixtures()[name])) == result


def test_every_case_has_a_fixture_and_every_type_a_case() -> None:
    assert set(_fixtures()) == set(cases())
    assert {type(r) for r in cases().values()} == set(Result.__args__)


LEGACY: list[tuple[type[Any], dict[str, Any], Result]] = [
    # A claim stored before ``judge_entailed``: its ``entailed`` is the judge's verdict.
    (
        ClaimVerdict,
        {"claim": "a", "entailed": True, "evidence": "q"},
        ClaimVerdict("a", True, "q", False),
    ),
    # Unit IDs written as strings; token counts as floats; absent optional parts.
    (UnitVerdict, {"id": "2", "text": "t"}, UnitVerdict(2, "t", False)),
    (Usage, {"input_tokens": 3.0}, Usage(3)),
    (
        GroundednessResult,
        {"score": 1, "judge": {"name": "lexical", "prompt_sha256": "b" * 64}, "usage": None},
        GroundednessResult(1.0, (), LEXICAL),
    ),
    (
        MetricResult,
        {"metric": "answer_relevancy", "score": "0.5", "judge": INFO.to_dict(), "details": None},
        MetricResult("answer_relevancy", 0.5, INFO),
    ),
]


@pytest.mark.parametrize(("cls", "stored", "expected"), LEGACY)
def test_older_stored_forms_still_read(
    cls: type[Any], stored: dict[str, Any], expected: Result
) -> None:
    assert cls.from_dict(stored) == expected


@pytest.mark.parametrize(
    ("cls", "stored", "message"),
    [
        (
            GroundednessResult,
            {"score": "high", "judge": INFO.to_dict()},
            "score must be a number, got 'high'",
        ),
        (GroundednessResult, {"score": 1.0, "judge": "x"}, "judge must be an object, got 'x'"),
        (
            GroundednessResult,
            {"score": 1.0, "judge": INFO.to_dict(), "claims": {}},
            "claims must be a list",
        ),
        (
            MetricResult,
            {"metric": "m", "score": 1, "judge": INFO.to_dict(), "details": [1]},
            "details",
        ),
        (ClaimVerdict, {"claim": "a", "support": "most"}, "support must be a number, got 'most'"),
        (UnitVerdict, {"id": [1], "text": "t"}, "id must be an integer, got \\[1\\]"),
    ],
)
def test_bad_stored_forms_name_the_field(
    cls: type[Any], stored: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        cls.from_dict(stored)
