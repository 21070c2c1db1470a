"""Paired comparison of two retrieval reports over the same labelled questions.

An average hides movers: a retriever can raise MRR while putting some question's answer lower
than before. So a comparison gives, per metric, the change in the mean with a paired bootstrap
confidence interval, and the questions that got better and worse.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ragtrace.errors import RagtraceError
from ragtrace.evaluation.rates import Rate, bootstrap_intervals
from ragtrace.evaluation.report import RetrievalReport, metric_rates, per_question_key
from ragtrace.evaluation.retrieval import RecallDefinition

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "Comparison",
    "IncomparableReportsError",
    "MetricComparison",
    "Mover",
    "compare_reports",
    "paired_bootstrap_ci",
]

DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95
_EPS = 1e-12


class IncomparableReportsError(RagtraceError, ValueError):
    """The two reports do not measure the same thing (recall definition or labels differ)."""


@dataclass(frozen=True)
class Mover:
    """One question whose score changed from report A to report B."""

    qid: str
    a: float
    b: float

    @property
    def delta(self) -> float:
        return self.b - self.a


@dataclass(frozen=True)
class MetricComparison:
    """One metric over the ``n`` questions answerable in both reports.

    ``a`` and ``b`` are the means over those questions, ``delta = b - a``, and
    [``ci_low``, ``ci_high``] the paired bootstrap interval of ``delta``. ``better`` and ``worse``
    list every question that moved, largest change first.
    """

    metric: str
    a: float
    b: float
    delta: float
    ci_low: float
    ci_high: float
    n: int
    better: tuple[Mover, ...]
    worse: tuple[Mover, ...]
    a_rate: Rate | None = None
    """``a`` with its n and 95 % interval (Wilson for hit rate, bootstrap for the others)."""
    b_rate: Rate | None = None


@dataclass(frozen=True)
class Comparison:
    """Report B against report A (the baseline)."""

    metrics: tuple[MetricComparison, ...]
    recall_definition: RecallDefinition
    paired: int
    unanswerable: int
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    confidence: float
    resamples: int
    seed: int

    def metric(self, name: str) -> MetricComparison:
        for m in self.metrics:
            if m.metric == name:
                return m
        raise KeyError(name)

    @property
    def better(self) -> tuple[str, ...]:
        """Questions that improved on at least one metric, in qid order of first appearance."""
        return tuple(dict.fromkeys(m.qid for mc in self.metrics for m in mc.better))

    @property
    def worse(self) -> tuple[str, ...]:
        """Questions that got worse on at least one metric."""
        return tuple(dict.fromkeys(m.qid for mc in self.metrics for m in mc.worse))

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict; NaN is written as null."""

        def num(x: float) -> float | None:
            return None if math.isnan(x) else x

        def movers(ms: Sequence[Mover]) -> list[dict[str, object]]:
            return [{"qid": m.qid, "a": m.a, "b": m.b, "delta": m.delta} for m in ms]

        return {
            "recall_definition": self.recall_definition.value,
            "paired": self.paired,
            "unanswerable": self.unanswerable,
            "only_in_a": list(self.only_in_a),
            "only_in_b": list(self.only_in_b),
            "confidence": self.confidence,
            "resamples": self.resamples,
            "seed": self.seed,
            "metrics": {
                m.metric: {
                    "a": num(m.a),
                    "b": num(m.b),
                    "delta": num(m.delta),
                    "ci": [num(m.ci_low), num(m.ci_high)],
                    "n": m.n,
                    "a_interval": None if m.a_rate is None else m.a_rate.to_dict(),
                    "b_interval": None if m.b_rate is None else m.b_rate.to_dict(),
                    "better": movers(m.better),
                    "worse": movers(m.worse),
                }
                for m in self.metrics
            },
        }


def _check_options(resamples: int, confidence: float) -> None:
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")


def paired_bootstrap_ci(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval for mean(b - a) over paired per-question scores.

    Questions are resampled with replacement ``resamples`` times with a ``random.Random(seed)``,
    so the same inputs always give the same interval. (NaN, NaN) for no pairs.
    """
    _check_options(resamples, confidence)
    if len(a) != len(b):
        raise ValueError(f"paired scores must have equal lengths, got {len(a)} and {len(b)}")
    return bootstrap_intervals(
        [[y - x for x, y in zip(a, b, strict=True)]], resamples, confidence, seed
    )[0]


def compare_reports(
    a: RetrievalReport,
    b: RetrievalReport,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> Comparison:
    """Compare report ``b`` against baseline ``a`` on every metric both reports have.

    Questions are paired by qid; those in only one report are listed, not scored. Raises
    ``IncomparableReportsError`` when the recall definitions differ (the numbers would move with
    no change in the system) or the labels differ (a paired question's gold-set size or the
    label-set version differs).
    """
    _check_options(resamples, confidence)
    if a.recall_definition is not b.recall_definition:
        raise IncomparableReportsError(
            f"recall definitions differ: A uses {a.recall_definition.value}, "
            f"B uses {b.recall_definition.value}; re-run one with --recall-definition"
        )
    if a.labels_version and b.labels_version and a.labels_version != b.labels_version:
        raise IncomparableReportsError(
            f"label sets differ: A was scored against labels {a.labels_version}, "
            f"B against {b.labels_version}; score both runs against the same labels file"
        )
    common = [qid for qid in a.gold_sizes if qid in b.gold_sizes]
    for qid in common:
        if a.gold_sizes[qid] != b.gold_sizes[qid]:
            raise IncomparableReportsError(
                f"question {qid!r} has {a.gold_sizes[qid]} gold chunk(s) in A and "
                f"{b.gold_sizes[qid]} in B: the reports were scored against different labels"
            )
    paired = [qid for qid in common if a.gold_sizes[qid] > 0]
    names = [name for name in a.metric_names if name in set(b.metric_names)]
    rows_a = [[a.per_question[q][per_question_key(name)] for q in paired] for name in names]
    rows_b = [[b.per_question[q][per_question_key(name)] for q in paired] for name in names]
    diffs = [
        [y - x for x, y in zip(ra, rb, strict=True)] for ra, rb in zip(rows_a, rows_b, strict=True)
    ]
    intervals = bootstrap_intervals(diffs, resamples, confidence, seed)
    rates_a = metric_rates(names, rows_a, seed=seed)
    rates_b = metric_rates(names, rows_b, seed=seed)
    n = len(paired)
    results = []
    for name, ra, rb, (low, high), rate_a, rate_b in zip(
        names, rows_a, rows_b, intervals, rates_a, rates_b, strict=True
    ):
        movers = [Mover(q, x, y) for q, x, y in zip(paired, ra, rb, strict=True)]
        mean_a = math.fsum(ra) / n if n else math.nan
        mean_b = math.fsum(rb) / n if n else math.nan
        results.append(
            MetricComparison(
                metric=name,
                a=mean_a,
                b=mean_b,
                delta=mean_b - mean_a,
                ci_low=low,
                ci_high=high,
                n=n,
                better=tuple(sorted((m for m in movers if m.delta > _EPS), key=lambda m: -m.delta)),
                worse=tuple(sorted((m for m in movers if m.delta < -_EPS), key=lambda m: m.delta)),
                a_rate=rate_a,
                b_rate=rate_b,
            )
        )
    return Comparison(
        metrics=tuple(results),
        recall_definition=a.recall_definition,
        paired=n,
        unanswerable=len(common) - n,
        only_in_a=tuple(q for q in a.gold_sizes if q not in b.gold_sizes),
        only_in_b=tuple(q for q in b.gold_sizes if q not in a.gold_sizes),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
    )
