"""Retrieval metrics on the seed documents' worked examples and hand-computed fixtures."""

from __future__ import annotations

import math

import pytest

from ragtrace.evaluation.retrieval import (
    ENV_RECALL_DEFINITION,
    QuestionScores,
    RecallDefinition,
    context_precision,
    context_relevancy,
    dedupe,
    hit_rate_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    resolve_recall_definition,
    score_question,
)

# The seed's two-stage lesson: two gold documents at ranks 2 and 4 of five.
RETRIEVED = ["d7", "d2", "d9", "d4", "d1"]
RELEVANT = {"d2", "d4"}

# The seed's five questions and two retrievers.
GOLDEN = {"q1": {"d1"}, "q2": {"d4", "d5"}, "q3": {"d9"}, "q4": {"d2"}, "q5": {"d7"}}
RUNS = {
    "vector": {
        "q1": ["d1", "d3", "d2"],
        "q2": ["d5", "d8", "d6"],
        "q3": ["d2", "d6", "d9"],
        "q4": ["d3", "d1", "d8"],
        "q5": ["d7", "d5", "d1"],
    },
    "hybrid": {
        "q1": ["d1", "d2", "d3"],
        "q2": ["d4", "d5", "d8"],
        "q3": ["d9", "d2", "d6"],
        "q4": ["d2", "d3", "d1"],
        "q5": ["d5", "d7", "d1"],
    },
}


def test_seed_two_gold_question_is_half_at_k5_and_one_under_hit_rate() -> None:
    # Gold {g1, g2}; the first sits third, the second is not retrieved at all (not even at 6).
    retrieved = ["x1", "x2", "g1", "x3", "x4", "x5", "x6"]
    gold = {"g1", "g2"}
    assert recall_at_k(retrieved, gold, 5) == 0.5
    assert hit_rate_at_k(retrieved, gold, 5) == 1.0


def test_seed_truncation_discards_position_six() -> None:
    retrieved = ["x1", "x2", "x3", "x4", "x5", "g1"]
    assert recall_at_k(retrieved, {"g1"}, 5) == 0.0
    assert recall_at_k(retrieved, {"g1"}, 6) == 1.0
    assert recall_at_k(retrieved, {"g1"}, 50) == 1.0


def test_seed_three_gold_two_found_is_two_thirds() -> None:
    retrieved = ["a", "x", "b", "y", "z"]
    assert recall_at_k(retrieved, {"a", "b", "c"}, 5) == pytest.approx(2 / 3)
    assert round(recall_at_k(retrieved, {"a", "b", "c"}, 5), 2) == 0.67
    assert hit_rate_at_k(retrieved, {"a", "b", "c"}, 5) == 1.0


def test_seed_recall_precision_rr_on_d7_d2_d9_d4_d1() -> None:
    assert recall_at_k(RETRIEVED, RELEVANT, 3) == 0.5
    assert recall_at_k(RETRIEVED, RELEVANT, 5) == 1.0
    assert precision_at_k(RETRIEVED, RELEVANT, 3) == pytest.approx(1 / 3)
    assert round(precision_at_k(RETRIEVED, RELEVANT, 3), 2) == 0.33
    assert reciprocal_rank(RETRIEVED, RELEVANT) == 0.5


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


@pytest.mark.parametrize(
    ("name", "recall3", "mrr"), [("vector", 0.70, 0.67), ("hybrid", 1.00, 0.90)]
)
def test_seed_vector_vs_hybrid_recall_at_3_and_mrr(name: str, recall3: float, mrr: float) -> None:
    run = RUNS[name]
    mean_recall = _mean([recall_at_k(run[q], gold, 3) for q, gold in GOLDEN.items()])
    mean_rr = _mean([reciprocal_rank(run[q], gold) for q, gold in GOLDEN.items()])
    assert f"{mean_recall:.2f}" == f"{recall3:.2f}"
    assert f"{mean_rr:.2f}" == f"{mrr:.2f}"


def test_seed_vector_vs_hybrid_exact_values() -> None:
    vector, hybrid = RUNS["vector"], RUNS["hybrid"]
    assert [recall_at_k(vector[q], g, 3) for q, g in GOLDEN.items()] == [1.0, 0.5, 1.0, 0.0, 1.0]
    assert [reciprocal_rank(vector[q], g) for q, g in GOLDEN.items()] == [
        1.0,
        1.0,
        1 / 3,
        0.0,
        1.0,
    ]
    assert [recall_at_k(hybrid[q], g, 3) for q, g in GOLDEN.items()] == [1.0] * 5
    assert [reciprocal_rank(hybrid[q], g) for q, g in GOLDEN.items()] == [1.0, 1.0, 1.0, 1.0, 0.5]


