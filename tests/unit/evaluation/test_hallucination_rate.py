"""The not-grounded rate, raw and corrected from the matching calibration stamp."""

from __future__ import annotations

import pytest

from ragtrace.evaluation.calibration import CalibrationStamp, Confusion
from ragtrace.evaluation.hallucination_rate import (
    CALIBRATE_HINT,
    hallucination_rate,
    judge_accuracy,
)
from ragtrace.evaluation.judges.base import JudgeInfo

JUDGE = JudgeInfo("anthropic", "claude-haiku-4-5-20251001", "a" * 64)
# 100 claims people found unsupported (80 caught by the judge), 200 supported (190 passed)
CONFUSION = Confusion(both_entailed=190, judge_only=20, human_only=10, neither=80)
AT = "2026-12-01T10:00:00+00:00"


def _stamp(judge: JudgeInfo = JUDGE, confusion: Confusion | None = CONFUSION) -> CalibrationStamp:
    return CalibrationStamp(judge, 0.9, 0.78, 300, AT, confusion)


def test_sensitivity_and_specificity_treat_unsupported_as_positive() -> None:
    sensitivity, specificity = judge_accuracy(CONFUSION)
    assert (sensitivity.k, sensitivity.n) == (80, 100)
    assert (specificity.k, specificity.n) == (190, 200)


def test_the_matching_stamp_corrects_the_raw_rate() -> None:
    rate = hallucination_rate(250, 2000, JUDGE, _stamp())
    assert (rate.raw.k, rate.raw.n) == (250, 2000)
    assert rate.corrected is not None and rate.note is None and rate.calibrated_at == AT
    # (0.125 + 0.95 - 1) / (0.8 + 0.95 - 1) = 0.1
    assert rate.corrected.value == pytest.approx(0.1)
    text = "\n".join(rate.lines())
    assert "12.5 % [11.1, 14.0] n=2000" in text
    assert "corrected for the judge's error: 10.0 %" in text
    assert "sensitivity 80.0 % [71.1, 86.7] n=100" in text
    doc = rate.to_dict()
    assert doc["corrected"]["value"] == pytest.approx(0.1)  # type: ignore[index]
    assert doc["corrected"]["sensitivity"]["n"] == 100  # type: ignore[index]


@pytest.mark.parametrize(
    ("judge", "stamp", "why"),
    [
        (JUDGE, None, "no calibration"),
        (None, _stamp(), "no calibration"),
        (JudgeInfo("anthropic", "claude-haiku-4-5-20251001", "b" * 64), _stamp(), "another judge"),
        (JUDGE, _stamp(confusion=None), "predates kept confusion counts"),
        (JUDGE, _stamp(confusion=Confusion(10, 0, 2, 0)), "claims of both kinds"),
    ],
)
def test_without_a_usable_stamp_the_rate_is_uncorrected_and_says_how_to_calibrate(
    judge: JudgeInfo | None, stamp: CalibrationStamp | None, why: str
) -> None:
    rate = hallucination_rate(25, 200, judge, stamp)
    assert rate.corrected is None
    assert rate.note is not None and why in rate.note and CALIBRATE_HINT in rate.note
    lines = rate.lines()
    assert lines[0].endswith("— uncorrected") and "12.5 %" in lines[0]
    assert "ragtrace calibrate" in lines[1]
