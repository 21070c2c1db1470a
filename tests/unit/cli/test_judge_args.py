"""``--judge bedrock | vertex | openai`` on the CLI: the options reach the judge, the judge reaches
its API (the local fake), the JSON result names the provider."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace.cli import main
from ragtrace.cli._judge_args import add_judge_arguments, judge_spec
from ragtrace.evaluation.judges import JudgeSpec
from tests.fakes.anthropic_server import FakeAnthropic

ANSWER = ["--answer", "Refunds take 5 days.", "--context", "Refunds take 5 days."]


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeAnthropic]:
    monkeypatch.setenv("RAGTRACE_CALIBRATION_FILE", str(tmp_path / "calibration.json"))
    for name in ("RAGTRACE_JUDGE_MODEL", "RAGTRACE_JUDGE_PRICES", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with FakeAnthropic() as fake:
        yield fake


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["groundedness", *ANSWER, *argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert isinstance(result, dict)
    return result


def test_openai_judge_on_a_local_server(
    api: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _run(
        capsys, "--judge", "openai", "--base-url", f"{api.base_url}/v1", "--model", "llama3.1:8b"
    )
    assert result["score"] == 1.0
    assert result["judge"] == {
        "name": "openai",
        "model": "llama3.1:8b",
        "prompt_sha256": result["judge"]["prompt_sha256"],  # type: ignore[index]
        "provider": "openai",
    }
    assert api.requests[0].path == "/v1/chat/completions"
    assert api.requests[0].headers["authorization"] == "Bearer no-key"  # none configured
    assert "tools" in api.requests[0].body


def test_openai_json_mode_from_the_cli(
    api: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(
        capsys,
        "--judge",
        "openai",
        "--base-url",
        f"{api.base_url}/v1",
        "--model",
        "m",
        "--output-mode",
        "json",
    )
    assert api.requests[0].body["response_format"] == {"type": "json_object"}


def test_openai_judge_without_a_model_is_bad_input(
    api: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["groundedness", *ANSWER, "--judge", "openai", "--base-url", api.base_url])
    assert code == 2
    assert "the openai judge needs a model" in capsys.readouterr().err


@pytest.mark.usefixtures("aws_env")
def test_bedrock_judge_from_the_cli(api: FakeAnthropic, capsys: pytest.CaptureFixture[str]) -> None:
    result = _run(capsys, "--judge", "bedrock", "--region", "us-east-1", "--base-url", api.base_url)
    assert result["judge"]["provider"] == "bedrock"  # type: ignore[index]
    assert api.requests[0].path == "/model/global.anthropic.claude-haiku-4-5-20251001-v1:0/invoke"
    assert api.requests[0].headers["authorization"].startswith("AWS4-HMAC-SHA256 ")


def test_cli_options_parse_into_the_provider_spec() -> None:
    parser = argparse.ArgumentParser()
    add_judge_arguments(parser)
    args = parser.parse_args(
        ["--judge", "vertex", "--region", "us-east5", "--project", "p", "--model", "m"]
    )
    assert judge_spec(args) == JudgeSpec(
        "vertex", model="m", region="us-east5", project="p", provider="vertex"
    )
    args = parser.parse_args(["--judge", "openai", "--base-url", "http://h/v1"])
    assert judge_spec(args).base_url == "http://h/v1"
    with pytest.raises(SystemExit):
        parser.parse_args(["--output-mode", "xml"])
