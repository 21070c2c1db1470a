"""Retrieval metrics over several retrieval steps (an agent that searched more than once):
hand-computed values, and the properties the pooled definition must keep."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtrace.evaluation.retrieval import pooled_top_k, score_question, score_steps

ids = st.sampled_from([f"d{i}" for i in range(12)])
ranked = st.lists(ids, max_size=12)
gold_sets = st.frozensets(ids, min_size=1, max_size=6)
ks = st.integers(min_value=1, max_value=8)
many = settings(max_examples=150, deadline=None)


def test_pool_is_each_steps_top_k_in_first_appearance_order() -> None:
    assert pooled_top_k([["a", "b", "c"], ["d", "a", "e"]], 2) == ["a", "b", "d"]
    # a step's duplicate takes no slot of its top k
    assert pooled_top_k([["a", "a", "b"], ["c"]], 2) == ["a", "b", "c"]
    assert pooled_top_k([], 3) == []


def test_two_steps_hand_computed() -> None:
    # k=2: pool [a, x, b, y] (4 slots); gold {a, b, z}
    scores = score_steps([["a", "x", "z"], ["b", "y"]], frozenset({"a", "b", "z"}), 2)
    assert scores.k == 2
    assert scores.recall == pytest.approx(2 / 3)  # z is rank 3 of its step: outside its top 2
    assert scores.hit_rate == 1.0
    assert scores.precision == pytest.approx(2 / 4)
    assert scores.reciprocal_rank == 1.0
    dcg = 1 / math.log2(2) + 1 / math.log2(4)  # a at pool rank 1, b at 3
    ideal = 1 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)  # 3 gold in 4 slots
    assert scores.ndcg == pytest.approx(dcg / ideal)


def test_pooling_finds_what_the_first_k_of_the_joined_lists_miss() -> None:
    gold = frozenset({"audit", "regions"})
    steps = [["audit", "pricing", "dark"], ["pricing", "regions"]]
    assert score_steps(steps, gold, 3).recall == 1.0
    joined = [d for s in steps for d in s]
    assert score_question(joined, gold, 3).recall == 0.5


def test_unanswerable_and_empty() -> None:
    assert math.isnan(score_steps([["a"], ["b"]], frozenset(), 3).recall)
    assert score_steps([], frozenset({"a"}), 3) == score_question([], frozenset({"a"}), 3)
    # a step that returned nothing takes no slots
    assert score_steps([["a"], []], frozenset({"a"}), 2) == score_question(
        ["a"], frozenset({"a"}), 2
    )


@many
@given(ranked, gold_sets, ks)
def test_one_step_is_exactly_the_single_list_scores(
    retrieved: list[str], gold: frozenset[str], k: int
) -> None:
    assert score_steps([retrieved], gold, k) == score_question(retrieved, gold, k)


@many
@given(st.lists(ranked, min_size=2, max_size=4), gold_sets, ks)
def test_pooled_scores_stay_in_bounds_and_hit_rate_is_at_least_recall(
    steps: list[list[str]], gold: frozenset[str], k: int
) -> None:
    s = score_steps(steps, gold, k)
    for value in (s.recall, s.hit_rate, s.precision, s.reciprocal_rank, s.ndcg):
        assert 0.0 <= value <= 1.0
    assert s.hit_rate >= s.recall


@many
@given(st.lists(ranked, min_size=2, max_size=4), gold_sets, ks)
def test_pooled_recall_is_monotone_in_k_and_at_least_every_steps_own(
    steps: list[list[str]], gold: frozenset[str], k: int
) -> None:
    pooled = score_steps(steps, gold, k).recall
    assert pooled <= score_steps(steps, gold, k + 1).recall
    for step in steps:
        assert pooled >= score_question(step, gold, k).recall


def test_each_step_is_cut_at_its_own_k() -> None:
    # k=(1, 3): pool [a, b, y, c] (4 slots); gold {a, c, x}: x is rank 2 of a step cut at 1
    steps = [["a", "x"], ["b", "y", "c", "x"]]
    assert pooled_top_k(steps, [1, 3]) == ["a", "b", "y", "c"]
    scores = score_steps(steps, frozenset({"a", "c", "x"}), [1, 3])
    assert scores.k == 3  # the largest step cut-off
    assert scores.recall == pytest.approx(2 / 3)
    assert scores.precision == pytest.approx(2 / 4)
    dcg = 1 / math.log2(2) + 1 / math.log2(5)  # a at pool rank 1, c at 4
    ideal = 1 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert scores.ndcg == pytest.approx(dcg / ideal)


def test_per_step_cutoffs_equal_to_k_are_the_single_k_scores() -> None:
    steps = [["a", "x", "z"], ["b", "y"]]
    gold = frozenset({"a", "b", "z"})
    assert score_steps(steps, gold, [2, 2]) == score_steps(steps, gold, 2)
    # one step with documents: its own cut-off, exactly the single-list scores
    assert score_steps([["a", "b", "c"], []], gold, [2, 7]) == score_question(
        ["a", "b", "c"], gold, 2
    )


def test_per_step_cutoffs_must_match_the_steps() -> None:
    with pytest.raises(ValueError, match="one cut-off per step"):
        score_steps([["a"], ["b"]], frozenset({"a"}), [2])
    with pytest.raises(ValueError, match="positive integer"):
        pooled_top_k([["a"]], [0])
    with pytest.raises(ValueError, match="no step"):
        score_steps([], frozenset({"a"}), [])


@many
@given(st.lists(ranked, min_size=2, max_size=4), gold_sets, st.lists(ks, min_size=4, max_size=4))
def test_raising_one_steps_cutoff_never_lowers_pooled_recall(
    steps: list[list[str]], gold: frozenset[str], cuts: list[int]
) -> None:
    cuts = cuts[: len(steps)]
    before = score_steps(steps, gold, cuts).recall
    for i in range(len(steps)):
        raised = [c + 1 if j == i else c for j, c in enumerate(cuts)]
        assert score_steps(steps, gold, raised).recall >= before
