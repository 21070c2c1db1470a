"""``ragtrace labels``: what its help lists is what it has, and ``export -o -`` is stdout."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

from ragtrace.cli import build_parser, main
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace_consumers.commands.labels import ACTIONS
from ragtrace_consumers.stores.sqlite_labels import SqliteLabelStore
from ragtrace_consumers.stores.sqlite_state import SqliteState


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _listed_help(parser: argparse.ArgumentParser, name: str) -> str:
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    (action,) = (a for a in sub._choices_actions if a.dest == name)
    return str(action.help)


def test_the_help_lists_exactly_the_actions_labels_has() -> None:
    top = build_parser()
    actions = _choices(_choices(top)["labels"])
    assert tuple(actions) == ACTIONS
    listed = _listed_help(top, "labels")
    assert listed.endswith(": " + ", ".join(ACTIONS))
    assert "inspect" not in listed


def test_export_dash_writes_to_stdout_and_no_file_named_dash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.sqlite3"
    with SqliteState(path) as state:
        SqliteLabelStore(state).start(
            [LabelledQuestion("q-1", "first?", frozenset({"c-1"}))], source="file"
        )
    monkeypatch.chdir(tmp_path)
    assert main(["labels", "export", "--state", str(path), "-o", "-"]) == 0
    out = capsys.readouterr().out
    assert [json.loads(line)["qid"] for line in out.splitlines()] == ["q-1"]
    assert not os.path.exists("-")
    assert not os.path.exists("-.tmp")


def test_audit_labels_are_exported_as_claims_and_calibrate_takes_them_beside_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragtrace_consumers.stores.audit_labels import AuditLabel
    from tests.unit.consumers.webview.rows import detail, result

    path = tmp_path / "state.sqlite3"
    with SqliteState(path) as state:
        state.results.put(result(7, "generation_failed", groundedness=0.5), detail())
        state.results.put(result(8, "unlabelled"))  # no details kept: left out of the export
        for trace, unit, text, judge, human, auditor in (
            (f"{7:032x}", "1", "Alpha about exports.", True, True, "web"),
            (f"{7:032x}", "2", "An invented claim.", False, True, "web"),
            (f"{7:032x}", "2", "An invented claim.", False, False, "judge:other"),  # not a person
            (f"{8:032x}", "1", "Something.", True, False, "web"),
        ):
            state.audits.add(
                AuditLabel(trace, unit, text, judge, human, "lexical", "", "a" * 64, 1.0, auditor)
            )
    out = tmp_path / "audit.jsonl"
    assert main(["labels", "export-audit", "--state", str(path), "-o", str(out)]) == 0
    assert "(1 without passage texts left out)" in capsys.readouterr().err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["claim"], r["human_entailed"]) for r in records] == [
        (f"audit-{7:032x}-1", "Alpha about exports.", True),
        (f"audit-{7:032x}-2", "An invented claim.", True),
    ]
    assert records[0]["context"][0] == "Alpha passage about exports."
    base = Path("examples/calibration/human.jsonl").resolve()
    n_base = len(base.read_text().splitlines())
    report = tmp_path / "report.json"
    argv = ["calibrate", "--labels", str(base), "--labels", str(out), "--judge", "lexical"]
    assert main([*argv, "--no-save", "--json-file", str(report)]) == 0
    assert json.loads(report.read_text())["claims"] == n_base + 2
    # The same file twice names its claims twice: refused.
    assert (
        main(
            [
                "calibrate",
                "--labels",
                str(out),
                "--labels",
                str(out),
                "--judge",
                "lexical",
                "--no-save",
            ]
        )
        == 2
    )
    assert "more than one --labels file" in capsys.readouterr().err
