"""Reading human-labelled hallucination sets: RAGTruth's two files and the generic JSON Lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtrace.evaluation.hallucination_sets import (
    LabelledAnswer,
    hash_split,
    load_generic,
    load_hallucination_set,
    load_ragtruth,
    sample_tune,
)
from ragtrace.evaluation.labels import InputFileError


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_generic_lines_spans_labels_tasks_and_splits(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "set.jsonl",
        [
            {"id": "a", "context": "one doc", "answer": "Fine. Made up.", "spans": [[6, 14]]},
            {
                "id": "b",
                "context": ["d1", "d2"],
                "answer": "Fine.",
                "hallucinated": False,
                "task_type": "qa",
                "split": "train",
            },
            {
                "id": "c",
                "context": ["d"],
                "answer": "x y",
                "spans": [{"start": 0, "end": 1}],
                "split": "TEST",
            },
            {"id": "d", "context": ["d"], "answer": "x", "hallucinated": True},
        ],
    )
    a, b, c, d = load_generic(path)
    assert a == LabelledAnswer(
        "a", "Fine. Made up.", ("one doc",), True, ((6, 14),), "all", hash_split("a")
    )
    assert (b.context, b.hallucinated, b.spans, b.task_type, b.split) == (
        ("d1", "d2"),
        False,
        None,
        "qa",
        "tune",
    )
    assert c.spans == ((0, 1),) and c.split == "test" and c.hallucinated
    assert d.hallucinated and d.spans is None


def test_hash_split_is_stable_and_about_half() -> None:
    assert hash_split("q1") == hash_split("q1")
    splits = [hash_split(f"item-{i}") for i in range(2000)]
    assert 900 < splits.count("tune") < 1100
    assert set(splits) == {"tune", "test"}


@pytest.mark.parametrize(
    ("row", "field", "reason"),
    [
        ({"context": ["c"], "answer": "a"}, "hallucinated", "response label or spans"),
        ({"context": ["c"], "answer": 3, "hallucinated": True}, "answer", "string"),
        ({"context": [1], "answer": "a", "hallucinated": True}, "context", "list of strings"),
        ({"context": "c", "answer": "a", "hallucinated": "yes"}, "hallucinated", "true or false"),
        ({"context": "c", "answer": "a", "spans": [[0]]}, "spans", "start, end"),
        ({"context": "c", "answer": "a", "hallucinated": True, "split": "x"}, "split", "tune"),
        ({"context": "c", "answer": "ab", "spans": [[0, 9]]}, None, "outside the answer"),
        (
            {"context": "c", "answer": "ab", "spans": [[0, 1]], "hallucinated": False},
            None,
            "not hallucinated",
        ),
    ],
)
def test_generic_errors_name_file_line_and_field(
    tmp_path: Path, row: dict[str, object], field: str | None, reason: str
) -> None:
    path = _write(
        tmp_path / "bad.jsonl", [{"id": "ok", "context": "c", "answer": "a", "spans": []}, row]
    )
    with pytest.raises(InputFileError) as caught:
        load_generic(path)
    assert caught.value.line == 2
    assert caught.value.field == field
    assert reason in str(caught.value)


def test_generic_refuses_duplicate_ids_and_empty_files(tmp_path: Path) -> None:
    row: dict[str, object] = {"id": "x", "context": "c", "answer": "a", "spans": []}
    with pytest.raises(InputFileError, match="duplicate id 'x'"):
        load_generic(_write(tmp_path / "dup.jsonl", [row, row]))
    with pytest.raises(InputFileError, match="no labelled answers"):
        load_generic(_write(tmp_path / "empty.jsonl", []))
    with pytest.raises(InputFileError, match="missing.jsonl: no such file$"):
        load_generic(tmp_path / "missing.jsonl")


def _ragtruth(root: Path) -> Path:
    root.mkdir()
    _write(
        root / "source_info.jsonl",
        [
            {
                "source_id": "s1",
                "task_type": "QA",
                "source": "MARCO",
                "source_info": {
                    "question": "how to prepare beets",
                    "passages": "passage 1:Wash beets.\n\npassage 2:Bake for 45 minutes.\n\n",
                },
                "prompt": "...",
            },
            {"source_id": "s2", "task_type": "Summary", "source": "CNN/DM", "source_info": "News."},
            {
                "source_id": "s3",
                "task_type": "Data2txt",
                "source": "Yelp",
                "source_info": {"name": "Café", "stars": 3.0},
            },
        ],
    )
    response = "Wash the beets and bake them for 60 minutes."
    start = response.index("60 minutes")
    _write(
        root / "response.jsonl",
        [
            {
                "id": "1",
                "source_id": "s1",
                "model": "gpt-4-0613",
                "temperature": 0.7,
                "labels": [
                    {
                        "start": start,
                        "end": start + 10,
                        "text": "60 minutes",
                        "meta": "conflict",
                        "label_type": "Evident Conflict",
                        "implicit_true": False,
                        "due_to_null": False,
                    }
                ],
                "split": "test",
                "quality": "good",
                "response": response,
            },
            {
                "id": "2",
                "source_id": "s2",
                "model": "m",
                "temperature": 0.7,
                "labels": [],
                "split": "train",
                "quality": "good",
                "response": "News.",
            },
            {
                "id": "3",
                "source_id": "s3",
                "model": "m",
                "temperature": 0.7,
                "labels": [],
                "split": "train",
                "quality": "good",
                "response": "A café.",
            },
            {
                "id": "4",
                "source_id": "s2",
                "model": "m",
                "temperature": 0.7,
                "labels": [],
                "split": "test",
                "quality": "incorrect_refusal",
                "response": "I cannot answer.",
            },
        ],
    )
    return root


def test_ragtruth_joins_sources_splits_passages_and_drops_bad_quality(tmp_path: Path) -> None:
    root = _ragtruth(tmp_path / "ragtruth")
    qa, summary, data = load_ragtruth(root)
    assert qa.id == "1" and qa.task_type == "QA" and qa.split == "test"
    assert qa.context == ("Wash beets.", "Bake for 45 minutes.")
    assert qa.hallucinated and qa.answer[slice(*qa.spans[0])] == "60 minutes"  # type: ignore[index]
    assert summary.context == ("News.",) and summary.split == "tune" and not summary.hallucinated
    assert summary.spans == ()
    assert data.task_type == "Data2txt" and json.loads(data.context[0]) == {
        "name": "Café",
        "stars": 3.0,
    }
    assert len(load_ragtruth(root, include_all_quality=True)) == 4
    assert [x.id for x in load_hallucination_set(root / "response.jsonl")] == ["1", "2", "3"]


def test_ragtruth_unknown_source_is_named(tmp_path: Path) -> None:
    root = _ragtruth(tmp_path / "rt")
    with (root / "response.jsonl").open("a") as f:
        f.write(json.dumps({"id": "9", "source_id": "nope", "response": "x", "labels": []}) + "\n")
    with pytest.raises(InputFileError) as caught:
        load_ragtruth(root)
    assert caught.value.line == 5 and caught.value.field == "source_id"


def test_sample_tune_keeps_every_test_answer_and_the_same_tune_sample() -> None:
    items = [
        LabelledAnswer(f"i{k}", "a", ("c",), False, None, "qa", "tune" if k % 3 else "test")
        for k in range(30)
    ]
    sampled = sample_tune(items, 5)
    assert [it.id for it in sampled if it.split == "test"] == [
        it.id for it in items if it.split == "test"
    ]
    assert sum(it.split == "tune" for it in sampled) == 5
    assert sample_tune(list(reversed(items)), 5) == list(reversed(sampled))  # order-free choice
    assert sample_tune(items, 0) == [it for it in items if it.split == "test"]
    assert len(sample_tune(items, 100)) == 30
