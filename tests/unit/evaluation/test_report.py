"""RetrievalReport: means over answerable questions, the definition in force, the JSON form."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ragtrace.evaluation.labels import InputFileError, LabelledQuestion, label_set_version
from ragtrace.evaluation.report import RetrievalReport, evaluate_run, load_report
from ragtrace.evaluation.retrieval import RecallDefinition, score_question
from tests.unit.evaluation.seed_runs import QUESTIONS, VECTOR

UNANSWERABLE = LabelledQuestion("q6", "not in the corpus", frozenset())


def test_seed_vector_report_at_k3() -> None:
    report = evaluate_run(QUESTIONS, VECTOR, [3], RecallDefinition.MEAN_RECALL)
    assert report.ks == (3,)
    assert report.metric_names == ("recall@3", "hit_rate@3", "precision@3", "ndcg@3", "mrr")
    assert report.metrics["recall@3"] == pytest.approx(0.7)
    assert report.metrics["hit_rate@3"] == pytest.approx(0.8)
    assert report.metrics["precision@3"] == pytest.approx(4 / 15)
    assert report.metrics["mrr"] == pytest.approx(2 / 3)
    assert report.questions == 5
    assert report.unanswerable == 0
    assert report.avg_gold_size == pytest.approx(1.2)
    assert report.labels_version == label_set_version(QUESTIONS)
    assert dict(report.per_question["q2"]) == {
        "recall@3": 0.5,
        "hit_rate@3": 1.0,
        "precision@3": 1 / 3,
        "ndcg@3": score_question(VECTOR["q2"], {"d4", "d5"}, 3).ndcg,
        "rr": 1.0,
    }


def test_hit_rate_definition_changes_recall_and_is_named() -> None:
    mean = evaluate_run(QUESTIONS, VECTOR, [3], RecallDefinition.MEAN_RECALL)
    hit = evaluate_run(QUESTIONS, VECTOR, [3], RecallDefinition.HIT_RATE)
    assert hit.per_question["q2"]["recall@3"] == 1.0  # the seed's two-gold question
    assert mean.per_question["q2"]["recall@3"] == 0.5
    assert hit.metrics["recall@3"] == pytest.approx(0.8)
    assert hit.metrics["recall@3"] > mean.metrics["recall@3"]
    assert hit.to_json()["recall_definition"] == "hit_rate"
    assert mean.to_json()["recall_definition"] == "mean_recall"
    assert hit.metrics["hit_rate@3"] == mean.metrics["hit_rate@3"]


def test_unanswerable_question_is_nan_excluded_and_counted() -> None:
    questions = [*QUESTIONS, UNANSWERABLE]
    run = {**VECTOR, "q6": ["d1", "d2"]}
    report = evaluate_run(questions, run, [3, 1], RecallDefinition.MEAN_RECALL)
    assert report.ks == (1, 3)
    assert report.unanswerable == 1
    assert report.questions == 6
    assert all(math.isnan(v) for v in report.per_question["q6"].values())
    # Same means as without it: excluded, not scored 0.
    assert report.metrics["recall@3"] == pytest.approx(0.7)
    assert report.metrics["mrr"] == pytest.approx(2 / 3)
    assert report.avg_gold_size == pytest.approx(1.2)  # over the answerable questions


def test_only_unanswerable_questions_give_nan_means() -> None:
    report = evaluate_run([UNANSWERABLE], {"q6": []}, [5], RecallDefinition.MEAN_RECALL)
    assert all(math.isnan(v) for v in report.metrics.values())
    assert math.isnan(report.avg_gold_size)
    doc = report.to_json()
    assert doc["metrics"] == {
        "recall@5": None,
        "hit_rate@5": None,
        "precision@5": None,
        "ndcg@5": None,
        "mrr": None,
    }
    assert doc["avg_gold_size"] is None


def test_to_json_shape_and_round_trip(tmp_path: Path) -> None:
    questions = [*QUESTIONS, UNANSWERABLE]
    report = evaluate_run(questions, {**VECTOR, "q6": []}, [3], RecallDefinition.MEAN_RECALL)
    doc = report.to_json()
    assert set(doc) == {
        "metrics",
        "intervals",
        "per_question",
        "unanswerable",
        "avg_gold_size",
        "recall_definition",
        "k",
        "questions",
        "labels_version",
    }
    assert doc["unanswerable"] == 1
    assert doc["k"] == [3]
    intervals = doc["intervals"]
    assert isinstance(intervals, dict) and list(intervals) == list(report.metric_names)
    # 4 of the 5 answerable questions hit at 3: Wilson 0.3755-0.9638; unanswerable left out
    assert intervals["hit_rate@3"] == {
        "value": 0.8,
        "k": 4,
        "n": 5,
        "low": pytest.approx(0.3755, abs=1e-4),
        "high": pytest.approx(0.9638, abs=1e-4),
        "method": "wilson",
    }
    assert intervals["mrr"]["method"] == "bootstrap" and intervals["mrr"]["n"] == 5
    per_question = doc["per_question"]
    assert isinstance(per_question, dict)
    assert per_question["q6"] == {
        "recall@3": None,
        "hit_rate@3": None,
        "precision@3": None,
        "ndcg@3": None,
        "rr": None,
        "gold_size": 0,
    }
    text = json.dumps(doc, allow_nan=False)  # NaN must already be null
    path = tmp_path / "report.json"
    path.write_text(text)
    assert load_report(path) == report
    assert RetrievalReport.from_json(json.loads(text)) == report


def test_from_json_errors_name_the_field(tmp_path: Path) -> None:
    good = evaluate_run(QUESTIONS, VECTOR, [3], RecallDefinition.MEAN_RECALL).to_json()
    q1 = good["per_question"]
    assert isinstance(q1, dict)
    q1 = q1["q1"]
    cases = [
        ({**good, "recall_definition": "recall"}, "recall_definition", "unknown value"),
        ({k: v for k, v in good.items() if k != "k"}, "k", "missing"),
        ({**good, "k": [0]}, "k", "positive integers"),
        (
            {**good, "per_question": {"q1": {**q1, "rr": "1"}}},
            "per_question.q1.rr",
            "must be a number or null",
        ),
        (
            {**good, "per_question": {"q1": {**q1, "rr": None}}},
            "per_question.q1.rr",
            "null exactly when gold_size is 0",
        ),
        (
            {**good, "per_question": {"q1": {**q1, "recall@3": 2}}},
            "per_question.q1.recall@3",
            "must be in [0, 1]",
        ),
    ]
    for doc, field, reason in cases:
        with pytest.raises(InputFileError) as info:
            RetrievalReport.from_json(doc, "a.json")
        assert (info.value.path, info.value.line, info.value.field) == ("a.json", None, field)
        assert reason in info.value.reason
    path = tmp_path / "broken.json"
    path.write_text('{\n  "k": [3],\n  oops\n}\n')
    with pytest.raises(InputFileError) as info:
        load_report(path)
    assert info.value.line == 3
    assert str(info.value).startswith(f"{path}, line 3: not valid JSON")


def test_report_validation() -> None:
    with pytest.raises(ValueError, match="ks must not repeat"):
        RetrievalReport((3, 3), RecallDefinition.MEAN_RECALL, {}, {})
    with pytest.raises(ValueError, match="same questions"):
        RetrievalReport((3,), RecallDefinition.MEAN_RECALL, {}, {"q1": 1})
    with pytest.raises(ValueError, match="no questions"):
        RetrievalReport.from_scores({}, RecallDefinition.MEAN_RECALL)
    with pytest.raises(ValueError, match="is scored at k="):
        RetrievalReport.from_scores(
            {
                "q1": [score_question(["a"], {"a"}, 3)],
                "q2": [score_question(["a"], {"a"}, 5)],
            },
            RecallDefinition.MEAN_RECALL,
        )
