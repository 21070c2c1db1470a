"""Properties every retrieval metric must hold, on generated inputs."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from ragtrace.evaluation.retrieval import (
    context_relevancy,
    dedupe,
    hit_rate_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    score_question,
)

ids = st.sampled_from([f"d{i}" for i in range(12)])
ranked = st.lists(ids, max_size=20)
gold_sets = st.frozensets(ids, min_size=1, max_size=6)
ks = st.integers(min_value=1, max_value=25)

METRICS_AT_K = (recall_at_k, hit_rate_at_k, precision_at_k, ndcg_at_k)

# Per test, not a global profile: other modules keep their own settings.
many = settings(max_examples=150, deadline=None)


@many
@given(ranked, gold_sets, ks)
def test_every_metric_is_in_unit_interval(
    retrieved: list[str], gold: frozenset[str], k: int
) -> None:
    for metric in METRICS_AT_K:
        assert 0.0 <= metric(retrieved, gold, k) <= 1.0
    assert 0.0 <= reciprocal_rank(retrieved, gold) <= 1.0
    assert 0.0 <= reciprocal_rank(retrieved, gold, k) <= 1.0


@many
@given(ranked, gold_sets, ks)
def test_recall_and_hit_rate_are_monotone_in_k(
    retrieved: list[str], gold: frozenset[str], k: int
) -> None:
    assert recall_at_k(retrieved, gold, k) <= recall_at_k(retrieved, gold, k + 1)
    assert hit_rate_at_k(retrieved, gold, k) <= hit_rate_at_k(retrieved, gold, k + 1)
    assert reciprocal_rank(retrieved, gold, k) <= reciprocal_rank(retrieved, gold, k + 1)


@many
@given(ranked, gold_sets, ks)
def test_hit_rate_is_at_least_mean_recall(
    retrieved: list[str], gold: frozenset[str], k: int
) -> None:
    recall = recall_at_k(retrieved, gold, k)
    hit = hit_rate_at_k(retrieved, gold, k)
    assert hit >= recall
    # Equal exactly when the gold set has one chunk or nothing was found.
    if len(gold) == 1 or recall == 0.0:
        assert hit == recall


@many
@given(st.lists(st.tuples(ranked, gold_sets), min_size=1, max_size=20), ks)
def test_mean_hit_rate_is_at_least_mean_recall(
    questions: list[tuple[list[str], frozenset[str]]], k: int
) -> None:
    recall = sum(recall_at_k(r, g, k) for r, g in questions) / len(questions)
    hit = sum(hit_rate_at_k(r, g, k) for r, g in questions) / len(questions)
    assert hit >= recall - 1e-12


@many
@given(ranked, gold_sets, ks)
def test_deduplication_invariance(retrieved: list[str], gold: frozenset[str], k: int) -> None:
    unique = dedupe(retrieved)
    assert score_question(retrieved, gold, k) == score_question(unique, gold, k)
    # Repeating every chunk right after itself changes nothing either.
    doubled = [doc for doc in retrieved for _ in range(2)]
    assert score_question(doubled, gold, k) == score_question(retrieved, gold, k)
    useful = set(gold)
    if retrieved:
        assert context_relevancy(doubled, useful) == context_relevancy(unique, useful)


@many
@given(ranked, ks)
def test_empty_gold_is_always_nan(retrieved: list[str], k: int) -> None:
    for metric in METRICS_AT_K:
        assert math.isnan(metric(retrieved, frozenset(), k))
    assert math.isnan(reciprocal_rank(retrieved, frozenset()))


@many
@given(ranked, gold_sets, ks)
def test_k_beyond_the_list_equals_k_at_the_list_length(
    retrieved: list[str], gold: frozenset[str], k: int
) -> None:
    n = max(len(dedupe(retrieved)), 1)
    big = n + k
    assert recall_at_k(retrieved, gold, big) == recall_at_k(retrieved, gold, n)
    assert hit_rate_at_k(retrieved, gold, big) == hit_rate_at_k(retrieved, gold, n)
    if len(gold) <= n:
        assert ndcg_at_k(retrieved, gold, big) == ndcg_at_k(retrieved, gold, n)
    else:  # the ideal ranking still gains from gold chunks the list never had
        assert ndcg_at_k(retrieved, gold, big) <= ndcg_at_k(retrieved, gold, n)


@many
@given(ranked, gold_sets, st.lists(ids, max_size=5))
def test_padding_with_irrelevant_chunks_lowers_relevancy_not_recall(
    retrieved: list[str], gold: frozenset[str], padding: list[str]
) -> None:
    extra = [f"pad-{doc}" for doc in padding]  # never gold, never already supplied
    supplied = dedupe(retrieved)
    padded = supplied + extra
    k = len(padded) + 1
    assert recall_at_k(padded, gold, k) == recall_at_k(supplied, gold, k)
    if supplied:
        assert context_relevancy(padded, gold) <= context_relevancy(supplied, gold)
        expected = context_relevancy(supplied, gold) * len(supplied) / len(dedupe(padded))
        assert math.isclose(context_relevancy(padded, gold), expected)
