"""Every CLI that reads a JSON or JSON Lines file turns a nesting limit, a malformed report and a
binary file into exit 2 with one line naming the file and where — never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtrace._nesting import Location, too_deep_at
from ragtrace.cli import main

DEEP = "[" * 200_000 + "]" * 200_000


def _report(path: Path, ks: list[int]) -> Path:
    row = {"gold_size": 1, "rr": 1.0}
    for k in ks:
        row |= {f"recall@{k}": 1.0, f"hit_rate@{k}": 1.0, f"precision@{k}": 0.5, f"ndcg@{k}": 1.0}
    path.write_text(
        json.dumps({"k": ks, "recall_definition": "mean_recall", "per_question": {"q1": row}})
    )
    return path


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.strip()


def test_too_deep_at_finds_the_first_bracket_past_the_limit_outside_strings() -> None:
    assert too_deep_at('{"a": "[[[[["}', max_depth=2) is None
    assert too_deep_at('{"a":\n  [[[1]]]}', max_depth=3) == Location(10, 2, 5)
    assert too_deep_at('"\\"[[[["', max_depth=1) is None


@pytest.mark.parametrize("command", ["eval-labels", "eval-run", "labels", "calibrate"])
def test_jsonl_nested_too_deep_is_exit_2_naming_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    deep = tmp_path / "deep.jsonl"
    deep.write_text("\n" + '{"qid": "q2", "gold": ' + DEEP + "}\n")  # on line 2
    ok = tmp_path / "ok.jsonl"
    ok.write_text('{"qid": "q1", "question": "x", "gold": ["a"]}\n')
    argv = {
        "eval-labels": ["eval", "--labels", str(deep), "--run", str(ok)],
        "eval-run": ["eval", "--labels", str(ok), "--run", str(deep)],
        "labels": ["labels", "load", str(deep)],
        "calibrate": ["calibrate", "--labels", str(deep)],
    }[command]
    code, err = _run(argv, capsys)
    assert code == 2
    assert err.endswith(
        f"error: {deep}, line 2: JSON nested deeper than 100 levels at column 122"
    ), err


def test_compare_nested_too_deep_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("\n" + DEEP)
    good = _report(tmp_path / "good.json", [3])
    code, err = _run(["compare", str(deep), str(good)], capsys)
    assert (code, err) == (
        2,
        (
            f"ragtrace compare: error: {deep}, line 2: JSON nested deeper "
            "than 100 levels at column 101"
        ),
    )


def test_compare_refuses_a_repeated_cutoff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    twice = _report(tmp_path / "twice.json", [3, 3])
    good = _report(tmp_path / "good.json", [3])
    code, err = _run(["compare", str(twice), str(good)], capsys)
    assert (code, err) == (
        2,
        (
            f"ragtrace compare: error: {twice}, field 'k': lists a cutoff "
            "twice, got [3, 3] (each k once, as ragtrace eval writes it)"
        ),
    )


def test_calibrate_names_a_binary_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "labels.bin"
    binary.write_bytes(b'{"id": "a"}\n\x89PNG\r\n\x1a\n\x00\xff')
    code, err = _run(["calibrate", "--labels", str(binary)], capsys)
    assert (code, err) == (
        2,
        (
            f"ragtrace calibrate: error: {binary}: not UTF-8 text (a binary "
            "file?): byte 12 is b'\\x89'"
        ),
    )
