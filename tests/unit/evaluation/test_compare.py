"""Paired comparison: deltas with a bootstrap interval, and the questions that moved."""

from __future__ import annotations

import math
import random

import pytest

from ragtrace.evaluation.compare import (
    IncomparableReportsError,
    Mover,
    compare_reports,
    paired_bootstrap_ci,
)
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace.evaluation.report import evaluate_run
from ragtrace.evaluation.retrieval import RecallDefinition
from tests.unit.evaluation.seed_runs import HYBRID, QUESTIONS, VECTOR

MEAN = RecallDefinition.MEAN_RECALL


def _seed_comparison(**options: object):  # type: ignore[no-untyped-def]
    a = evaluate_run(QUESTIONS, VECTOR, [3], MEAN)
    b = evaluate_run(QUESTIONS, HYBRID, [3], MEAN)
    return compare_reports(a, b, **options)  # type: ignore[arg-type]


def test_seed_vector_vs_hybrid_means_and_movers() -> None:
    c = _seed_comparison()
    assert [m.metric for m in c.metrics] == [
        "recall@3",
        "hit_rate@3",
        "precision@3",
        "ndcg@3",
        "mrr",
    ]
    recall, mrr = c.metric("recall@3"), c.metric("mrr")
    assert (round(recall.a, 2), round(recall.b, 2), round(recall.delta, 2)) == (0.70, 1.00, 0.30)
    assert (round(mrr.a, 2), round(mrr.b, 2)) == (0.67, 0.90)
    assert mrr.delta == pytest.approx(0.9 - 2 / 3)
    # The seed's point: the average rose, and q5 still got worse on reciprocal rank.
    assert mrr.worse == (Mover("q5", 1.0, 0.5),)
    assert mrr.better == (Mover("q4", 0.0, 1.0), Mover("q3", 1 / 3, 1.0))
    assert recall.better == (Mover("q4", 0.0, 1.0), Mover("q2", 0.5, 1.0))
    assert recall.worse == ()
    assert sorted(c.better) == ["q2", "q3", "q4"]
    assert c.worse == ("q5",)
    assert c.paired == 5
    assert (c.unanswerable, c.only_in_a, c.only_in_b) == (0, (), ())


def test_bootstrap_interval_is_seeded_and_brackets_the_delta() -> None:
    c1 = _seed_comparison(seed=7, resamples=2000)
    c2 = _seed_comparison(seed=7, resamples=2000)
    assert c1 == c2
    for m in c1.metrics:
        assert m.ci_low <= m.delta <= m.ci_high
    mrr = c1.metric("mrr")
    # Per-question RR differences are 0, 0, +2/3, +1, -1/2: a resampled mean lies within
    # [-1/2, 1], and with q5 able to dominate a resample the interval must reach below 0.
    assert -0.5 <= mrr.ci_low < 0 < mrr.ci_high <= 1.0
    # Recall never got worse on any question, so no resample can go below zero.
    assert c1.metric("recall@3").ci_low == 0.0


def test_paired_bootstrap_ci_hand_checks() -> None:
    # Identical scores: every resampled difference is zero.
    assert paired_bootstrap_ci([0.2, 0.5], [0.2, 0.5], resamples=50) == (0.0, 0.0)
    # A constant shift is recovered exactly.
    low, high = paired_bootstrap_ci([0.1, 0.2, 0.3], [0.3, 0.4, 0.5], resamples=50)
    assert low == pytest.approx(0.2) and high == pytest.approx(0.2)
    # One pair: the interval collapses onto its difference.
    assert paired_bootstrap_ci([0.0], [1.0], resamples=10) == (1.0, 1.0)
    assert all(math.isnan(x) for x in paired_bootstrap_ci([], [], resamples=10))
    # Different seeds can differ; the same seed cannot.
    rng = random.Random(0)
    a = [rng.random() for _ in range(40)]
    b = [rng.random() for _ in range(40)]
    assert paired_bootstrap_ci(a, b, seed=1, resamples=300) == paired_bootstrap_ci(
        a, b, seed=1, resamples=300
    )
    # A wider confidence level never gives a narrower interval.
    l95, h95 = paired_bootstrap_ci(a, b, confidence=0.95, resamples=500)
    l80, h80 = paired_bootstrap_ci(a, b, confidence=0.80, resamples=500)
    assert l95 <= l80 < h80 <= h95