def test_seed_context_relevancy_halves_with_three_irrelevant_chunks_recall_unchanged() -> None:
    useful = {"c1", "c2", "c3"}
    supplied = ["c1", "c2", "c3"]
    padded = supplied + ["n1", "n2", "n3"]
    assert context_relevancy(supplied, useful) == 1.0
    assert context_relevancy(padded, useful) == 0.5
    assert recall_at_k(supplied, useful, 6) == recall_at_k(padded, useful, 6) == 1.0
    assert context_precision is context_relevancy


def test_empty_gold_set_is_nan_for_every_metric() -> None:
    for value in (
        recall_at_k(RETRIEVED, set(), 5),
        hit_rate_at_k(RETRIEVED, set(), 5),
        precision_at_k(RETRIEVED, set(), 5),
        reciprocal_rank(RETRIEVED, set()),
        reciprocal_rank(RETRIEVED, set(), 3),
        ndcg_at_k(RETRIEVED, set(), 5),
    ):
        assert math.isnan(value)
    scores = score_question(RETRIEVED, frozenset(), 5)
    assert scores.gold_size == 0
    assert not scores.answerable
    assert all(
        math.isnan(v)
        for v in (
            scores.recall,
            scores.hit_rate,
            scores.precision,
            scores.reciprocal_rank,
            scores.ndcg,
        )
    )


def test_context_relevancy_edges() -> None:
    assert math.isnan(context_relevancy([], {"a"}))
    assert context_relevancy(["a", "b"], set()) == 0.0
    # Duplicates count once: one distinct useful chunk of two distinct supplied.
    assert context_relevancy(["a", "a", "a", "b"], {"a"}) == 0.5


def test_duplicates_count_once_and_first_occurrence_keeps_its_rank() -> None:
    assert dedupe(["a", "b", "a", "c", "b"]) == ["a", "b", "c"]
    retrieved = ["x", "x", "x", "g"]
    # After de-duplication g is second.
    assert recall_at_k(retrieved, {"g"}, 2) == 1.0
    assert precision_at_k(retrieved, {"g"}, 2) == 0.5
    assert reciprocal_rank(retrieved, {"g"}) == 0.5
    # A repeated gold chunk is counted once, not twice.
    assert recall_at_k(["g", "g", "h"], {"g", "h2"}, 3) == 0.5
    assert precision_at_k(["g", "g"], {"g"}, 2) == 0.5
    # The first occurrence decides the rank, not a later one.
    assert reciprocal_rank(["x", "g", "y", "g"], {"g"}) == 0.5


def test_k_larger_than_list_and_empty_list() -> None:
    assert recall_at_k(["a"], {"a", "b"}, 100) == 0.5
    assert precision_at_k(["a"], {"a"}, 4) == 0.25  # missing slots count as non-relevant
    assert ndcg_at_k(["a"], {"a"}, 10) == 1.0
    assert recall_at_k([], {"a"}, 5) == 0.0
    assert hit_rate_at_k([], {"a"}, 5) == 0.0
    assert reciprocal_rank([], {"a"}) == 0.0
    assert ndcg_at_k([], {"a"}, 5) == 0.0


def test_reciprocal_rank_with_cutoff() -> None:
    assert reciprocal_rank(RETRIEVED, RELEVANT, 1) == 0.0
    assert reciprocal_rank(RETRIEVED, RELEVANT, 2) == 0.5
    assert reciprocal_rank(RETRIEVED, {"d1"}) == 0.2
    assert reciprocal_rank(RETRIEVED, {"d1"}, 4) == 0.0


