"""One exit code per cause in every command, as docs/cli.md's table says: each command run through
``ragtrace.cli.main`` with a usage error (2), a missing input file (2, the file named) and, where
it reaches Redis, Kafka or a judge's API, that dependency unreachable (3)."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragtrace.cli import main
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, EXIT_UNAVAILABLE

MISSING = "no-such-dir/missing.input"
"""A file that does not exist (relative to the test's directory); each message must name it."""


def _closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Command:
    """How to run one command: ``usage`` a usage error; ``missing`` with a missing input file
    (None: it reads none); ``unreachable(port, tmp)`` with its dependency at a closed port
    (None: it reaches none in this form)."""

    name: str
    usage: list[str]
    missing: list[str] | None
    unreachable: Callable[[int, Path], list[str]] | None = None
    ok: list[str] | None = None


def _judge(port: int) -> list[str]:
    # One short attempt budget: the retries stop within about a second.
    return ["--judge", "anthropic", "--base-url", f"http://127.0.0.1:{port}"] + [
        "--timeout",
        "0.5",
        "--budget",
        "1",
    ]


def _claims(tmp: Path) -> str:
    path = tmp / "claims.jsonl"
    path.write_text(
        json.dumps(
            {
                "id": "a1-c1",
                "claim": "Audit logs are kept for 90 days.",
                "context": ["Audit logs are kept for 90 days."],
                "human_entailed": True,
            }
        )
        + "\n"
    )
    return str(path)


def _answers(tmp: Path) -> str:
    path = tmp / "answers.jsonl"
    path.write_text(
        json.dumps(
            {
                "id": "q1",
                "context": ["Audit logs are kept for 90 days."],
                "answer": "Audit logs are kept for 90 days.",
                "spans": [],
                "hallucinated": False,
                "task_type": "qa",
                "split": "test",
            }
        )
        + "\n"
    )
    return str(path)


def _redis(port: int) -> list[str]:
    return ["--redis", f"redis://127.0.0.1:{port}/0"]


COMMANDS = [
    Command("eval", ["eval", "--run", "r.jsonl"], ["eval", "--labels", MISSING, "--run", MISSING]),
    Command("compare", ["compare", "a.json"], ["compare", MISSING, MISSING]),
    Command(
        "groundedness",
        ["groundedness", "--concurrency", "0"],
        ["groundedness", "--input", MISSING],
        lambda port, tmp: [
            "groundedness",
            *_judge(port),
            "--answer",
            "Audit logs are kept.",
            "--context",
            "Audit logs are kept for 90 days.",
        ],
    ),
    Command(
        "calibrate",
        ["calibrate"],
        ["calibrate", "--labels", MISSING],
        lambda port, tmp: ["calibrate", *_judge(port), "--labels", _claims(tmp), "--no-save"],
    ),
    Command(
        "detect-eval",
        ["detect-eval", "--threshold", "x"],
        ["detect-eval", "--input", MISSING],
        lambda port, tmp: [
            "detect-eval",
            *_judge(port),
            "--input",
            _answers(tmp),
            "--results",
            str(tmp / "results.jsonl"),
            "--yes",
        ],
    ),
    Command(
        "labels",
        ["labels", "stats", "--no-such-option"],
        ["labels", "load", MISSING, "--redis", "redis://127.0.0.1:1/0"],
        lambda port, tmp: ["labels", "stats", *_redis(port)],
    ),
    Command("inspect", ["inspect"], ["inspect", MISSING]),
    Command(
        "consume --print-config",
        ["consume", "--print-config", "--log-level", "LOUD"],
        ["consume", "--print-config", "--config", MISSING],
        ok=["consume", "--print-config"],
    ),
    Command(
        "serve --print-config",
        ["serve", "--print-config", "--port", "x"],
        ["serve", "--print-config", "--config", MISSING],
        ok=["serve", "--print-config"],
    ),
    Command("demo --help", ["demo", "--judge", "oracle"], None, ok=["demo", "--help"]),
]
IDS = [c.name for c in COMMANDS]


def _exit_code(argv: list[str]) -> int:
    """``main``'s return value, or the code of the SystemExit argparse raises."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # a relative MISSING, and any file a command writes, stay here
    for name in ("RAGTRACE_CONSUMER_CONFIG", "RAGTRACE_LABELS", "RAGTRACE_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_a_usage_error_exits_2(command: Command, capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_code(command.usage) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("usage: ragtrace") and "error: " in err, err


WITH_INPUT = [c for c in COMMANDS if c.missing is not None]


@pytest.mark.parametrize("command", WITH_INPUT, ids=[c.name for c in WITH_INPUT])
def test_a_missing_input_file_exits_2_naming_it(
    command: Command, capsys: pytest.CaptureFixture[str]
) -> None:
    assert command.missing is not None
    assert _exit_code(command.missing) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"ragtrace {command.missing[0]}")
    assert f"{MISSING}: " in err, err


REACHING = [c for c in COMMANDS if c.unreachable is not None]


@pytest.mark.parametrize("command", REACHING, ids=[c.name for c in REACHING])
def test_an_unreachable_dependency_exits_3(
    command: Command, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert command.unreachable is not None
    port = _closed_port()
    assert _exit_code(command.unreachable(port, tmp_path)) == EXIT_UNAVAILABLE
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port}" in err or "Connection error" in err, err


def test_consume_exits_3_when_redis_is_unreachable_at_start_up(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _closed_port()
    monkeypatch.setenv("RAGTRACE_REDIS_URL", f"redis://127.0.0.1:{port}/0")
    monkeypatch.setenv("RAGTRACE_KAFKA_BOOTSTRAP_SERVERS", f"127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("RAGTRACE_HEALTH_STARTUP_WAIT_S", "0.5")
    assert _exit_code(["consume"]) == EXIT_UNAVAILABLE
    assert f"Redis at redis://127.0.0.1:{port}/0 unavailable" in capsys.readouterr().err


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.ok], ids=lambda c: c.name)
def test_a_run_that_succeeds_exits_0(command: Command, capsys: pytest.CaptureFixture[str]) -> None:
    assert command.ok is not None
    assert _exit_code(command.ok) == EXIT_OK
    assert capsys.readouterr().out


def test_an_output_file_that_cannot_be_written_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The command ran; its result could not be delivered (docs/cli.md: 1, not a usage error).
    target = "no-such-dir/out.json"
    text = ["--answer", "Logs are kept.", "--context", "Logs are kept for 90 days."]
    for argv in (
        ["groundedness", "--judge", "lexical", *text, "--json-file", target],
        ["serve", "--state", str(tmp_path / "s.sqlite3"), "--port", "0", "--no-metrics"]
        + ["--no-web", "--json-file", target],
    ):
        assert _exit_code(argv) == EXIT_FAILURE, argv
        assert f"cannot write {target}" in capsys.readouterr().err, argv
