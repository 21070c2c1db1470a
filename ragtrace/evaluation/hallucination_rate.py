"""The share of judged answers not grounded, raw and corrected for the judge's measured error.

The raw rate is the judge's share of answers scored below the groundedness threshold, with its
Wilson interval. The corrected rate comes from the last calibration stamp
(:mod:`ragtrace.evaluation.calibration`) when it is of the judge in use (same name, model and
prompt hash) and holds its confusion matrix. "Not supported" is the positive class:

- sensitivity = claims both human and judge found unsupported / claims the human found
  unsupported (``neither / (neither + judge_only)``);
- specificity = claims both found entailed / claims the human found entailed
  (``both_entailed / (both_entailed + human_only)``);

and :func:`ragtrace.evaluation.rates.rogan_gladen` gives the corrected share with an interval
that carries the calibration's own uncertainty. The calibration measures the judge per claim;
applying it to the per-answer verdict assumes the answer verdict errs as a claim verdict does
(exact for one-claim answers: calibrate with whole answers as claims to meet it).
Without a matching stamp the rate is *uncorrected* and ``note`` says how to calibrate.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragtrace.evaluation.calibration import CalibrationStamp, Confusion
from ragtrace.evaluation.judges.base import JudgeInfo
from ragtrace.evaluation.rates import CorrectedRate, Rate, rogan_gladen, wilson

__all__ = ["CALIBRATE_HINT", "HallucinationRate", "hallucination_rate", "judge_accuracy"]

CALIBRATE_HINT = (
    "run `ragtrace calibrate --labels HUMAN.jsonl` with the judge in use to correct it "
    "for the judge's measured error"
)


def judge_accuracy(confusion: Confusion) -> tuple[Rate, Rate]:
    """(sensitivity, specificity) of the judge at finding unsupported claims, as Wilson rates
    of their calibration counts."""
    unsupported = confusion.neither + confusion.judge_only
    supported = confusion.both_entailed + confusion.human_only
    return wilson(confusion.neither, unsupported), wilson(confusion.both_entailed, supported)


@dataclass(frozen=True)
class HallucinationRate:
    """``raw``: judged answers not grounded, of all judged. ``corrected``: None when
    uncorrected, and then ``note`` says why and how to calibrate."""

    raw: Rate
    corrected: CorrectedRate | None
    calibrated_at: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "raw": self.raw.to_dict(),
            "corrected": None if self.corrected is None else self.corrected.to_dict(),
            "calibrated_at": self.calibrated_at,
            "note": self.note,
        }

    def lines(self) -> list[str]:
        """The rate in words: raw, then corrected (or why not)."""
        raw = f"not grounded (raw, judge's verdicts): {self.raw.describe()}"
        if self.corrected is None:
            return [raw + " — uncorrected", f"  {self.note}"]
        c = self.corrected
        return [
            raw,
            f"not grounded, corrected for the judge's error: {c.describe()} "
            f"(sensitivity {c.sensitivity.describe()}, specificity "
            f"{c.specificity.describe()}, calibrated {self.calibrated_at})",
        ]


def hallucination_rate(
    not_grounded: int, judged: int, judge: JudgeInfo | None, stamp: CalibrationStamp | None
) -> HallucinationRate:
    """The raw rate ``not_grounded / judged``, corrected by ``stamp`` when it matches ``judge``
    and holds a confusion matrix with both classes."""
    raw = wilson(not_grounded, judged)
    if stamp is None or judge is None:
        return HallucinationRate(raw, None, note="no calibration: " + CALIBRATE_HINT)
    if not stamp.matches(judge):
        return HallucinationRate(
            raw,
            None,
            note=f"the last calibration ({stamp.calibrated_at}) is of another judge or prompt: "
            + CALIBRATE_HINT,
        )
    if stamp.confusion is None:
        return HallucinationRate(
            raw,
            None,
            note=f"the calibration of {stamp.calibrated_at} predates kept confusion counts: "
            + CALIBRATE_HINT,
        )
    sensitivity, specificity = judge_accuracy(stamp.confusion)
    if not (sensitivity.n and specificity.n):
        return HallucinationRate(
            raw,
            None,
            note="the calibration set needs claims of both kinds (supported and not): "
            + CALIBRATE_HINT,
        )
    return HallucinationRate(
        raw, rogan_gladen(raw, sensitivity, specificity), stamp.calibrated_at, None
    )
