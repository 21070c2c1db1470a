"""Four-cell attribution of a question: which stage failed.

Recall says whether the evidence arrived; groundedness whether it was used. A score *below* its
threshold fails:

==================  ======================  =====================
                    groundedness passes     groundedness fails
==================  ======================  =====================
recall passes       ``fine``                ``generation_failed``
recall fails        ``retrieval_failed``    ``both_failed``
==================  ======================  =====================

A question with no gold set (recall ``None`` or NaN: unlabelled or unanswerable) is
``unlabelled``; one with recall but no groundedness score (not judged, or the judge errored) is
``unjudged``. Unlabelled wins when both are missing: the recall side is what places a question.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

__all__ = ["Cell", "Thresholds", "attribute"]


class Cell(str, Enum):
    FINE = "fine"
    RETRIEVAL_FAILED = "retrieval_failed"
    GENERATION_FAILED = "generation_failed"
    BOTH_FAILED = "both_failed"
    UNLABELLED = "unlabelled"
    UNJUDGED = "unjudged"


@dataclass(frozen=True)
class Thresholds:
    """A score strictly below its threshold fails."""

    recall: float = 0.5
    groundedness: float = 0.8

    def __post_init__(self) -> None:
        for name in ("recall", "groundedness"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0.0 <= value <= 1.0
            ):
                raise ValueError(f"Thresholds.{name} must be in [0, 1], got {value!r}")


def _missing(x: float | None) -> bool:
    return x is None or math.isnan(x)


def attribute(
    recall: float | None, groundedness: float | None, thresholds: Thresholds = Thresholds()
) -> Cell:
    """The cell of one question (see the module docstring)."""
    if _missing(recall):
        return Cell.UNLABELLED
    if _missing(groundedness):
        return Cell.UNJUDGED
    assert recall is not None and groundedness is not None
    retrieval_ok = recall >= thresholds.recall
    generation_ok = groundedness >= thresholds.groundedness
    if retrieval_ok and generation_ok:
        return Cell.FINE
    if retrieval_ok:
        return Cell.GENERATION_FAILED
    if generation_ok:
        return Cell.RETRIEVAL_FAILED
    return Cell.BOTH_FAILED
