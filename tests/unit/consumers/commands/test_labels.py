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
