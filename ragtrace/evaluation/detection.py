"""Hallucination detection metrics: how well a groundedness score separates answers people
marked hallucinated from answers they did not.

The positive class is *hallucinated*. A judge flags an answer when its groundedness score is
strictly below a threshold (the same rule as the four cells: a score below its threshold fails),
so a *lower* score means *more* suspect.

* :class:`Confusion` — response-level counts and their precision, recall and F1.
* :func:`auroc` — threshold-free: the probability that a random hallucinated answer scores
  lower than a random faithful one (ties count one half; Mann–Whitney U / (n⁺·n⁻)).
* :func:`best_threshold` — the threshold maximising F1 on a tuning set, to apply elsewhere.
* :class:`SpanOverlap` — character-level precision, recall and F1 of flagged characters against
  the characters people marked, summed over answers (micro-average).

Every ratio with an empty denominator is NaN, never 0: "no answer flagged" has no precision.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "Confusion",
    "SpanOverlap",
    "Threshold",
    "auroc",
    "best_threshold",
    "char_positions",
    "confusion_at",
    "f1",
]


def _ratio(num: int, den: int) -> float:
    return num / den if den else math.nan


def f1(precision: float, recall: float) -> float:
    """Harmonic mean; NaN when either is NaN, 0.0 when both are 0."""
    if math.isnan(precision) or math.isnan(recall):
        return math.nan
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


class _PrecisionRecall:
    """Precision, recall and F1 of ``tp``/``fp``/``fn`` counts (NaN where a denominator is 0)."""

    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        """tp / (tp + fp): of what was flagged, the share people marked hallucinated."""
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float:
        """tp / (tp + fn): of what people marked hallucinated, the share flagged."""
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float:
        return f1(self.precision, self.recall)


@dataclass(frozen=True)
class Confusion(_PrecisionRecall):
    """Response-level counts, positive = hallucinated: ``tp`` flagged and hallucinated, ``fp``
    flagged but faithful, ``fn`` hallucinated but passed, ``tn`` faithful and passed."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def __post_init__(self) -> None:
        for name in ("tp", "fp", "fn", "tn"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"Confusion.{name} must be a non-negative int, got {value!r}")

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    def to_dict(self) -> dict[str, float | int]:
        return {
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
        }


def _pairs(scores: Sequence[float], hallucinated: Sequence[bool]) -> None:
    if len(scores) != len(hallucinated):
        raise ValueError(f"{len(scores)} scores but {len(hallucinated)} labels")
    for s in scores:
        if math.isnan(s):
            raise ValueError("scores must not be NaN")


def confusion_at(
    scores: Sequence[float], hallucinated: Sequence[bool], threshold: float
) -> Confusion:
    """Counts when every answer scoring strictly below ``threshold`` is flagged."""
    _pairs(scores, hallucinated)
    tp = fp = fn = tn = 0
    for s, h in zip(scores, hallucinated, strict=True):
        flagged = s < threshold
        if flagged and h:
            tp += 1
        elif flagged:
            fp += 1
        elif h:
            fn += 1
        else:
            tn += 1
    return Confusion(tp, fp, fn, tn)


def auroc(scores: Sequence[float], hallucinated: Sequence[bool]) -> float:
    """P(score of a random hallucinated answer < score of a random faithful one), ties ½;
    NaN when either class is empty. Computed from average ranks in O(n log n)."""
    _pairs(scores, hallucinated)
    n_pos = sum(hallucinated)
    n_neg = len(scores) - n_pos
    if n_pos == 0 or n_neg == 0:
        return math.nan
    # Rank by descending score so the positives' rank sum counts pairs a positive "wins".
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    rank_sum = 0.0
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        average_rank = (i + j) / 2 + 1  # 1-based ranks i+1 … j+1 share their mean
        rank_sum += average_rank * sum(hallucinated[order[k]] for k in range(i, j + 1))
        i = j + 1
    u = rank_sum - n_pos * (n_pos + 1) / 2
    return u / (n_pos * n_neg)


@dataclass(frozen=True)
class Threshold:
    """A threshold chosen on tuning data and the confusion it produced there."""

    value: float
    tuning: Confusion

    def to_dict(self) -> dict[str, object]:
        return {"value": self.value, "tuning": self.tuning.to_dict()}


def best_threshold(scores: Sequence[float], hallucinated: Sequence[bool]) -> Threshold | None:
    """The threshold with the highest F1 on these answers (None for no answers).

    Candidates: the lowest score (flagging nothing), the midpoint between each two consecutive
    distinct scores, and one just above the highest score (flagging every answer) — midpoints,
    so the threshold sits between the answers it separates rather than on one of them. A tie
    in F1 goes to the lowest candidate, the one flagging fewest answers. A set with no
    hallucinated answer has F1 NaN everywhere; the lowest candidate is returned."""
    _pairs(scores, hallucinated)
    if not scores:
        return None
    total_pos = sum(hallucinated)
    total_neg = len(scores) - total_pos
    ranked = sorted(zip(scores, hallucinated, strict=True))
    best: Threshold | None = None
    best_f1 = -1.0
    below_pos = below_neg = 0  # answers strictly below the candidate: flagged
    i = 0
    while True:
        if i == 0:
            t = ranked[0][0]
        elif i < len(ranked):
            t = (ranked[i - 1][0] + ranked[i][0]) / 2
        else:
            t = math.nextafter(ranked[-1][0], math.inf)
        c = Confusion(below_pos, below_neg, total_pos - below_pos, total_neg - below_neg)
        value = -1.0 if math.isnan(c.f1) else c.f1
        if best is None or value > best_f1:
            best, best_f1 = Threshold(t, c), value
        if i == len(ranked):
            return best
        current = ranked[i][0]
        while i < len(ranked) and ranked[i][0] == current:
            below_pos += ranked[i][1]
            below_neg += not ranked[i][1]
            i += 1


def char_positions(spans: Iterable[tuple[int, int]]) -> frozenset[int]:
    """The character offsets covered by half-open ``(start, end)`` spans (overlaps merged)."""
    covered: set[int] = set()
    for start, end in spans:
        if start < 0 or end < start:
            raise ValueError(f"not a span: ({start}, {end})")
        covered.update(range(start, end))
    return frozenset(covered)


@dataclass(frozen=True)
class SpanOverlap(_PrecisionRecall):
    """Characters flagged by the judge vs characters people marked, summed over answers:
    ``tp`` flagged and marked, ``fp`` flagged only, ``fn`` marked only."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    answers: int = 0

    @classmethod
    def of(
        cls, predicted: Iterable[tuple[int, int]], gold: Iterable[tuple[int, int]]
    ) -> SpanOverlap:
        p, g = char_positions(predicted), char_positions(gold)
        return cls(len(p & g), len(p - g), len(g - p), 1)

    def __add__(self, other: SpanOverlap) -> SpanOverlap:
        return SpanOverlap(
            self.tp + other.tp, self.fp + other.fp, self.fn + other.fn, self.answers + other.answers
        )

    def to_dict(self) -> dict[str, float | int]:
        return {
            "answers": self.answers,
            "tp_chars": self.tp,
            "fp_chars": self.fp,
            "fn_chars": self.fn,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
        }
