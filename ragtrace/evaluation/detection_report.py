"""A judge measured against people on a hallucination set: the report of ``ragtrace
detect-eval`` and of the judge-quality benchmark.

Per task type and overall, over the **test** split (held out): response-level precision,
recall and F1 at the configured threshold (an answer scoring strictly below it is flagged),
AUROC of the judge's ranking key (:attr:`JudgedAnswer.key`: the groundedness score, or a
finer key where the judge gives one), and the F1 at the threshold on that key that maximised F1
on the **tune** split (:func:`~ragtrace.evaluation.detection.best_threshold`, chosen per group on that group's
tuning answers). Where people marked spans and the judge returned units, the characters of the
units it found unsupported are compared with the characters people marked
(:class:`~ragtrace.evaluation.detection.SpanOverlap`). Answers the judge failed on are left out
and counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .detection import Confusion, SpanOverlap, Threshold, auroc, best_threshold, confusion_at
from .hallucination_sets import LabelledAnswer

__all__ = [
    "DetectionGroup",
    "DetectionReport",
    "JudgedAnswer",
    "build_report",
    "locate_units",
]

OVERALL = "overall"


@dataclass(frozen=True)
class JudgedAnswer:
    """What a judge made of one answer: its groundedness ``score``, the character spans of the
    units it found unsupported (None when the judge gave no units to locate), and ``rank``, a
    continuous key that orders answers by suspicion, not on the groundedness scale (the lexical
    judge's :func:`~ragtrace.evaluation.judges.lexical.judge.ranking_score`; None: the score).
    AUROC and the tuned threshold use :attr:`key`; the configured threshold applies to ``score``.
    """

    score: float
    flagged: tuple[tuple[int, int], ...] | None = None
    rank: float | None = None

    def __post_init__(self) -> None:
        if math.isnan(self.score) or not 0.0 <= self.score <= 1.0:
            raise ValueError(f"JudgedAnswer.score must be in [0, 1], got {self.score!r}")
        if self.rank is not None and not math.isfinite(self.rank):
            raise ValueError(f"JudgedAnswer.rank must be finite, got {self.rank!r}")

    @property
    def key(self) -> float:
        """The ranking key: ``rank`` when the judge gave one, else ``score``."""
        return self.score if self.rank is None else self.rank


def _squeeze(text: str, start: int = 0) -> tuple[str, list[int]]:
    kept = [(i, ch) for i, ch in enumerate(text[start:], start) if not ch.isspace()]
    return "".join(ch for _, ch in kept), [i for i, _ in kept]


def locate_units(answer: str, units: Sequence[str]) -> list[tuple[int, int] | None]:
    """Each unit's ``(start, end)`` in ``answer``, searched in reading order ignoring
    whitespace (the segmenter collapses it); None for a unit not found verbatim (the segmenter
    also drops list markers and citation markers, which can break the match)."""
    squeezed, offsets = _squeeze(answer)
    located: list[tuple[int, int] | None] = []
    cursor = 0
    for unit in units:
        needle, _ = _squeeze(unit)
        at = squeezed.find(needle, cursor) if needle else -1
        if at < 0:
            located.append(None)
            continue
        end = at + len(needle)
        located.append((offsets[at], offsets[end - 1] + 1))
        cursor = end
    return located


@dataclass(frozen=True)
class DetectionGroup:
    """One task type's (or ``overall``) figures; see the module docstring."""

    name: str
    tune: int
    test: int
    test_hallucinated: int
    at_threshold: Confusion
    auroc: float
    tuned: Threshold | None
    at_tuned: Confusion | None
    spans: SpanOverlap | None

    def to_dict(self) -> dict[str, object]:
        return {
            "task_type": self.name,
            "tune_answers": self.tune,
            "test_answers": self.test,
            "test_hallucinated": self.test_hallucinated,
            "at_threshold": self.at_threshold.to_dict(),
            "auroc": self.auroc,
            "tuned_threshold": None if self.tuned is None else self.tuned.to_dict(),
            "at_tuned_threshold": None if self.at_tuned is None else self.at_tuned.to_dict(),
            "span_overlap": None if self.spans is None else self.spans.to_dict(),
        }


@dataclass(frozen=True)
class DetectionReport:
    """``groups``: one per task type (sorted), then ``overall``. ``failed``: answers the judge
    returned an error for; ``unjudged``: answers with no result yet (a stopped run)."""

    threshold: float
    groups: tuple[DetectionGroup, ...]
    failed: int
    unjudged: int

    @property
    def overall(self) -> DetectionGroup:
        return self.groups[-1]

    def group(self, name: str) -> DetectionGroup:
        for g in self.groups:
            if g.name == name:
                return g
        raise KeyError(name)

    def to_dict(self) -> dict[str, object]:
        return {
            "threshold": self.threshold,
            "positive_class": "hallucinated (an answer scoring below the threshold is flagged)",
            "reported_on": "test split; thresholds tuned on the tune split",
            "failed_answers": self.failed,
            "unjudged_answers": self.unjudged,
            "groups": [g.to_dict() for g in self.groups],
        }


def _group(
    name: str,
    pairs: Sequence[tuple[LabelledAnswer, JudgedAnswer]],
    threshold: float,
) -> DetectionGroup:
    tune = [(a, j) for a, j in pairs if a.split == "tune"]
    test = [(a, j) for a, j in pairs if a.split == "test"]
    scores = [j.score for _, j in test]
    keys = [j.key for _, j in test]
    labels = [a.hallucinated for a, _ in test]
    tuned = best_threshold([j.key for _, j in tune], [a.hallucinated for a, _ in tune])
    spans: SpanOverlap | None = None
    for a, j in test:
        if a.spans is not None and j.flagged is not None:
            one = SpanOverlap.of(j.flagged, a.spans)
            spans = one if spans is None else spans + one
    return DetectionGroup(
        name,
        len(tune),
        len(test),
        sum(labels),
        confusion_at(scores, labels, threshold),
        auroc(keys, labels),
        tuned,
        None if tuned is None else confusion_at(keys, labels, tuned.value),
        spans,
    )


def build_report(
    items: Sequence[LabelledAnswer],
    judged: Mapping[str, JudgedAnswer | None],
    threshold: float,
) -> DetectionReport:
    """The report over ``items``; ``judged`` maps an id to its judgement, or None when the judge
    failed on it; an id missing from ``judged`` is unjudged."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold!r}")
    pairs: list[tuple[LabelledAnswer, JudgedAnswer]] = []
    failed = unjudged = 0
    for item in items:
        if item.id not in judged:
            unjudged += 1
            continue
        j = judged[item.id]
        if j is None:
            failed += 1
        else:
            pairs.append((item, j))
    tasks = sorted({a.task_type for a, _ in pairs})
    groups = [_group(t, [p for p in pairs if p[0].task_type == t], threshold) for t in tasks]
    groups.append(_group(OVERALL, pairs, threshold))
    return DetectionReport(threshold, tuple(groups), failed, unjudged)
