"""``ragtrace consume --json`` / ``--json-file PATH``: the effective configuration of ``--print-config`` as
JSON (the running consumer's machine output is its evaluation spans and metrics)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ragtrace.cli import main


def test_print_config_as_json_matches_the_yaml(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAGTRACE_CONSUMER_CONFIG", raising=False)
    assert main(["consume", "--print-config"]) == 0
    as_yaml = yaml.safe_load(capsys.readouterr().out)
    assert main(["consume", "--print-config", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc.pop("source") == "defaults"
    assert doc == as_yaml


def test_print_config_json_to_a_file_keeps_the_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAGTRACE_CONSUMER_CONFIG", raising=False)
    target = tmp_path / "config.json"
    assert main(["consume", "--print-config", "--json-file", str(target)]) == 0
    assert capsys.readouterr().out.startswith("# file: defaults\n")
    assert json.loads(target.read_text())["kafka"]["topic"] == "otlp_spans"


def test_json_without_print_config_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["consume", "--json"]) == 2
    assert "--json goes with --print-config" in capsys.readouterr().err
