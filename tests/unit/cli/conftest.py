"""The judge's environment for the CLI tests: ``api`` is the Anthropic API's local fake with
``ANTHROPIC_BASE_URL``/``ANTHROPIC_API_KEY`` pointing at it, run from a fresh working directory,
with no judge model or price table inherited from the caller and the calibration file kept in
the test's own directory. A module that needs more (another directory, another stand-in)
overrides ``api`` by requesting it. ``aws_env`` is the judges' fake AWS account
(:mod:`tests.unit.evaluation.judges.backends`), for the Bedrock judge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic
from tests.unit.evaluation.judges.backends import aws_env

__all__ = ["EVAL_LABELS", "EVAL_VECTOR", "api", "aws_env"]

EVAL_LABELS = ("eval", "--labels", "examples/labels.jsonl")
"""``ragtrace eval`` on the examples' labels (run from a copy of ``examples/``)."""
EVAL_VECTOR = (*EVAL_LABELS, "--run", "examples/run_vector.jsonl")
"""... and the examples' vector run."""


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeAnthropic]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGTRACE_CALIBRATION_FILE", str(tmp_path / "calibration.json"))
    monkeypatch.delenv("RAGTRACE_JUDGE_MODEL", raising=False)
    monkeypatch.delenv("RAGTRACE_JUDGE_PRICES", raising=False)
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield fake