def test_ndcg_hand_computed() -> None:
    # Gold at ranks 2 and 4 of five: DCG = 1/log2(3) + 1/log2(5); ideal = 1 + 1/log2(3).
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(RETRIEVED, RELEVANT, 5) == pytest.approx(expected, abs=1e-15)
    assert ndcg_at_k(RETRIEVED, RELEVANT, 5) == pytest.approx(0.6509209298071326)
    # At k=3 only rank 2 counts and the ideal is two relevant in the first two ranks.
    assert ndcg_at_k(RETRIEVED, RELEVANT, 3) == pytest.approx(
        (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    )
    # The ideal DCG is capped at min(|gold|, k): one slot, three gold, gold first = perfect.
    assert ndcg_at_k(["a", "x"], {"a", "b", "c"}, 1) == 1.0


def test_score_question_bundles_all_metrics() -> None:
    assert score_question(RETRIEVED, frozenset(RELEVANT), 3) == QuestionScores(
        k=3,
        recall=0.5,
        hit_rate=1.0,
        precision=1 / 3,
        reciprocal_rank=0.5,
        ndcg=ndcg_at_k(RETRIEVED, RELEVANT, 3),
        gold_size=2,
    )
    scores = score_question(RETRIEVED, frozenset(RELEVANT), 3)
    assert scores.recall_as(RecallDefinition.MEAN_RECALL) == 0.5
    assert scores.recall_as(RecallDefinition.HIT_RATE) == 1.0


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "3"])
def test_bad_k_raises(k: object) -> None:
    with pytest.raises(ValueError, match="k must be a positive integer"):
        recall_at_k(RETRIEVED, RELEVANT, k)  # type: ignore[arg-type]


def test_single_string_instead_of_a_list_raises() -> None:
    with pytest.raises(TypeError, match="not a single string"):
        recall_at_k("d2", RELEVANT, 3)
    with pytest.raises(TypeError, match="not a single string"):
        recall_at_k(RETRIEVED, "d2", 3)  # type: ignore[arg-type]


def test_gold_may_be_any_iterable_of_ids() -> None:
    assert recall_at_k(RETRIEVED, ["d2", "d4"], 3) == 0.5  # type: ignore[arg-type]


def test_question_scores_validation() -> None:
    with pytest.raises(ValueError, match="recall must be in"):
        QuestionScores(3, 1.5, 1.0, 1.0, 1.0, 1.0, 1)
    with pytest.raises(ValueError, match="NaN exactly when gold_size is 0"):
        QuestionScores(3, math.nan, 1.0, 1.0, 1.0, 1.0, 1)
    with pytest.raises(ValueError, match="NaN exactly when gold_size is 0"):
        QuestionScores(3, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    with pytest.raises(ValueError, match="gold_size must be >= 0"):
        QuestionScores(3, 0.0, 0.0, 0.0, 0.0, 0.0, -1)


def test_recall_definition_resolution(monkeypatch: pytest.MonkeyPatch, caplog) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv(ENV_RECALL_DEFINITION, raising=False)
    monkeypatch.delenv("RAGTRACE_RECALL_DEFINITION", raising=False)
    assert ENV_RECALL_DEFINITION == "RAGTRACE_SCORING_RECALL_DEFINITION"  # the service's name
    assert resolve_recall_definition() is RecallDefinition.MEAN_RECALL
    assert resolve_recall_definition("hit_rate") is RecallDefinition.HIT_RATE
    monkeypatch.setenv(ENV_RECALL_DEFINITION, "hit_rate")
    assert resolve_recall_definition() is RecallDefinition.HIT_RATE
    # Explicit beats the environment.
    assert resolve_recall_definition("mean_recall") is RecallDefinition.MEAN_RECALL
    with pytest.raises(ValueError, match="unknown recall definition 'recall'"):
        resolve_recall_definition("recall")
    monkeypatch.setenv(ENV_RECALL_DEFINITION, "bogus")
    with caplog.at_level("WARNING"):
        assert resolve_recall_definition() is RecallDefinition.MEAN_RECALL
    assert "RAGTRACE_SCORING_RECALL_DEFINITION='bogus'" in caplog.text


def test_former_recall_definition_variable_still_works(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(ENV_RECALL_DEFINITION, raising=False)
    monkeypatch.setenv("RAGTRACE_RECALL_DEFINITION", "hit_rate")
    with caplog.at_level("WARNING"):
        assert resolve_recall_definition() is RecallDefinition.HIT_RATE
    assert "RAGTRACE_RECALL_DEFINITION is deprecated" in caplog.text
    monkeypatch.setenv(ENV_RECALL_DEFINITION, "mean_recall")  # the new name wins
    assert resolve_recall_definition() is RecallDefinition.MEAN_RECALL
