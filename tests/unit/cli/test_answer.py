"""``ragtrace answer relevancy|correctness`` through the real Anthropic client against the
wire-level fake API, and offline with the lexical judge."""

from __future__ import annotations

import json

import pytest

from ragtrace.cli import main
from tests.fakes.anthropic_server import FakeAnthropic, server_error, tool_reply

RELEVANCY = ("answer", "relevancy", "--judge", "anthropic")


def test_correctness_f1_from_the_judges_verdicts(
    api: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    api.enqueue(
        tool_reply(
            {
                "claims": [
                    {"claim": "Logs are kept 90 days.", "verdict": "supported"},
                    {"claim": "On every plan.", "verdict": "contradicted"},
                ],
                "reference_facts": [
                    {"fact": "90 days", "covered": True},
                    {"fact": "Enterprise only", "covered": False},
                ],
            },
            tool_name="record_correctness",
        )
    )
    assert (
        main(
            [
                "answer",
                "correctness",
                "--judge",
                "anthropic",
                "--question",
                "How long?",
                "--answer",
                "Logs are kept 90 days on every plan.",
                "--reference",
                "90 days, Enterprise only.",
                "--json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    # TP 1, FP 1, FN 1: 1 / (1 + (1 + 1) / 2) = 0.5
    assert doc["metric"] == "answer_correctness" and doc["score"] == 0.5
    assert doc["judge"]["name"] == "anthropic"
    assert "90 days, Enterprise only." in api.requests[0].user_text


def test_relevancy_text_and_exit_codes(
    api: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*RELEVANCY, "--question", "How long?", "--answer", "90 days."]) == 0
    out = capsys.readouterr().out
    assert "answer relevancy: 1.00" in out and "[True]" in out
    # The lexical judge cannot tell relevancy: bad input, with its reason.
    assert (
        main(["answer", "relevancy", "--judge", "lexical", "--question", "q", "--answer", "a"]) == 2
    )
    assert "ragtrace answer: error: " in capsys.readouterr().err
    api.enqueue(server_error(), server_error())
    assert main([*RELEVANCY, "--question", "q", "--answer", "a", "--budget", "0.2"]) == 3


def test_correctness_offline_is_token_f1(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "answer",
                "correctness",
                "--judge",
                "lexical",
                "--question",
                "q",
                "--answer",
                "kept 90 days",
                "--reference",
                "kept 90 days",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["score"] == 1.0
