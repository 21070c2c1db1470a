"""``ragtrace groundedness --input``: concurrent, resumable batch judging through the real
Anthropic client against the wire-level fake API; ``@-`` and ``--json-file PATH`` of single mode."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ragtrace.cli import _judge_args, main
from tests.fakes.anthropic_server import FakeAnthropic, Reply, entail_all, server_error
from tests.in_flight import InFlight

BATCH = (
    "groundedness",
    "--judge",
    "anthropic",
    "--input",
    "answers.jsonl",
    "--output",
    "out.jsonl",
)


@pytest.fixture
def api(api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> FakeAnthropic:
    monkeypatch.setattr(_judge_args, "_stdin_read_by", [])
    return api


def _answers(n: int) -> Path:
    path = Path("answers.jsonl")
    path.write_text(
        "".join(
            json.dumps(
                {"id": f"a{i}", "answer": f"Fact {i} holds.", "context": [f"Fact {i} holds."]}
            )
            + "\n"
            for i in range(n)
        )
    )
    return path


class _Concurrency(InFlight):
    """A responder that records how many requests were in flight at once."""

    def __call__(self, request: Mapping[str, Any]) -> Reply:
        with self:
            time.sleep(0.05)
        return entail_all(request)


def test_batch_judges_concurrently_and_resumes(
    api: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    _answers(12)
    counter = _Concurrency()
    api.responder = counter
    argv = [*BATCH, "--concurrency", "3"]
    assert main(argv) == 0
    rows = [json.loads(x) for x in Path("out.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(f"a{i}" for i in range(12))
    assert all(r["score"] == 1.0 and r["error"] is None for r in rows)
    assert 1 < counter.peak <= 3
    err = capsys.readouterr().err
    assert "12 judged (mean groundedness 1.000), 0 judge errors, 0 already done" in err
    assert "cost $" in err and "tokens: " in err
    assert len(api.requests) == 12
    # Resume: nothing left to judge, no new judge call.
    assert main(argv) == 0
    assert (
        "0 judged (mean groundedness n/a), 0 judge errors, 12 already done"
        in capsys.readouterr().err
    )
    assert len(api.requests) == 12


def test_an_unreachable_judge_keeps_what_was_judged(
    api: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    _answers(6)
    calls = {"n": 0}

    def flaky(request: Mapping[str, Any]) -> Reply:
        calls["n"] += 1
        return entail_all(request) if calls["n"] <= 2 else server_error(503)

    api.responder = flaky
    argv = [*BATCH, "--concurrency", "1", "--budget", "0.2"]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "judge unavailable" in err and "run again to resume" in err
    kept = [json.loads(x)["id"] for x in Path("out.jsonl").read_text().splitlines()]
    assert kept == ["a0", "a1"]
    api.responder = entail_all
    assert main(argv) == 0
    assert "4 judged" in capsys.readouterr().err
    ids = [json.loads(x)["id"] for x in Path("out.jsonl").read_text().splitlines()]
    assert sorted(ids) == [f"a{i}" for i in range(6)]


def test_batch_to_stdout_and_bad_input(
    api: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    _answers(2)
    assert main(["groundedness", "--judge", "lexical", "--input", "answers.jsonl"]) == 0
    out, err = capsys.readouterr()
    assert sorted(json.loads(x)["id"] for x in out.splitlines()) == ["a0", "a1"]
    assert err.startswith("ragtrace groundedness: 2 judged")
    Path("bad.jsonl").write_text('{"id": "x", "answer": 3, "context": []}\n')
    assert main(["groundedness", "--judge", "lexical", "--input", "bad.jsonl"]) == 2
    assert 'bad.jsonl, line 1: "answer" must be a string' in capsys.readouterr().err
    Path("dup.jsonl").write_text('{"id": "x", "answer": "a", "context": "b"}\n' * 2)
    assert main(["groundedness", "--judge", "lexical", "--input", "dup.jsonl"]) == 2
    assert "ids must be unique" in capsys.readouterr().err
    assert main(["groundedness", "--judge", "lexical"]) == 2
    assert "--answer and --context are required" in capsys.readouterr().err


def test_answer_from_stdin_and_json_to_a_file(
    api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("Audit logs are kept ninety days.\n"))
    assert (
        main(
            [
                "groundedness",
                "--judge",
                "lexical",
                "--answer",
                "@-",
                "--context",
                "Audit logs are kept ninety days.",
                "--json-file",
                "result.json",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.startswith("judge: lexical")
    assert json.loads(Path("result.json").read_text())["score"] == 1.0
    # Only one argument may read stdin.
    monkeypatch.setattr(_judge_args, "_stdin_read_by", [])
    assert main(["groundedness", "--judge", "lexical", "--answer", "@-", "--context", "@-"]) == 2
    assert "--context @-: stdin was already read by --answer" in capsys.readouterr().err