def test_bootstrap_interval_covers_a_known_shift() -> None:
    # b = a + 0.1 + small noise over 200 questions: the 95% interval holds 0.1 and excludes 0.
    rng = random.Random(3)
    a = [rng.random() * 0.8 for _ in range(200)]
    b = [x + 0.1 + rng.uniform(-0.05, 0.05) for x in a]
    low, high = paired_bootstrap_ci(a, b, resamples=1000)
    assert 0.0 < low < 0.1 < high < 0.2


def test_bad_options_raise() -> None:
    with pytest.raises(ValueError, match="resamples must be a positive integer"):
        paired_bootstrap_ci([1.0], [1.0], resamples=0)
    with pytest.raises(ValueError, match="confidence must be strictly between 0 and 1"):
        paired_bootstrap_ci([1.0], [1.0], confidence=1.0)
    with pytest.raises(ValueError, match="equal lengths"):
        paired_bootstrap_ci([1.0], [1.0, 0.0])


def test_different_recall_definitions_are_refused() -> None:
    a = evaluate_run(QUESTIONS, VECTOR, [3], RecallDefinition.MEAN_RECALL)
    b = evaluate_run(QUESTIONS, HYBRID, [3], RecallDefinition.HIT_RATE)
    with pytest.raises(IncomparableReportsError, match="A uses mean_recall, B uses hit_rate"):
        compare_reports(a, b)


def test_different_labels_are_refused() -> None:
    a = evaluate_run(QUESTIONS, VECTOR, [3], MEAN)
    relabelled = [*QUESTIONS[:4], LabelledQuestion("q5", "five", frozenset({"d7", "d1"}))]
    b = evaluate_run(relabelled, HYBRID, [3], MEAN)
    with pytest.raises(IncomparableReportsError, match="label sets differ"):
        compare_reports(a, b)


def test_unpaired_and_unanswerable_questions_are_listed_not_scored() -> None:
    extra = LabelledQuestion("q7", "seven", frozenset({"d3"}))
    none = LabelledQuestion("q6", "six", frozenset())
    a = evaluate_run([*QUESTIONS, none, extra], {**VECTOR, "q6": [], "q7": []}, [3], MEAN)
    b = evaluate_run([*QUESTIONS, none], {**HYBRID, "q6": ["d1"]}, [3], MEAN)
    a = type(a)(a.ks, a.recall_definition, a.per_question, a.gold_sizes, None)  # unversioned
    c = compare_reports(a, b, resamples=100)
    assert c.paired == 5
    assert c.unanswerable == 1
    assert c.only_in_a == ("q7",)
    assert c.only_in_b == ()
    assert c.metric("recall@3").a == pytest.approx(0.7)


def test_comparison_json_writes_nan_as_null() -> None:
    none = LabelledQuestion("q6", "six", frozenset())
    a = evaluate_run([none], {"q6": []}, [3], MEAN)
    c = compare_reports(a, a, resamples=10)
    doc = c.to_json()
    assert doc["paired"] == 0
    empty = {"value": None, "k": 0, "n": 0, "low": None, "high": None, "method": "bootstrap"}
    assert doc["metrics"]["mrr"] == {  # type: ignore[index]
        "a": None,
        "b": None,
        "delta": None,
        "ci": [None, None],
        "n": 0,
        "a_interval": empty,
        "b_interval": empty,
        "better": [],
        "worse": [],
    }
