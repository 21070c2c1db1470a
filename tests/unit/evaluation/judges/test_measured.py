"""The offline judge's shipped held-out record (ragtrace/evaluation/judges/lexical/measured.py):
it belongs to today's judge, agrees with the benchmark's table, and reads back as written."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ragtrace.evaluation.judges import JudgeInfo, LexicalJudge
from ragtrace.evaluation.judges.lexical.measured import (
    held_out_for,
    load_held_out,
    write_held_out,
)

DOCS = Path(__file__).resolve().parents[4] / "docs" / "benchmarks.md"


def test_the_shipped_record_is_of_todays_judge() -> None:
    # Fails when the judge changes without
    # `python bench/bench_judge_quality.py --fit bench.fit_lexical_judge:lodo_judge` re-run.
    record = held_out_for(LexicalJudge().info)
    assert record is not None, "held_out.json is of another version of the lexical judge"
    assert record.held_out and record.leave_one_dataset_out
    assert 0 < record.flag_rate <= 1 and 0 < record.human_flag_rate < 1
    assert record.auroc_low <= record.auroc <= record.auroc_high


def test_the_record_is_the_benchmark_tables_pooled_held_out_row() -> None:
    record = load_held_out()
    assert record is not None
    [row] = [
        ln for ln in DOCS.read_text().splitlines() if ln.startswith("| pooled, sets no part of")
    ]
    assert f"| {record.answers} (" in row
    assert f"{record.auroc:.3f} [{record.auroc_low:.3f}, {record.auroc_high:.3f}]" in row
    assert f"| {record.f1:.1f} |" in row
    assert f"{100 * record.flag_rate:.1f} / {100 * record.human_flag_rate:.1f}" in row


def test_a_record_is_held_out_by_its_sets_or_by_leave_one_dataset_out() -> None:
    record = load_held_out()
    assert record is not None
    apart = replace(record, sets=("a",), tuned_on=("b",), leave_one_dataset_out=False)
    assert apart.held_out
    assert not replace(apart, tuned_on=("a", "b")).held_out
    assert replace(apart, tuned_on=("a", "b"), leave_one_dataset_out=True).held_out


def test_other_judges_and_versions_get_no_figures(tmp_path: Path) -> None:
    record = load_held_out()
    assert record is not None
    assert held_out_for(JudgeInfo("lexical", None, "0" * 64)) is None
    assert held_out_for(JudgeInfo("anthropic", "m", record.prompt_sha256)) is None
    assert load_held_out(tmp_path / "absent.json") is None
    moved = replace(record, answers=1, sets=("x",))
    assert load_held_out(write_held_out(moved, tmp_path / "r.json")) == moved


def test_the_description_names_the_baselines() -> None:
    record = load_held_out()
    assert record is not None
    line = record.describe()
    assert f"plain word overlap {record.overlap_auroc:.3f}" in line
    assert f"flagging every answer: {record.flag_all_f1:.1f}" in line
    assert f"{record.answers:,} human-labelled answers" in line


def test_a_calibration_of_the_offline_judge_keeps_its_held_out_figures(tmp_path: Path) -> None:
    from ragtrace.evaluation.calibration import (
        CalibrationItem,
        CalibrationReport,
        load_stamp,
        save_stamp,
    )

    items = (CalibrationItem("a", "c", True, True), CalibrationItem("b", "d", False, False))
    lexical = save_stamp(CalibrationReport(LexicalJudge().info, items), tmp_path / "l.json")
    assert lexical.held_out == load_held_out()
    assert load_stamp(tmp_path / "l.json") == lexical
    other = save_stamp(
        CalibrationReport(JudgeInfo("x", None, "0" * 64), items), tmp_path / "o.json"
    )
    assert other.held_out is None and load_stamp(tmp_path / "o.json") == other
