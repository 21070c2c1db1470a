"""Aggregating per-question retrieval scores into a report that says what its numbers mean.

A report always carries the recall definition in force and the average gold-set size next to the
recall figure, because the same system reports a higher "recall" under hit rate than under mean
recall, by an amount set by how many questions have several gold chunks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from ragtrace.evaluation.labels import (
    InputFileError,
    LabelledQuestion,
    label_set_version,
    parse_json,
    read_input_file,
)
from ragtrace.evaluation.rates import Rate, mean_rates, wilson
from ragtrace.evaluation.retrieval import QuestionScores, RecallDefinition, score_question

__all__ = [
    "MRR_KEY",
    "RR_KEY",
    "RetrievalReport",
    "evaluate_run",
    "load_report",
    "metric_rates",
    "per_question_key",
]

RR_KEY = "rr"
"""Per-question key of the reciprocal rank (whole list, no cutoff)."""
MRR_KEY = "mrr"
"""Report-level key of its mean."""

_PER_K = ("recall", "hit_rate", "precision", "ndcg")


def per_question_key(metric: str) -> str:
    """The per-question key whose mean is report metric ``metric`` (``mrr`` → ``rr``)."""
    return RR_KEY if metric == MRR_KEY else metric


def _metric_names(ks: Sequence[int]) -> tuple[str, ...]:
    return tuple(f"{name}@{k}" for k in ks for name in _PER_K) + (MRR_KEY,)


def metric_rates(
    names: Sequence[str], columns: Sequence[Sequence[float]], *, seed: int = 0
) -> list[Rate]:
    """Metric ``names[i]`` over the per-question values ``columns[i]`` as a Rate with its 95 %
    interval: Wilson for ``hit_rate@k`` (a question hits or not), for the others a seeded
    bootstrap of the mean (same seed, same interval; every column resampled alike), or its normal
    approximation from 500 questions on (:func:`~ragtrace.evaluation.rates.mean_rates`)."""
    means = [i for i, name in enumerate(names) if not name.startswith("hit_rate@")]
    rates = dict(zip(means, mean_rates([columns[i] for i in means], seed=seed), strict=True))
    for i in range(len(names)):
        if i not in rates:
            rates[i] = wilson(sum(1 for v in columns[i] if v >= 1.0), len(columns[i]))
    return [rates[i] for i in range(len(names))]


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else float("nan")


def _nan_to_none(value: float) -> float | None:
    return None if math.isnan(value) else value


@dataclass(frozen=True)
class RetrievalReport:
    """Per-question scores at one or more cutoffs, and their means over answerable questions.

    ``per_question[qid]`` maps ``recall@k`` (under ``recall_definition``), ``hit_rate@k``,
    ``precision@k``, ``ndcg@k`` for each k, and ``rr``, to a value in [0, 1]; every value is NaN
    exactly for an unanswerable question (gold size 0), which is listed, never dropped.
    """

    ks: tuple[int, ...]
    recall_definition: RecallDefinition
    per_question: Mapping[str, Mapping[str, float]]
    gold_sizes: Mapping[str, int]
    labels_version: str | None = None
    _metrics: Mapping[str, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ks = tuple(self.ks)
        if not ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in ks):
            raise ValueError(f"ks must be positive integers, got {self.ks!r}")
        if len(set(ks)) != len(ks):
            raise ValueError(f"ks must not repeat, got {self.ks!r}")
        object.__setattr__(self, "ks", tuple(sorted(ks)))
        object.__setattr__(self, "recall_definition", RecallDefinition(self.recall_definition))
        if set(self.per_question) != set(self.gold_sizes):
            raise ValueError("per_question and gold_sizes must cover the same questions")
        expected = set(self.metric_names)
        expected.discard(MRR_KEY)
        expected.add(RR_KEY)
        order = [per_question_key(name) for name in self.metric_names]
        frozen: dict[str, Mapping[str, float]] = {}
        for qid, scores in self.per_question.items():
            if set(scores) != expected:
                raise ValueError(
                    f"question {qid!r}: expected metrics {sorted(expected)}, got {sorted(scores)}"
                )
            size = self.gold_sizes[qid]
            for name, value in scores.items():
                if not (math.isnan(value) or 0.0 <= value <= 1.0):
                    raise ValueError(f"question {qid!r}: {name} must be in [0, 1], got {value}")
                if math.isnan(value) != (size == 0):
                    raise ValueError(
                        f"question {qid!r}: {name} must be NaN exactly when the gold set is empty"
                    )
            ordered = {name: float(scores[name]) for name in sorted(expected, key=order.index)}
            frozen[qid] = MappingProxyType(ordered)
        object.__setattr__(self, "per_question", MappingProxyType(frozen))
        object.__setattr__(self, "gold_sizes", MappingProxyType(dict(self.gold_sizes)))
        answerable = [qid for qid, size in self.gold_sizes.items() if size > 0]
        means = {
            name: _mean([self.per_question[q][per_question_key(name)] for q in answerable])
            for name in self.metric_names
        }
        object.__setattr__(self, "_metrics", MappingProxyType(means))

    @classmethod
    def from_scores(
        cls,
        scores: Mapping[str, Sequence[QuestionScores]],
        recall_definition: RecallDefinition,
        labels_version: str | None = None,
    ) -> RetrievalReport:
        """Build from ``{qid: [QuestionScores at each k]}``; every question needs the same ks."""
        if not scores:
            raise ValueError("no questions to report on")
        definition = RecallDefinition(recall_definition)
        ks: tuple[int, ...] | None = None
        per_question: dict[str, dict[str, float]] = {}
        gold_sizes: dict[str, int] = {}
        for qid, at_k in scores.items():
            if not at_k:
                raise ValueError(f"question {qid!r} has no scores")
            these = tuple(sorted(s.k for s in at_k))
            if ks is None:
                ks = these
            elif these != ks:
                raise ValueError(f"question {qid!r} is scored at k={these}, others at k={ks}")
            row: dict[str, float] = {}
            for s in at_k:
                row[f"recall@{s.k}"] = s.recall_as(definition)
                row[f"hit_rate@{s.k}"] = s.hit_rate
                row[f"precision@{s.k}"] = s.precision
                row[f"ndcg@{s.k}"] = s.ndcg
            row[RR_KEY] = at_k[0].reciprocal_rank
            per_question[qid] = row
            gold_sizes[qid] = at_k[0].gold_size
        assert ks is not None
        return cls(ks, definition, per_question, gold_sizes, labels_version)

    def __eq__(self, other: object) -> bool:
        # Field-wise equality would fail on NaN (NaN != NaN); the JSON form writes NaN as null.
        if not isinstance(other, RetrievalReport):
            return NotImplemented
        return self.to_json() == other.to_json()

    @property
    def metric_names(self) -> tuple[str, ...]:
        """Report metric names, in display order: per k recall, hit rate, precision, nDCG; MRR."""
        return _metric_names(self.ks)

    @property
    def metrics(self) -> Mapping[str, float]:
        """Mean of each metric over answerable questions (NaN if there are none)."""
        return self._metrics

    @property
    def questions(self) -> int:
        return len(self.gold_sizes)

    @property
    def unanswerable(self) -> int:
        """Questions with an empty gold set: excluded from every mean."""
        return sum(1 for size in self.gold_sizes.values() if size == 0)

    @property
    def avg_gold_size(self) -> float:
        """Mean gold-set size over the answerable questions (the ones the means cover)."""
        return _mean([float(s) for s in self.gold_sizes.values() if s > 0])

    def intervals(self, *, seed: int = 0) -> Mapping[str, Rate]:
        """Each report metric over the answerable questions with its n and 95 % interval
        (:func:`metric_rates`)."""
        answerable = [qid for qid, size in self.gold_sizes.items() if size > 0]
        names = self.metric_names
        columns = [
            [self.per_question[q][per_question_key(name)] for q in answerable] for name in names
        ]
        return dict(zip(names, metric_rates(names, columns, seed=seed), strict=True))

    def to_json(self) -> dict[str, object]:
        """The ``ragtrace eval --json`` document; NaN is written as null. ``intervals`` holds
        each metric with its n and 95 % interval (:meth:`intervals`); it is recomputed, never
        read back, by :meth:`from_json`."""
        doc: dict[str, object] = {
            "metrics": {name: _nan_to_none(v) for name, v in self.metrics.items()},
            "intervals": {name: r.to_dict() for name, r in self.intervals().items()},
            "per_question": {
                qid: {
                    **{name: _nan_to_none(v) for name, v in scores.items()},
                    "gold_size": self.gold_sizes[qid],
                }
                for qid, scores in self.per_question.items()
            },
            "unanswerable": self.unanswerable,
            "avg_gold_size": _nan_to_none(self.avg_gold_size),
            "recall_definition": self.recall_definition.value,
            "k": list(self.ks),
            "questions": self.questions,
        }
        if self.labels_version is not None:
            doc["labels_version"] = self.labels_version
        return doc

    @classmethod
    def from_json(cls, doc: object, source: str | Path = "<json>") -> RetrievalReport:
        """Rebuild a report from ``to_json`` output; means are recomputed, not trusted.

        Raises ``InputFileError`` naming ``source`` and the field at fault.
        """

        def bad(fld: str | None, reason: str) -> InputFileError:
            return InputFileError(source, None, fld, reason)

        if not isinstance(doc, dict):
            raise bad(None, "expected a JSON object (the output of ragtrace eval --json)")
        for key in ("per_question", "recall_definition", "k"):
            if key not in doc:
                raise bad(key, "missing (is this the output of ragtrace eval --json?)")
        try:
            definition = RecallDefinition(doc["recall_definition"])
        except ValueError:
            raise bad("recall_definition", f"unknown value {doc['recall_definition']!r}") from None
        ks = doc["k"]
        if (
            not isinstance(ks, list)
            or not ks
            or not all(isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in ks)
        ):
            raise bad("k", f"must be a non-empty list of positive integers, got {ks!r}")
        if len(set(ks)) != len(ks):
            raise bad(
                "k", f"lists a cutoff twice, got {ks!r} (each k once, as ragtrace eval writes it)"
            )
        raw = doc["per_question"]
        if not isinstance(raw, dict) or not raw:
            raise bad("per_question", "must be a non-empty object keyed by qid")
        per_question: dict[str, dict[str, float]] = {}
        gold_sizes: dict[str, int] = {}
        names = [n for n in _metric_names(ks) if n != MRR_KEY] + [RR_KEY]
        for qid, row in raw.items():
            where = f"per_question.{qid}"
            if not isinstance(row, dict):
                raise bad(where, "must be an object of metric values")
            size = row.get("gold_size")
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise bad(f"{where}.gold_size", f"must be a non-negative integer, got {size!r}")
            gold_sizes[qid] = size
            values: dict[str, float] = {}
            for name in names:
                if name not in row:
                    raise bad(f"{where}.{name}", "missing")
                value = row[name]
                if value is None:
                    values[name] = float("nan")
                elif isinstance(value, (int, float)) and not isinstance(value, bool):
                    values[name] = float(value)
                else:
                    raise bad(f"{where}.{name}", f"must be a number or null, got {value!r}")
                if math.isnan(values[name]) != (size == 0):
                    raise bad(f"{where}.{name}", "must be null exactly when gold_size is 0")
                if not math.isnan(values[name]) and not 0.0 <= values[name] <= 1.0:
                    raise bad(f"{where}.{name}", f"must be in [0, 1], got {value!r}")
            per_question[qid] = values
        version = doc.get("labels_version")
        return cls(
            tuple(ks),
            definition,
            per_question,
            gold_sizes,
            version if isinstance(version, str) else None,
        )


def load_report(path: str | Path) -> RetrievalReport:
    """Read a ``ragtrace eval --json`` file; errors name the file, line (for bad JSON) and field."""
    path = Path(path)
    text = read_input_file(path)
    try:
        doc = parse_json(text, path)
    except json.JSONDecodeError as exc:
        raise InputFileError(path, exc.lineno, None, f"not valid JSON ({exc.msg})") from None
    return RetrievalReport.from_json(doc, path)


def evaluate_run(
    questions: Sequence[LabelledQuestion],
    run: Mapping[str, Sequence[str]],
    ks: Sequence[int],
    recall_definition: RecallDefinition,
) -> RetrievalReport:
    """Score every labelled question's retrieved list at each k. ``run`` must hold every qid."""
    scores = {
        q.qid: [score_question(run[q.qid], q.gold, k) for k in sorted(set(ks))] for q in questions
    }
    return RetrievalReport.from_scores(scores, recall_definition, label_set_version(questions))
