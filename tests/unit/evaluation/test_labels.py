"""Labels and run files: parsing, and errors that name the file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtrace.evaluation.labels import (
    InputFileError,
    LabelledQuestion,
    label_set_version,
    load_labels,
    load_run,
)
from ragtrace.normalize import question_sha256


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_load_labels_in_file_order_skipping_blank_lines(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "labels.jsonl",
        '{"qid": "q2", "question": "How long are audit logs kept?", "gold": ["c-1", "c-2"]}\n'
        "\n"
        '{"qid": "q1", "question": "Is there a Team plan?", "gold": [], "note": "ignored"}\n',
    )
    assert load_labels(path) == [
        LabelledQuestion("q2", "How long are audit logs kept?", frozenset({"c-1", "c-2"})),
        LabelledQuestion("q1", "Is there a Team plan?", frozenset()),
    ]
    q = load_labels(path)[0]
    assert q.answerable
    assert q.question_sha256 == question_sha256("How long are audit logs kept?")
    assert not load_labels(path)[1].answerable


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"qid": "q1", "question": "x", "gold": ["a"]}\n')
    assert load_labels(path)[0].qid == "q1"


@pytest.mark.parametrize(
    ("lines", "line", "field", "reason"),
    [
        (['{"qid": "q1", "question": "x", "gold": ["a"]', ""], 1, None, "not valid JSON"),
        (['["q1"]'], 1, None, "expected a JSON object, got list"),
        (['{"question": "x", "gold": []}'], 1, "qid", "missing"),
        (['{"qid": 7, "question": "x", "gold": []}'], 1, "qid", "must be a non-empty string"),
        (['{"qid": "q1", "gold": []}'], 1, "question", "missing"),
        (['{"qid": "q1", "question": "x"}'], 1, "gold", "missing"),
        (['{"qid": "q1", "question": "x", "gold": "a"}'], 1, "gold", "must be a list"),
        (['{"qid": "q1", "question": "x", "gold": ["a", 3]}'], 1, "gold[1]", "non-empty string"),
        (
            [
                '{"qid": "q1", "question": "x", "gold": ["a"]}',
                "",
                '{"qid": "q1", "question": "y", "gold": ["b"]}',
            ],
            3,
            "qid",
            "duplicate qid 'q1' (first on line 1)",
        ),
    ],
)
def test_label_errors_name_file_line_and_field(
    tmp_path: Path, lines: list[str], line: int, field: str | None, reason: str
) -> None:
    path = _write(tmp_path, "labels.jsonl", "\n".join(lines) + "\n")
    with pytest.raises(InputFileError) as info:
        load_labels(path)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), line, field)
    assert reason in err.reason
    expected = f"{path}, line {line}" + (f", field {field!r}" if field else "") + ": "
    assert str(err).startswith(expected)


def test_empty_or_missing_labels_file(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="no labelled questions") as info:
        load_labels(_write(tmp_path, "empty.jsonl", "\n\n"))
    assert info.value.line is None
    with pytest.raises(InputFileError, match="no such file"):
        load_labels(tmp_path / "absent.jsonl")


LABELS = [
    LabelledQuestion("q1", "a", frozenset({"d1"})),
    LabelledQuestion("q2", "b", frozenset({"d2"})),
]


def test_load_run(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "run.jsonl",
        '{"qid": "q2", "retrieved": ["d2", "d2", "d9"]}\n{"qid": "q1", "retrieved": []}\n',
    )
    assert load_run(path, LABELS) == {"q2": ["d2", "d2", "d9"], "q1": []}
    assert load_run(path) == {"q2": ["d2", "d2", "d9"], "q1": []}


def test_run_entry_for_an_unknown_qid_is_an_error(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "run.jsonl",
        '{"qid": "q1", "retrieved": []}\n{"qid": "q2", "retrieved": []}\n'
        '{"qid": "q9", "retrieved": ["d1"]}\n',
    )
    with pytest.raises(InputFileError) as info:
        load_run(path, LABELS)
    assert (info.value.line, info.value.field) == (3, "qid")
    assert "unknown qid 'q9' (not in the labels)" in str(info.value)


def test_run_duplicate_qid_and_missing_question_are_errors(tmp_path: Path) -> None:
    dup = _write(
        tmp_path, "dup.jsonl", '{"qid": "q1", "retrieved": []}\n{"qid": "q1", "retrieved": []}\n'
    )
    with pytest.raises(InputFileError, match=r"line 2, field 'qid': duplicate qid 'q1'"):
        load_run(dup)
    missing = _write(tmp_path, "missing.jsonl", '{"qid": "q1", "retrieved": ["d1"]}\n')
    with pytest.raises(InputFileError, match=r"no entry for 1 labelled question\(s\): 'q2'"):
        load_run(missing, LABELS)
    bad = _write(tmp_path, "bad.jsonl", '{"qid": "q1", "retrieved": ["d1", null]}\n')
    with pytest.raises(InputFileError, match=r"line 1, field 'retrieved\[1\]'"):
        load_run(bad)


def test_label_set_version_is_order_independent_and_content_sensitive() -> None:
    version = label_set_version(LABELS)
    assert len(version) == 12
    assert label_set_version(list(reversed(LABELS))) == version
    changed = [LABELS[0], LabelledQuestion("q2", "b", frozenset({"d2", "d3"}))]
    assert label_set_version(changed) != version


def test_labelled_question_validation() -> None:
    with pytest.raises(ValueError, match="qid must be a non-empty string"):
        LabelledQuestion("", "x", frozenset())
    with pytest.raises(ValueError, match="gold must hold non-empty string chunk IDs"):
        LabelledQuestion("q", "x", frozenset({""}))
    assert LabelledQuestion("q", "x", {"a"}).gold == frozenset({"a"})  # type: ignore[arg-type]
