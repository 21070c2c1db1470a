"""``ragtrace labels`` against the real Redis of the ``redis_url`` fixture: load, list, stats,
clear, atomic replacement, configuration precedence and error reporting."""

from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path

import pytest

from ragtrace.evaluation.labels import LabelledQuestion, label_set_version, load_labels
from ragtrace.normalize import question_sha256
from ragtrace_consumers.commands import labels as labels_cli
from ragtrace_consumers.model import RagTrace, question_version
from ragtrace_consumers.scoring.label_match import match_label
from ragtrace_consumers.stores import redis as redis_stores
from ragtrace_consumers.stores.redis import connect
from ragtrace_consumers.stores.redis_state import RedisLabelStore

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "labels.jsonl"


def run(argv: list[str]) -> int:
    """The labels command as the ``ragtrace`` dispatcher wires it (register + func)."""
    parser = argparse.ArgumentParser(prog="ragtrace")
    labels_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


@pytest.fixture
def prefix() -> str:
    return f"cli-{uuid.uuid4().hex[:8]}"


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_load_list_stats_clear(
    any_redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    redis_url = any_redis_url  # one server, then any node of a cluster
    questions = load_labels(EXAMPLE)
    version = label_set_version(questions)
    answerable = sum(1 for q in questions if q.gold)
    assert run(["labels", "load", str(EXAMPLE), "--redis", redis_url, "--prefix", prefix]) == 0
    out = capsys.readouterr().out
    assert out == (
        f"loaded {len(questions)} labelled questions from {EXAMPLE} as version "
        f"{version} (no previous set); {answerable} answerable, 0 ambiguous by text\n"
    )

    store = RedisLabelStore(connect(redis_url), prefix=prefix)
    assert store.version() == version
    assert store.questions() == sorted(questions, key=lambda q: q.qid)
    first = questions[0]
    trace = RagTrace(
        trace_id="a" * 32,
        service="s",
        target_span_id="1" * 16,
        query_sha256=question_sha256(first.question.upper() + "  ?"),
    )
    assert match_label(trace, store) == (first, "query_text")

    assert run(["labels", "list", "--json", "--redis", redis_url, "--prefix", prefix]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [
        LabelledQuestion(d["qid"], d["question"], frozenset(d["gold"]))
        for d in map(json.loads, lines)
    ] == sorted(questions, key=lambda q: q.qid)

    assert run(["labels", "list", "--limit", "1", "--redis", redis_url, "--prefix", prefix]) == 0
    table = capsys.readouterr().out.splitlines()
    ordered = sorted(questions, key=lambda q: q.qid)
    assert table[0].split() == ["qid", "gold", "version", "question"]
    assert table[2].split()[:3] == [
        ordered[0].qid,
        str(len(ordered[0].gold)),
        question_version(ordered[0]),
    ]
    assert table[-1] == f"({len(questions) - 1} more; version {version})"

    assert run(["labels", "stats", "--json", "--redis", redis_url, "--prefix", prefix]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats == {
        "version": version,
        "questions": len(questions),
        "answerable": answerable,
        "ambiguous": 0,
        "loaded_at": stats["loaded_at"],
        "source": "labels.jsonl",
    }
    assert isinstance(stats["loaded_at"], float)

    assert run(["labels", "stats", "--redis", redis_url, "--prefix", prefix]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0] == f"version     {version}"
    assert text[1] == f"questions   {len(questions)}"
    assert text[-1] == "source      labels.jsonl"

    assert run(["labels", "clear", "--redis", redis_url, "--prefix", prefix]) == 0
    assert capsys.readouterr().out == f"cleared label set {version}\n"
    assert store.version() == ""
    assert run(["labels", "stats", "--redis", redis_url, "--prefix", prefix]) == 0
    assert capsys.readouterr().out == "no label set loaded\n"
    assert run(["labels", "list", "--redis", redis_url, "--prefix", prefix]) == 0
    assert capsys.readouterr().out == "no label set loaded\n"


def test_reload_replaces_the_set_and_reports_the_previous_version(
    redis_url: str,
    prefix: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAGTRACE_REDIS_URL", redis_url)
    monkeypatch.setenv("RAGTRACE_REDIS_KEY_PREFIX", prefix)
    old = _write(
        tmp_path / "old.jsonl",
        [
            {"qid": "a", "question": "Alpha?", "gold": ["x"]},
            {"qid": "b", "question": "Beta?", "gold": []},
        ],
    )
    new = _write(
        tmp_path / "new.jsonl",
        [
            {"qid": "a", "question": "Alpha?", "gold": ["y"]},
            {"qid": "c", "question": "alpha", "gold": ["z"]},
        ],
    )
    assert run(["labels", "load", str(old)]) == 0
    v_old = capsys.readouterr().out.split(" as version ")[1].split(" ")[0]
    assert run(["labels", "load", str(old)]) == 0
    assert "(unchanged)" in capsys.readouterr().out
    assert run(["labels", "load", str(new)]) == 0
    v_new = label_set_version(load_labels(new))
    assert capsys.readouterr().out == (
        f"loaded 2 labelled questions from {new} as version {v_new} (replacing {v_old}); "
        "2 answerable, 2 ambiguous by text\n"
    )
    store = RedisLabelStore(connect(redis_url), prefix=prefix)
    assert store.by_id("b") is None
    assert store.by_id("a") == LabelledQuestion("a", "Alpha?", frozenset({"y"}))
    # "Alpha?" and "alpha" normalise alike: matched by ID only.
    assert store.by_question_sha256(question_sha256("Alpha?")) is None
    # The old version's keys expire shortly after the switch.
    ttl = connect(redis_url).ttl(f"{prefix}:labels:{v_old}:q")
    assert 0 < ttl <= 60


def test_bad_labels_file_is_reported_with_file_line_and_field(
    redis_url: str, prefix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "a", "question": "Q?", "gold": ["x"]}\n{"qid": "b", "gold": []}\n')
    assert run(["labels", "load", str(bad), "--redis", redis_url, "--prefix", prefix]) == 2
    assert capsys.readouterr().err == (
        f"ragtrace labels: error: {bad}, line 2, field 'question': missing\n"
    )
    assert RedisLabelStore(connect(redis_url), prefix=prefix).version() == ""


def test_unreachable_redis_and_bad_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "redis://127.0.0.1:1/0"
    assert run(["labels", "stats", "--redis", url]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"ragtrace labels: error: cannot use Redis at {url}: ")
    assert run(["labels", "stats", "--redis", url, "--prefix", "has space"]) == 2
    assert capsys.readouterr().err == (
        "ragtrace labels: error: --prefix must be non-empty without spaces, got 'has space'\n"
    )


def test_configuration_precedence(caplog: pytest.LogCaptureFixture) -> None:
    env = {"RAGTRACE_REDIS_URL": "redis://env:1/0", "RAGTRACE_REDIS_KEY_PREFIX": "envp"}
    assert labels_cli.resolve_redis("redis://arg:2/0", "argp", env) == ("redis://arg:2/0", "argp")
    assert labels_cli.resolve_redis(None, None, env) == ("redis://env:1/0", "envp")
    assert labels_cli.resolve_redis(None, None, {}) == ("redis://127.0.0.1:6379/0", "ragtrace")
    with caplog.at_level("WARNING"):
        assert labels_cli.resolve_redis(None, None, {"RAGTRACE_REDIS_KEY_PREFIX": "a b"}) == (
            "redis://127.0.0.1:6379/0",
            "ragtrace",
        )
    assert "ignoring RAGTRACE_REDIS_KEY_PREFIX='a b'" in caplog.text
    # The CLI and the consumers read the same variables.
    assert (labels_cli.ENV_REDIS_URL, labels_cli.ENV_REDIS_PREFIX) == (
        redis_stores.ENV_REDIS_URL,
        redis_stores.ENV_REDIS_PREFIX,
    )


def test_load_and_clear_print_json_and_keep_reference_answers(
    tmp_path: Path, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path / "refs.jsonl",
        [
            {"qid": "a", "question": "Q a?", "gold": ["c-1"], "reference_answer": "A."},
            {"qid": "b", "question": "Q b?", "gold": []},
        ],
    )
    questions = load_labels(path)
    version = label_set_version(questions)
    common = ["--redis", redis_url, "--prefix", prefix]
    assert run(["labels", "load", str(path), "--json", *common]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == {
        "version": version,
        "questions": 2,
        "answerable": 1,
        "ambiguous": 0,
        "loaded_at": doc["loaded_at"],
        "source": "refs.jsonl",
        "file": str(path),
        "previous_version": None,
        "with_reference_answer": 1,
    }
    # The reference answer survives the Redis round trip (what the consumers score against).
    store = RedisLabelStore(connect(redis_url), prefix=prefix)
    assert [q.reference_answer for q in store.questions()] == ["A.", None]
    assert store.by_id("a") == questions[0]

    out = tmp_path / "cleared.json"
    assert run(["labels", "clear", "--json-file", str(out), *common]) == 0
    assert capsys.readouterr().out == f"cleared label set {version}\n"  # text still printed
    assert json.loads(out.read_text()) == {"cleared_version": version}
