"""The README's "Evaluate a retriever offline" section, run with the installed console script:
every ``$ ragtrace …`` command must exit 0 and print exactly the output shown under it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
RAGTRACE = Path(sys.executable).parent / "ragtrace"


def _section() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(
        r"^## Evaluate a retriever offline\n(.*?)(?=^## )", readme, re.MULTILINE | re.DOTALL
    )
    assert match, "README has no 'Evaluate a retriever offline' section"
    return match.group(1)


def _transcripts() -> list[tuple[str, str]]:
    """(command, expected output) pairs from the section's ```console blocks."""
    pairs: list[tuple[str, str]] = []
    for block in re.findall(r"^```console\n(.*?)^```", _section(), re.MULTILINE | re.DOTALL):
        for chunk in re.split(r"^\$ ", block, flags=re.MULTILINE)[1:]:
            command, _, output = chunk.partition("\n")
            pairs.append((command, output))
    return pairs


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTRACE_")}
    return subprocess.run(
        [str(RAGTRACE), *args],
        check=False,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_readme_commands_print_what_the_readme_shows(tmp_path: Path) -> None:
    transcripts = _transcripts()
    assert [c.split()[:2] for c, _ in transcripts] == [
        ["ragtrace", "eval"],
        ["ragtrace", "eval"],
        ["ragtrace", "compare"],
    ]
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    for command, expected in transcripts:
        result = _run(command.split()[1:], tmp_path)
        assert (result.returncode, result.stderr) == (0, ""), command
        assert result.stdout == expected, command
    assert (tmp_path / "vector.json").is_file() and (tmp_path / "hybrid.json").is_file()


def test_readme_example_lines_match_the_example_files() -> None:
    section = _section()
    for name in ("labels.jsonl", "run_vector.jsonl"):
        (shown,) = re.findall(rf"^examples/{name}\s+(\{{.*\}})$", section, re.MULTILINE)
        assert shown in (ROOT / "examples" / name).read_text().splitlines()


def test_console_script_reports_bad_input_with_exit_2(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    run = tmp_path / "run.jsonl"
    run.write_text('{"qid": "q1", "retrieved": ["d1"]}\n{"qid": "q77", "retrieved": []}\n')
    result = _run(["eval", "--labels", "examples/labels.jsonl", "--run", "run.jsonl"], tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "ragtrace eval: error: run.jsonl, line 2, field 'qid': unknown qid 'q77' "
        "(not in the labels)\n"
    )


@pytest.mark.parametrize("command", ["eval", "compare"])
def test_console_script_help(command: str, tmp_path: Path) -> None:
    result = _run([command, "--help"], tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith(f"usage: ragtrace {command}")
