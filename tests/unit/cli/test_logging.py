"""The CLI in shell pipelines: --version, a closed pipe, --log-format json, `--json -`."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragtrace.cli import EXIT_BROKEN_PIPE, main
from tests.unit.cli.conftest import EVAL_VECTOR

ROOT = Path(__file__).resolve().parents[3]
RAGTRACE = str(Path(sys.executable).with_name("ragtrace"))


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"ragtrace {version('ragtrace')}\n"


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`ragtrace eval ... | head -1`: no BrokenPipeError traceback, exit 141 (128 + SIGPIPE)."""
    labels = tmp_path / "labels.jsonl"
    run = tmp_path / "run.jsonl"
    labels.write_text(
        "".join(
            json.dumps({"qid": f"q{i}", "question": f"question {i}?", "gold": [f"c{i}"]}) + "\n"
            for i in range(3000)
        )
    )
    run.write_text(
        "".join(
            json.dumps({"qid": f"q{i}", "retrieved": [f"c{i}", "x"]}) + "\n" for i in range(3000)
        )
    )
    proc = subprocess.run(
        f"set -o pipefail; '{RAGTRACE}' eval --labels {labels} --run {run} --json | head -1",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.stdout == "{\n"
    assert proc.stderr == ""
    assert proc.returncode == EXIT_BROKEN_PIPE


def test_log_format_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(ROOT)
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        assert (
            main(
                [
                    "--log-format",
                    "json",
                    *EVAL_VECTOR,
                    "--json-file",
                    str(tmp_path / "r.json"),
                ]
            )
            == 0
        )
        logging.getLogger("ragtrace.test").warning("lag %d records", 7)
        line = capsys.readouterr().err.strip().splitlines()[-1]
        doc = json.loads(line)
        assert {k: doc[k] for k in ("level", "logger", "message")} == {
            "level": "WARNING",
            "logger": "ragtrace.test",
            "message": "lag 7 records",
        }
        assert doc["ts"].endswith("Z")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


def test_log_format_from_the_environment(capsys: pytest.CaptureFixture[str]) -> None:
    env = {**os.environ, "RAGTRACE_LOG_FORMAT": "yaml"}
    proc = subprocess.run(
        [RAGTRACE, "--help"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert proc.returncode == 0
    assert "RAGTRACE_LOG_FORMAT='yaml' is not one of text, json; using text" in proc.stderr
